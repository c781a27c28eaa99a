"""The one place where untrusted names become paths, query text or URL segments.

Scheduler data is untrusted: node names, job ids, user and job names are chosen
by users or by a remote server.  Every template a connector fills with them goes
through here:

- `path_under(base, template, attempt, node)`: expand every placeholder, then
  `resolve()` and check the result is inside the connector's root (the part of
  the template before its first placeholder), as pip and tarfile check archive
  members.  A value with a path separator, NUL, or that is `.`/`..`, is refused
  before it is used (`UnsafeName`).
- `glob_under(...)`: the same for a glob pattern; the values are escaped, so a
  `*` in a node name matches only that name.
- `render_query(...)`: values substituted into LogQL / PromQL / label selectors
  may not hold quotes, backslashes, braces or control characters (a value that
  closes the string would widen the query to other nodes' data).
- `url_segment(value)`: one percent-encoded URL path segment, never `.`/`..`.

A refusal is an `UnsafeName` (a `ConnectorError`): the connector records it as
its fault and goes on with the other names.  No I/O beyond `resolve()`.
"""
from __future__ import annotations

import glob as _glob
import re
import urllib.parse
from pathlib import Path

from rulekit.blueprint.model import Attempt, ConnectorError, render, template_values

# placeholders whose values come from outside (scheduler data, a server's answer)
UNTRUSTED = ("node", "job_id", "job_name", "user", "namespace", "attempt")
_ANY = re.compile(r"\{(" + "|".join(UNTRUSTED) + r")\}")
_QUERY_BAD = re.compile(r"[\"'`\\{}\x00-\x1f\x7f]")
MAX_NAME = 256  # characters of one substituted name


class UnsafeName(ConnectorError):
    """A name from scheduler data or a server that would escape its place."""


def check_name(what: str, value: str) -> str:
    """`value` as one path component, or UnsafeName."""
    if not value:
        raise UnsafeName(f"refused an empty {what} in a path")
    shown = value[:80].encode("unicode_escape").decode("ascii")
    if "\0" in value or "/" in value or "\\" in value:
        raise UnsafeName(f"refused {what} {shown!r}: a name must not hold a path separator or NUL")
    if value in (".", ".."):
        raise UnsafeName(f"refused {what} {shown!r}: a name must not be `.` or `..`")
    if len(value) > MAX_NAME:
        raise UnsafeName(f"refused {what} {shown!r}…: longer than {MAX_NAME} characters")
    return value


def _values(template: str, attempt: Attempt, node: str | None, check) -> dict[str, str]:
    values = template_values(attempt, node)
    for name in set(_ANY.findall(template)):
        values[name] = check(_label(name), values[name])
    return values


def _label(name: str) -> str:
    return {"node": "node name", "job_id": "job id", "job_name": "job name", "user": "user name"}.get(name, name)


def fixed_root(base: Path, template: str) -> Path:
    """The part of a path template before its first placeholder, under `base`, resolved:
    what every expansion of the template must stay inside."""
    parts = Path(template).parts
    fixed: list[str] = []
    for p in parts:
        if "{" in p:
            break
        fixed.append(p)
    root = base.joinpath(*fixed) if fixed else base
    return root.resolve()


def path_under(base: Path, template: str, attempt: Attempt, node: str | None = None) -> Path:
    """`base / template` expanded and resolved; UnsafeName when a value is not a plain
    name or the result is not inside `fixed_root(base, template)`."""
    values = _values(template, attempt, node, check_name)
    text = render(template, attempt, node, values)
    path = (base / text).resolve()
    root = fixed_root(base, template)
    if not path.is_relative_to(root):
        raise UnsafeName(f"refused path {text!r}: it resolves outside {root}")
    return path


def glob_pattern(template: str, attempt: Attempt, node: str | None = None) -> str:
    """A glob template expanded with each value checked and escaped (`*` matches itself)."""
    values = _values(template, attempt, node, check_name)
    return render(template, attempt, node, {k: _glob.escape(v) for k, v in values.items()})


def inside(path: Path, root: Path) -> bool:
    """Whether `path`, symlinks followed, is inside the (resolved) `root`."""
    try:
        return path.resolve().is_relative_to(root)
    except (OSError, RuntimeError):  # a symlink loop
        return False


def check_query_value(what: str, value: str) -> str:
    if _QUERY_BAD.search(value) or len(value) > MAX_NAME:
        shown = value[:80].encode("unicode_escape").decode("ascii")
        raise UnsafeName(f"refused {what} {shown!r} in a query: quotes, backslashes, braces, control "
                         f"characters and names over {MAX_NAME} characters could change what the query selects")
    return value


def render_query(template: str, attempt: Attempt, node: str | None = None) -> str:
    """A LogQL / PromQL / label-selector template with its untrusted values checked."""
    values = _values(template, attempt, node, check_query_value)
    return render(template, attempt, node, values)


def url_segment(value: str, what: str = "name") -> str:
    """One URL path segment (namespace, pod name) percent-encoded; `.`/`..` and empty refused."""
    if value in ("", ".", ".."):
        raise UnsafeName(f"refused {what} {value!r} in a URL path")
    return urllib.parse.quote(value, safe="")
