from rulekit.plugin import FilterPriority, filter_def


@filter_def(name="BadPriority", author="lsp tests", priority=FilterPriority.EARLY + 5000)
def bad_priority(context):
    pass
