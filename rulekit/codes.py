"""The one table of diagnostic codes.  Stable: a code is never reused.

Each entry gives the code's short name, default severity, a one-line summary and
its documentation (What it does / Why / Example / Fix), which `rulekit explain
CODE` prints and the language server links as `codeDescription`.

Ranges: RK0xx input and syntax, RK1xx schema, RK2xx names and references,
RK3xx regexes and the acceleration structure, RK4xx tests, RK5xx job input, RK6xx Blueprint configuration.
Suppress a finding with a comment on the line (or the line above):
`# rulekit: ignore[RK305]` (TOML, DSL, Python alike); several codes comma-separated.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Code:
    code: str
    name: str
    severity: str  # "error" | "warning" | "info" | "hint"
    summary: str
    doc: str


def _c(code: str, name: str, severity: str, summary: str, doc: str) -> Code:
    return Code(code, name, severity, summary, doc.strip())


_TABLE = [
    # ---- RK0xx: input and syntax -------------------------------------------------
    _c("RK001", "unreadable-file", "error", "A rule file could not be read.",
       """What it does: reports a rule file or folder that cannot be opened or decoded.
Why: a corpus that silently skips a file ships without its rules.
Fix: check the path and permissions; rule files must be UTF-8."""),
    _c("RK002", "toml-syntax", "error", "The TOML rule file is not valid TOML.",
       """What it does: reports a TOML syntax error at the position the parser stopped.
Why: nothing in a file that does not parse can be loaded.
Example: `match_re = 'unterminated`
Fix: close the string, table header or array the message points at."""),
    _c("RK003", "dsl-syntax", "error", "The .rule file does not follow the DSL grammar.",
       """What it does: reports every syntax error in a `.rule` file in one pass, with the
tokens that were expected at that point.
Why: the DSL front-end recovers after each error so you see all of them at once.
Fix: see grammar/README.md for the construct the message names."""),
    _c("RK004", "plugin-import-error", "error", "A Python rule plugin raised while it was loaded.",
       """What it does: reports an exception raised while executing a `.py` rule file
(syntax error, import error, or a decorator used wrongly), at the failing line.
Why: a plugin that cannot load registers none of its rules.
Fix: run the file's code and fix the exception shown."""),
    _c("RK005", "no-rules-found", "warning", "A rule path holds no rule files.",
       """What it does: warns when a path given as a rule folder contains no top-level
`*.toml`, `*.rule` or `*.py` rule files.
Why: usually a wrong path; attribution with no rules diagnoses nothing.
Fix: point at the folder that holds the rule files (not at its parent)."""),
    _c("RK006", "plugin-timeout", "error", "Importing a Python rule plugin did not finish within the time limit.",
       """What it does: reports a `.py` rule file whose import was still running when the
plugin time limit (default 10 s) ran out, at the line it was executing; the file is
imported in a child process first, so a plugin that never returns cannot hang
`check`, `test`, `attribute` or the language server.
Why: a rule file runs at every load; an import that loops or waits on the network
stops every tool that loads the corpus.
Example: `while True: pass` at the top level of `zz_loop.py`
Fix: move slow work out of import time; or raise the limit with
`rulekit --plugin-timeout SECONDS` / `RULEKIT_PLUGIN_TIMEOUT` / the `pluginTimeoutMs` editor setting."""),
    _c("RK007", "plugin-output", "info", "A Python rule plugin printed while it was imported.",
       """What it does: reports what a `.py` rule file wrote to stdout or stderr while it was
imported; the output is captured, never mixed into rulekit's own output (a JSON report,
the language server's protocol stream).
Why: prints at import time are usually leftover debugging.
Example: `print("loaded")` at the top level of a plugin
Fix: remove the print, or use `logging`."""),
    # ---- RK1xx: schema -----------------------------------------------------------
    _c("RK101", "unknown-key", "error", "A rule table has a key the schema does not know.",
       """What it does: reports a key that is not part of the rule schema (often a typo).
Why: a misspelt optional key (`sorce` for `source`) would otherwise be ignored silently.
Example: `[[extractor]] matchre = '...'`
Fix: use one of the keys listed in the message."""),
    _c("RK102", "missing-key", "error", "A required key is missing.",
       """What it does: reports a rule or symptom that lacks a required key
(`name`, `match_re`, `emit`, `outcome`, ...).
Fix: add the key named in the message."""),
    _c("RK103", "wrong-type", "error", "A key has a value of the wrong type.",
       """What it does: reports a value whose type does not fit the schema
(a string where a list is expected, a float rank, ...).
Fix: use the type named in the message."""),
    _c("RK104", "unknown-emit-type", "error", "An extractor emits an unknown event type.",
       """What it does: reports an `emit.type` that is not one of
`bad_node`, `interesting_node`, `bad_peers`, `data`.
Fix: use one of those four types."""),
    _c("RK105", "bad-priority", "error", "A filter or refiner priority is not in a known stratum.",
       """What it does: reports a priority outside the strata of its rule type
(filters: EARLY < MID < STANDARD < LATE; refiners: SCRUB < FINAL < POST_OUTCOME)
or an unknown stratum name.
Why: the stratum decides when the rule runs and what it sees.
Example: `@filter_def(name="X", author="me", priority=FilterPriority.FINAL)`
Fix: use a stratum of the right rule type, optionally plus an offset 0..999."""),
    _c("RK106", "bad-outcome", "error", "A symptom's outcome is not one of the fixed outcome words.",
       """What it does: reports an outcome other than hardware, network, application,
infrastructure, cancelled, timeout, success, unknown.
Fix: pick the outcome that fits; put detail in sub_domain."""),
    _c("RK107", "bad-template", "error", "An emit or family template refers to something undefined.",
       """What it does: reports a `{capture}` in an emit template that is not a named group of
the pattern, or a `${param}` in a family template that the member does not define.
Why: the event would carry a literal `{name}` instead of the captured text.
Fix: add the named group `(?P<name>...)` or the member parameter, or fix the spelling."""),
    _c("RK108", "bad-test-case", "error", "An inline test case is malformed.",
       """What it does: reports a test case that lacks `line`, has an unknown `expect`, or
checks a capture the rule cannot produce.
Fix: see the inline test format in README.md."""),
    _c("RK109", "bad-config", "error", "A configuration value is invalid.",
       """What it does: reports an invalid global or editor setting (a setting of the
language server, a node-name mapping, ...). The default is used instead.
Fix: correct the setting named in the message."""),
    _c("RK110", "bad-blame", "error", "A symptom's blame or action is not one of the fixed words.",
       """What it does: reports a `blame` other than node, link, peer, workload, environment,
scheduler, none, or an `action` other than reset_gpu, reboot, drain_p2p, drain_and_reset,
drain_and_rma, check_link, inspect, none.
Why: `bad_nodes` (what drain, reset and RMA automation acts on) lists only nodes blamed
by `node`, `link` or `peer` symptoms; a misspelt blame would silently blame nobody.
Example: `blame = "gpu"` on `XID-79-GPU_FELL_OFF_BUS`.
Fix: use `blame = "node"` (and `action = "reboot"`); see docs/blame.md."""),
    _c("RK111", "bad-metric-rule", "error", "A metric rule's condition or duration is invalid.",
       """What it does: reports a metric rule whose `when` is not `AGGREGATE OP NUMBER`
(aggregates value, rate, increase; operators > >= < <= == !=), or whose `for` /
`window` is not a duration (seconds, or "90s", "5m", "1h"), or a `window` on `value`.
Why: a condition the engine cannot read would never fire.
Example: `when = "rate >> 10"`, `for = "a minute"`
Fix: write e.g. `when = "rate > 10"`, `for = "60s"`, `window = "5m"`."""),
    # ---- RK2xx: names and references ---------------------------------------------
    _c("RK201", "duplicate-rule", "error", "Two rules have the same name.",
       """What it does: reports a rule name defined twice, with both locations.
Why: rule names are the provenance of every event; they must be unique across the corpus.
Fix: rename one of them."""),
    _c("RK202", "duplicate-symptom", "error", "A symptom is registered twice with different attributes.",
       """What it does: reports a symptom (or alias) registered twice, with both locations.
Fix: keep one registration; use `aliases` for alternative names."""),
    _c("RK203", "unregistered-symptom", "error", "A rule uses a symptom that is not registered.",
       """What it does: reports a symptom emitted or named by a rule that no `[[symptom]]`,
`symptom` block or `register_symptom()` call registers.
Why: an unregistered symptom has no outcome, sub_domain or rank, so it cannot be attributed.
Fix: register it (the language server offers a code action) or fix the spelling."""),
    _c("RK204", "missing-dependency", "error", "A rule requires a rule that does not exist.",
       """What it does: reports a `requires` entry (or a DSL plugin reference) naming no known rule.
Fix: define the rule, or remove the dependency."""),
    _c("RK205", "unused-symptom", "warning", "A registered symptom is never emitted by any rule.",
       """What it does: reports a symptom that no extractor emits and no rule names.
Why: dead registrations make the registry lie about what the corpus can diagnose.
Fix: delete it, or write the rule that produces it."""),
    _c("RK206", "unknown-plugin", "error", "A DSL rule names a Python plugin function that does not exist.",
       """What it does: reports `use python NAME` (or similar) where no plugin defines NAME.
Fix: define the plugin function with its decorator, or fix the name."""),
    _c("RK207", "rule-conflict", "error", "A rule conflicts with another registration.",
       """What it does: reports an incompatible registration (for example a family member
whose expanded name collides with an individual rule, or a symptom alias equal to
another symptom's name).
Fix: rename one side."""),
    _c("RK208", "missing-blame", "error", "A registered symptom does not say whom it blames.",
       """What it does: reports a registered symptom whose blame resolves to nothing: neither the
symptom nor any outcome rule whose prefix it has sets `blame`.
Why: `bad_nodes` is what drain, GPU-reset and RMA automation acts on. Only symptoms blamed
on `node`, `link` or `peer` may put a node there; a symptom that does not say would either
drain healthy machines (a user bug on the node where it surfaced) or hide a faulty one.
Example: `[[symptom]] name = "CUDA_OOM" outcome = "application" sub_domain = "oom" rank = 680`
with no `blame` line.
Fix: add `blame = "workload"` (TOML), `blame workload` (DSL) or `blame="workload"`
(`register_symptom`), or set it once for a family on an `[[outcome_rule]]` prefix;
docs/blame.md lists the classes and their actions."""),
    _c("RK209", "misspelled-symptom-literal", "warning", "A string in a Python plugin looks like a misspelt symptom.",
       """What it does: reports a string literal in a `.py` rule file that is not a registered
symptom (or alias) but is one or two edits away from one, with the name it probably means.
Why: plugins name symptoms in plain strings (`stream.demote(..., "XID-79-FALLEN_OFF_THE_BU")`);
a typo there silently matches nothing.
Example: `demote_bad_by_symptom(stream, ["NCCL_WATCHDOG_TIMOUT"], ...)`
Fix: correct the name, or register the symptom if it is new."""),
    # ---- RK3xx: regexes and the acceleration structure ---------------------------
    _c("RK301", "invalid-regex", "error", "The pattern is not a valid regular expression.",
       """What it does: reports a pattern that does not compile, pointing at the construct.
Fix: correct the construct the caret points at."""),
    _c("RK302", "re2-incompatible", "error", "The pattern uses a construct RE2 cannot run.",
       """What it does: reports lookarounds, backreferences, possessive quantifiers and other
backtracking-only constructs, pointing at the construct and saying why.
Why: rules run on RE2 (linear time, no ReDoS); a rule that needs backtracking would
run on Python's `re` and could hang attribution on a crafted line.
Example: `error(?! ignored)`
Fix: drop the lookaround and discard the unwanted case with a second, narrower rule or a
filter; for `\\1` backreferences, match the text explicitly."""),
    _c("RK303", "unfilterable-pattern", "warning", "The pattern has no required literal the prefilter can use.",
       """What it does: reports an extractor whose pattern contains no literal of at least
3 bytes that every match must contain (e.g. `^[EF]\\d{4}` or `\\w+Error:`).
Why: the acceleration structure narrows candidate rules by required literals; such a
rule is tried on every line that passes the gate, which slows all of extraction.
Fix: anchor the pattern on a distinctive literal (`NCCL WARN`, `NVRM: Xid`)."""),
    _c("RK304", "weak-key", "warning", "The pattern's best required literal is very short or very common.",
       """What it does: reports an extractor whose rarest required literal still occurs on
many lines of the benign-log sample (or is only 3 bytes long).
Why: the rule becomes a candidate on most lines and is confirmed by its full regex each time.
Fix: make the pattern require a rarer literal."""),
    _c("RK305", "broad-pattern", "warning", "The pattern matches too many lines of a benign log.",
       """What it does: reports an extractor whose match rate on the benign-log sample is
above the threshold (default 0.1 % of lines).
Why: a broad rule produces false evidence on healthy jobs and slows extraction.
Example: `(?i)error.*timeout` matches `timeout=0:30:00 ... no error`.
Fix: narrow the pattern to the failure's own wording."""),
    _c("RK306", "overlapping-patterns", "warning", "Two extractors match the same line.",
       """What it does: reports two extractors that both match some line, with a concrete
witness line.
Why: overlapping rules make attribution depend on which symptom outranks the other,
and the pair is confirmed twice on every such line.
Fix: narrow one pattern, or pin the intended winner with a test case on the witness
line (the language server offers this as a code action)."""),
    _c("RK307", "shadowed-pattern", "warning", "Every line one extractor matches is also matched by another.",
       """What it does: reports an extractor whose language is contained in another's,
saying which rule's symptom wins (higher rank) and whether the loser can ever decide
the root cause alone.
Fix: delete the subsumed rule or make the broader rule exclude its lines."""),
    _c("RK308", "slow-pattern", "warning", "The rule costs more time per MB of log than the budget.",
       """What it does: reports an extractor whose measured cost on the benign sample is
above the per-rule budget.
Fix: avoid leading `.*`, nested repetition and huge alternations; add a literal."""),
    _c("RK309", "engine-fallback", "warning", "The pattern would run on Python's re instead of RE2.",
       """What it does: reports a pattern that pyre2 would silently hand to Python's `re`
(for example `\\S` or `\\W` inside a character class).
Why: rulekit loads patterns with the fallback set to raise, so the rule would not load.
Fix: rewrite the class (`[^\\s]` -> `\\S` outside a class, or list the characters)."""),
    # ---- RK4xx: tests ------------------------------------------------------------
    _c("RK401", "test-failed", "error", "An inline or job test case failed.",
       """What it does: reports a test case whose actual result differs from the expected
one, on the test case's own range, with expected and actual.
Fix: fix the rule, or, if the new behaviour is right, `rulekit test --update`."""),
    _c("RK402", "untested-rule", "warning", "An extractor has no inline test case.",
       """What it does: reports an extractor with no positive test line.
Why: every extractor should carry at least one line it must match and one near-miss
it must not match.
Fix: add a `[[extractor.test]]` table (TOML) or a `test line` clause (DSL)."""),
    _c("RK403", "rule-never-fires", "warning", "No test case ever makes this rule fire.",
       """What it does: reports a rule that none of the corpus's tests (inline, job tests,
example jobs) makes fire.
Fix: add a test that exercises it."""),
    _c("RK404", "symptom-never-produced", "info", "No test case produces this registered symptom.",
       """What it does: reports a registered symptom that no test case produces.
Fix: add a test whose evidence yields the symptom."""),
    _c("RK405", "test-error", "error", "A test case could not be run.",
       """What it does: reports a test case that raised instead of passing or failing
(a job test whose job definition is invalid, an example job missing its files).
Fix: correct the test case named in the message."""),
    _c("RK406", "missing-negative-test", "info", "An extractor has no negative (near-miss) test line.",
       """What it does: reports an extractor whose inline tests all expect a match.
Why: a near-miss line it must not match guards against the pattern growing too broad.
Fix: add a test line with `expect = "nothing"`."""),
    # ---- RK5xx: job input ----------------------------------------------------------
    _c("RK501", "bad-job-dir", "error", "A job directory is missing or unreadable.",
       """What it does: reports a JOB_DIR that does not exist or is not a folder.
Fix: pass the folder that holds job.toml / applog / syslog."""),
    _c("RK502", "bad-job-file", "error", "job.toml is invalid.",
       """What it does: reports invalid TOML or invalid fields in job.toml (unknown state,
nodes not a list, a rank mapped to an unknown node, a naive timestamp, ...).
Fix: correct the field named in the message (see DESIGN: job directory)."""),
    _c("RK503", "bad-observation", "error", "An observation record is invalid.",
       """What it does: reports a line of observations.jsonl that is not a JSON object with
the required fields; the other records are still used.
Fix: correct or remove the record."""),
    _c("RK504", "unknown-job-file", "info", "A file in the job directory is not used.",
       """What it does: notes a file the job directory reader does not know; it is ignored.
Fix: move application logs under applog/, node logs under syslog/<node>.log."""),
    _c("RK505", "empty-job", "warning", "The job directory holds no evidence.",
       """What it does: warns when a job directory has no log lines and no observations.
Why: attribution of an empty job can only say `unknown` (or the scheduler state).
Fix: check that the logs were copied into the folder."""),
    _c("RK506", "bad-job-info", "error", "The job record or its scheduler inputs are inconsistent.",
       """What it does: rejects an execution cancellation or allocation failure whose record ID
does not match, whose identity is missing, or whose timestamp is missing or naive.
Fix: supply the matching record ID, who cancelled, and a timezone-aware time."""),
    _c("RK507", "bad-flight-recorder-dump", "error", "A flight-recorder dump was refused or is unusable.",
       """What it does: reports a file under fr/ (or a `flight_recorder` observation record) that is not
a plain flight-recorder dump: a pickle that asks for a class or function (GLOBAL, REDUCE, BUILD, ...),
a truncated pickle, invalid JSON, a dump without `entries`, one too large or a reference bomb.
The message gives the byte offset (pickle) or line and column (JSON); the dump is skipped, never run,
and the other dumps are still analysed.  Entries of a usable dump that are malformed are skipped and
listed as a warning.
Why: pickles are code; a dump from an untrusted job must never execute anything.
Example: `fr/nccl_trace_rank_3 at byte 2: pickle opcode STACK_GLOBAL imports a class or function`
Fix: re-dump with PyTorch (TORCH_NCCL_TRACE_BUFFER_SIZE, TORCH_NCCL_DEBUG_INFO_TEMP_FILE) or convert
the dump to JSON; name files `<prefix><rank>` so the rank is known."""),
    _c("RK509", "unreadable-job-file", "error", "A file of the job directory cannot be read.",
       """What it does: reports a log or record file of a job directory that cannot be read
(permission denied, an I/O error, `job.toml` or `observations.jsonl` that is a folder or a
pipe); the job is attributed with the evidence that could be read, and the command exits 1.
Why: a diagnosis made without a log must say so, or an on-call engineer trusts it.
Fix: fix the file's permissions or replace it with the real file."""),
    _c("RK510", "odd-job-file", "info", "A job-directory entry was skipped, or ingested with a caveat.",
       """What it does: notes a folder named like a log (`applog/x.log/`), a FIFO or socket (never
opened, so a reader cannot block), a symlink loop or dangling link (skipped), and a log holding
binary data (NUL bytes: ingested, the bytes that are not text replaced).
Fix: nothing, if the entry is expected; otherwise copy the real log into the folder."""),
    # ---- RK6xx: Blueprint configuration -------------------------------------------
    _c("RK601", "blueprint-config-syntax", "error", "A Blueprint config (or jobs) file is not valid TOML/JSON.",
       """What it does: reports a syntax error in a `rulekit blueprint run --configs` file at the position the parser stopped.
Why: a connector whose table does not parse cannot run.
Example: `url = "http://127.0.0.1:9090`
Fix: close the string, table header or array the message points at."""),
    _c("RK602", "blueprint-config-schema", "error", "A Blueprint config table is invalid.",
       """What it does: reports an unknown connector type, an unknown or missing key, or a value of the wrong type.
Why: a misspelt key would otherwise be ignored and a collector would silently gather nothing.
Example: `[[logs]] type = "lokki"`
Fix: use a built-in type (static, slurm, kueue, local, loki, kubernetes, prometheus) or `package.module:Class`."""),
    _c("RK603", "blueprint-config-file", "error", "A file or folder a Blueprint config names does not exist.",
       """What it does: reports a jobs file, rule folder or config folder that is not there.
Why: the run would attribute nothing, or with the wrong rules.
Example: `jobs = "job.toml"` when the file is `jobs.toml`
Fix: correct the path (relative paths are relative to the config file)."""),
]

CODES: dict[str, Code] = {c.code: c for c in _TABLE}
BY_NAME: dict[str, Code] = {c.name: c for c in _TABLE}
assert len(CODES) == len(_TABLE) and len(BY_NAME) == len(_TABLE), "duplicate code or name"


def lookup(code_or_name: str) -> Code | None:
    key = code_or_name.strip()
    return CODES.get(key.upper()) or BY_NAME.get(key.lower())
