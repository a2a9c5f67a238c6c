"""The per-call functions of the call path (an op's dispatch function, a native kernel's unwrap, the
autograd record function) are generated source (`python -m codegen`), not compiled at run time: every
frame of a call has a file and a line; a layout the generated tables lack is a clear error."""
from __future__ import annotations

import inspect
import os
import traceback

import pytest

import ember
from ember.dispatcher import dispatch, keys as K, runners
from ember.dispatcher._generated import dispatchers, unwraps
from ember.dispatcher.operator import ALL_OPS, invalidate_caches
from ember._generated import recorders
from ember.frontend.autograd import recording

DISPATCH_FILE = os.path.abspath(dispatchers.__file__)
RECORDERS_FILE = os.path.abspath(recorders.__file__)


def _frames(exc: BaseException) -> list[traceback.FrameSummary]:
    return traceback.extract_tb(exc.__traceback__)


def _assert_real_frames(exc: BaseException) -> list[str]:
    frames = _frames(exc)
    for f in frames:
        assert not f.filename.startswith("<"), f"frame without a file: {f.filename} {f.name}"
        assert f.lineno and f.line, f"frame without a source line: {f.filename}:{f.lineno} {f.name}"
    return [os.path.abspath(f.filename) for f in frames]


@pytest.fixture
def raising_cpu_kernel():
    """exp's cpu kernel replaced by one that raises (caches forgotten before and after)."""
    op = ALL_OPS["exp"]
    ember.ones(1).exp()                 # the cpu backend loaded, its kernels registered
    key = K.backend_key("cpu")
    saved = op.kernels[key]

    def broken(spec, x):
        raise RuntimeError("kernel failed")
    op.kernels[key] = (broken, "test")
    invalidate_caches([op])
    try:
        yield
    finally:
        op.kernels[key] = saved
        invalidate_caches([op])


def test_traceback_through_dispatch_has_files_and_lines(raising_cpu_kernel):
    with pytest.raises(RuntimeError, match="kernel failed") as info:
        ember.ones(3).exp()
    files = _assert_real_frames(info.value)
    assert DISPATCH_FILE in files
    frame = next(f for f in _frames(info.value) if os.path.abspath(f.filename) == DISPATCH_FILE)
    assert frame.name == "dispatch" and frame.line == "return entry(args)"


def test_traceback_through_autograd_has_files_and_lines(raising_cpu_kernel):
    with pytest.raises(RuntimeError, match="kernel failed") as info:
        ember.ones(3, requires_grad=True).exp()
    files = _assert_real_frames(info.value)
    assert files.count(DISPATCH_FILE) == 1


def test_traceback_through_record_has_files_and_lines(monkeypatch):
    cls = ALL_OPS["mul.Tensor"].backward_cls

    def broken_save(self, args, outs):
        raise RuntimeError("save failed")
    monkeypatch.setattr(cls, "save", broken_save)
    with pytest.raises(RuntimeError, match="save failed") as info:
        ember.ones(3, requires_grad=True) * ember.ones(3)
    files = _assert_real_frames(info.value)
    assert DISPATCH_FILE in files and RECORDERS_FILE in files


def test_traceback_through_unwrap_has_files_and_lines():
    unwrap = runners._unwrapper(ALL_OPS["exp"])
    with pytest.raises(IndexError) as info:
        unwrap(())
    assert _assert_real_frames(info.value)[-1] == os.path.abspath(unwraps.__file__)


def test_shape_error_traceback_has_files_and_lines():
    with pytest.raises(RuntimeError) as info:
        ember.ones(2, 3, requires_grad=True) @ ember.ones(4, 5)
    assert DISPATCH_FILE in _assert_real_frames(info.value)


def test_every_registry_op_uses_generated_functions():
    """codegen's layouts and recorder shapes are the ones the runtime looks up (no loop-based fallback)."""
    for name, op in ALL_OPS.items():
        assert op.dispatch.__code__.co_filename == dispatchers.__file__, name
        if op.tensor_args and not op.tensor_list_args:
            assert runners._unwrapper(op).__code__.co_filename == unwraps.__file__, name
        if op.backward_cls is not None:
            assert recording.recorder_for(op).__code__.co_filename == recorders.__file__, name
    assert "def dispatch(args):" in inspect.getsource(ALL_OPS["mul.Tensor"].dispatch)
    # a code object per op's record function (each specialises for its op's node class alone)
    with_node = [op for op in ALL_OPS.values() if op.backward_cls is not None]
    assert len({id(recording.recorder_for(op).__code__) for op in with_node}) == len(with_node)
    assert dispatchers.Tensor is unwraps.Tensor is dispatch.Tensor is ember.Tensor


def test_a_layout_codegen_did_not_write_is_a_clear_error(monkeypatch):
    """Every op comes from the registry, so codegen writes every layout's functions; a table that
    lacks one (generated files older than the registry) names the op and the fix."""
    op = ALL_OPS["add.Tensor"]
    monkeypatch.setattr(dispatchers, "DISPATCH_FACTORIES", {})
    with pytest.raises(RuntimeError, match=r"add\.Tensor: no generated dispatch function for tensor positions "
                                           r"\(\(0, 1\), \(\)\); .*run `python -m codegen`"):
        dispatch.caller_for(op)
    monkeypatch.setattr(recording, "RECORDER_FACTORIES", {})
    monkeypatch.setattr(recording, "_RECORDERS", {})
    with pytest.raises(RuntimeError, match=r"add\.Tensor: no generated record function for .*run `python -m codegen`"):
        recording.recorder_for(op)


def test_ops_with_tensor_lists_unwrap_with_a_loop():
    """Tensor[] arguments (cat's) are unwrapped by the one loop written in runners.py."""
    op = ALL_OPS["cat"]
    unwrap = runners._unwrapper(op)
    assert unwrap.__code__.co_filename == runners.__file__
    a, b = ember.ones(2), ember.zeros(1)
    native = unwrap(([a, b], 0))
    assert native[0][0] is a._data and native[0][1] is b._data and native[1] == 0


def test_no_code_is_compiled_at_run_time_anywhere_in_ember_or_its_backends():
    """No call of the exec/eval/compile builtins (a method named eval, as Module.eval, is fine)."""
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    found, scanned = [], 0
    for top in ("ember", "backends"):
        for path in sorted((root / top).rglob("*.py")):
            if any(p.endswith(".egg-info") for p in path.parts):
                continue
            scanned += 1
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                        node.func.id in ("exec", "eval", "compile"):
                    found.append(f"{path.relative_to(root)}:{node.lineno} {node.func.id}()")
    assert scanned > 200
    assert not found, found


def test_a_call_reads_the_threads_keys_only_while_some_thread_has_keys():
    """`state.KEYED_THREADS` holds the threads whose included or excluded keys are set (the dispatch
    functions skip the thread-local read while it is empty); every switch keeps it, and a call in a thread
    without keys records its gradient while another thread sits in no_grad."""
    import threading

    from ember.dispatcher.state import KEYED_THREADS

    me = threading.get_ident()
    assert me not in KEYED_THREADS
    x = ember.ones(3, requires_grad=True)
    inside, release, seen = threading.Event(), threading.Event(), {}

    def worker():
        with ember.no_grad():
            seen["worker"] = (x + x).requires_grad
            inside.set()
            release.wait(5)

    th = threading.Thread(target=worker)
    th.start()
    assert inside.wait(5)
    assert th.ident in KEYED_THREADS and me not in KEYED_THREADS
    seen["main"] = (x + x).requires_grad          # this thread's keys are still empty
    with ember.autocast("cpu", dtype=ember.bfloat16):
        assert me in KEYED_THREADS
        seen["autocast"] = (x @ x).dtype
    release.set()
    th.join(5)
    assert th.ident not in KEYED_THREADS and me not in KEYED_THREADS
    assert seen == {"worker": False, "main": True, "autocast": ember.bfloat16}
