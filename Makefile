# Two commands do all the set-up on a fresh machine with Python 3.11 and pip:
#   make demo   -> creates .venv, installs rulekit (what it needs to run, no test tools),
#                  attributes examples/xid149-nvlink
#   make test   -> adds the test tools (pytest, the LSP test client, the browser driver, ...),
#                  runs the whole suite
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
# stamps: rulekit and what it needs to run; then the `test` extra on top
RUN    := $(VENV)/.installed
TESTS  := $(VENV)/.installed-test

.PHONY: demo test setup bench vsix clean

$(RUN): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e .
	touch $(RUN)

$(TESTS): $(RUN)
	$(PY) -m pip install -q -e ".[test]"
	touch $(TESTS)

setup: $(RUN)

demo: $(RUN)
	$(VENV)/bin/rulekit attribute examples/xid149-nvlink

test: $(TESTS)
	$(PY) -m pytest -q

bench: $(TESTS)
	$(PY) bench/extraction.py --size-mb 200
	$(PY) bench/attribute_e2e.py --size-mb 1024
	$(PY) bench/attribute_vs_rg.py

# the VS Code extension's package (needs Node 20 and npm): vscode-extension/rulekit.vsix
vsix:
	cd vscode-extension && npm ci --no-audit --no-fund && npm run -s bundle && npm run -s package

clean:
	rm -rf $(VENV) build dist *.egg-info
