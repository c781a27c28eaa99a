"""The per-node timeline of one result's evidence, as an SVG string.

One row per node (the allocated nodes, then any other the evidence names, then
"(job)" for evidence on no node); a marker per evidence item at its time: red for
evidence that blames, orange for supporting evidence (demoted or interesting), grey
for the rest, a ring around the root cause.  Markers at the same place (the same
second, or closer than a marker's width) are spread across the row, and past
`STACK` of them one marker carries the count, so none hides another.  Evidence
without a timestamp sits in the "no time" column at the right.  A legend above
says all that.  Each marker's <title> names the symptom, its time, file:line, the
rule and why it was demoted.  Pure: result in, text out.
"""
from __future__ import annotations

from datetime import datetime, timezone
from html import escape
from typing import Any

from rulekit.blueprint.dashboard.html import node_href

ROW, LEFT, WIDTH, UNTIMED, TOP = 34, 140, 1000, 96, 46
COLORS = {"bad": "#c0392b", "interesting": "#e67e22", "other": "#8a949e"}
LABELS = {"bad": "blames the node", "interesting": "supporting (demoted or interesting)", "other": "other evidence"}
STACK = 3  # markers spread over one place before the last of them carries the count
OFFSETS = (0, -11, 11)  # their vertical spread within a row, in order
UNTIMED_SHOWN = 7  # markers side by side in a row's "no time" cell before the last carries the count


def parse(v: str | None) -> float | None:
    if not v:
        return None
    try:
        t = datetime.fromisoformat(v.replace("Z", "+00:00"))
    except ValueError:
        return None
    return (t if t.tzinfo else t.replace(tzinfo=timezone.utc)).timestamp()


def role(event_type: str | None) -> str:
    et = event_type or ""
    return "bad" if et.endswith(".bad") else "interesting" if et.endswith(".interesting") else "other"


def _label(t: float, days: bool) -> str:
    return datetime.fromtimestamp(t, timezone.utc).strftime("%m-%d %H:%M" if days else "%H:%M:%S")


def is_root(e: dict[str, Any], rc: dict[str, Any]) -> bool:
    return bool(rc) and role(e.get("event_type")) == "bad" and e.get("symptom") == rc.get("symptom") and \
        e.get("node") == rc.get("node")


def _legend() -> str:
    out, x = [], LEFT
    for r in ("bad", "interesting", "other"):
        out.append(f'<circle cx="{x}" cy="16" r="5" fill="{COLORS[r]}"/>'
                   f'<text x="{x + 9}" y="20" class="lbl">{escape(LABELS[r])}</text>')
        x += 30 + 7 * len(LABELS[r])
    out.append(f'<circle cx="{x}" cy="16" r="8" fill="none" stroke="#222" stroke-width="2"/>'
               f'<text x="{x + 12}" y="20" class="lbl">root cause</text>')
    x += 100
    out.append(f'<text x="{x}" y="20" class="lbl">×N: N markers at one moment</text>')
    return "".join(out)


def timeline_svg(result: dict[str, Any]) -> str:
    v = result.get("verdict") or {}
    ctx = result.get("context") or {}
    rc = v.get("root_cause") or {}
    evidence = v.get("evidence") or []
    bad = {b["node"] for b in v.get("bad_nodes") or []}
    nodes = list(ctx.get("nodes") or [])
    for e in evidence:
        if e.get("node") and e["node"] not in nodes:
            nodes.append(e["node"])
    if any(not e.get("node") for e in evidence):
        nodes.append("(job)")
    times = [t for t in (parse(e.get("timestamp")) for e in evidence) if t is not None]
    t0 = parse(ctx.get("start")) or (min(times) if times else None)
    t1 = parse(ctx.get("end")) or (max(times) if times else None)
    if times:
        t0, t1 = min([t0, *times]), max([t1, *times])  # type: ignore[type-var]
    plot = WIDTH - LEFT - UNTIMED - 20
    height = TOP + ROW * max(len(nodes), 1) + 30
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="timeline" width="{WIDTH}" height="{height}" '
           f'viewBox="0 0 {WIDTH} {height}" role="img" aria-label="evidence timeline per node">',
           '<style>text{font:12px sans-serif}.lbl{fill:#222}.bad{font-weight:bold;fill:#c0392b}'
           '.n{font:bold 10px sans-serif;fill:#fff}</style>', _legend()]
    span = (t1 - t0) if (t0 is not None and t1 is not None and t1 > t0) else None
    x_of = (lambda t: LEFT + (t - t0) / span * plot) if span else (lambda t: LEFT + plot / 2)  # type: ignore[operator]
    ux = WIDTH - UNTIMED + 10
    out.append(f'<text x="{ux}" y="{TOP - 8}" class="lbl">no time</text>')
    out.append(f'<line x1="{ux - 6}" y1="{TOP - 4}" x2="{ux - 6}" y2="{height - 24}" stroke="#bbb" stroke-dasharray="3,3"/>')
    if t0 is not None:
        days = (span or 0) > 86400
        for i in range(5):
            t = t0 + (span or 0) * i / 4
            x = x_of(t)
            out.append(f'<line x1="{x:.1f}" y1="{TOP - 6}" x2="{x:.1f}" y2="{height - 24}" stroke="#eee"/>')
            out.append(f'<text x="{x:.1f}" y="{height - 8}" text-anchor="middle" class="lbl">{_label(t, days)}</text>')
    for i, n in enumerate(nodes):
        y = TOP + ROW * i + ROW / 2
        cls = "bad" if n in bad else "lbl"
        label = f'<text x="8" y="{y + 4:.1f}" class="{cls}">{escape(n)}</text>'
        out.append(label if n == "(job)" else f'<a href="{escape(node_href(n))}">{label}</a>')
        out.append(f'<line x1="{LEFT}" y1="{y:.1f}" x2="{WIDTH - 10}" y2="{y:.1f}" stroke="#ccc"/>')
    # place every marker, then draw: markers in one place share it
    places: dict[tuple[int, int], list[dict[str, Any]]] = {}
    for e in evidence:
        n = e.get("node") or "(job)"
        t = parse(e.get("timestamp"))
        if t is None:  # the "no time" cell of the row: side by side, in evidence order
            places.setdefault((nodes.index(n), -1), []).append(e)
        else:  # one place: the same 12 px (a second on a short job)
            places.setdefault((nodes.index(n), int(x_of(t) // 12)), []).append({**e, "_x": x_of(t)})
    for (row, col), group in places.items():
        y0 = TOP + ROW * row + ROW / 2
        group.sort(key=lambda e: ({"bad": 0, "interesting": 1}.get(role(e.get("event_type")), 2)))
        if col == -1:
            for j, e in enumerate(group[:UNTIMED_SHOWN]):
                more = len(group) - UNTIMED_SHOWN + 1 if j == UNTIMED_SHOWN - 1 and len(group) > UNTIMED_SHOWN else 1
                out.append(_marker(e, ux + 6 + j * 12, y0, rc, more))
            continue
        for j, e in enumerate(group[:STACK]):
            more = len(group) - STACK + 1 if j == STACK - 1 and len(group) > STACK else 1
            out.append(_marker(e, e["_x"], y0 + OFFSETS[j], rc, more))
    out.append("</svg>")
    return "\n".join(out)


def _marker(e: dict[str, Any], x: float, y: float, rc: dict[str, Any], count: int) -> str:
    r = role(e.get("event_type"))
    n = e.get("node") or "(job)"
    where = f"{e.get('source')}:{e.get('line_num')}" if e.get("source") else "?"
    why = ""
    if e.get("demoted"):
        why = f"; demoted by {e['demoted'].get('rule')}: {e['demoted'].get('reason')}"
    more = f" (and {count - 1} more here)" if count > 1 else ""
    title = escape(f"{e.get('symptom')} on {n} at {e.get('timestamp') or 'no time'} — {where} "
                   f"({e.get('rule')}){why}{more}")
    size = 6 if r == "bad" else 5
    parts = [f'<g class="ev" data-symptom="{escape(str(e.get("symptom")))}" data-node="{escape(n)}" '
             f'data-role="{r}" data-count="{count}">']
    if is_root(e, rc):
        parts.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{size + 4}" fill="none" stroke="#222" stroke-width="2"/>')
    if count > 1:
        size = 8
    parts.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{size}" fill="{COLORS[r]}" fill-opacity="0.9"/>')
    if count > 1:
        parts.append(f'<text x="{x:.1f}" y="{y + 3.5:.1f}" text-anchor="middle" class="n">×{count}</text>')
    parts.append(f"<title>{title}</title></g>")
    return "".join(parts)
