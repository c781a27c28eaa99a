"""Pure analysis of a rule corpus for the toolkit commands and the language server:
`check` (load + validate), `lint` (regex lint over the acceleration structure),
`coverage` (what the tests exercise), `explain` (attribution traces) and the test
runner wrapper.  Returns Diagnostics and plain data; renders nothing, imports no
CLI library (typer / rich), writes no files (except `update`, which the CLI calls
on the user's explicit `--update`).

May import the core, `extract`, `rules`, `inputs` and `engine`; must not import
`service`, `blueprint` or `cli` (the language server, `rulekit_lsp`, sits on
this group).
"""
