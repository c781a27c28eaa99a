"""Decoding of NVLink Xid bodies, shared by the rule modules: NVLink5 Xids 144-150
(`decode`) and the register words of Xid 74 (`decode_xid74`).  Pure parsing; no
events, no I/O.

Body shape (REFERENCE.md 1.1):
    <UNIT> <Fatal|Nonfatal> XC<0|1> i<n> Link <nn|-1> (<intrinfo> <errstatus> ...)
The sub-unit is intrinfo bits 20-25.  Link-level units (link events, link down,
training) are classified as signal integrity; the rest keep their unit.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

_BODY = re.compile(
    r"(?P<unit>[A-Z][A-Z0-9_]*)\s+(?P<sev>Fatal|Nonfatal|Non-fatal)\s+XC(?P<xc>[01])\s+i(?P<inst>\d+)\s+"
    r"Link\s+(?P<link>-?\d+)\s*\((?P<words>[^)]*)\)")
_LINK_LEVEL = ("LINK_EVT", "LINK_DOWN", "LINK_UP", "TRAIN", "LTSSM", "PHY", "CRC", "REPLAY", "RECOVERY")

UNIT_SUFFIX = {144: "SAW", 145: "RLW", 146: "TLW", 147: "TREX", 148: "NVLPW_CTRL", 149: "NETIR", 150: "MSE"}


@dataclass(frozen=True)
class NvlinkError:
    xid: int
    unit: str
    fatal: bool
    xc: int
    instance: int
    link: int
    intrinfo: int | None
    errstatus: int | None
    subcode: int | None  # intrinfo bits 20-25
    category: str  # "signal_integrity" | "unit"

    def symptom(self) -> str:
        if not self.fatal:
            return "XID-NVLINK5_NONFATAL"
        if self.xid == 149 and self.category == "signal_integrity":
            return "XID-149-NVLINK_SIGNAL_INTEGRITY"
        return f"XID-{self.xid}-NVLINK_{UNIT_SUFFIX.get(self.xid, 'UNKNOWN')}_FATAL"

    def fields(self) -> dict:
        return {"unit": self.unit, "fatal": self.fatal, "link": self.link, "xc": self.xc, "instance": self.instance,
                "intrinfo": None if self.intrinfo is None else f"0x{self.intrinfo:08x}",
                "errstatus": None if self.errstatus is None else f"0x{self.errstatus:08x}",
                "subcode": self.subcode, "category": self.category}


def _hex(word: str) -> int | None:
    try:
        return int(word, 16)
    except ValueError:
        return None


def decode(xid: int, body: str) -> NvlinkError | None:
    """Decode an Xid 144-150 body; None when it does not have the NVLink5 shape."""
    m = _BODY.search(body or "")
    if not m:
        return None
    words = m.group("words").split()
    intrinfo = _hex(words[0]) if words else None
    errstatus = _hex(words[1]) if len(words) > 1 else None
    unit = m.group("unit")
    category = "signal_integrity" if any(k in unit for k in _LINK_LEVEL) else "unit"
    return NvlinkError(xid=xid, unit=unit, fatal=m.group("sev") == "Fatal", xc=int(m.group("xc")),
                       instance=int(m.group("inst")), link=int(m.group("link")), intrinfo=intrinfo, errstatus=errstatus,
                       subcode=None if intrinfo is None else (intrinfo >> 20) & 0x3F, category=category)


# ---- Xid 74 (NVLink error + 7 registers), REFERENCE.md 1.3 --------------------------------
# Body: `NVLink: fatal error detected on link 14(0x0, 0x0, 0x10000, 0x0, 0x0, 0x0, 0x0)`.
# NVIDIA's split by register bits: REG0 bit 21/22 -> marginal link signal integrity
# (cable, connector, tray); REG0 bit 4/5 or REG2 bit 0/1/2/6 -> ECC / parity in the
# NVLink hardware.  Any other bit pattern is left undecoded (the raw Xid 74 stands).

_XID74_LINK = re.compile(r"(?i)\blink\s*(?P<link>\d+)\s*\((?P<words>[^)]*)\)")
_HEXWORD = re.compile(r"(?i)^(?:0x)?[0-9a-f]+$")
XID74_SIGNAL_INTEGRITY = "XID-74-NVLINK_SIGNAL_INTEGRITY"
XID74_ECC_PARITY = "XID-74-NVLINK_ECC_PARITY"
_XID74_BITS = {XID74_SIGNAL_INTEGRITY: ((0, (21, 22)),), XID74_ECC_PARITY: ((0, (4, 5)), (2, (0, 1, 2, 6)))}


@dataclass(frozen=True)
class Xid74Error:
    link: int
    registers: tuple[int, ...]
    symptoms: tuple[str, ...]  # decoded categories, possibly both; empty: undecodable bits
    bits: tuple[str, ...]  # the deciding bits, as "REG0.b21"

    def fields(self) -> dict:
        return {"link": self.link, "registers": [f"0x{r:x}" for r in self.registers], "bits": list(self.bits)}


def decode_xid74(body: str) -> Xid74Error | None:
    """Decode an Xid 74 body's register words; None when the body has no
    `link N(<words>)` group of hex words (at least REG0..REG2)."""
    m = _XID74_LINK.search(body or "")
    if not m:
        return None
    words = [w for w in re.split(r"[,\s]+", m.group("words").strip()) if w]
    if len(words) < 3 or not all(_HEXWORD.match(w) for w in words):
        return None
    regs = tuple(int(w, 16) for w in words)
    symptoms, bits = [], []
    for symptom, spec in _XID74_BITS.items():
        hit = [f"REG{r}.b{b}" for r, bs in spec for b in bs if regs[r] >> b & 1]
        if hit:
            symptoms.append(symptom)
            bits.extend(hit)
    return Xid74Error(link=int(m.group("link")), registers=regs, symptoms=tuple(symptoms), bits=tuple(bits))
