# The two set-up commands of the README. Each creates .venv on a fresh machine and installs
# everything it needs (the torch oracle included for tests).
PY      ?= python3
VENV    := .venv
VPY     := $(VENV)/bin/python
STAMP   := $(VENV)/.installed

.PHONY: demo test codegen check-codegen bench clean

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(VPY) -m pip install --quiet --upgrade pip
	$(VPY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

demo: $(STAMP)
	$(VPY) examples/logistic_regression_digits.py

test: $(STAMP)
	$(VPY) -m codegen --check
	$(VPY) -m pytest -q tests

codegen: $(STAMP)
	$(VPY) -m codegen

bench: $(STAMP)
	$(VPY) asv_benchmarks/compare.py

clean:
	rm -rf $(VENV) build *.egg-info
