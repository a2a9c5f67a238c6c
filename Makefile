# The README's two set-up commands. Each creates .venv on a fresh machine and installs what
# it needs: `demo` the package and scikit-learn, `test` also the torch oracle and pytest.
PY   ?= python3
VENV := .venv
VPY  := $(VENV)/bin/python

.PHONY: demo test codegen bench clean

$(VPY):
	$(PY) -m venv $(VENV)
	$(VPY) -m pip install --quiet --upgrade pip

$(VENV)/.demo-installed: pyproject.toml | $(VPY)
	$(VPY) -m pip install --quiet -e '.[demo]'
	touch $@

# the OpenCL backend plugin is tested too, on PoCL (an OpenCL implementation for CPUs)
$(VENV)/.test-installed: pyproject.toml backends/opencl/pyproject.toml | $(VPY)
	$(VPY) -m pip install --quiet -e '.[test]' -e './backends/opencl[pocl]'
	touch $@

demo: $(VENV)/.demo-installed
	$(VPY) examples/digits_mlp.py

test: $(VENV)/.test-installed
	$(VPY) -m codegen --check
	$(VPY) -m pytest -q tests

codegen: $(VENV)/.test-installed
	$(VPY) -m codegen

bench: $(VENV)/.test-installed
	$(VPY) asv_benchmarks/compare.py

clean:
	rm -rf $(VENV) build *.egg-info
