"""Decoding of NVLink5 Xid bodies (Xid 144-150), shared by the rule modules.

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
