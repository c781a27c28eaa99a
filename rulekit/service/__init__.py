"""The Attribution Service: normalized observations in, one verdict per job
out, over HTTP.  Rules are never uploaded; the corpus is loaded at start.

May import everything below it (core, `extract`, `rules`, `inputs`,
`engine`, `analysis`); must not import `blueprint` or `cli`.
"""
