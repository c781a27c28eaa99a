"""The Python plugin API for rule files (public face): decorators, symptom
registration and the helpers rule bodies share.

User plugins import from here (`from rulekit.plugin import filter_def, ...`);
the implementation lives in `rulekit.rules.plugins`, which the loader binds
to each plugin file while it executes.
"""
from rulekit.rules.plugins import *  # noqa: F401,F403
from rulekit.rules.plugins import __all__  # noqa: F401
from rulekit.engine.ordering import event_order_key as order_key  # noqa: E402,F401  the engine's one event order

__all__ = [*__all__, "order_key"]
