# The README's two set-up commands. Each creates .venv on a fresh machine and installs what
# it needs: `demo` the package and scikit-learn, `test` also the torch oracle and pytest.
PY   ?= python3
VENV := .venv
VPY  := $(VENV)/bin/python

.PHONY: demo test codegen bench docs clean gpu-check gpu-wheels

# pip, quiet; setuptools' notice on every editable install ("Editable installation ... be careful
# with folders in your working directory ...") is information for package authors, not for users
PIP := PYTHONWARNINGS="ignore:Editable installation" $(VPY) -m pip install --quiet

$(VPY):
	$(PY) -m venv $(VENV)
	$(PIP) --upgrade pip

$(VENV)/.demo-installed: pyproject.toml | $(VPY)
	$(PIP) -e '.[demo]'
	touch $@

# the OpenCL backend plugin is tested too, on PoCL (an OpenCL implementation for CPUs). The CUDA
# plugin is installed without its cupy extra (CI has no GPU, cupy is never required); cupy-cuda12x
# is then added when pip can get it (~15 s, ~300 MB), so CI runs the "cupy present, no GPU"
# path (the driver error as the reason) and tests/test_cuda_plugin.py simulates the no-cupy one.
$(VENV)/.test-installed: pyproject.toml backends/opencl/pyproject.toml backends/cuda/pyproject.toml | $(VPY)
	$(PIP) -e '.[test]' -e './backends/opencl[pocl]' -e ./backends/cuda
	$(PIP) cupy-cuda12x || echo "cupy-cuda12x not installable: the cuda tests cover the no-cupy path only"
	touch $@

demo: $(VENV)/.demo-installed
	$(VPY) examples/digits_mlp.py

# -n auto: one pytest worker per core (pytest-xdist); the suite is ~13k small independent tests
# lint-imports: the layer contracts of pyproject.toml ([tool.importlinter]); ruff: no unused or undefined name
test: $(VENV)/.test-installed
	$(VPY) -m codegen --check
	$(VENV)/bin/lint-imports --no-cache
	$(VENV)/bin/ruff check --quiet ember backends codegen
	$(VPY) -m pytest -q -n auto tests

codegen: $(VENV)/.test-installed
	$(VPY) -m codegen

bench: $(VENV)/.test-installed
	$(VPY) asv_benchmarks/compare.py

# Rerun the commands whose outputs README.md and docs/*.md quote and write the outputs in
# (docs/regenerate.py; this includes compare.py's benchmark table, up to a couple of minutes).
docs: $(VENV)/.test-installed
	$(VPY) docs/regenerate.py

# On a machine with an NVIDIA GPU (cupy, numpy, torch preinstalled, no network): install ember and
# ember-cuda into .venv-gpu (--system-site-packages, no downloads), then plugin status, the cuda
# unit tests, the conformance suite on cuda, the digits example on cuda, the bench vs raw cupy,
# ember.compile on cuda and ember.distributed over NCCL.
# Every step guarded; exit status non-zero if one failed. GPU_PY: the interpreter that has cupy.
GPU_PY ?= python3
gpu-check:
	$(GPU_PY) backends/cuda/tools/gpu_check.py --python $(GPU_PY)

# Run on a networked machine before gpu-check when the GPU machine lacks pure-Python deps (ember's
# pluggy/ml_dtypes, pytest, scikit-learn for the digits example, mpi4py and mpich for the NCCL
# step): wheels for GPU_PYVER go to .gpu-wheels, which gpu-check installs from (carry it to the
# GPU machine).
GPU_PYVER ?= $(shell $(GPU_PY) -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')
gpu-wheels:
	$(GPU_PY) -m pip download --quiet --only-binary=:all: --no-deps --python-version $(GPU_PYVER) -d .gpu-wheels \
		pluggy ml_dtypes pytest iniconfig packaging pygments tomli exceptiongroup \
		scikit-learn scipy joblib threadpoolctl narwhals pytest-xdist execnet mpi4py mpich
	# an older ml_dtypes for a numpy 1.x machine (pip picks the newest one that fits)
	$(GPU_PY) -m pip download --quiet --only-binary=:all: --no-deps --python-version $(GPU_PYVER) -d .gpu-wheels \
		'ml_dtypes==0.4.1'
	du -sh .gpu-wheels

clean:
	rm -rf $(VENV) .venv-gpu .gpu-wheels build *.egg-info
