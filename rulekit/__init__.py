"""rulekit: rule engine and toolkit for workload-centric failure attribution."""
__version__ = "0.1.0"
