"""A generated corpus of vendor-style extractor rules, for benchmarks at scale.

What a production corpus of thousands of rules looks like: many components
(NIC and GPU drivers, fabric and storage kernel modules, BMCs, node daemons,
Kubernetes components, training frameworks), each with its own line shape and
its own family of messages.  A corpus of N rules covers more components, not
more rules about one: components are taken in a fixed shuffled order and each
brings 4 to 24 rules, so the rules per component stay the same at any N while
the rules per vendor (which share the vendor's prefix literal: `mlx5_core`,
`LustreError`) grow with N.

Each component writes plain extractors, a family (one template, several
members) or a catalog (one pattern keyed on a message code); messages are drawn
from a shared vocabulary of objects and conditions, so literals like
` timeout` or `link down` recur across vendors as they do in real logs.  On
purpose, some rules overlap: a component's catch-all (`...: .*fatal`), and a
copy of another rule behind a looser prefix, so the lint has real findings to
make at every size.  Every rule has an inline test (a real line of its shape),
a quarter also a near miss; every pattern is checked against its test lines
with RE2 while generating.

Deterministic for (N, seed); the count is exact (expanded rules: a family's
members and a catalog's entries count one each) and never depends on the
bundled corpus it is loaded beside.  Pure: `generate()` writes only the folder
it is given.
"""
from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass, field
from pathlib import Path

GENERATOR_VERSION = 2

# (vendor key, category, source, prefix regex, prefix example)
_PCI = r"(?P<pci>[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7])"
_PCI_EX = "0000:3b:00.0"
VENDORS: list[tuple[str, str, str, str, str]] = [
    ("mlx5", "nic", "syslog", r"mlx5_core " + _PCI + r": ", f"mlx5_core {_PCI_EX}: "),
    ("bnxt", "nic", "syslog", r"bnxt_en " + _PCI + r" (?P<ifname>[\w.-]+): ", f"bnxt_en {_PCI_EX} ens3f0np0: "),
    ("ice", "nic", "syslog", r"ice " + _PCI + r": ", f"ice {_PCI_EX}: "),
    ("i40e", "nic", "syslog", r"i40e " + _PCI + r": ", f"i40e {_PCI_EX}: "),
    ("ixgbe", "nic", "syslog", r"ixgbe " + _PCI + r" (?P<ifname>[\w.-]+): ", f"ixgbe {_PCI_EX} eno1: "),
    ("ena", "nic", "syslog", r"ena " + _PCI + r" (?P<ifname>[\w.-]+): ", f"ena {_PCI_EX} ens5: "),
    ("efa", "fabric", "syslog", r"efa " + _PCI + r": ", f"efa {_PCI_EX}: "),
    ("cxi", "fabric", "syslog", r"cxi_core " + _PCI + r": ", f"cxi_core {_PCI_EX}: "),
    ("hfi1", "fabric", "syslog", r"hfi1 (?P<unit>hfi1_\d+): ", "hfi1 hfi1_0: "),
    ("ibcore", "fabric", "syslog", r"ib_core: (?P<hca>mlx5_\d+) port (?P<port>\d+): ", "ib_core: mlx5_3 port 1: "),
    ("opensm", "fabric", "syslog", r"OpenSM\[(?P<pid>\d+)\]: ", "OpenSM[2231]: "),
    ("nvsw", "fabric", "syslog", r"nv-fabricmanager\[(?P<pid>\d+)\]: \[ERROR\] ", "nv-fabricmanager[4410]: [ERROR] "),
    ("amdgpu", "gpu", "syslog", r"amdgpu " + _PCI + r": amdgpu: ", f"amdgpu {_PCI_EX}: amdgpu: "),
    ("habana", "gpu", "syslog", r"habanalabs hl(?P<dev>\d+): ", "habanalabs hl3: "),
    ("dcgm", "gpu", "syslog", r"nv-hostengine\[(?P<pid>\d+)\]: DCGM_FR_", "nv-hostengine[998]: DCGM_FR_"),
    ("nvme", "storage", "syslog", r"nvme (?P<ctrl>nvme\d+): ", "nvme nvme2: "),
    ("mpt3sas", "storage", "syslog", r"mpt3sas_cm(?P<ioc>\d+): ", "mpt3sas_cm0: "),
    ("megaraid", "storage", "syslog", r"megaraid_sas " + _PCI + r": ", f"megaraid_sas {_PCI_EX}: "),
    ("lustre", "storage", "syslog", r"LustreError: (?P<pid>\d+):0:\((?P<src>\w+\.c):\d+:(?P<fn>\w+)\(\)\) ",
     "LustreError: 11423:0:(client.c:1247:ptlrpc_import_delay_req()) "),
    ("lnet", "storage", "syslog", r"LNetError: (?P<pid>\d+):0:\((?P<src>\w+\.c):\d+:(?P<fn>\w+)\(\)\) ",
     "LNetError: 9931:0:(o2iblnd_cb.c:3405:kiblnd_check_txs_locked()) "),
    ("gpfs", "storage", "syslog", r"mmfs\[(?P<pid>\d+)\]: \[E\] ", "mmfs[5120]: [E] "),
    ("weka", "storage", "syslog", r"wekafs\[(?P<pid>\d+)\]: ERROR ", "wekafs[772]: ERROR "),
    ("beegfs", "storage", "syslog", r"beegfs-client\[(?P<pid>\d+)\]: \((?P<lvl>[0-3])\) ", "beegfs-client[1203]: (1) "),
    ("nfs", "storage", "syslog", r"NFS: server (?P<server>[\w.-]+) ", "NFS: server nfs-home.cluster.local "),
    ("xfs", "storage", "syslog", r"XFS \((?P<dev>[\w-]+)\): ", "XFS (md127): "),
    ("idrac", "bmc", "syslog", r"iDRAC\[(?P<svc>\w+)\]: ", "iDRAC[RAC0701]: "),
    ("ilo", "bmc", "syslog", r"iLO (?P<ilo>\d): IML: ", "iLO 5: IML: "),
    ("ipmi", "bmc", "syslog", r"ipmievd\[(?P<pid>\d+)\]: SEL: ", "ipmievd[1881]: SEL: "),
    ("ras", "bmc", "syslog", r"rasdaemon\[(?P<pid>\d+)\]: ", "rasdaemon[640]: "),
    ("mce", "bmc", "syslog", r"mcelog\[(?P<pid>\d+)\]: CPU (?P<cpu>\d+): ", "mcelog[610]: CPU 12: "),
    ("kubelet", "k8s", "syslog", r"kubelet\[(?P<pid>\d+)\]: E\d{4} [\d:.]+ +\d+ (?P<file>\w+\.go):\d+\] ",
     "kubelet[3321]: E1204 03:12:40.118900    3321 kubelet_node_status.go:554] "),
    ("containerd", "k8s", "syslog", r"containerd\[(?P<pid>\d+)\]: time=\"[^\"]+\" level=error msg=\"", "containerd[1002]: time=\"2026-12-04T03:12:40Z\" level=error msg=\""),
    ("calico", "k8s", "syslog", r"calico-node\[(?P<pid>\d+)\]: \[ERROR\]\[\d+\] ", "calico-node[900]: [ERROR][77] "),
    ("slurmd", "sched", "syslog", r"slurmd\[(?P<pid>\d+)\]: error: ", "slurmd[1450]: error: "),
    ("pyxis", "sched", "applog", r"pyxis: \[ERROR\] ", "pyxis: [ERROR] "),
    ("deepspeed", "app", "applog", r"\[ERROR\] \[(?P<mod>[\w.]+)\] deepspeed: ", "[ERROR] [engine.py] deepspeed: "),
    ("megatron", "app", "applog", r"megatron\.(?P<mod>[\w.]+): ERROR: ", "megatron.core.pipeline: ERROR: "),
    ("vllm", "app", "applog", r"ERROR [\d-]+ [\d:]+ (?P<src>\w+\.py):\d+\] vllm: ", "ERROR 12-04 03:12:40 engine.py:112] vllm: "),
    ("ray", "app", "applog", r"\(raylet\) \[(?P<ts>[^\]]+)\] ERROR ", "(raylet) [2026-12-04 03:12:40] ERROR "),
    ("te", "app", "applog", r"transformer_engine\.(?P<mod>\w+): ", "transformer_engine.pytorch: "),
    ("jax", "app", "applog", r"jax\._src\.(?P<mod>[\w.]+): ", "jax._src.distributed: "),
    ("nemo", "app", "applog", r"\[NeMo E (?P<ts>[\d-]+ [\d:]+) (?P<src>\w+):\d+\] ", "[NeMo E 2026-12-04 03:12:40 exp_manager:812] "),
    ("horovod", "app", "applog", r"\[(?P<rank>\d+)\]<stderr>:\[HOROVOD\] ", "[3]<stderr>:[HOROVOD] "),
    ("apex", "app", "applog", r"apex\.(?P<mod>\w+) ERROR ", "apex.amp ERROR "),
    ("torchx", "app", "applog", r"torchx (?P<app>[\w-]+) \[ERROR\] ", "torchx trainer-7 [ERROR] "),
]

SUBSYSTEMS = ["fw", "health", "cmd", "eq", "port", "phy", "pcie", "dma", "qp", "cq", "mr", "link", "thermal", "power",
              "fan", "psu", "dimm", "raid", "volume", "journal", "rpc", "mount", "lease", "quota", "sched", "alloc",
              "comm", "ckpt", "loader", "watchdog", "sensor", "vpd", "ecc", "clock", "reset", "irq"]

OBJECTS = ["TX queue", "RX ring", "completion queue", "event queue", "firmware", "PHY", "SerDes lane", "link",
           "port", "DMA engine", "doorbell", "mailbox", "command interface", "temperature sensor", "fan tray",
           "power supply", "voltage regulator", "memory controller", "DIMM", "L2 cache", "journal", "metadata target",
           "object storage target", "client lease", "quota slave", "RPC channel", "heartbeat", "watchdog timer",
           "work scheduler", "page allocator", "NVLink", "NVSwitch", "HBM stack", "ECC page", "PCIe link", "retimer",
           "sensor hub", "namespace", "volume group", "host channel adapter", "subnet manager", "congestion control",
           "routing table", "flow table", "steering rule", "interrupt vector", "clock domain", "boot ROM",
           "config space", "reset controller", "collective", "checkpoint writer", "data loader", "tokenizer",
           "optimizer state", "pipeline stage", "gradient bucket", "KV cache", "rendezvous", "object store"]

# (condition text, class, severity)
CONDITIONS = [("timeout", "TIMEOUT", 2), ("timed out waiting for completion", "TIMEOUT", 2),
              ("reset failed", "FATAL", 3), ("stuck", "HANG", 2), ("not responding", "HANG", 2),
              ("overflow", "DEGRADED", 1), ("underrun", "DEGRADED", 1), ("CRC error", "LINK", 2),
              ("parity error", "FATAL", 3), ("uncorrectable error", "FATAL", 3),
              ("correctable error threshold exceeded", "DEGRADED", 1), ("fatal error", "FATAL", 3),
              ("degraded", "DEGRADED", 1), ("went offline", "FATAL", 3), ("lost", "FATAL", 3),
              ("critical temperature", "THERMAL", 3), ("failed to initialize", "FATAL", 3),
              ("checksum mismatch", "CORRUPT", 2), ("access denied", "CONFIG", 1), ("out of resources", "DEGRADED", 1),
              ("exceeded limit", "DEGRADED", 1), ("assertion failed", "FATAL", 3), ("recovery failed", "FATAL", 3),
              ("flapping", "LINK", 2), ("link down", "LINK", 2), ("retrain failed", "LINK", 2),
              ("in unexpected state", "FATAL", 2), ("returned invalid response", "CORRUPT", 2),
              ("quarantined", "FATAL", 3), ("throttled", "THERMAL", 1), ("hung task detected", "HANG", 2),
              ("corrupted", "CORRUPT", 2), ("unreachable", "LINK", 2), ("allocation failed", "DEGRADED", 2)]

# (detail regex, example)
DETAILS = [("", ""), (r" \(status (?P<status>0x[0-9a-f]+)\)", " (status 0x1f)"),
           (r" after (?P<ms>\d+) ms", " after 5000 ms"), (r" on (?P<dev>\w+)", " on dev3"),
           (r", code (?P<code>-?\d+)", ", code -110"), (r" \[(?P<idx>\d+)/(?P<total>\d+)\]", " [3/8]"),
           (r" \(syndrome (?P<syn>0x[0-9a-f]{2,8})\)", " (syndrome 0x8d)"), (r": (?P<reason>.+)$", ": see vendor log")]

CATEGORY = {  # category -> (outcome, sub_domain, blame)
    "nic": ("network", "nic", "node"), "fabric": ("network", "fabric", "link"), "gpu": ("hardware", "gpu", "node"),
    "storage": ("infrastructure", "storage", "environment"), "bmc": ("hardware", "host", "node"),
    "k8s": ("infrastructure", "kubernetes", "environment"), "sched": ("infrastructure", "scheduler", "scheduler"),
    "app": ("application", "framework", "workload")}

SYSLOG_HEAD = "Dec  4 03:12:40 node-07 kernel: [ 5860.118900] "


def _esc(s: str) -> str:
    """re.escape without the backslash before spaces (as authors write patterns)."""
    return re.escape(s).replace("\\ ", " ")


def _camel(s: str) -> str:
    return "".join(p[:1].upper() + p[1:] for p in re.split(r"[^A-Za-z0-9]+", s) if p)


def _toml_str(s: str) -> str:
    """A TOML literal string when possible (regexes read best that way), else a basic one."""
    if "'" not in s and "\n" not in s:
        return f"'{s}'"
    return json.dumps(s)


@dataclass
class _Rule:
    name: str
    pattern: str
    symptom: str
    line: str
    miss: str | None = None


@dataclass
class _Component:
    vendor: tuple
    sub: str
    rules: list[_Rule] = field(default_factory=list)
    pre: str = ""  # the prefix its patterns start with ("" or the vendor's)
    family: list[tuple[str, str, str, str, str | None]] = field(default_factory=list)  # (member, msg re, symptom, line, miss)
    catalog: list[tuple[str, str, str]] = field(default_factory=list)  # (code, symptom, line)
    catalog_re: str = ""
    symptoms: dict[str, tuple[int, str]] = field(default_factory=dict)  # name -> (rank, docs)


def _components(seed: int) -> list[tuple[tuple, str]]:
    rng = random.Random(seed)
    out = [(v, s) for v in VENDORS for s in SUBSYSTEMS]
    rng.shuffle(out)
    return out


def _check(pattern: str, line: str, miss: str | None) -> None:
    import re2  # the engine's regex library: what the rule will run on

    rx = re2.compile(pattern)
    if rx.search(line) is None:
        raise AssertionError(f"generated pattern {pattern!r} does not match its test line {line!r}")
    if miss is not None and rx.search(miss) is not None:
        raise AssertionError(f"generated pattern {pattern!r} matches its near miss {miss!r}")


def _build(n: int, seed: int) -> list[_Component]:
    rng = random.Random(seed * 7919 + 1)
    comps: list[_Component] = []
    left = n
    order = _components(seed)
    ci = 0
    while left > 0:
        if ci >= len(order):
            raise ValueError(f"more rules than the vocabulary can make distinct ({n})")
        vendor, sub = order[ci]
        ci += 1
        vkey, cat, source, prefix_re, prefix_ex = vendor
        comp = _Component(vendor, sub)
        size = min(left, rng.randint(4, 24))
        head = SYSLOG_HEAD if source == "syslog" else "[rank3]: "
        sym_base = f"{vkey.upper()}_{sub.upper()}"
        conds = rng.sample(range(len(CONDITIONS)), k=min(len(CONDITIONS), 12))
        objs = rng.sample(OBJECTS, k=min(len(OBJECTS), size + 4))
        kind = rng.random()
        # half the components write the driver's prefix into their patterns (`mlx5_core (?P<pci>...): `),
        # the others anchor on the message itself, as most of the bundled rules do
        pre = comp.pre = prefix_re if rng.random() < 0.5 else ""
        used: set[tuple[str, str]] = set()
        msgs = []
        for i in range(size):
            obj = objs[i % len(objs)]
            c = conds[(i * 5 + 3) % len(conds)]
            while (obj, CONDITIONS[c][0]) in used:
                c = (c + 1) % len(CONDITIONS)
            used.add((obj, CONDITIONS[c][0]))
            text, klass, sev = CONDITIONS[c]
            det_re, det_ex = DETAILS[0] if rng.random() < 0.4 else DETAILS[rng.randrange(1, len(DETAILS))]
            sym = f"{sym_base}_{klass}"
            if sym not in comp.symptoms:
                rank = {1: 320, 2: 560, 3: 880}[sev] + rng.randrange(0, 40)
                comp.symptoms[sym] = (rank, f"{vkey} {sub}: {klass.lower()} ({text})")
            msgs.append((obj, text, det_re, det_ex, sym))
        if kind < 0.15 and size >= 6:  # a catalog keyed on the component's message codes
            base = rng.randrange(0x1000, 0xE000)
            comp.catalog_re = pre + _esc(sub) + r": event (?P<code>0x[0-9a-f]{4}) "
            for i, (obj, text, _d, _e, sym) in enumerate(msgs):
                code = f"0x{base + i * 17:04x}"
                line = f"{head}{prefix_ex}{sub}: event {code} {obj} {text}"
                _check(comp.catalog_re.replace("(?P<code>0x[0-9a-f]{4})", _esc(code)), line, None)
                comp.catalog.append((code, sym, line))
        elif kind < 0.45 and size >= 4:  # a family: one template, a member per message
            for i, (obj, text, det_re, det_ex, sym) in enumerate(msgs):
                msg_re = _esc(f"{obj} {text}") + det_re
                line = f"{head}{prefix_ex}{sub}: {obj} {text}{det_ex}"
                miss = f"{head}{prefix_ex}{sub}: {obj} recovered" if i % 4 == 0 else None
                comp.family.append((_camel(f"{obj} {text}") + str(i), msg_re, sym, line, miss))
                _check(pre + _esc(sub) + ": " + msg_re, line, miss)
        else:
            for i, (obj, text, det_re, det_ex, sym) in enumerate(msgs):
                pattern = pre + _esc(sub) + ": " + _esc(f"{obj} {text}") + det_re
                line = f"{head}{prefix_ex}{sub}: {obj} {text}{det_ex}"
                miss = f"{head}{prefix_ex}{sub}: {obj} recovered" if i % 4 == 0 else None
                _check(pattern, line, miss)
                comp.rules.append(_Rule(f"{_camel(vkey)}{_camel(sub)}{_camel(obj)}{i}", pattern, sym, line, miss))
        left -= size
        # on purpose: overlapping rules, so the lint has findings at every size
        if left > 0 and ci % 9 == 0:  # a catch-all over the driver's fatal messages of this subsystem
            sym = f"{sym_base}_FATAL"
            comp.symptoms.setdefault(sym, (900, f"{vkey} {sub}: fatal"))
            pattern = prefix_re + _esc(sub) + r": .*\b(?:fatal|uncorrectable) error\b"
            line = f"{head}{prefix_ex}{sub}: {msgs[0][0]} fatal error"
            _check(pattern, line, None)
            comp.rules.append(_Rule(f"{_camel(vkey)}{_camel(sub)}CatchAll", pattern, sym, line))
            left -= 1
        if left > 0 and ci % 13 == 0 and comps:  # a copy of an earlier rule behind a looser prefix
            src = comps[-1]
            if src.rules and src.vendor[2] == source and src.vendor[4].endswith(" "):
                r0 = src.rules[0]
                tail = r0.pattern.split(_esc(src.sub) + ": ", 1)[1]
                pattern = r"\S+ " + r"(?:\S+ )?" + _esc(src.sub) + ": " + tail
                _check(pattern, r0.line, None)
                sym = next(iter(comp.symptoms))
                comp.rules.append(_Rule(f"{_camel(vkey)}{_camel(sub)}Loose{len(comps)}", pattern, sym, r0.line))
                left -= 1
        comps.append(comp)
    return comps


def _write_component(c: _Component, out: list[str]) -> None:
    vkey, _cat, source, prefix_re, _ex = c.vendor
    for r in c.rules:
        out.append(f"[[extractor]]\nname = {json.dumps(r.name)}\nmatch_re = {_toml_str(r.pattern)}\n"
                   f"source = {json.dumps(source)}\n"
                   f"emit = {{ type = \"bad_node\", symptom = {json.dumps(r.symptom)} }}\n"
                   f"[[extractor.test]]\nline = {json.dumps(r.line)}\nsymptom = {json.dumps(r.symptom)}\n")
        if r.miss:
            out.append(f"[[extractor.test]]\nline = {json.dumps(r.miss)}\nexpect = \"nothing\"\n")
    if c.family:
        tmpl = c.pre + _esc(c.sub) + ": ${msg}"
        out.append(f"[[family]]\nname = {json.dumps(_camel(vkey) + _camel(c.sub) + 'Messages')}\n"
                   f"docs = \"{vkey} {c.sub} messages\"\nsource = {json.dumps(source)}\n"
                   f"template = {{ match_re = {_toml_str(tmpl)}, "
                   f"emit = {{ type = \"bad_node\", symptom = \"${{symptom}}\" }} }}\n")
        for name, msg_re, sym, line, miss in c.family:
            out.append(f"[[family.member]]\nname = {json.dumps(name)}\nmsg = {_toml_str(msg_re)}\n"
                       f"symptom = {json.dumps(sym)}\n"
                       f"[[family.member.test]]\nline = {json.dumps(line)}\nsymptom = {json.dumps(sym)}\n")
            if miss:
                out.append(f"[[family.member.test]]\nline = {json.dumps(miss)}\nexpect = \"nothing\"\n")
    if c.catalog:
        out.append(f"[[catalog]]\nname = {json.dumps(_camel(vkey) + _camel(c.sub) + 'Events')}\n"
                   f"docs = \"{vkey} {c.sub} event codes\"\nmatch_re = {_toml_str(c.catalog_re)}\nkey = \"code\"\n"
                   f"source = {json.dumps(source)}\nemit = {{ type = \"bad_node\", symptom = \"{{symptom}}\" }}\n"
                   "[catalog.entries]\n" + "".join(f"{code} = {{ symptom = {json.dumps(sym)} }}\n"
                                                    for code, sym, _l in c.catalog))
        for i, (code, sym, line) in enumerate(c.catalog):
            if i % 3 == 0:
                out.append(f"[[catalog.test]]\nline = {json.dumps(line)}\nsymptom = {json.dumps(sym)}\n")


def generate(folder: Path, n: int, seed: int = 7, per_file: int = 100) -> Path:
    """Write n generated rules (expanded) into folder (created; reused when it already
    holds this exact corpus); returns the folder."""
    folder = Path(folder)
    stamp = folder / ".complete"
    want = json.dumps({"n": n, "seed": seed, "version": GENERATOR_VERSION, "per_file": per_file})
    if stamp.exists() and stamp.read_text() == want:
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("*.toml"):
        old.unlink()
    comps = _build(n, seed)
    symptoms = ['author = "vendor packs (generated)"\n']
    for c in comps:
        outcome, sub_domain, blame = CATEGORY[c.vendor[1]]
        for name, (rank, docs) in c.symptoms.items():
            symptoms.append(f"[[symptom]]\nname = {json.dumps(name)}\noutcome = \"{outcome}\"\n"
                            f"sub_domain = \"{sub_domain}\"\nrank = {rank}\nblame = \"{blame}\"\n"
                            f"docs = {json.dumps(docs)}\n")
    (folder / "vendor_000_symptoms.toml").write_text("\n".join(symptoms))
    parts: list[str] = []
    count, fileno = 0, 1
    for c in comps:
        _write_component(c, parts)
        count += len(c.rules) + len(c.family) + len(c.catalog)
        if count >= per_file:
            (folder / f"vendor_{fileno:03d}.toml").write_text('author = "vendor packs (generated)"\n\n' + "\n".join(parts))
            parts, count, fileno = [], 0, fileno + 1
    if parts:
        (folder / f"vendor_{fileno:03d}.toml").write_text('author = "vendor packs (generated)"\n\n' + "\n".join(parts))
    stamp.write_text(want)
    return folder


def rule_count(folder: Path) -> int:
    """Expanded rules a generated folder holds (as generate() counted them)."""
    n = 0
    for f in Path(folder).glob("vendor_*.toml"):
        t = f.read_text()
        n += t.count("[[extractor]]") + t.count("[[family.member]]")
        n += sum(1 for ln in t.splitlines() if re.match(r"^0x[0-9a-f]{4} = \{", ln))
    return n


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder", type=Path)
    ap.add_argument("-n", type=int, default=500)
    ap.add_argument("--seed", type=int, default=7)
    a = ap.parse_args()
    generate(a.folder, a.n, a.seed)
    print(f"{rule_count(a.folder)} rules in {a.folder}")
