"""The dashboard's pages, one module each (`routes(site)`, optional `NAV`); found by
`rulekit.blueprint.dashboard.site.discover`.  A new page is a new module here."""
