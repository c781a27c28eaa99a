"""Filters named by the attribution spec: HandleXidBurstEvents (EARLY) decodes
bursts of NVLink5 Xids into one attributable event per node and symptom.
DemoteInsufficientPermissions (LATE) is declarative: see cascades.rule."""
from rulekit.plugin import EventSpec, FilterPriority, filter_def

from .common.nvlink5 import decode

AUTHOR = "rulekit core"
NVLINK5_PREFIXES = tuple(f"XID-{n}-" for n in range(144, 151))


@filter_def(name="HandleXidBurstEvents", author=AUTHOR, priority=FilterPriority.EARLY,
            symptoms=("XID-149-NVLINK_SIGNAL_INTEGRITY", "XID-149-NVLINK_NETIR_FATAL", "XID-144-NVLINK_SAW_FATAL",
                      "XID-145-NVLINK_RLW_FATAL", "XID-146-NVLINK_TLW_FATAL", "XID-147-NVLINK_TREX_FATAL",
                      "XID-148-NVLINK_NVLPW_CTRL_FATAL", "XID-150-NVLINK_MSE_FATAL", "XID-NVLINK5_NONFATAL"))
def handle_xid_burst_events(context):
    """Decode NVLink5 Xid bursts (144-150): per node, one event per decoded symptom
    (fatal: bad; nonfatal: interesting), carrying unit, link and error words; the raw
    Xid events of the burst become interesting evidence."""
    stream = context.event_stream
    raw = [e for e in stream.bad_events() if e.symptom and e.symptom.startswith(NVLINK5_PREFIXES)]
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
        stream.demote([e], rule="HandleXidBurstEvents", reason=f"decoded as {err.symptom()}")
    for (node, symptom), info in decoded_first.items():
        err = info["err"]
        fields = dict(err.fields())
        fields.update({"links": sorted(info["links"]), "burst_size": info["count"], "pci": info["event"].fields.get("pci")})
        stream.add(EventSpec(type="bad_node" if err.fatal else "interesting_node", symptom=symptom, node=node,
                             fields=fields), rule="HandleXidBurstEvents", cause=info["event"],
                   reason=f"{info['count']} Xid {err.xid} line(s), unit {err.unit}, link(s) {sorted(info['links'])}")
