"""Python traceback extractor-accumulator: one event per traceback (chain), carrying
the nearest-cause exception.

Triggered on `Traceback (most recent call last):`, fed the following lines of the
same rank; it records each exception of a chain (`The above exception was the
direct cause ...` / `During handling ...`) and emits the *first* one (nearest the
root) with the final one kept in fields.  A chained traceback also triggers its
own accumulator; PythonChainFirstCause (cascade_filters.py) drops those partial
chains.  Must not classify CUDA/NCCL text itself (the line rules do that).
"""
from rulekit.plugin import Accumulator, EventSpec, accumulator_def, register_symptom

from .common.pytrace import CHAIN_SEPARATORS, TRACEBACK, classify, exception_of, strip_prefix

AUTHOR = "rulekit corpus"

register_symptom("PYTHON_EXCEPTION", outcome="application", sub_domain="python", rank=600,
                 docs="An uncaught Python exception ended a rank (the first exception of a chain, nearest the root).")
register_symptom("PYTHON_IMPORT_ERROR", outcome="application", sub_domain="python", rank=605,
                 docs="ImportError / ModuleNotFoundError: the environment or image lacks a module.")
register_symptom("PYTHON_DISTRIBUTED_ERROR", outcome="unknown", sub_domain="nccl", rank=410,
                 docs="A torch.distributed error (DistBackendError, NCCL error in ...) ended a rank: a victim of a "
                      "failure elsewhere unless nothing else is known.")
register_symptom("PYTHON_CUDA_ERROR", outcome="application", sub_domain="cuda", rank=590,
                 docs="A traceback ended in a CUDA error (catch-all for CUDA errors no specific rule names; the "
                      "specific CUDA symptom outranks it; a victim when a primary fault exists).")
register_symptom("PYTHON_INTERRUPTED", outcome="cancelled", sub_domain="signal", rank=130,
                 docs="KeyboardInterrupt / SystemExit / elastic SignalException: the rank was stopped from outside.")


# what a traceback accumulator may emit (declared for the loader's symptom checks)
TRACEBACK_SYMPTOMS = ("PYTHON_EXCEPTION", "PYTHON_IMPORT_ERROR", "PYTHON_DISTRIBUTED_ERROR", "PYTHON_CUDA_ERROR",
                      "PYTHON_INTERRUPTED")


@accumulator_def(
    name="PythonTraceback", author=AUTHOR, trigger_re=r"Traceback \(most recent call last\):",
    sources=("applog",), max_lines=400,
    symptoms=TRACEBACK_SYMPTOMS,
    tests=[
        {"line": "Traceback (most recent call last):\n  File \"train.py\", line 10, in <module>\n    main()\n"
                 "ValueError: bad shape (3, 4)\n", "symptom": "PYTHON_EXCEPTION",
         "captures": {"exc_type": "ValueError", "exc_msg": "bad shape (3, 4)"}},
        {"line": "[rank3]: Traceback (most recent call last):\n[rank3]:   File \"a.py\", line 1, in f\n"
                 "[rank3]: KeyError: 'labels'\n[rank3]: \n"
                 "[rank3]: The above exception was the direct cause of the following exception:\n[rank3]: \n"
                 "[rank3]: Traceback (most recent call last):\n[rank3]:   File \"b.py\", line 2, in g\n"
                 "[rank3]: RuntimeError: collate failed\n", "symptom": "PYTHON_EXCEPTION",
         "captures": {"exc_type": "KeyError", "final_exc_type": "RuntimeError", "chain_len": "2"}},
        {"line": "Traceback (most recent call last):\n  File \"x.py\", line 3, in <module>\n"
                 "ModuleNotFoundError: No module named 'apex'\n", "symptom": "PYTHON_IMPORT_ERROR"},
        {"line": "(RayWorker pid=4242, ip=10.0.0.2) Traceback (most recent call last):\n"
                 "(RayWorker pid=4242, ip=10.0.0.2)   File \"w.py\", line 9, in run\n"
                 "(RayWorker pid=4242, ip=10.0.0.2) KeyError: 'weights'\n", "symptom": "PYTHON_EXCEPTION",
         "captures": {"exc_type": "KeyError"}},
        {"line": "Traceback (most recent call last):\r\n  File \"x.py\", line 3, in <module>\r\n"
                 "\x1b[31mValueError: bad value\x1b[0m\r\n", "symptom": "PYTHON_EXCEPTION",
         "captures": {"exc_type": "ValueError"}},
        {"line": "Traceback (most recent call last):\n  File \"x.py\", line 3, in <module>\n"
                 "torch.distributed.DistBackendError: NCCL error in: ../ProcessGroupNCCL.cpp:1970, unhandled "
                 "system error\n", "symptom": "PYTHON_DISTRIBUTED_ERROR"},
        {"line": "Traceback (most recent call last):\n  File \"x.py\", line 3, in <module>\n"
                 "RuntimeError: CUDA error: CUBLAS_STATUS_EXECUTION_FAILED when calling `cublasGemmEx( handle)`\n",
         "symptom": "PYTHON_CUDA_ERROR"},
        {"line": "Traceback (most recent call last):\n  File \"x.py\", line 3, in <module>\n"
                 "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: \n", "expect": "nothing"},
        {"line": "Traceback (most recent call last):\n  File \"x.py\", line 3, in <module>\n    f()\n",
         "expect": "nothing"},
    ],
)
# rulekit: ignore[RK306]  (a traceback line may also be a CUDA-library line on purpose)
class PythonTraceback(Accumulator):
    """Keeps the chain of exceptions of one traceback; emits the first (nearest cause)."""

    def __init__(self, ctx, line, match):
        super().__init__(ctx, line, match)
        self.chain = []  # [(type, msg)]
        self.state = "frames"  # frames -> after_exc -> (separator) -> expect_tb -> frames
        self.after = 0

    def feed(self, line):
        text = strip_prefix(line)
        if self.state == "frames":
            if not text.strip():
                return True
            if text[0].isspace():
                return True  # `  File ...` and source lines
            exc = exception_of(text)
            if exc is None:
                return False  # not a traceback shape any more
            self.chain.append(exc)
            self.state, self.after = "after_exc", 0
            return True
        if self.state == "after_exc":
            stripped = text.strip()
            if stripped in CHAIN_SEPARATORS:
                self.state = "expect_tb"
                return True
            self.after += 1
            return not stripped and self.after <= 2  # blank lines before a separator
        if self.state == "expect_tb":
            stripped = text.strip()
            if not stripped:
                return True
            if stripped == TRACEBACK:
                self.state = "frames"
                return True
            return False
        return False

    def finalize(self):
        if not self.chain:
            return []
        first_type, first_msg = self.chain[0]
        last_type, last_msg = self.chain[-1]
        kind = classify(first_type, first_msg)
        if kind is None:
            return []
        etype, symptom = kind
        fields = {"exc_type": first_type, "exc_msg": first_msg[:500], "final_exc_type": last_type,
                  "final_exc_msg": last_msg[:500], "chain": " <- ".join(t for t, _ in self.chain),
                  "chain_len": str(len(self.chain)), "start_line": self.ctx.line_num}
        return [EventSpec(type=etype, symptom=symptom, fields=fields)]


@accumulator_def(
    name="RichTraceback", author=AUTHOR, trigger_re=r"╰─────────*╯",
    sources=("applog",), max_lines=4,
    symptoms=TRACEBACK_SYMPTOMS,
    tests=[
        {"line": "╰──────────────────────────────────────────────────────────────────────────────╯\n"
                 "Exception: expected value at line 1 column 1\n", "symptom": "PYTHON_EXCEPTION",
         "captures": {"exc_type": "Exception", "exc_msg": "expected value at line 1 column 1"}},
        {"line": "╰──────────────────────────────────────────────────────────────────────────────╯\n"
                 "ModuleNotFoundError: No module named 'flash_attn'\n", "symptom": "PYTHON_IMPORT_ERROR"},
        {"line": "╰──────────────────────── Epoch 3 ────────────────────────╯\n"
                 "╰──────────────────────────────────────────────────────────────────────────────╯\n"
                 "  train_loss 0.412   val_loss 0.455\n", "expect": "nothing"},
    ],
)
# rulekit: ignore[RK306]  (the exception after the box is also a bare tail line; DropTailInsideTraceback keeps this reading)
class RichTraceback(Accumulator):
    """A rich / typer boxed traceback (`╭── Traceback (most recent call last) ──╮ ... ╰──╯`)
    has no `Traceback (most recent call last):` line for PythonTraceback; its exception
    is the line right after the box closes.  Emits that exception, classified like a
    plain traceback's; a box followed by anything else emits nothing."""

    def __init__(self, ctx, line, match):
        super().__init__(ctx, line, match)
        self.exc = None
        self.blank = 0

    def feed(self, line):
        text = strip_prefix(line)
        if not text.strip():
            self.blank += 1
            return self.blank <= 1
        self.exc = exception_of(text)
        return False

    def finalize(self):
        if self.exc is None:
            return []
        exc_type, msg = self.exc
        kind = classify(exc_type, msg)
        if kind is None:
            return []
        etype, symptom = kind
        fields = {"exc_type": exc_type, "exc_msg": msg[:500], "final_exc_type": exc_type, "final_exc_msg": msg[:500],
                  "chain": exc_type, "chain_len": "1", "start_line": self.ctx.line_num, "rich": True}
        return [EventSpec(type=etype, symptom=symptom, fields=fields)]
