"""Inlay hints on a sample log open in the editor (`*.log` under an examples
folder): for each line some extractor matches, which rule(s) matched and the
symptom they emit.  Lines no rule matches get nothing.  Pure over the corpus
and the text; no LSP types.
"""
from __future__ import annotations

from pathlib import Path

from rulekit_lsp.features import InlayHint
from rulekit_lsp.workspace import Corpus


def is_sample_log(path: str, example_folders: tuple[str, ...]) -> bool:
    p = Path(path)
    return p.suffix == ".log" and any(part in example_folders for part in p.parts[:-1])


def source_of(path: str) -> str:
    parts = Path(path).parts
    return "syslog" if "syslog" in parts else "scheduler" if "scheduler" in parts else "applog"


def matches(corpus: Corpus, path: str, text: str) -> dict[int, list[tuple[str, str | None]]]:
    """1-based line -> [(rule name, symptom)] for every extractor that matches the line."""
    engine = corpus.analyze().engine()
    try:
        plan = engine.scan_plan(source_of(path), "text")
        data = text.encode("utf-8", "surrogatepass")  # a lone surrogate a client sent: its 3 bytes
        hits = plan.scanner.scan(data if data.endswith(b"\n") else data + b"\n")
    except Exception:  # noqa: BLE001 - a corpus whose patterns cannot be compiled gives no hints
        return {}
    starts: list[int] = []
    pos = 0
    for line in data.split(b"\n"):
        starts.append(pos)
        pos += len(line) + 1
    import bisect

    out: dict[int, list[tuple[str, str | None]]] = {}
    for start, _end, idx, groups in hits:
        ln = bisect.bisect_right(starts, start)
        rule = plan.rules[idx]
        emit = getattr(rule, "emit", None)
        sym = emit.symptom if emit is not None else None
        if sym and "{" in sym:
            try:
                sym = sym.format_map({**dict(getattr(rule, "lookup", ())), **{k: v for k, v in groups.items() if v}})
            except (KeyError, ValueError, IndexError):
                pass
        out.setdefault(ln, []).append((rule.name, sym))
    return out


def inlay_hints(corpus: Corpus, path: str, text: str, first_line: int = 1, last_line: int | None = None) -> list[InlayHint]:
    lines = text.split("\n")
    last = min(last_line or len(lines), len(lines))
    out = []
    for ln, found in sorted(matches(corpus, path, text).items()):
        if not (first_line <= ln <= last):
            continue
        label = "← " + ", ".join(f"{r}" + (f" ({s})" if s else "") for r, s in found)
        out.append(InlayHint(ln, len(lines[ln - 1]) + 1, label, "matched by " + ", ".join(r for r, _ in found)))
    return out
