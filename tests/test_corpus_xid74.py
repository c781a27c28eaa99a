"""Xid 74 register decoding (bundled_rules/common/nvlink5.py `decode_xid74`) and its
filter DecodeXid74Registers: the register-bit table of REFERENCE 1.3 as data, the
job cases of bundled_rules/xid74.test.toml, and the raw Xid 74 kept as evidence."""
from __future__ import annotations

import functools
import importlib.util
import sys
from pathlib import Path

import pytest

from rulekit.inputs.jobinfo import JobInfoBuilder
from rulekit.inputs.observation import Observation
from rulekit.engine.session import Session
from rulekit.analysis.testing import run_job_test

SI, ECC = "XID-74-NVLINK_SIGNAL_INTEGRITY", "XID-74-NVLINK_ECC_PARITY"
BODY = "NVLink: fatal error detected on link {link}({words})"


@functools.cache
def _decode():
    """The corpus's own decoder, loaded from its file (the corpus is not a package)."""
    spec = importlib.util.spec_from_file_location(
        "_rk_nvlink5", Path(__file__).resolve().parent.parent / "bundled_rules" / "common" / "nvlink5.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses resolve their module
    spec.loader.exec_module(mod)
    return mod.decode_xid74


def _words(reg: int, bit: int) -> str:
    regs = [0] * 7
    regs[reg] = 1 << bit
    return ", ".join(hex(r) for r in regs)


# (register, bit) -> decoded symptom, from REFERENCE 1.3; every other bit decodes to nothing
TABLE = {(0, 21): SI, (0, 22): SI, (0, 4): ECC, (0, 5): ECC, (2, 0): ECC, (2, 1): ECC, (2, 2): ECC, (2, 6): ECC}


@pytest.mark.parametrize("reg", range(7))
@pytest.mark.parametrize("bit", range(32))
def test_every_single_register_bit(reg, bit):
    err = _decode()(BODY.format(link=14, words=_words(reg, bit)))
    assert err is not None and err.link == 14
    want = TABLE.get((reg, bit))
    assert err.symptoms == ((want,) if want else ())
    assert err.bits == ((f"REG{reg}.b{bit}",) if want else ())


@pytest.mark.parametrize("body,symptoms", [
    # the REFERENCE sample: REG2 bit 16 is not a deciding bit
    ("NVLink: fatal error detected on link 14(0x0, 0x0, 0x10000, 0x0, 0x0, 0x0, 0x0)", ()),
    ("NVLink: fatal error detected on link 7(0x400020, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0)", (SI, ECC)),
    ("NVLink: fatal error detected on link 3 (0x00200000 0x00000000 0x00000045 0x0 0x0 0x0 0x0)", (SI, ECC)),
    ("NVLink: fatal error detected on link 0(0x00000010,0x0,0x0,0x0,0x0,0x0,0x0)", (ECC,)),
])
def test_body_spellings(body, symptoms):
    assert _decode()(body).symptoms == symptoms


@pytest.mark.parametrize("body", [
    "NVLink: Link 3 training failed",
    "NVLink: fatal error detected on link 14",
    "NVLink: fatal error detected on link 14(see dmesg)",
    "NVLink: fatal error detected on link 14(0x0, 0x0)",
    "",
])
def test_bodies_without_register_words_are_not_decoded(body):
    assert _decode()(body) is None


def test_xid74_job_cases_pass(bundled):
    cases = [c for c in bundled.job_tests if c.span and Path(c.span.file).name == "xid74.test.toml"]
    assert len(cases) >= 4
    failed = [f"{c.name}: {r.mismatches or r.error}" for c in cases if not (r := run_job_test(bundled, c)).passed]
    assert not failed, "\n".join(failed)


def test_decoded_raw_xid74_stays_as_interesting_evidence(bundled):
    job = JobInfoBuilder("x74", None, ("node0001", "node0002"), tasks_per_node=8).build()
    lines = ["NVRM: Xid (PCI:0000:c1:00): 74, pid='<unknown>', name=<unknown>, "
             + BODY.format(link=14, words=_words(0, 21)),
             "NVRM: Xid (PCI:0000:c1:00): 74, pid='<unknown>', name=<unknown>, "
             + BODY.format(link=15, words=_words(0, 22))]
    with Session(bundled, job) as s:
        s.ingest(Observation(source="syslog", format="text", lines=lines, label="kern.log", node="node0002"))
        result = s.attribute()
        events = list(s.manager.stream(s.context_id).all())
    assert result["root_cause"]["symptom"] == SI
    raw = [e for e in events if e.symptom == "XID-74-NVLINK_ERROR"]
    assert len(raw) == 2 and all(e.event_type.endswith("interesting") for e in raw), [e.event_type for e in raw]
    decoded = [e for e in events if e.symptom == SI]
    assert len(decoded) == 1
    assert decoded[0].fields["links"] == [14, 15] and decoded[0].fields["bits"] == ["REG0.b21", "REG0.b22"]
