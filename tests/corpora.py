"""Rule corpora several test modules share (imported like `frgen` and `http_fakes`).

ONE_TESTED_RULE: the smallest TOML corpus that checks and tests clean -- one
symptom (FOO_FAULT) and one extractor (Foo) with a positive and a near-miss test.
Tests that need a broken corpus derive it from this text (`.replace(...)`)."""

ONE_TESTED_RULE = '''
[[symptom]]
name = "FOO_FAULT"
outcome = "hardware"
sub_domain = "gpu"
rank = 10
blame = "node"
[[extractor]]
name = "Foo"
author = "t"
match_re = 'foo fault'
emit = { type = "bad_node", symptom = "FOO_FAULT" }
[[extractor.test]]
line = "foo fault"
[[extractor.test]]
line = "bar"
expect = "nothing"
'''
