"""rulekit_lsp: the rulekit language server (`rulekit lsp`).

A thin pygls 2.x protocol layer (`server.py`) over pure analysis: the workspace
index (`workspace.py`), per-feature pure functions (`features/`), and the one
conversion module (`convert.py`) that knows 0-based lines and UTF-16 columns.
Nothing in `rulekit/` imports this package.
"""
__all__ = ["__version__"]
__version__ = "0.1.0"
