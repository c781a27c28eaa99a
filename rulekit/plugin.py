"""The Python plugin API for rule files (public face): decorators, symptom
registration and the helpers rule bodies share.

User plugins import from here (`from rulekit.plugin import filter_def, ...`);
the implementation lives in `rulekit.rules.plugins`, which the loader binds
to each plugin file while it executes.  The order of evidence and order in time
(`order_key`, `lead`, `all_before`, `Before`, `job_window`, `event_seconds`,
`time_source`) are the engine's own (`rulekit.engine.ordering`, docs/time.md); a rule
passes `context.clock_skew` as their `skew` and `job_window(context.job)` as their
`window`.
"""
from rulekit.rules.plugins import *  # noqa: F401,F403
from rulekit.rules.plugins import __all__  # noqa: F401
from rulekit.engine.ordering import event_order_key as order_key  # noqa: E402,F401  the engine's one event order
from rulekit.engine.ordering import Before, all_before, job_window, lead, time_source  # noqa: E402,F401
from rulekit.engine.ordering import seconds as event_seconds  # noqa: E402,F401

__all__ = [*__all__, "order_key", "Before", "all_before", "job_window", "lead", "time_source", "event_seconds"]
