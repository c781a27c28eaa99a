"""The one table of diagnostic codes.  Stable: a code is never reused.

Each entry is the check's user documentation, kept beside its code: short name,
default severity, a one-line summary, and four sections -- What it does / Why /
Example / Fix -- which `rulekit explain CODE` prints, the language server shows
on hover and links as `codeDescription`, SARIF carries as the rule's help, and
docs/codes.md lists (generated: `rulekit explain --list --format markdown`).

An Example is a whole file (`example_file` names it) that produces its code when
checked (`rulekit check`, and for RK3xx/RK4xx `rulekit lint` / `rulekit test
--coverage`); tests/test_codes_docs.py checks each one.  A code no rule file can
produce (job input, Blueprint and editor configuration, a timing) says why in
`not_from_rule_file`, and its Example is what the user would see or write.

Ranges: RK0xx input and syntax, RK1xx schema, RK2xx names and references,
RK3xx regexes and the acceleration structure, RK4xx tests, RK5xx job input, RK6xx Blueprint configuration.
Suppress a finding with a comment on the line (or the line above):
`# rulekit: ignore[RK305]` (TOML, DSL, Python alike); several codes comma-separated.
Core module: must not import anything of rulekit.
"""
from __future__ import annotations

import textwrap
from dataclasses import dataclass

SECTIONS = ("What it does", "Why", "Example", "Fix")


@dataclass(frozen=True)
class Code:
    code: str
    name: str
    severity: str  # "error" | "warning" | "info" | "hint"
    summary: str
    what: str
    why: str
    example: str
    fix: str
    example_file: str | None = None  # the file name the Example is checked as (None: see not_from_rule_file)
    example_encoding: str = "utf-8"  # how the Example is written to that file (RK001 needs a non-UTF-8 one)
    not_from_rule_file: str | None = None  # why no rule file produces this code (then the Example is not checked)

    @property
    def doc(self) -> str:
        """The four sections as text: `What it does: ...`, `Why: ...`, `Example ...:`, `Fix: ...`."""
        if self.example_file is not None:
            ex = f"Example (`{self.example_file}`):\n" + textwrap.indent(self.example.rstrip("\n"), "    ")
        else:
            ex = f"Example: {self.example}"
        return f"What it does: {self.what}\nWhy: {self.why}\n{ex}\nFix: {self.fix}"

    def sections(self) -> dict[str, str]:
        return dict(zip(SECTIONS, (self.what, self.why, self.example, self.fix)))


def _c(code: str, name: str, severity: str, summary: str, *, what: str, why: str, example: str, fix: str,
       file: str | None = None, encoding: str = "utf-8", not_from_rule_file: str | None = None) -> Code:
    strip = (lambda s: s.strip()) if file is None else (lambda s: s.lstrip("\n"))
    return Code(code, name, severity, summary, " ".join(what.split()), " ".join(why.split()), strip(example),
                " ".join(fix.split()), file, encoding, not_from_rule_file)


_GPU_LOST = '''
[[symptom]]
name = "GPU_LOST"
outcome = "hardware"
sub_domain = "gpu"
rank = 900
blame = "node"
'''
_JOB_INPUT = "job input: `rulekit attribute` / `explain` report it on a job directory, not on rule files"
_EDITOR = "the language server: it reports on a job's log open in the editor, not on a rule file"
_STORE = "the language server: it reports on the result store its settings name, not on a rule file"
_BLUEPRINT = "Blueprint configuration: `rulekit blueprint run --configs` reports it, not a rule check"

_TABLE = [
    # ---- RK0xx: input and syntax -------------------------------------------------
    _c("RK001", "unreadable-file", "error", "A rule file could not be read.",
       what="reports a rule file or folder that cannot be opened or decoded.",
       why="a corpus that silently skips a file ships without its rules.",
       example="""
author = "Jos\xe9"
""", file="rules.toml", encoding="latin-1",
       fix="check the path and permissions; rule files must be UTF-8 (this one was saved as Latin-1)."),
    _c("RK002", "toml-syntax", "error", "The TOML rule file is not valid TOML.",
       what="reports a TOML syntax error at the position the parser stopped.",
       why="nothing in a file that does not parse can be loaded.",
       example="""
[[extractor]]
name = "XidFellOff"
match_re = 'unterminated
""", file="rules.toml",
       fix="close the string, table header or array the message points at."),
    _c("RK003", "dsl-syntax", "error", "The .rule file does not follow the DSL grammar.",
       what="""reports every syntax error in a `.rule` file in one pass, with the
tokens that were expected at that point.""",
       why="""the DSL front-end recovers after each error so you see all of them at once; a declaration
with a syntax error is not loaded.""",
       example="""
extractor Broken {
  match /abc/
  emit bad_node =>
}
""", file="rules.rule",
       fix="see grammar/README.md for the construct the message names."),
    _c("RK004", "plugin-import-error", "error", "A Python rule plugin raised while it was loaded.",
       what="""reports an exception raised while executing a `.py` rule file
(syntax error, import error, or a decorator used wrongly), at the failing line.""",
       why="a plugin that cannot load registers none of its rules.",
       example="""
raise RuntimeError("this plugin fails while loading")
""", file="plugin.py",
       fix="run the file's code and fix the exception shown."),
    _c("RK005", "no-rules-found", "warning", "A rule path holds no rule files.",
       what="""warns when a path given as a rule folder contains no top-level
`*.toml`, `*.rule` or `*.py` rule files.""",
       why="usually a wrong path; attribution with no rules diagnoses nothing.",
       example="""
The rules are in ../rules/; this folder holds only this README.
""", file="README.md",
       fix="point at the folder that holds the rule files (not at its parent)."),
    _c("RK006", "plugin-timeout", "error", "Importing a Python rule plugin did not finish within the time limit.",
       what="""reports a `.py` rule file whose import was still running when the
plugin time limit (default 10 s) ran out, at the line it was executing; the file is
imported in a child process first, so a plugin that never returns cannot hang
`check`, `test`, `attribute` or the language server.""",
       why="""a rule file runs at every load; an import that loops or waits on the network
stops every tool that loads the corpus.""",
       example="""
while True:
    pass
""", file="zz_loop.py",
       fix="""move slow work out of import time; or raise the limit with
`rulekit --plugin-timeout SECONDS` / `RULEKIT_PLUGIN_TIMEOUT` / the `pluginTimeoutMs` editor setting."""),
    _c("RK007", "plugin-output", "info", "A Python rule plugin printed while it was imported.",
       what="""reports what a `.py` rule file wrote to stdout or stderr while it was
imported; the output is captured, never mixed into rulekit's own output (a JSON report,
the language server's protocol stream).""",
       why="prints at import time are usually leftover debugging.",
       example="""
print("loaded")
""", file="noisy.py",
       fix="remove the print, or use `logging`."),
    _c("RK008", "project-file", "error", "The project file (rulekit.toml or [tool.rulekit]) is invalid.",
       what="""reports a problem in the project file every face reads its corpus from
(`rulekit.toml`, or a `[tool.rulekit]` table of `pyproject.toml`, found from the current
folder upward): TOML syntax, an unknown key, a value of the wrong type, or a rule or
example folder that does not exist.""",
       why="""the CLI, the language server, the Service and the Blueprint all load the corpus it
names; a typo there would silently load another corpus (the bundled rules alone).""",
       example='`rule = ["rules"]` in rulekit.toml (the key is `rules`)',
       not_from_rule_file="the project file, not a rule file",
       fix="""use the keys `rules` (folders), `bundled` (true/false), `examples` (folders) and the
tables `[lint]` / `[coverage]`; make the folders exist (relative to the file)."""),
    _c("RK009", "folder-named-rulekit", "warning", "A rule folder is named `rulekit`, the name of the package.",
       what="""warns when a rule folder is called `rulekit`: a script beside it that does
`import rulekit` (`python script.py`) imports the folder instead of the package, since
Python puts the script's folder first on its path.""",
       why="""the script then fails with an ImportError that does not say why (`cannot import
name 'setup_rules' from 'rulekit'`); the `rulekit` command itself is not affected.""",
       example="`rulekit check rulekit/`, where rulekit/ holds rule files",
       not_from_rule_file="the rule folder's name, not a file's content",
       fix="""name the folder `rules/` (the layout docs/rule-authoring.md shows), or run scripts
with `python -P script.py` (Python 3.11+; or `PYTHONSAFEPATH=1`), which does not put the
script's folder on the path."""),
    # ---- RK1xx: schema -----------------------------------------------------------
    _c("RK101", "unknown-key", "error", "A rule table has a key the schema does not know.",
       what="reports a key that is not part of the rule schema (often a typo).",
       why="a misspelt optional key (`sorce` for `source`) would otherwise be ignored silently.",
       example="""
[[extractor]]
name = "XidFellOff"
author = "me"
match_re = 'GPU has fallen off the bus'
sorce = "syslog"
emit = { type = "bad_node", symptom = "GPU_LOST" }
""" + _GPU_LOST, file="rules.toml",
       fix="use one of the keys listed in the message."),
    _c("RK102", "missing-key", "error", "A required key is missing.",
       what="""reports a rule or symptom that lacks a required key
(`name`, `match_re`, `emit`, `outcome`, ...).""",
       why="a rule without its pattern or its emit cannot match or say what it found; it is not loaded.",
       example="""
[[extractor]]
name = "NoPattern"
author = "me"
emit = { type = "bad_node", symptom = "GPU_LOST" }
""" + _GPU_LOST, file="rules.toml",
       fix="add the key named in the message."),
    _c("RK103", "wrong-type", "error", "A key has a value of the wrong type.",
       what="""reports a value whose type does not fit the schema
(a string where a list is expected, a float rank, ...).""",
       why="the loader cannot guess what a number means where a source name is expected; the value is not used.",
       example="""
[[extractor]]
name = "WrongType"
author = "me"
match_re = 'NVRM: Xid'
source = 42
emit = { type = "bad_node", symptom = "GPU_LOST" }
""" + _GPU_LOST, file="rules.toml",
       fix="use the type named in the message."),
    _c("RK104", "unknown-emit-type", "error", "An extractor emits an unknown event type.",
       what="""reports an `emit.type` that is not one of
`bad_node`, `interesting_node`, `bad_peers`, `data`.""",
       why="the event type decides whether a match blames a node, only informs, or feeds a plugin.",
       example="""
[[extractor]]
name = "UnknownEmit"
author = "me"
match_re = 'NCCL WARN'
emit = { type = "very_bad_node", symptom = "GPU_LOST" }
""" + _GPU_LOST, file="rules.toml",
       fix="use one of those four types."),
    _c("RK105", "bad-priority", "error", "A filter or refiner priority is not in a known stratum.",
       what="""reports a priority outside the strata of its rule type
(filters: EARLY < MID < STANDARD < LATE; refiners: SCRUB < FINAL < POST_OUTCOME)
or an unknown stratum name.""",
       why="the stratum decides when the rule runs and what it sees.",
       example="""
from rulekit.plugin import filter_def


@filter_def(name="WrongStratum", author="me", priority=99999)
def wrong_stratum(context):
    pass
""", file="filters.py",
       fix="use a stratum of the right rule type, optionally plus an offset 0..999."),
    _c("RK106", "bad-outcome", "error", "A symptom's outcome is not one of the fixed outcome words.",
       what="""reports an outcome other than hardware, network, application,
infrastructure, cancelled, timeout, success, unknown.""",
       why="the outcome is the first word of every verdict; dashboards and automation switch on these eight.",
       example="""
[[symptom]]
name = "SOLAR_FLARE"
outcome = "cosmic_rays"
sub_domain = "gpu"
rank = 10
blame = "node"
""", file="rules.toml",
       fix="pick the outcome that fits; put detail in sub_domain."),
    _c("RK107", "bad-template", "error", "An emit or family template refers to something undefined.",
       what="""reports a `{capture}` in an emit template that is not a named group of
the pattern, or a `${param}` in a family template that the member does not define.""",
       why="the event would carry a literal `{name}` instead of the captured text.",
       example=r"""
[[extractor]]
name = "BadTemplate"
author = "me"
match_re = 'Xid (?P<xid>\d+)'
emit = { type = "bad_node", symptom = "XID-{code}" }
""", file="rules.toml",
       fix="add the named group `(?P<name>...)` or the member parameter, or fix the spelling."),
    _c("RK108", "bad-test-case", "error", "An inline test case is malformed.",
       what="""reports a test case that lacks `line`, has an unknown `expect`, or
checks a capture the rule cannot produce.""",
       why="a test that cannot be run as written would never fail, and so never protect the rule.",
       example=r"""
[[extractor]]
name = "CudaError"
author = "me"
match_re = 'cuda error (?P<code>\d+)'
emit = { type = "bad_node", symptom = "GPU_LOST" }
[[extractor.test]]
line = "cuda error 3"
captures = { nosuchgroup = "3" }
""" + _GPU_LOST, file="rules.toml",
       fix="see the inline test format in README.md."),
    _c("RK109", "bad-config", "error", "A configuration value is invalid.",
       what="""reports an invalid global or editor setting (a setting of the
language server, a node-name mapping, a `--config` settings file of lint and coverage).
The default is used instead.""",
       why="a setting that silently falls back to its default makes the tool behave unlike what was asked.",
       example='`[lint] broad_rate = "high"` in the file given to `rulekit lint --config`',
       not_from_rule_file="a settings file (`rulekit lint --config`, `test --config`) or an editor setting, not a rule file",
       fix="correct the setting named in the message."),
    _c("RK110", "bad-blame", "error", "A symptom's blame or action is not one of the fixed words.",
       what="""reports a `blame` other than node, link, peer, workload, environment,
scheduler, none, or an `action` other than reset_gpu, reboot, drain_p2p, drain_and_reset,
drain_and_rma, check_link, inspect, none.""",
       why="""`bad_nodes` (what drain, reset and RMA automation acts on) lists only nodes blamed
by `node`, `link` or `peer` symptoms; a misspelt blame would silently blame nobody.""",
       example="""
[[symptom]]
name = "XID-79-GPU_FELL_OFF_BUS"
outcome = "hardware"
sub_domain = "gpu"
rank = 900
blame = "gpu"
""", file="rules.toml",
       fix="use `blame = \"node\"` (and `action = \"reboot\"`); see docs/blame.md."),
    _c("RK111", "bad-metric-rule", "error", "A metric rule's condition or duration is invalid.",
       what="""reports a metric rule whose `when` is not `AGGREGATE OP NUMBER`
(aggregates value, rate, increase; operators > >= < <= == !=), or whose `for` /
`window` is not a duration (seconds, or "90s", "5m", "1h"), or a `window` on `value`.""",
       why="a condition the engine cannot read would never fire.",
       example="""
[[metric_rule]]
name = "RetransmitStorm"
author = "me"
metric = "roce_adp_retrans"
when = "rate >> 10"
for = "a minute"
emit = { type = "interesting_node", symptom = "GPU_LOST" }
""" + _GPU_LOST, file="rules.toml",
       fix='write e.g. `when = "rate > 10"`, `for = "60s"`, `window = "5m"`.'),
    # ---- RK2xx: names and references ---------------------------------------------
    _c("RK201", "duplicate-rule", "error", "Two rules have the same name.",
       what="reports a rule name defined twice, with both locations.",
       why="rule names are the provenance of every event; they must be unique across the corpus.",
       example="""
[[extractor]]
name = "GpuLost"
author = "me"
match_re = 'GPU has fallen off the bus'
emit = { type = "bad_node", symptom = "GPU_LOST" }

[[extractor]]
name = "GpuLost"
author = "me"
match_re = 'GPU is lost'
emit = { type = "bad_node", symptom = "GPU_LOST" }
""" + _GPU_LOST, file="rules.toml",
       fix="rename one of them."),
    _c("RK202", "duplicate-symptom", "error", "A symptom is registered twice with different attributes.",
       what="reports a symptom (or alias) registered twice, with both locations.",
       why="two registrations disagree on the outcome, rank or blame; attribution would depend on load order.",
       example="""
[[symptom]]
name = "LINK_DOWN"
outcome = "hardware"
sub_domain = "gpu"
rank = 500
blame = "node"

[[symptom]]
name = "LINK_DOWN"
outcome = "network"
sub_domain = "ib"
rank = 400
blame = "link"
""", file="rules.toml",
       fix="keep one registration; use `aliases` for alternative names."),
    _c("RK203", "unregistered-symptom", "error", "A rule uses a symptom that is not registered.",
       what="""reports a symptom emitted or named by a rule that no `[[symptom]]`,
`symptom` block or `register_symptom()` call registers.""",
       why="an unregistered symptom has no outcome, sub_domain or rank, so it cannot be attributed.",
       example="""
[[extractor]]
name = "Mystery"
author = "me"
match_re = 'mystery failure'
emit = { type = "bad_node", symptom = "NOT_REGISTERED_ANYWHERE" }
""", file="rules.toml",
       fix="register it (the language server offers a code action) or fix the spelling."),
    _c("RK204", "missing-dependency", "error", "A rule requires a rule that does not exist.",
       what="reports a `requires` entry (or a DSL plugin reference) naming no known rule.",
       why="a rule that depends on another's events would silently never see them.",
       example="""
[[extractor]]
name = "NeedsGhost"
author = "me"
match_re = 'needs a ghost'
requires = ["GhostRule"]
emit = { type = "bad_node", symptom = "GPU_LOST" }
""" + _GPU_LOST, file="rules.toml",
       fix="define the rule, or remove the dependency."),
    _c("RK205", "unused-symptom", "warning", "A registered symptom is never emitted by any rule.",
       what="reports a symptom that no extractor emits and no rule names.",
       why="dead registrations make the registry lie about what the corpus can diagnose.",
       example="""
[[symptom]]
name = "NEVER_EMITTED"
outcome = "application"
sub_domain = "python"
rank = 10
blame = "workload"
""", file="rules.toml",
       fix="delete it, or write the rule that produces it."),
    _c("RK206", "unknown-plugin", "error", "A DSL rule names a Python plugin function that does not exist.",
       what="reports `uses python NAME` (or similar) where no plugin defines NAME.",
       why="the DSL rule would run without the plugin rule it builds on.",
       example="""
filter UsesGhost LATE {
  uses python NoSuchPluginFunction
}
""", file="rules.rule",
       fix="define the plugin function with its decorator, or fix the name."),
    _c("RK207", "rule-conflict", "error", "A rule conflicts with another registration.",
       what="""reports an incompatible registration (for example a family member
whose expanded name collides with an individual rule, or a symptom alias equal to
another symptom's name).""",
       why="one name would mean two things; which one a rule gets would depend on load order.",
       example="""
[[symptom]]
name = "GPU_LOST"
outcome = "hardware"
sub_domain = "gpu"
rank = 900
blame = "node"

[[symptom]]
name = "GPU_GONE"
outcome = "hardware"
sub_domain = "gpu"
rank = 800
blame = "node"
aliases = ["GPU_LOST"]
""", file="rules.toml",
       fix="rename one side."),
    _c("RK208", "missing-blame", "error", "A registered symptom does not say whom it blames.",
       what="""reports a registered symptom whose blame resolves to nothing: neither the
symptom nor any outcome rule whose prefix it has sets `blame`.""",
       why="""`bad_nodes` is what drain, GPU-reset and RMA automation acts on. Only symptoms blamed
on `node`, `link` or `peer` may put a node there; a symptom that does not say would either
drain healthy machines (a user bug on the node where it surfaced) or hide a faulty one.""",
       example="""
[[symptom]]
name = "CUDA_OOM"
outcome = "application"
sub_domain = "oom"
rank = 680
""", file="rules.toml",
       fix="""add `blame = "workload"` (TOML), `blame workload` (DSL) or `blame="workload"`
(`register_symptom`), or set it once for a family on an `[[outcome_rule]]` prefix;
docs/blame.md lists the classes and their actions."""),
    _c("RK209", "misspelled-symptom-literal", "warning", "A string in a Python plugin looks like a misspelt symptom.",
       what="""reports a string literal in a `.py` rule file that is not a registered
symptom (or alias) but is one or two edits away from one, with the name it probably means.""",
       why="""plugins name symptoms in plain strings (`stream.demote(..., "XID-79-FALLEN_OFF_THE_BU")`);
a typo there silently matches nothing.""",
       example="""
from rulekit.plugin import demote_bad_by_symptom, refiner_def, register_symptom

register_symptom("NCCL_WATCHDOG_TIMEOUT", outcome="network", sub_domain="nccl", rank=300, blame="link")


@refiner_def(name="DemoteWatchdog", author="me", priority="SCRUB")
def demote_watchdog(context):
    demote_bad_by_symptom(context.stream, ["NCCL_WATCHDOG_TIMOUT"], rule="DemoteWatchdog")
""", file="refiners.py",
       fix="correct the name, or register the symptom if it is new."),
    # ---- RK3xx: regexes and the acceleration structure ---------------------------
    _c("RK301", "invalid-regex", "error", "The pattern is not a valid regular expression.",
       what="reports a pattern that does not compile, pointing at the construct.",
       why="a rule whose pattern does not compile cannot match anything; it is not loaded.",
       example="""
[[extractor]]
name = "Unbalanced"
author = "me"
match_re = 'unbalanced (group'
emit = { type = "bad_node", symptom = "GPU_LOST" }
""" + _GPU_LOST, file="rules.toml",
       fix="correct the construct the caret points at."),
    _c("RK302", "re2-incompatible", "error", "The pattern uses a construct RE2 cannot run.",
       what="""reports lookarounds, backreferences, possessive quantifiers and other
backtracking-only constructs, pointing at the construct and saying why.""",
       why="""rules run on RE2 (linear time, no ReDoS); a rule that needs backtracking would
run on Python's `re` and could hang attribution on a crafted line.""",
       example="""
[[extractor]]
name = "Lookahead"
author = "me"
match_re = 'error(?! ignored)'
emit = { type = "bad_node", symptom = "GPU_LOST" }
""" + _GPU_LOST, file="rules.toml",
       fix="""drop the lookaround and discard the unwanted case with a second, narrower rule or a
filter; for `\\1` backreferences, match the text explicitly."""),
    _c("RK303", "unfilterable-pattern", "warning", "The pattern has no required literal the prefilter can use.",
       what="""reports an extractor whose pattern contains no literal of at least
3 bytes that every match must contain (e.g. `^[EF]\\d{4}` or `\\w+Error:`).""",
       why="""the acceleration structure narrows candidate rules by required literals; such a
rule is tried on every line that passes the gate, which slows all of extraction.""",
       example=r"""
[[extractor]]
name = "AppCode"
author = "me"
match_re = '^[EF]\d{4}'
emit = { type = "interesting_node", symptom = "GPU_LOST" }
""" + _GPU_LOST, file="rules.toml",
       fix="anchor the pattern on a distinctive literal (`NCCL WARN`, `NVRM: Xid`)."),
    _c("RK304", "weak-key", "warning", "The pattern's best required literal is very short or very common.",
       what="""reports an extractor whose rarest required literal still occurs on
many lines of the benign-log sample (or is only 3 bytes long).""",
       why="the rule becomes a candidate on most lines and is confirmed by its full regex each time.",
       example=r"""
[[extractor]]
name = "XidAny"
author = "me"
match_re = 'Xid:?\s+\d+'
emit = { type = "bad_node", symptom = "GPU_LOST" }
""" + _GPU_LOST, file="rules.toml",
       fix="make the pattern require a rarer literal."),
    _c("RK305", "broad-pattern", "warning", "The pattern matches too many lines of a benign log.",
       what="""reports an extractor whose match rate on the benign-log sample is
above the threshold (default 0.1 % of lines).""",
       why="a broad rule produces false evidence on healthy jobs and slows extraction.",
       example=r"""
[[extractor]]
name = "NcclInfo"
author = "me"
match_re = 'NCCL INFO \w+'
emit = { type = "bad_node", symptom = "GPU_LOST" }
""" + _GPU_LOST, file="rules.toml",
       fix="narrow the pattern to the failure's own wording."),
    _c("RK306", "overlapping-patterns", "warning", "Two extractors match the same line.",
       what="""reports two extractors that both match some line, with a concrete
witness line.""",
       why="""overlapping rules make attribution depend on which symptom outranks the other,
and the pair is confirmed twice on every such line.""",
       example=r"""
[[extractor]]
name = "GpuFallen"
author = "me"
match_re = 'GPU \d+ has fallen'
emit = { type = "bad_node", symptom = "GPU_LOST" }

[[extractor]]
name = "NetTimeout"
author = "me"
match_re = 'timeout on GPU \d+ has'
emit = { type = "bad_node", symptom = "GPU_LOST" }
""" + _GPU_LOST, file="rules.toml",
       fix="""narrow one pattern, or pin the intended winner with a test case on the witness
line (the language server offers this as a code action)."""),
    _c("RK307", "shadowed-pattern", "warning", "Every line one extractor matches is also matched by another.",
       what="""reports an extractor whose language is contained in another's,
saying which rule's symptom wins (higher rank) and whether the loser can ever decide
the root cause alone.""",
       why="the narrower rule adds nothing but a second confirmation on every line it matches.",
       example=r"""
[[extractor]]
name = "GpuFallenOff"
author = "me"
match_re = 'GPU (?P<gpu>\d+) has fallen off the bus'
emit = { type = "bad_node", symptom = "GPU_LOST" }

[[extractor]]
name = "GpuFallen"
author = "me"
match_re = 'GPU \d+ has fallen'
emit = { type = "bad_node", symptom = "GPU_LOST" }
""" + _GPU_LOST, file="rules.toml",
       fix="delete the subsumed rule or make the broader rule exclude its lines."),
    _c("RK308", "slow-pattern", "warning", "The rule costs more time per MB of log than the budget.",
       what="""reports an extractor whose measured cost on the benign sample is
above the per-rule budget (`cost_budget_ms_per_mb`, default 50).""",
       why="extraction time is the sum of every rule's cost; one slow rule slows every job.",
       example=r"`match_re = '.*(a|b|c)*.*(x|y)+.*timeout'` (leading `.*`, nested repetition)",
       not_from_rule_file="measured by timing the pattern on this machine: whether it exceeds the budget "
                          "depends on the hardware, so no file produces it everywhere",
       fix="avoid leading `.*`, nested repetition and huge alternations; add a literal."),
    _c("RK309", "engine-fallback", "warning", "The pattern would run on Python's re instead of RE2.",
       what="""reports a pattern that pyre2 would silently hand to Python's `re`
(for example `\\S` or `\\W` inside a character class).""",
       why="rulekit loads patterns with the fallback set to raise, so the rule would not load.",
       example=r"""
[[extractor]]
name = "ClassFallback"
author = "me"
match_re = 'value=[\S,]+ failed'
emit = { type = "bad_node", symptom = "GPU_LOST" }
""" + _GPU_LOST, file="rules.toml",
       fix="rewrite the class (`[^\\s]` -> `\\S` outside a class, or list the characters)."),
    # ---- RK4xx: tests ------------------------------------------------------------
    _c("RK401", "test-failed", "error", "An inline or job test case failed.",
       what="""reports a test case whose actual result differs from the expected
one, on the test case's own range, with expected and actual.""",
       why="the rule no longer does what its author pinned down.",
       example="""
[[extractor]]
name = "WrongExpectation"
author = "me"
match_re = 'XID 999 happened'
emit = { type = "bad_node", symptom = "GPU_LOST" }
[[extractor.test]]
line = "XID 999 happened on node-1"
symptom = "GPU_ERROR"
""" + _GPU_LOST + """
[[symptom]]
name = "GPU_ERROR"
outcome = "hardware"
sub_domain = "gpu"
rank = 500
blame = "node"
""", file="rules.toml",
       fix="fix the rule, or, if the new behaviour is right, `rulekit test --update`."),
    _c("RK402", "untested-rule", "warning", "An extractor has no inline test case.",
       what="reports an extractor with no positive test line.",
       why="""every extractor should carry at least one line it must match and one near-miss
it must not match.""",
       example="""
[[extractor]]
name = "GpuLost"
author = "me"
match_re = 'GPU has fallen off the bus'
emit = { type = "bad_node", symptom = "GPU_LOST" }
""" + _GPU_LOST, file="rules.toml",
       fix="add a `[[extractor.test]]` table (TOML) or a `test line` clause (DSL)."),
    _c("RK403", "rule-never-fires", "warning", "No test case ever makes this rule fire.",
       what="""reports a rule that none of the corpus's tests (inline, job tests,
example jobs) makes fire.""",
       why="a rule no test exercises can break, or never match, without anyone noticing.",
       example="""
[[extractor]]
name = "NeverFires"
author = "me"
match_re = 'GPU has fallen off the bus'
emit = { type = "bad_node", symptom = "GPU_LOST" }
[[extractor.test]]
line = "GPU is on the bus"
expect = "nothing"
""" + _GPU_LOST, file="rules.toml",
       fix="add a test that exercises it."),
    _c("RK404", "symptom-never-produced", "info", "No test case produces this registered symptom.",
       what="reports a registered symptom that no test case produces.",
       why="the outcome, rank and blame of a symptom no test produces are never checked end to end.",
       example="""
[[extractor]]
name = "GpuLost"
author = "me"
match_re = 'GPU has fallen off the bus'
emit = { type = "bad_node", symptom = "GPU_LOST" }
[[extractor.test]]
line = "GPU is on the bus"
expect = "nothing"
""" + _GPU_LOST, file="rules.toml",
       fix="add a test whose evidence yields the symptom."),
    _c("RK405", "test-error", "error", "A test case could not be run.",
       what="""reports a test case that raised instead of passing or failing
(a job test whose job definition is invalid, an example job missing its files).""",
       why="a test that cannot run tells nothing; it is counted as an error, not as a pass.",
       example="""
[[case]]
name = "bad job"
job = { id = "t1", state = "EXPLODED", nodes = ["node-01"] }
[case.expect]
outcome = "hardware"
""", file="jobs.test.toml",
       fix="correct the test case named in the message."),
    _c("RK406", "missing-negative-test", "info", "An extractor has no negative (near-miss) test line.",
       what="reports an extractor whose inline tests all expect a match.",
       why="a near-miss line it must not match guards against the pattern growing too broad.",
       example="""
[[extractor]]
name = "GpuLost"
author = "me"
match_re = 'GPU has fallen off the bus'
emit = { type = "bad_node", symptom = "GPU_LOST" }
[[extractor.test]]
line = "kernel: GPU has fallen off the bus"
symptom = "GPU_LOST"
""" + _GPU_LOST, file="rules.toml",
       fix='add a test line with `expect = "nothing"`.'),
    # ---- RK5xx: job input ----------------------------------------------------------
    _c("RK501", "bad-job-dir", "error", "A job directory is missing or unreadable.",
       what="reports a JOB_DIR that does not exist or is not a folder.",
       why="there is nothing to attribute; a silent empty result would read as a healthy job.",
       example="`rulekit attribute jobs/12345` where `jobs/12345` does not exist",
       not_from_rule_file=_JOB_INPUT,
       fix="pass the folder that holds job.toml / applog / syslog."),
    _c("RK502", "bad-job-file", "error", "job.toml is invalid.",
       what="""reports invalid TOML or invalid fields in job.toml (unknown state,
nodes not a list, a rank mapped to an unknown node, a naive timestamp, ...).""",
       why="the job record decides the scheduler outcome and which hosts are nodes; a guess would mislead.",
       example='`state = "EXPLODED"` in job.toml',
       not_from_rule_file=_JOB_INPUT,
       fix="correct the field named in the message (see DESIGN: job directory)."),
    _c("RK503", "bad-observation", "error", "An observation record is invalid.",
       what="""reports a line of observations.jsonl that is not a JSON object with
the required fields; the other records are still used.""",
       why="a record that cannot be read is evidence lost; the result must say so.",
       example='`{"source": "syslog"` (truncated) on a line of observations.jsonl',
       not_from_rule_file=_JOB_INPUT,
       fix="correct or remove the record."),
    _c("RK504", "unknown-job-file", "info", "A file in the job directory is not used.",
       what="notes a file the job directory reader does not know; it is ignored.",
       why="a log in the wrong place is evidence the attribution never saw.",
       example="`notes.txt` at the top of the job directory",
       not_from_rule_file=_JOB_INPUT,
       fix="move application logs under applog/, node logs under syslog/<node>.log."),
    _c("RK505", "empty-job", "warning", "The job directory holds no evidence.",
       what="warns when a job directory has no log lines and no observations.",
       why="attribution of an empty job can only say `unknown` (or the scheduler state).",
       example="a job directory holding only job.toml",
       not_from_rule_file=_JOB_INPUT,
       fix="check that the logs were copied into the folder."),
    _c("RK506", "bad-job-info", "error", "The job record or its scheduler inputs are inconsistent.",
       what="""rejects an execution cancellation or allocation failure whose record ID
does not match, whose identity is missing, or whose timestamp is missing or naive.""",
       why="a cancellation attributed to the wrong job, or to nobody, would blame the wrong party.",
       example="an `execution_cancellation` whose `record_id` is another job's",
       not_from_rule_file=_JOB_INPUT,
       fix="supply the matching record ID, who cancelled, and a timezone-aware time."),
    _c("RK507", "bad-flight-recorder-dump", "error", "A flight-recorder dump was refused or is unusable.",
       what="""reports a file under fr/ (or a `flight_recorder` observation record) that is not
a plain flight-recorder dump: a pickle that asks for a class or function (GLOBAL, REDUCE, BUILD, ...),
a truncated pickle, invalid JSON, a dump without `entries`, one too large or a reference bomb.
The message gives the byte offset (pickle) or line and column (JSON); the dump is skipped, never run,
and the other dumps are still analysed.  Entries of a usable dump that are malformed are skipped and
listed as a warning.""",
       why="pickles are code; a dump from an untrusted job must never execute anything.",
       example="`fr/nccl_trace_rank_3 at byte 2: pickle opcode STACK_GLOBAL imports a class or function`",
       not_from_rule_file=_JOB_INPUT,
       fix="""re-dump with PyTorch (TORCH_NCCL_TRACE_BUFFER_SIZE, TORCH_NCCL_DEBUG_INFO_TEMP_FILE) or convert
the dump to JSON; name files `<prefix><rank>` so the rank is known."""),
    _c("RK509", "unreadable-job-file", "error", "A file of the job directory cannot be read.",
       what="""reports a log or record file of a job directory that cannot be read
(permission denied, an I/O error, `job.toml` or `observations.jsonl` that is a folder or a
pipe), or a log folder (`applog/` or a folder below it, `syslog/`) that cannot be listed; the
job is attributed with the evidence that could be read, and the command exits 1.""",
       why="a diagnosis made without a log must say so, or an on-call engineer trusts it.",
       example="`syslog/node-01.log` with mode 000",
       not_from_rule_file=_JOB_INPUT,
       fix="fix the file's permissions or replace it with the real file."),
    _c("RK510", "odd-job-file", "info", "A job-directory entry was skipped, or ingested with a caveat.",
       what="""notes a folder named like a log (`applog/x.log/`), a FIFO or socket (never
opened, so a reader cannot block), a symlink loop or dangling link (skipped), and a log holding
binary data (NUL bytes: ingested, the bytes that are not text replaced).""",
       why="the result should say which entries it did not read, and which it read only in part.",
       example="`applog/rank0.log` that is a dangling symlink",
       not_from_rule_file=_JOB_INPUT,
       fix="nothing, if the entry is expected; otherwise copy the real log into the folder."),
    _c("RK511", "job-input-over-limit", "error", "A piece of job input went past a size limit and was left out.",
       what="""reports a record of observations.jsonl longer than its byte limit or holding more JSON
values than its value limit (counted before it is parsed), and any other job input that a bounded
reader cut (docs/security.md lists each limit and its default).  The record is skipped; the other
records and files are still used and the job is attributed.""",
       why="""job input is untrusted: a small compressed or deeply repetitive record can ask for
gigabytes of memory once parsed.  A limit keeps one job from exhausting the machine, and the note
says which evidence the verdict did not see.""",
       example="`observations.jsonl:7: the record holds up to 9000001 values, more than the limit of 5000000`",
       not_from_rule_file=_JOB_INPUT,
       fix="""split the record into several (one observation a line), or check where the input came
from: a legitimate record is far below the limits."""),
    # ---- RK6xx: Blueprint configuration -------------------------------------------
    _c("RK601", "blueprint-config-syntax", "error", "A Blueprint config (or jobs) file is not valid TOML/JSON.",
       what="reports a syntax error in a `rulekit blueprint run --configs` file at the position the parser stopped.",
       why="a connector whose table does not parse cannot run.",
       example='`url = "http://127.0.0.1:9090`',
       not_from_rule_file=_BLUEPRINT,
       fix="close the string, table header or array the message points at."),
    _c("RK602", "blueprint-config-schema", "error", "A Blueprint config table is invalid.",
       what="reports an unknown connector type, an unknown or missing key, or a value of the wrong type.",
       why="a misspelt key would otherwise be ignored and a collector would silently gather nothing.",
       example='`[[logs]] type = "lokki"`',
       not_from_rule_file=_BLUEPRINT,
       fix="use a built-in type (static, slurm, kueue, local, loki, kubernetes, prometheus) or `package.module:Class`."),
    _c("RK603", "blueprint-config-file", "error", "A file or folder a Blueprint config names does not exist.",
       what="reports a jobs file, rule folder or config folder that is not there.",
       why="the run would attribute nothing, or with the wrong rules.",
       example='`jobs = "job.toml"` when the file is `jobs.toml`',
       not_from_rule_file=_BLUEPRINT,
       fix="correct the path (relative paths are relative to the config file)."),
    # ---- RK64x: the rule author's loop in the editor ------------------------------
    _c("RK640", "unexplained-error-line", "info", "A log line reads as an error and no rule of the corpus explains it.",
       what="""marks, in a job's log open in the editor, each line the generic fallback keeps: it reads
as an error (rulekit/data/error_lines.toml, the engine's `ErrorLine`) and no specific rule of the
workspace corpus reads it.  The same lines `rulekit mine` lists; the message names the template the
line reads as and the component the vocabulary gives it.""",
       why="""a line no rule knows is attributed only as a low-confidence generic symptom; each one is a
rule the corpus may be missing.  The code action "Draft a rule from this line" writes a checked draft.""",
       example="`ERROR frobnicator lost quorum on shard 12 after 4 retries` in applog/train.log",
       not_from_rule_file=_EDITOR,
       fix="""draft a rule from the line (the code action), confirm the lines marked CONFIRM, or leave it:
an unexplained line is information, not a fault."""),
    _c("RK641", "unexplained-lines-capped", "info", "A log has more unexplained error lines than are shown, or more bytes than are read.",
       what="""says, once per log, that the unexplained error lines shown stop at the cap
(`unexplainedMax` lines) or that only the first `logMaxMiB` MiB of a large log were read.""",
       why="""thousands of diagnostics make an editor slow and say nothing more than the first few;
a very large log is read in bounded time.""",
       example="`200 of 1532 unexplained error lines shown (unexplainedMax)`",
       not_from_rule_file=_EDITOR,
       fix="""run `rulekit mine JOB_DIR` for the whole log, ranked by template, or raise the setting."""),
    _c("RK642", "rule-store-unreadable", "warning", "The result store named for rule statistics cannot be read.",
       what="""reports, once, that the store the `store` setting (or the project file's `store`) names is
missing, a folder, locked by a writer past the wait, not a rulekit result store, or too slow to
answer within its time budget.  Hover and code lens then show no production statistics.""",
       why="""statistics are an aid: a store that cannot be read must not stop the editor, but the
author should know why the numbers are absent.""",
       example="`/data/bp.db: no such result store`",
       not_from_rule_file=_STORE,
       fix="""point the setting at the file given to `rulekit blueprint run --output sqlite:PATH`, or
clear it."""),
]

CODES: dict[str, Code] = {c.code: c for c in _TABLE}
BY_NAME: dict[str, Code] = {c.name: c for c in _TABLE}
assert len(CODES) == len(_TABLE) and len(BY_NAME) == len(_TABLE), "duplicate code or name"


def lookup(code_or_name: str) -> Code | None:
    key = code_or_name.strip()
    return CODES.get(key.upper()) or BY_NAME.get(key.lower())


def markdown() -> str:
    """docs/codes.md: the code table, then each code's four sections (generated from this table)."""
    out = ["# Diagnostic codes", "",
           "Generated from `rulekit/codes.py` by `rulekit explain --list --format markdown`; do not edit.",
           "`rulekit explain CODE` prints one. Suppress a finding on a line with `# rulekit: ignore[CODE]`.", "",
           "| code | name | severity | summary |", "|---|---|---|---|"]
    out += [f"| [{c.code}](#{c.code.lower()}) | `{c.name}` | {c.severity} | {c.summary} |" for c in _TABLE]
    for c in _TABLE:
        out += ["", f"## {c.code}", "", f"`{c.name}` ({c.severity}): {c.summary}", "",
                f"**What it does**: {c.what}", "", f"**Why**: {c.why}", ""]
        if c.example_file is not None:
            lang = {"toml": "toml", "py": "python"}.get(c.example_file.rsplit(".", 1)[-1], "")
            text = c.example if c.example_encoding == "utf-8" else c.example.encode(c.example_encoding).decode(
                "utf-8", "backslashreplace")
            note = f" (saved as {c.example_encoding})" if c.example_encoding != "utf-8" else ""
            out += [f"**Example** (`{c.example_file}`{note}):", "", f"```{lang}", text.rstrip("\n"), "```"]
        else:
            out += [f"**Example**: {c.example}", "", f"*Not from a rule file*: {c.not_from_rule_file}."]
        out += ["", f"**Fix**: {c.fix}"]
    return "\n".join(out) + "\n"
