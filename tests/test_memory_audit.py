"""`python -m ember.memory audit`: each native kernel's scratch, measured, against its backend's declaration
(`Backend.workspace`; cpu: ember_cpu/workspace.py). Its workloads reach every cpu and opencl kernel, all of
them must pass, and a wrong declaration must fail."""
from __future__ import annotations

import pytest

import ember
from ember.dispatcher import ALL_OPS
from ember.dispatcher.plugins import REGISTRY
from ember.memory.audit import audit
from ember.memory.cli import main


@pytest.fixture(scope="module")
def cpu_audit():
    return audit("cpu")


def test_cpu_audit_reaches_every_cpu_kernel_and_passes(cpu_audit):
    print("\n" + cpu_audit.report())
    assert not cpu_audit.failures, cpu_audit.report()
    key = REGISTRY.load("cpu").backend.key
    with_kernels = {name for name, op in ALL_OPS.items() if key in op.kernels}
    assert with_kernels <= {c.op for c in cpu_audit.calls}


def test_cpu_audit_measures_declared_scratch(cpu_audit):
    """The declarations are exercised where they are large: the training workloads' convolution and its
    backward hold tens of kilobytes of scratch, declared within the slack."""
    big = [c for c in cpu_audit.calls if c.declared > 16384]
    assert {"convolution", "convolution_backward"} <= {c.op for c in big}
    assert all(c.ok for c in big)


def test_a_wrong_declaration_fails_the_audit(monkeypatch):
    from ember_cpu import workspace

    wrong = dict(workspace.WORKSPACE)
    wrong["linear"] = lambda x, w, b=None: 1 << 20             # a megabyte that linear does not allocate
    monkeypatch.setattr(workspace, "WORKSPACE", wrong)
    monkeypatch.setattr("ember_cpu.plugin.WORKSPACE", wrong)
    result = audit("cpu", ops=["linear"])
    assert result.calls and {c.op for c in result.failures} == {"linear"}
    assert all(c.declared == 1 << 20 for c in result.failures)
    missing = dict(workspace.WORKSPACE)
    missing["linear"] = lambda x, w, b=None: 0                  # float16 linear's float32 copies left out
    monkeypatch.setattr("ember_cpu.plugin.WORKSPACE", missing)
    result = audit("cpu", ops=["linear"], workloads="test_memory_audit:half_linear_workloads")
    assert [c.op for c in result.failures] == ["linear"] and result.failures[0].measured > 300_000


def half_linear_workloads(device, ops, dtypes, per_op):
    """One float16 linear of 64 x 256 x 256 (its float32 copies and product: 352 KiB of scratch)."""
    x, w = (ember.randn(*s, device=device).half() for s in ((64, 256), (256, 256)))
    yield lambda: ember.nn.functional.linear(x, w)


def test_cli_audit_exit_status(capsys):
    assert main(["audit", "--ops", "mm", "linear", "--dtypes", "float32,float16"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("ember.memory audit on cpu:") and ", 0 outside" in out


def test_opencl_audit():
    """opencl declares its GEMM's packed panels (bmm, mm); its other kernels keep no scratch."""
    if not ember.opencl.is_available():
        pytest.skip("opencl backend not available")
    result = audit("opencl", dtypes=("float32",), per_op=1)
    print("\n" + result.report())
    assert result.calls and not result.failures, result.report()
    assert any(c.op in ("mm", "bmm") and c.declared for c in result.calls)
    key = REGISTRY.load("opencl").backend.key
    assert {name for name, op in ALL_OPS.items() if key in op.kernels} <= {c.op for c in result.calls}


def test_softmax_declarations_hold_where_they_are_large():
    """softmax and log_softmax over blocks of rows (the last dim) or the whole array (another dim), with the
    float32 copy of float16 and the float64 copy of a float32 input asked for float64: sizes the conformance
    samples do not reach, each declared within the slack."""
    result = audit("cpu", ops=["softmax.int", "log_softmax.int"],
                   workloads="test_memory_audit:large_softmax_workloads")
    print("\n" + result.report())
    assert len(result.calls) == 12 and not result.failures, result.report()
    assert sum(c.declared > 200_000 for c in result.calls) >= 6


def test_softmax_backward_declarations_hold_where_they_are_large():
    """_softmax_backward_data and _log_softmax_backward_data (softmax's and log_softmax's backward), a block of
    rows at a time or over the whole array, float32 and float16 (its float32 copies), at sizes the
    conformance samples do not reach."""
    names = ("_softmax_backward_data", "_log_softmax_backward_data")
    result = audit("cpu", ops=list(names), workloads="test_memory_audit:large_softmax_backward_workloads")
    calls = [c for c in result.calls if c.op in names]
    print("\n" + result.report())
    assert len(calls) == 8 and not result.failures, result.report()
    assert sum(c.declared > 200_000 for c in calls) >= 4


def large_softmax_backward_workloads(device, ops, dtypes, per_op):
    for shape, dim, dtype in (((300, 1000), -1, ember.float32), ((300, 200), 0, ember.float32),
                              ((300, 1000), 1, ember.float16), ((3000, 100), 0, ember.float16)):
        g, y = ember.randn(*shape, device=device).to(dtype), ember.randn(*shape, device=device).to(dtype)
        for op in (ember._softmax_backward_data, ember._log_softmax_backward_data):
            yield lambda op=op, g=g, y=y, dim=dim, dtype=dtype: op(g, y, dim, dtype)


def large_softmax_workloads(device, ops, dtypes, per_op):
    F = ember.nn.functional
    cases = (((300, 1000), -1, ember.float32, None), ((20000, 10), 1, ember.float32, None),
             ((300, 200), 0, ember.float32, None), ((300, 1000), 1, ember.float16, None),
             ((3000, 100), 0, ember.float16, None), ((300, 1000), 1, ember.float32, ember.float64))
    for shape, dim, dtype, to in cases:
        x = ember.randn(*shape, device=device).to(dtype)
        for fn in (F.softmax, F.log_softmax):
            yield lambda fn=fn, x=x, dim=dim, to=to: fn(x, dim, dtype=to)


def test_batch_norm_declarations_hold_where_they_are_large():
    """native_batch_norm and its backward (training and eval, float32 and float16 with float32 parameters, 2-D
    and 4-D): the centred input, the squares, the normalised input and its product with the gradient, numpy's
    buffers and the float32 copies, each declared within the slack."""
    result = audit("cpu", ops=["native_batch_norm", "native_batch_norm_backward"],
                   workloads="test_memory_audit:large_batch_norm_workloads")
    print("\n" + result.report())
    calls = [c for c in result.calls if c.op.startswith("native_batch_norm")]
    assert len(calls) == 12 and not result.failures, result.report()
    assert sum(c.declared > 200_000 for c in calls) >= 8


def large_batch_norm_workloads(device, ops, dtypes, per_op):
    F = ember.nn.functional
    for shape, dtype, training in (((8, 16, 32, 32), ember.float32, True), ((8, 16, 32, 32), ember.float32, False),
                                   ((4096, 64), ember.float32, True), ((8, 16, 32, 32), ember.float16, True),
                                   ((8, 16, 32, 32), ember.float16, False), ((4, 8, 16, 16, 8), ember.float64, True)):
        x = ember.randn(*shape, device=device).to(dtype).requires_grad_()
        w = ember.randn(shape[1], device=device, requires_grad=True)
        b = ember.randn(shape[1], device=device, requires_grad=True)
        if dtype is ember.float64:
            w, b = w.double().detach().requires_grad_(), b.double().detach().requires_grad_()
        stats = ember.zeros(shape[1], device=device, dtype=w.dtype), ember.ones(shape[1], device=device, dtype=w.dtype)

        def run(x=x, w=w, b=b, stats=stats, training=training):
            out = F.batch_norm(x, *stats, w, b, training=training)
            out.backward(ember.ones_like(out))
            x.grad = w.grad = b.grad = None
        yield run
