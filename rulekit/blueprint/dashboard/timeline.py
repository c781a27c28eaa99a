"""The per-node timeline picture of one result's evidence, as an SVG string.

One row per node (allocated nodes and nodes the evidence names); a marker per
evidence event at its time (red: blamed, orange: supporting, grey: other);
events without a timestamp sit in a "no time" column at the right.  Each
marker's <title> names the symptom and file:line.  Pure: result in, text out.
"""
from __future__ import annotations

from datetime import datetime, timezone
from html import escape
from typing import Any

ROW, LEFT, WIDTH, UNTIMED, TOP = 26, 130, 900, 70, 28
COLORS = {"bad": "#c0392b", "interesting": "#e67e22"}


def _t(v: str | None) -> float | None:
    if not v:
        return None
    try:
        t = datetime.fromisoformat(v.replace("Z", "+00:00"))
    except ValueError:
        return None
    return (t if t.tzinfo else t.replace(tzinfo=timezone.utc)).timestamp()


def _role(event_type: str | None) -> str:
    et = event_type or ""
    return "bad" if et.endswith(".bad") else "interesting" if et.endswith(".interesting") else "other"


def _hms(t: float) -> str:
    return datetime.fromtimestamp(t, timezone.utc).strftime("%H:%M:%S")


def timeline_svg(result: dict[str, Any]) -> str:
    v = result.get("verdict") or {}
    ctx = result.get("context") or {}
    evidence = v.get("evidence") or []
    bad = {b["node"] for b in v.get("bad_nodes") or []}
    nodes = list(ctx.get("nodes") or [])
    for e in evidence:
        if e.get("node") and e["node"] not in nodes:
            nodes.append(e["node"])
    if any(not e.get("node") for e in evidence):
        nodes.append("(job)")
    times = [t for t in (_t(e.get("timestamp")) for e in evidence) if t is not None]
    t0 = _t(ctx.get("start")) or (min(times) if times else None)
    t1 = _t(ctx.get("end")) or (max(times) if times else None)
    if times:
        t0, t1 = min([t0, *times]), max([t1, *times])  # type: ignore[type-var]
    plot = WIDTH - LEFT - UNTIMED - 20
    height = TOP + ROW * max(len(nodes), 1) + 30
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="timeline" width="{WIDTH}" height="{height}" '
           f'viewBox="0 0 {WIDTH} {height}" role="img" aria-label="evidence timeline per node">',
           '<style>text{font:12px sans-serif}.lbl{fill:#222}.bad{font-weight:bold;fill:#c0392b}</style>']
    span = (t1 - t0) if (t0 is not None and t1 is not None and t1 > t0) else None
    x_of = (lambda t: LEFT + (t - t0) / span * plot) if span else (lambda t: LEFT + plot / 2)  # type: ignore[operator]
    ux = WIDTH - UNTIMED + 10
    out.append(f'<text x="{ux}" y="16" class="lbl">no time</text>')
    if t0 is not None:
        for i in range(5):
            t = t0 + (span or 0) * i / 4
            x = x_of(t)
            out.append(f'<line x1="{x:.1f}" y1="{TOP - 6}" x2="{x:.1f}" y2="{height - 24}" stroke="#eee"/>')
            out.append(f'<text x="{x:.1f}" y="{height - 8}" text-anchor="middle" class="lbl">{_hms(t)}</text>')
    for i, n in enumerate(nodes):
        y = TOP + ROW * i + ROW / 2
        cls = "bad" if n in bad else "lbl"
        out.append(f'<text x="8" y="{y + 4:.1f}" class="{cls}">{escape(n)}</text>')
        out.append(f'<line x1="{LEFT}" y1="{y:.1f}" x2="{WIDTH - 10}" y2="{y:.1f}" stroke="#ccc"/>')
    untimed: dict[str, int] = {}
    for e in evidence:
        n = e.get("node") or "(job)"
        y = TOP + ROW * nodes.index(n) + ROW / 2
        role = _role(e.get("event_type"))
        t = _t(e.get("timestamp"))
        if t is None:
            k = untimed.get(n, 0)
            untimed[n] = k + 1
            x = ux + 6 + (k % 6) * 9
        else:
            x = x_of(t)
        where = f"{e.get('source')}:{e.get('line_num')}" if e.get("source") else "?"
        title = escape(f"{e.get('symptom')} on {n} at {e.get('timestamp') or 'unknown time'} — {where} ({e.get('rule')})")
        color = COLORS.get(role, "#888")
        r = 7 if role == "bad" else 5
        out.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{r}" fill="{color}" fill-opacity="0.85" '
                   f'data-symptom="{escape(str(e.get("symptom")))}" data-node="{escape(n)}"><title>{title}</title></circle>')
    out.append("</svg>")
    return "\n".join(out)
