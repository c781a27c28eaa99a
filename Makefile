# Two commands do all the set-up on a fresh machine with Python 3.11 and pip:
#   make demo   -> creates .venv, installs rulekit, attributes examples/xid149-nvlink
#   make test   -> sets up as needed, runs the whole suite
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: demo test setup bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e ".[test]"
	touch $(STAMP)

setup: $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/rulekit attribute examples/xid149-nvlink

test: $(STAMP)
	$(PY) -m pytest -q

bench: $(STAMP)
	$(PY) bench/extraction.py --size-mb 200
	$(PY) bench/attribute_e2e.py --size-mb 1024
	$(PY) bench/attribute_vs_rg.py

clean:
	rm -rf $(VENV) build dist *.egg-info
