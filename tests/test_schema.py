"""`rulekit schema`: the JSON Schema of TOML rule files, generated from the
front-end's key sets and the model's vocabularies, shipped in the package and
associated with rule files by the repo's taplo.toml.  Every bundled TOML file
validates; a broken one fails at the keys the loader would complain about."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import jsonschema
import pytest

from rulekit.rules import schema as schema_mod
from rulekit.rules import toml_frontend as fe
from rulekit.rules.loader import bundled_rules_path

REPO = Path(__file__).resolve().parent.parent
BROKEN = '''
[[extractor]]
name = "A"
matchre = 'x'
emit = { type = "bad_nodes", symptom = "X" }
[[symptom]]
name = "X"
outcome = "hardwar"
sub_domain = "gpu"
rank = "1"
'''


def _errors(kind: str, data: dict) -> list[jsonschema.ValidationError]:
    v = jsonschema.Draft202012Validator(schema_mod.schema(kind))
    return sorted(v.iter_errors(data), key=lambda e: list(e.path))


def test_schemas_are_valid_json_schema():
    for kind in schema_mod.SHIPPED:
        jsonschema.Draft202012Validator.check_schema(schema_mod.schema(kind))


def test_shipped_copies_are_the_generated_ones():
    for kind, name in schema_mod.SHIPPED.items():
        shipped = (schema_mod.SCHEMA_DIR / name).read_text("utf-8")
        assert shipped == schema_mod.dumps(kind), f"{name} is stale: run `rulekit schema --write`"


@pytest.mark.parametrize("path", sorted(bundled_rules_path().glob("*.toml")), ids=lambda p: p.name)
def test_every_bundled_toml_file_validates(path):
    kind = "tests" if path.name.endswith(".test.toml") else "rules"
    errs = _errors(kind, tomllib.loads(path.read_text("utf-8")))
    assert not errs, [f"{list(e.path)}: {e.message}" for e in errs]


def test_a_broken_rule_file_fails_where_the_loader_would():
    errs = _errors("rules", tomllib.loads(BROKEN))
    msgs = " | ".join(f"{list(e.path)}: {e.message}" for e in errs)
    assert "'matchre' was unexpected" in msgs
    assert "'match_re' is a required property" in msgs
    assert "'bad_nodes' is not one of" in msgs
    assert "'hardwar' is not one of" in msgs
    assert "'1' is not of type 'integer'" in msgs


def test_a_broken_job_test_file_fails():
    errs = _errors("tests", tomllib.loads('[[case]]\nname = "c"\n[case.expect]\noutcome = "hardware"\nroot = "X"\n'))
    assert any("'root' was unexpected" in e.message for e in errs)


def test_generation_follows_the_front_end_keys(monkeypatch):
    monkeypatch.setattr(fe, "EXTRACTOR_KEYS", fe.EXTRACTOR_KEYS | {"severity"})
    with pytest.raises(KeyError, match="severity"):
        schema_mod.rules_schema()


def test_cli_prints_the_schema():
    for kind in ("rules", "tests"):
        p = subprocess.run([sys.executable, "-m", "rulekit", "schema", "--kind", kind], capture_output=True,
                           text=True, timeout=60)
        assert p.returncode == 0 and json.loads(p.stdout) == schema_mod.schema(kind)
    p = subprocess.run([sys.executable, "-m", "rulekit", "schema", "--kind", "x"], capture_output=True, text=True)
    assert p.returncode == 2 and "unknown schema kind" in p.stderr


def test_taplo_config_associates_rule_files_with_the_schemas():
    cfg = tomllib.loads((REPO / "taplo.toml").read_text())
    paths = {r["schema"]["path"] for r in cfg["rule"]}
    assert paths == {f"rulekit/data/{n}" for n in schema_mod.SHIPPED.values()}
    assert all((REPO / p).is_file() for p in paths)


def _taplo() -> str:
    exe = shutil.which("taplo") or str(Path(sys.executable).parent / "taplo")
    if not Path(exe).exists():
        pytest.fail("taplo is a test dependency (pip install -e '.[test]')")
    return exe


def test_taplo_validates_bundled_rules_and_rejects_a_broken_file(tmp_path):
    """The real editor-side validator (taplo, the engine of Even Better TOML) with the repo's config."""
    exe = _taplo()
    ok = subprocess.run([exe, "check", *[str(p) for p in sorted((REPO / "bundled_rules").glob("*.toml"))]],
                        cwd=REPO, capture_output=True, text=True, timeout=120)
    assert ok.returncode == 0, ok.stderr
    # a user's repo laid out like ours: the config and schemas copied, a rules/ folder
    (tmp_path / "rulekit" / "data").mkdir(parents=True)
    shutil.copy(REPO / "taplo.toml", tmp_path / "taplo.toml")
    for name in schema_mod.SHIPPED.values():
        shutil.copy(schema_mod.SCHEMA_DIR / name, tmp_path / "rulekit" / "data" / name)
    (tmp_path / "rules").mkdir()
    bad = tmp_path / "rules" / "broken.toml"
    bad.write_text(BROKEN)
    res = subprocess.run([exe, "check", str(bad)], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert res.returncode != 0 and "matchre" in res.stderr and "bad_nodes" in res.stderr, res.stderr
    (tmp_path / "rules" / "jobs.test.toml").write_text('[[case]]\nname = "c"\nexpect = { outcom = "x" }\n')
    res = subprocess.run([exe, "check", str(tmp_path / "rules" / "jobs.test.toml")], cwd=tmp_path,
                         capture_output=True, text=True, timeout=120)
    assert res.returncode != 0 and "outcom" in res.stderr, res.stderr
