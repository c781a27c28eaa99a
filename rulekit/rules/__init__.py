"""Rule files to a validated, immutable corpus: the rule model (IR with
source spans), the TOML, DSL (`dsl/`) and Python-plugin front-ends, family and
catalog expansion, the symptom registry, the loader and the compiled corpus
(`corpus.RuleEngine`).

May import the core and `rulekit.extract`; must not import `engine`, `inputs`,
`analysis`, `service`, `blueprint` or `cli`.
"""
