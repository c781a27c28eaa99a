"""The fleet page's node-state section: every node with a record (quarantine proposed,
suspect, cleared; healthy ones as one line), the reasons, the circuit breaker and the
proposed drains.  Pure: the state document (`FleetState.to_dict()` plus proposals) in,
HTML text out; every value is escaped.  Styles come from the page (`html.CSS`).
"""
from __future__ import annotations

from datetime import datetime, timezone
from html import escape
from typing import Any
from urllib.parse import quote

STATE_CLASS = {"quarantine": "bad", "suspect": "empty", "cleared": "ok", "healthy": "ok"}


def _when(ts: float | None) -> str:
    return datetime.fromtimestamp(ts, timezone.utc).strftime("%Y-%m-%d %H:%M:%SZ") if ts else "—"


def states_section(doc: dict[str, Any]) -> str:
    c = doc["counts"]
    b = [f"<h2>Node states</h2><p>as of {_when(doc['as_of'])}: <span class=bad>{c['quarantine']} quarantine "
         f"proposed</span>, <span class=empty>{c['suspect']} suspect</span>, {c['cleared']} cleared, "
         f"{c['healthy']} healthy (history of {doc['window_s'] / 86400:g} days)</p>"]
    br = doc["breaker"]
    if br["tripped"]:
        b.append(f"<div class=warn>{escape(br['message'])}</div>")
    listed = [n for n in doc["nodes"] if n["state"] != "healthy" or n["incidents"]]
    if listed:
        b.append("<table class=states><tr><th>state</th><th>node</th><th>blamed</th><th>ambiguous</th>"
                 "<th>episodes</th><th>jobs</th><th>users</th><th>last incident</th><th>clean since</th>"
                 "<th>action</th><th>why</th></tr>")
        for n in listed:
            href = "/fleet/node/" + quote(n["node"], safe="")
            b.append(f"<tr><td class='{STATE_CLASS[n['state']]}'>{escape(n['state'])}</td>"
                     f"<td><a href='{escape(href)}'>{escape(n['node'])}</a></td><td>{n['blamed']}</td>"
                     f"<td>{n['ambiguous']}</td><td>{n['episodes']}</td><td>{len(n['jobs'])}</td>"
                     f"<td>{len(n['users']) or '—'}</td><td>{_when(n['last_incident'])}</td><td>{n['clean_since']}</td>"
                     f"<td>{escape(n['action'] or '—')}</td>"
                     f"<td>{'<br>'.join(escape(r) for r in n['reasons'])}</td></tr>")
        b.append("</table>")
    healthy = [n["node"] for n in doc["nodes"] if n["state"] == "healthy" and not n["incidents"]]
    if healthy:
        b.append(f"<p class=ok>healthy: {escape(', '.join(healthy[:50]))}"
                 f"{escape(f' and {len(healthy) - 50} more') if len(healthy) > 50 else ''}</p>")
    if doc["proposals"]:
        b.append("<h3>Proposed drains (shadow mode: nothing is applied here; <code>rulekit fleet --apply</code> "
                 "drains through Slurm)</h3><pre class=mono>")
        b.append("\n".join(escape(p.get("command") or f"{p['node']}: refused ({p.get('refused')})")
                           for p in doc["proposals"]))
        b.append("</pre>")
    b.append("<p><a href='/api/fleet/states'>node states as JSON</a> · <a href='/metrics'>Prometheus metrics</a></p>")
    return "".join(b)
