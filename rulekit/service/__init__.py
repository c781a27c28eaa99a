"""The Attribution Service: normalized observations in, one verdict per job
out, over HTTP (FastAPI on uvicorn; docs/service.md).  Rules are never
uploaded; the corpus is loaded at start and its tests run before serving.

May import everything below it (core, `extract`, `rules`, `inputs`,
`engine`, `analysis`); must not import `blueprint` or `cli`.
"""
