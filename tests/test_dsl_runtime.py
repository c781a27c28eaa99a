"""Behaviour of declarative DSL filters, refiners and collectors in the engine.

A small corpus written entirely in the DSL, with job-level `case` blocks that
exercise each construct (and a counter-case where the rule must not act); the
cases run through the real engine (`rulekit.analysis.testing.run_job_tests`)."""
from __future__ import annotations

import pytest

from rulekit.rules.loader import load_corpus
from rulekit.inputs.observation import Observation
from rulekit.engine.session import Session
from rulekit.analysis.testing import job_from_mapping, run_job_tests

CORPUS = r'''
author "tests"

symptom "GPU_DEAD" { outcome hardware sub_domain gpu rank 900 blame node }
symptom "GPU_WARN" { outcome hardware sub_domain gpu rank 300 blame node }
symptom "NET_DOWN" { outcome network sub_domain infiniband rank 800 blame link }
symptom "NET_FLAP" { outcome network sub_domain infiniband rank 200 blame link }
symptom "APP_CRASH" { outcome application sub_domain python rank 100 blame workload }
symptom "BURST" { outcome hardware sub_domain nvlink rank 950 blame node }
symptom "NOISE" { outcome unknown sub_domain node rank 50 blame none }

extractor GpuDead { match /GPU DEAD/ emit bad_node "GPU_DEAD" }
extractor GpuWarn { match /GPU WARN (?P<n>\d+)/ emit bad_node "GPU_WARN" fields { n = "{n}" } }
extractor NetDown { match /NET DOWN/ emit bad_node "NET_DOWN" }
extractor NetFlap { match /NET FLAP/ emit interesting_node "NET_FLAP" }
extractor AppCrash { match /APP CRASH/ emit bad_node "APP_CRASH" }
extractor Noise { match /NOISE HERE/ emit bad_node "NOISE" }
extractor Version { match /version (?P<v>[\d.]+)/ emit data fields { version = "{v}" } }

filter DemoteNoise LATE { demote "NOISE" }
filter AppAfterGpu STANDARD { demote "APP_*" when "GPU_DEAD" on same node }
filter PromoteFlap STANDARD + 1 { promote "NET_FLAP" unless "NET_DOWN" anywhere }
filter DropLogin MID { discard "NET_DOWN" on node "login" }
filter WarnBurst EARLY {
  for each node with at least 3 "GPU_WARN" {
    add bad_node "BURST" fields { count = "{count}", on = "{node}" }
    demote them
  }
}

refiner Cascade FINAL { when any "GPU_DEAD" discard "NET_*" }
refiner Prefer FINAL + 1 { prefer "GPU_WARN" over "NET_DOWN" }
refiner BurstOwnsNode FINAL + 2 { when any "BURST" on same node discard "GPU_DEAD" }

refiner NoiseIsInfra POST_OUTCOME {
  when outcome network and any "NET_FLAP" set outcome infrastructure sub_domain node
}

collector Versions {
  gather version from data unique
}
collector GpuEvents {
  gather symptom, node from "GPU_*"
}

case "demote by symptom" {
  job { id = "a", state = "FAILED", nodes = ["n1"] }
  observe syslog on "n1" { "NOISE HERE" }
  expect { bad_nodes = [], absent_symptoms = ["NOISE"] }
}
case "co-occurrence on the same node demotes" {
  job { id = "b", state = "FAILED", nodes = ["n1"] }
  observe syslog on "n1" { "GPU DEAD" "APP CRASH" }
  expect { root_cause = "GPU_DEAD", absent_symptoms = ["APP_CRASH"] }
}
case "co-occurrence on another node does not" {
  job { id = "c", state = "FAILED", nodes = ["n1", "n2"] }
  observe syslog on "n1" { "GPU DEAD" }
  observe syslog on "n2" { "APP CRASH" }
  expect { root_cause = "GPU_DEAD", symptoms = ["APP_CRASH"], bad_nodes = ["n1"], affected_nodes = ["n2"] }
}
case "promote unless: promoted" {
  job { id = "d", state = "FAILED", nodes = ["n1"] }
  observe syslog on "n1" { "NET FLAP" }
  expect { root_cause = "NET_FLAP", bad_nodes = ["n1"] }
}
case "promote unless: not promoted" {
  job { id = "e", state = "FAILED", nodes = ["n1", "n2"] }
  observe syslog on "n1" { "NET FLAP" }
  observe syslog on "n2" { "NET DOWN" }
  expect { root_cause = "NET_DOWN", bad_nodes = ["n2"], absent_symptoms = ["NET_FLAP"] }
}
case "discard on a node" {
  job { id = "f", state = "FAILED", nodes = ["login", "n1"] }
  observe syslog on "login" { "NET DOWN" }
  expect { bad_nodes = [], absent_symptoms = ["NET_DOWN"] }
}
case "burst of three becomes one event" {
  job { id = "g", state = "FAILED", nodes = ["n1", "n2"] }
  observe syslog on "n1" { "GPU WARN 1" "GPU WARN 2" "GPU WARN 3" }
  observe syslog on "n2" { "GPU WARN 4" }
  expect { root_cause = "BURST", root_node = "n1", bad_nodes = ["n1", "n2"] }
}
case "two are not a burst" {
  job { id = "h", state = "FAILED", nodes = ["n1"] }
  observe syslog on "n1" { "GPU WARN 1" "GPU WARN 2" }
  expect { root_cause = "GPU_WARN", absent_symptoms = ["BURST"] }
}
case "cascade discards job-wide and per node" {
  job { id = "i", state = "FAILED", nodes = ["n1", "n2"] }
  observe syslog on "n1" { "GPU DEAD" }
  observe syslog on "n2" { "NET DOWN" }
  expect { root_cause = "GPU_DEAD", bad_nodes = ["n1"], absent_symptoms = ["NET_DOWN"] }
}
case "preference order beats rank" {
  job { id = "j", state = "FAILED", nodes = ["n1", "n2"] }
  observe syslog on "n1" { "GPU WARN 1" }
  observe syslog on "n2" { "NET DOWN" }
  expect { root_cause = "GPU_WARN", bad_nodes = ["n1"], absent_symptoms = ["NET_DOWN"] }
}
case "same-node refiner acts only where the trigger is" {
  job { id = "k", state = "FAILED", nodes = ["n1", "n2"] }
  observe syslog on "n1" { "GPU WARN 1" "GPU WARN 2" "GPU WARN 3" "GPU DEAD" }
  observe syslog on "n2" { "GPU DEAD" }
  expect { root_cause = "BURST", root_node = "n1", symptoms = ["GPU_DEAD"], bad_nodes = ["n1", "n2"] }
}
case "post-outcome refiner changes the outcome" {
  job { id = "m", state = "FAILED", nodes = ["n1"] }
  observe syslog on "n1" { "NET FLAP" }
  expect { outcome = "infrastructure", sub_domain = "node", root_cause = "NET_FLAP" }
}
case "post-outcome refiner leaves other outcomes alone" {
  job { id = "n", state = "FAILED", nodes = ["n1"] }
  observe syslog on "n1" { "NET DOWN" }
  expect { outcome = "network", root_cause = "NET_DOWN" }
}
case "same-node refiner removes a symptom left on no node" {
  job { id = "l", state = "FAILED", nodes = ["n1"] }
  observe syslog on "n1" { "GPU WARN 1" "GPU WARN 2" "GPU WARN 3" "GPU DEAD" }
  expect { root_cause = "BURST", absent_symptoms = ["GPU_DEAD"] }
}
'''


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    root = tmp_path_factory.mktemp("runtime")
    (root / "rules.rule").write_text(CORPUS)
    res = load_corpus([root])
    assert [str(d) for d in res.diagnostics if d.severity.value == "error"] == []
    return res.engine


def test_every_case_passes(engine):
    results = run_job_tests(engine)
    assert len(results) == CORPUS.count('\ncase "')
    assert [(r.name, r.mismatches, r.error) for r in results if not r.passed] == []


def test_rules_compile_to_the_model(engine):
    by = {r.name: r for r in engine.rules}
    assert by["WarnBurst"].priority == 1000 and by["PromoteFlap"].priority == 3001
    assert by["Prefer"].priority == 2001
    assert by["DemoteNoise"].symptoms == ("NOISE",)
    assert by["Cascade"].decl is not None and by["Cascade"].kind.value == "refiner"


def _attribute(engine, observations):
    job = job_from_mapping({"id": "col", "state": "FAILED", "nodes": ["n1", "n2"]})
    with Session(engine, job) as s:
        for node, lines in observations:
            s.ingest(Observation(source="syslog", node=node, lines=lines, label=node))
        return s.attribute()


def test_collectors(engine):
    result = _attribute(engine, [("n1", ["version 2.21.5", "GPU WARN 7", "version 2.21.5"]),
                                 ("n2", ["version 2.19.3", "GPU DEAD"])])
    col = result["collectors"]
    assert col["Versions"] == ["2.21.5", "2.19.3"]
    assert {"symptom": "GPU_DEAD", "node": "n2"} in col["GpuEvents"]
    assert {"symptom": "GPU_WARN", "node": "n1"} in col["GpuEvents"]


def test_burst_event_carries_templated_fields(engine):
    result = _attribute(engine, [("n1", ["GPU WARN 1", "GPU WARN 2", "GPU WARN 3"])])
    burst = [e for e in result["evidence"] if e["symptom"] == "BURST"]
    assert burst and burst[0]["node"] == "n1" and burst[0]["rule"] == "WarnBurst"
