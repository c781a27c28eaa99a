"""The rule DSL grammar (`rulekit.lark`) and its reference (`README.md`), shipped as package data."""
