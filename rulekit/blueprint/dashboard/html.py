"""What every dashboard page shares: the frame (header, navigation from the page
registry, inline CSS), escaping helpers, and the one place each kind of link is
made (`job_href`, `node_href`, `context_href`), so a page that moves is changed
once.  Plain server-rendered HTML, no script, no external asset.  Pure: data in,
text out; every value is escaped.
"""
from __future__ import annotations

from datetime import datetime, timezone
from html import escape
from typing import Any, Iterable, Sequence
from urllib.parse import quote, urlencode

CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:0;color:#222}
header{background:#23313f;color:#fff;padding:10px 20px}header a{color:#fff;margin-right:16px;text-decoration:none}
header a.here{border-bottom:2px solid #fff}
main{padding:16px 20px}table{border-collapse:collapse;margin:8px 0 18px}td,th{border:1px solid #ddd;padding:4px 8px;
text-align:left;vertical-align:top}th{background:#f4f6f8}.mono{font-family:ui-monospace,monospace;font-size:12px}
.outcome{font-weight:bold;text-transform:uppercase}.o-hardware,.o-network{color:#c0392b}.o-application{color:#8e44ad}
.o-timeout,.o-cancelled{color:#7f8c8d}.o-success{color:#27ae60}.warn{background:#fff4e5;border:1px solid #f0ad4e;
padding:8px 12px;margin:8px 0}.bad{color:#c0392b;font-weight:bold}form label{margin-right:10px}
.ok{color:#27ae60}.failed{color:#c0392b;font-weight:bold}.empty{color:#b9770e}
.root{border:2px solid #c0392b;border-radius:6px;padding:10px 14px;margin:10px 0 16px;max-width:1100px}
.root h2{margin:0 0 6px;font-size:16px}.root .act{font-weight:bold}.command{background:#1e262e;color:#e8eef3;
padding:8px 10px;border-radius:4px;white-space:pre-wrap;word-break:break-all;margin:6px 0;user-select:all}
.muted{color:#6b7785}.demoted{color:#8a5a00}.nt{color:#9aa5b1}tr.hit td{background:#fff1cc}
.lines td.n{color:#6b7785;text-align:right}.lines td{border:none;padding:1px 8px;white-space:pre-wrap}
.legend span{margin-right:14px}.dot{display:inline-block;width:10px;height:10px;border-radius:50%;
vertical-align:middle;margin-right:4px}
"""

# (title, href, order) of every page in the header; filled by the page registry (`site.NAV`)
NAV: list[tuple[str, str, int]] = []


def page(title: str, body: str, here: str = "") -> str:
    links = "".join(f"<a href='{escape(href)}'{' class=here' if href == here else ''}>{escape(t)}</a>"
                    for t, href, _ in sorted(NAV, key=lambda n: n[2]))
    return (f"<!doctype html><html lang=en><head><meta charset=utf-8><title>{escape(title)} · rulekit</title>"
            f"<style>{CSS}</style></head><body><header><strong>rulekit</strong> &nbsp; {links}</header>"
            f"<main>{body}</main></body></html>")


def when(ts: float | None) -> str:
    return datetime.fromtimestamp(ts, timezone.utc).strftime("%Y-%m-%d %H:%M:%SZ") if ts else "—"


def job_href(key: str) -> str:
    return "/jobs/" + quote(key, safe="")


def node_href(node: str) -> str:
    """Where a node name links: the fleet page of that node (its jobs, its record)."""
    return "/fleet/node/" + quote(node, safe="")


def node_link(node: str | None, cls: str = "") -> str:
    if not node:
        return "<span class=muted>(job)</span>"
    c = f" class='{cls}'" if cls else ""
    return f"<a{c} href='{escape(node_href(node))}'>{escape(node)}</a>"


def context_href(key: str, source: str, line: int) -> str:
    """The raw lines around `source:line` of a stored result (served from the store)."""
    return f"{job_href(key)}/context?{urlencode({'source': source, 'line': line})}"


def outcome(o: str | None) -> str:
    return f"<span class='outcome o-{escape(o or 'none')}'>{escape(o or 'not attributed')}</span>"


def symptoms(xs: Iterable[str]) -> str:
    return ", ".join(f"<span class=mono>{escape(s)}</span>" for s in xs) or "—"


def select(name: str, options: Iterable[str], current: str | None) -> str:
    opts = "".join(f"<option value='{escape(o)}'{' selected' if o == current else ''}>{escape(o)}</option>"
                   for o in options)
    return f"<label>{name} <select name='{name}'><option value=''>any</option>{opts}</select></label>"


def table(cls: str, head: Sequence[str], rows: Iterable[str]) -> str:
    return (f"<table class='{cls}'><tr>" + "".join(f"<th>{escape(h)}</th>" for h in head) + "</tr>"
            + "".join(rows) + "</table>")


def text(v: Any) -> str:
    return escape(str(v)) if v is not None and v != "" else "—"


def error_page(status: int, message: str) -> str:
    return page(f"Error {status}", f"<h1>Error {status}</h1><p>{escape(message)}</p><p><a href='/jobs'>back to the jobs</a></p>")
