"""The read-only dashboard over the SQLite result store: server-rendered HTML
(no JavaScript, no build step, works offline), an SVG timeline per job, a fleet
page, and the same numbers as JSON.  `app` builds the ASGI app from the page
modules in `pages/` (`site`: the registry), `html` is what pages share,
`timeline` draws a job's evidence.

Must not write to the store, and must not import the orchestrator, the
connectors or the CLI.
"""
