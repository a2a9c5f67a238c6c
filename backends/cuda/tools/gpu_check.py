"""`make gpu-check`: the whole GPU check of ember-cuda in one command, for a machine with a GPU.

    python3 backends/cuda/tools/gpu_check.py [--python PY] [--venv DIR] [--wheels DIR] [--quick]

Written to be run blind (no network, cupy/numpy/torch preinstalled): every step is guarded,
prints a section header, its time and PASS/FAIL, and the run goes on after a failure so one
run reports everything; the exit status is non-zero if any step failed. Steps:

  1. environment   python, numpy, cupy, torch versions; the GPU cupy sees (fails without one)
  2. install       a venv with --system-site-packages (the preinstalled cupy/numpy/torch), ember
                   and ember-cuda installed editable with --no-deps --no-build-isolation (no
                   network); missing deps (pluggy, ml_dtypes, pytest, scikit-learn, pytest-xdist)
                   from --wheels DIR if given (`make gpu-wheels` fills .gpu-wheels on a networked
                   machine; carry it)
  3. plugin        `python -m ember info` must list cuda as available
  4. unit tests    tests/test_cuda_plugin.py (the GPU tests run: memory stats, streams, events,
                   Philox bit-identity with cpu, DLPack with cupy and torch)
  5. conformance   tests/test_conformance_cuda.py, lean selection (tests/conftest.py), <= 300 s
                   (8 pytest-xdist workers when xdist is there or in the wheels)
  6. digits        examples/logistic_regression_digits.py --device cuda (to switch to
                   examples/digits_mlp.py once it lands); accuracy must exceed 0.9
  7. bench         backends/cuda/tools/gpu_bench.py: tiny-op overhead and 4096^2 matmul TFLOP/s
                   vs raw cupy
  8. compile       tests/test_cuda_fused_codegen.py -k gpu: ember.compile's generated CUDA C (fused
                   chains and row reductions) and a recorded training step, against eager on cuda
  9. nccl          tests/test_nccl.py: ember.distributed's 'nccl' backend under mpiexec, one rank per
                   GPU (up to 2; one on a single-GPU machine): every collective against numpy, async
                   handles, DDP and FSDP steps against one process. Needs mpi4py and the mpich wheel
                   (in the wheels) and libnccl (cupy's, or the nvidia-nccl-cu12 wheel a CUDA torch
                   brings); a skip is a failure here

Logs of every step go to $OUT (the device tool's output folder) or build/gpu-check.
Budget: about 7 minutes on a 16-core H200 machine (each step has its own timeout).
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
LOGS = Path(os.environ.get("OUT") or ROOT / "build" / "gpu-check")
RESULTS: list[tuple[str, str, float, str]] = []


def header(title: str) -> None:
    print(f"\n{'=' * 78}\n== {title}\n{'=' * 78}", flush=True)


def run(step: str, cmd: list[str], timeout: int, tail: int = 40, env=None) -> tuple[int, str]:
    """Run cmd, log its whole output to LOGS/<step>.log, print the last `tail` lines."""
    LOGS.mkdir(parents=True, exist_ok=True)
    print("$ " + " ".join(cmd), flush=True)
    t0 = time.perf_counter()
    try:
        p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout,
                           env={**os.environ, **(env or {})})
        rc, out = p.returncode, p.stdout + p.stderr
    except subprocess.TimeoutExpired as exc:
        out = (exc.stdout or b"").decode(errors="replace") if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        rc, out = 124, out + f"\n[timed out after {timeout} s]"
    except OSError as exc:
        rc, out = 127, f"[could not start: {exc}]"
    (LOGS / f"{step}.log").write_text(out)
    lines = out.rstrip().splitlines()
    if len(lines) > tail:
        print(f"[... {len(lines) - tail} lines in {LOGS / (step + '.log')}]")
    print("\n".join(lines[-tail:]), flush=True)
    print(f"[{step}: exit {rc} in {time.perf_counter() - t0:.1f} s]", flush=True)
    return rc, out


def record(step: str, ok: bool, seconds: float, note: str = "") -> bool:
    RESULTS.append((step, "PASS" if ok else "FAIL", seconds, note))
    return ok


def step_environment(py: str) -> bool:
    header("1. environment")
    t0 = time.perf_counter()
    code = ("import sys, numpy; print('python', sys.version.split()[0]); print('numpy', numpy.__version__)\n"
            "try:\n import torch; print('torch', torch.__version__, 'cuda' if torch.cuda.is_available() else 'cpu-only')\n"
            "except Exception as e: print('torch: not importable:', e)\n"
            "import cupy; print('cupy', cupy.__version__); n = cupy.cuda.runtime.getDeviceCount(); print('gpus', n)\n"
            "p = cupy.cuda.runtime.getDeviceProperties(0); print('gpu0', p['name'].decode(), p['totalGlobalMem'] >> 20, 'MiB')\n"
            "assert n > 0")
    rc, _ = run("environment", [py, "-c", code], 120, tail=20)
    run("nvidia-smi", ["nvidia-smi", "-L"], 30, tail=8)
    return record("environment", rc == 0, time.perf_counter() - t0, "" if rc == 0 else "cupy sees no GPU")


def step_install(py: str, venv: Path, wheels: Path | None) -> str | None:
    """The venv's python with ember and ember-cuda installed, or None."""
    header("2. install (no network)")
    t0 = time.perf_counter()
    vpy = venv / "bin" / "python"
    if not vpy.exists():
        rc, _ = run("venv", [py, "-m", "venv", "--system-site-packages", str(venv)], 180)
        if rc != 0:
            record("install", False, time.perf_counter() - t0, "venv creation failed")
            return None
    # the interpreter may itself be a venv, whose packages --system-site-packages does not reach:
    # its site folders go into the new venv through a .pth (after the venv's own, so installs here win)
    rc, out = run("base-site", [py, "-c", "import sys; print('\\n'.join(p for p in sys.path "
                                "if p.endswith(('site-packages', 'dist-packages'))))"], 60, tail=5)
    rc2, site = run("venv-site", [str(vpy), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], 60,
                    tail=1)
    if rc == 0 and rc2 == 0:
        Path(site.strip().splitlines()[-1], "_ember_base_site.pth").write_text(out)
    need = {"pluggy": "pluggy", "ml_dtypes": "ml_dtypes", "pytest": "pytest", "sklearn": "scikit-learn",
            "xdist": "pytest-xdist",            # xdist is optional: the conformance run uses 8 workers with it
            "mpi4py": "mpi4py", "mpiexec": "mpich"}     # the nccl step's launcher (mpich: mpiexec beside python)
    rc, out = run("deps-probe", [str(vpy), "-c", "import importlib.util as u, pathlib, shutil, sys; print('MISSING', "
                                 "*[m for m in " f"{list(need)!r} if (u.find_spec(m) is None if m != 'mpiexec' else "
                                 "not (pathlib.Path(sys.executable).parent / m).exists() and not shutil.which(m))])"],
                  60, tail=5)
    missing = [need[m] for m in out.split("MISSING", 1)[-1].split()] if rc == 0 else list(need.values())
    if missing and wheels is not None and wheels.is_dir():
        for pkg in missing:         # one by one: a wheel that does not fit this numpy must not block the others
            run(f"deps-{pkg}", [str(vpy), "-m", "pip", "install", "--no-index", "--find-links", str(wheels), pkg], 120,
                tail=3)
    elif missing:
        print(f"missing: {', '.join(missing)} (no wheels folder: run `make gpu-wheels` on a networked machine "
              "and carry .gpu-wheels)")
    rc, _ = run("install", [str(vpy), "-m", "pip", "install", "--no-deps", "--no-build-isolation", "--no-index",
                            "-e", ".", "-e", "./backends/cuda"], 300, tail=10)
    note = "pip install -e"
    if rc != 0:     # e.g. a setuptools without bdist_wheel and no `wheel` package: install without building
        print("pip could not build the editable installs: installing through a .pth file and dist-info instead")
        try:
            source_install(str(vpy))
            rc, note = 0, "source install (.pth + dist-info; pip install -e failed)"
        except Exception as exc:
            print(f"source install failed: {type(exc).__name__}: {exc}")
    ok = rc == 0
    record("install", ok, time.perf_counter() - t0, note if ok else "install failed")
    return str(vpy) if ok else None


def _entry_points(pyproject: Path) -> str:
    """entry_points.txt text of a pyproject.toml's [project.entry-points.*] tables."""
    import tomllib

    groups = tomllib.loads(pyproject.read_text())["project"].get("entry-points", {})
    return "".join(f"[{g}]\n" + "".join(f"{k} = {v}\n" for k, v in eps.items()) + "\n" for g, eps in groups.items())


def source_install(vpy: str) -> None:
    """Make ember, ember_cpu, ember_meta and ember_cuda importable from the source tree, with entry points.

    A folder of symbolic links (the packages under their import names, as pyproject.toml's
    package-dir maps them), a .pth file naming it, and a dist-info per distribution carrying
    its entry points (the `ember.backends` plugins and the pytest11 conformance option).
    """
    site = subprocess.run([vpy, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    site_dir = Path(site)
    src = site_dir / "_ember_source"
    src.mkdir(exist_ok=True)
    for name, target in {"ember": ROOT / "ember", "ember_cpu": ROOT / "backends" / "cpu",
                         "ember_meta": ROOT / "backends" / "meta",
                         "ember_cuda": ROOT / "backends" / "cuda" / "ember_cuda"}.items():
        link = src / name
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(target, target_is_directory=True)
    (site_dir / "_ember_source.pth").write_text(str(src) + "\n")
    for dist, pyproject in (("ember", ROOT / "pyproject.toml"), ("ember_cuda", ROOT / "backends" / "cuda" / "pyproject.toml")):
        info = site_dir / f"{dist}-0.1.0.dist-info"
        info.mkdir(exist_ok=True)
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist.replace('_', '-')}\nVersion: 0.1.0\n")
        (info / "entry_points.txt").write_text(_entry_points(pyproject))
        (info / "INSTALLER").write_text("ember-gpu-check\n")
        (info / "RECORD").write_text("")
    print(f"installed from source into {site_dir}")


def step_plugin(vpy: str) -> bool:
    header("3. plugin status: python -m ember info")
    t0 = time.perf_counter()
    rc, out = run("info", [vpy, "-m", "ember", "info"], 120, tail=20)
    ok = rc == 0 and re.search(r"^\s*cuda\s+available", out, re.M) is not None
    return record("plugin", ok, time.perf_counter() - t0, "" if ok else "cuda not listed as available")


def pytest_summary(out: str) -> str:
    m = re.findall(r"=+ (.*(?:passed|failed|error|skipped).*) =+", out)
    return m[-1] if m else "no pytest summary"


def step_pytest(vpy: str, name: str, title: str, target: str, timeout: int, extra=(), must_run: bool = False) -> bool:
    """A pytest run; `must_run`: a skip is a failure too (the step exists to run that test)."""
    header(title)
    t0 = time.perf_counter()
    rc, out = run(name, [vpy, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--tb=short", "-rfEs",
                         "--durations=5", target, *extra], timeout, tail=60)
    summary = pytest_summary(out)
    ok = rc == 0 and "failed" not in summary and "error" not in summary
    if must_run and ("skipped" in summary or "passed" not in summary):
        ok = False
    return record(name, ok, time.perf_counter() - t0, summary)


def step_digits(vpy: str) -> bool:
    header("6. digits example on cuda")
    t0 = time.perf_counter()
    script = ROOT / "examples" / "digits_mlp.py"
    if not script.exists():           # examples/ is being rewritten: digits_mlp.py replaces this one
        script = ROOT / "examples" / "logistic_regression_digits.py"
    rc, out = run("digits", [vpy, str(script.relative_to(ROOT)), "--device", "cuda"], 120, tail=20)
    m = re.findall(r"accuracy[^0-9]*([0-9]+(?:\.[0-9]+)?)", out, re.I)
    acc = float(m[-1]) if m else None
    if acc is not None and acc > 1:         # printed as a percentage
        acc /= 100
    ok = rc == 0 and acc is not None and acc > 0.9
    return record("digits", ok, time.perf_counter() - t0, f"{script.name}: accuracy {acc}")


def step_bench(vpy: str, quick: bool) -> bool:
    header("7. bench: ember vs raw cupy")
    t0 = time.perf_counter()
    rc, out = run("bench", [vpy, "backends/cuda/tools/gpu_bench.py"] + (["--quick"] if quick else []), 120, tail=30)
    m = re.search(r"ember\s+([0-9.]+)\s+cupy\s+([0-9.]+)", out)
    note = f"matmul TFLOP/s ember {m.group(1)} cupy {m.group(2)}" if m else ""
    return record("bench", rc == 0, time.perf_counter() - t0, note)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", default=sys.executable, help="the interpreter with cupy/numpy/torch")
    parser.add_argument("--venv", default=str(ROOT / ".venv-gpu"))
    parser.add_argument("--wheels", default=None, help="folder of wheels for missing pure-Python deps")
    parser.add_argument("--quick", action="store_true", help="shorter bench")
    args = parser.parse_args(argv)
    wheels = Path(args.wheels) if args.wheels else (ROOT / ".gpu-wheels" if (ROOT / ".gpu-wheels").is_dir() else None)
    start = time.perf_counter()
    print(f"ember gpu-check in {ROOT}; logs in {LOGS}")

    step_environment(args.python)
    vpy = step_install(args.python, Path(args.venv), wheels)
    if vpy is not None and step_plugin(vpy):
        step_pytest(vpy, "unit", "4. ember-cuda unit tests (GPU tests included)", "tests/test_cuda_plugin.py", 150)
        has_xdist = subprocess.run([vpy, "-c", "import xdist"], capture_output=True).returncode == 0
        step_pytest(vpy, "conformance", "5. conformance suite on cuda (lean selection"
                    + (", 8 workers)" if has_xdist else ")"), "tests/test_conformance_cuda.py", 300,
                    ["-n", "8"] if has_xdist else [])
        step_digits(vpy)
        step_bench(vpy, args.quick)
        step_pytest(vpy, "compile", "8. ember.compile on cuda (generated CUDA C, a recorded training step)",
                    "tests/test_cuda_fused_codegen.py", 180, ["-k", "gpu"])
        step_pytest(vpy, "nccl", "9. ember.distributed over NCCL (one rank per GPU, up to 2)", "tests/test_nccl.py",
                    300, must_run=True)

    header("summary")
    for step, status, seconds, note in RESULTS:
        print(f"  {status:<5} {step:<12} {seconds:7.1f} s  {note}")
    failed = [r for r in RESULTS if r[1] != "PASS"]
    print(f"\n{'FAILED' if failed else 'PASSED'}: {len(RESULTS) - len(failed)}/{len(RESULTS)} steps in "
          f"{time.perf_counter() - start:.0f} s" + ("" if vpy else " (later steps not run: no working install)"))
    return 1 if failed or len(RESULTS) < 9 else 0


if __name__ == "__main__":
    sys.exit(main())
