"""Filters named by the attribution spec: HandleXidBurstEvents (EARLY) decodes
bursts of NVLink5 Xids into one attributable event per node and symptom;
DecodeXid74Registers (EARLY) splits Xid 74 by its register bits the same way.
DemoteInsufficientPermissions (LATE) is declarative: see cascades.rule.
Filters only rewrite the event stream; they never read files or decide outcomes."""
from rulekit.plugin import EventSpec, FilterPriority, Selection, filter_def

from .common.nvlink5 import XID74_ECC_PARITY, XID74_SIGNAL_INTEGRITY, decode, decode_xid74

AUTHOR = "rulekit core"
NVLINK5_PREFIXES = tuple(f"XID-{n}-" for n in range(144, 151))


@filter_def(name="HandleXidBurstEvents", author=AUTHOR, priority=FilterPriority.EARLY,
            symptoms=("XID-149-NVLINK_SIGNAL_INTEGRITY", "XID-149-NVLINK_NETIR_FATAL", "XID-144-NVLINK_SAW_FATAL",
                      "XID-145-NVLINK_RLW_FATAL", "XID-146-NVLINK_TLW_FATAL", "XID-147-NVLINK_TREX_FATAL",
                      "XID-148-NVLINK_NVLPW_CTRL_FATAL", "XID-150-NVLINK_MSE_FATAL", "XID-NVLINK5_NONFATAL"),
            selects=Selection.of("bad_node", [p + "*" for p in NVLINK5_PREFIXES]))
def handle_xid_burst_events(context):
    """Decode NVLink5 Xid bursts (144-150): per node, one event per decoded symptom
    (fatal: bad; nonfatal: interesting), carrying unit, link and error words; the raw
    Xid events of the burst become interesting evidence."""
    stream = context.event_stream
    raw = context.selected()  # the raw NVLink5 Xid events (bad)
    decoded_first = {}
    for e in raw:
        xid = int(e.symptom.split("-")[1])
        err = decode(xid, e.fields.get("body", "") or e.datum or "")
        if err is None:
            continue  # not the NVLink5 body shape: leave the raw Xid as it is
        key = (e.node, err.symptom())
        links = decoded_first.setdefault(key, {"event": e, "err": err, "links": set(), "count": 0})
        links["links"].add(err.link)
        links["count"] += 1
        stream.demote([e], reason=f"decoded as {err.symptom()}")
    for (node, symptom), info in decoded_first.items():
        err = info["err"]
        fields = dict(err.fields())
        fields.update({"links": sorted(info["links"]), "burst_size": info["count"], "pci": info["event"].fields.get("pci")})
        stream.add(EventSpec(type="bad_node" if err.fatal else "interesting_node", symptom=symptom, node=node,
                             fields=fields), cause=info["event"],
                   reason=f"{info['count']} Xid {err.xid} line(s), unit {err.unit}, link(s) {sorted(info['links'])}")


@filter_def(name="DecodeXid74Registers", author=AUTHOR, priority=FilterPriority.EARLY + 1,
            symptoms=(XID74_SIGNAL_INTEGRITY, XID74_ECC_PARITY),
            selects=Selection.of("bad_node", ["XID-74-NVLINK_ERROR"]))
def decode_xid74_registers(context):
    """Split Xid 74 (`NVLink: fatal error detected on link N(REG0, ..., REG6)`) by its
    register bits (REFERENCE 1.3): REG0 bit 21/22 is link signal integrity, REG0 bit 4/5
    or REG2 bit 0/1/2/6 is NVLink ECC/parity.  Per node, one bad event per decoded
    symptom, carrying links, registers and bits; each decoded raw Xid 74 becomes
    interesting evidence.  A body with no deciding bit keeps its raw XID-74 event."""
    stream = context.event_stream
    first = {}
    for e in context.selected():
        err = decode_xid74(e.fields.get("body", "") or e.datum or "")
        if err is None or not err.symptoms:
            continue
        for symptom in err.symptoms:
            info = first.setdefault((e.node, symptom), {"event": e, "err": err, "links": set(), "bits": set(), "count": 0})
            info["links"].add(err.link)
            info["bits"].update(err.bits)
            info["count"] += 1
        stream.demote([e], reason="decoded as " + " + ".join(err.symptoms))
    for (node, symptom), info in first.items():
        fields = dict(info["err"].fields())
        fields.update({"links": sorted(info["links"]), "bits": sorted(info["bits"]), "count": info["count"],
                       "pci": info["event"].fields.get("pci")})
        stream.add(EventSpec(type="bad_node", symptom=symptom, node=node, fields=fields),
                   cause=info["event"],
                   reason=f"{info['count']} Xid 74 line(s), link(s) {sorted(info['links'])}, bits {sorted(info['bits'])}")
