"""Fixture corpus of the language server tests: a Python plugin."""
from rulekit.plugin import FilterPriority, demote_bad_by_symptom, filter_def, register_symptom

register_symptom("HOST_OOM", outcome="infrastructure", sub_domain="host_oom", rank=700, blame="workload", docs="Kernel OOM killer.")


@filter_def(name="DemoteHostOom", author="lsp tests", priority=FilterPriority.STANDARD, symptoms=("HOST_OOM",))
def demote_host_oom(context):
    demote_bad_by_symptom(context.event_stream, {"HOST_OOM"}, "DemoteHostOom")
