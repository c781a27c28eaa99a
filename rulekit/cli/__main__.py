"""`python -m rulekit.cli`: the command line."""
from rulekit.cli import main

main()
