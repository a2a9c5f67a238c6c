"""Smoke check of an opencl device against the cpu backend, plus GEMM/add/sum timings.

Run on a machine with a real OpenCL GPU: python backends/opencl/tools/smoke.py (prints BAD 0
when every compared op agrees; needs no torch).
"""
import time, traceback, numpy as np, ember, ember_opencl, warnings
warnings.simplefilter("ignore")
print("devices:", [d.describe() for d in ember_opencl.devices(all=True)])
print("selected:", [d.describe() for d in ember_opencl.devices()])
bad = 0
def cmp(name, f, *xs, tol=1e-5):
    global bad
    try:
        a = f(*[x.to("opencl") if isinstance(x, ember.Tensor) else x for x in xs])
        b = f(*xs)
        a = a.cpu().double().numpy() if a.dtype != ember.bool else a.cpu().numpy()
        b = b.double().numpy() if b.dtype != ember.bool else b.numpy()
        ok = a.shape == b.shape and np.allclose(a, b, rtol=tol, atol=tol, equal_nan=True)
        if not ok:
            bad += 1
            print("MISMATCH", name, np.nanmax(np.abs(a - b)) if a.shape == b.shape else (a.shape, b.shape))
    except Exception:
        bad += 1
        print("ERROR", name); traceback.print_exc()
ember.manual_seed(0)
for dt, tol in [(ember.float32, 2e-5), (ember.float64, 1e-12), (ember.float16, 2e-3), (ember.bfloat16, 2e-2)]:
    x = ember.randn(33, 17).to(dt); y = ember.randn(17).to(dt); z = ember.randn(17, 33).to(dt).t()
    for nm, f in [("add", lambda a, b: a + b * 2), ("mul", ember.mul), ("div", ember.div), ("atan2", ember.atan2),
                  ("lt", ember.lt), ("pow", lambda a, b: ember.pow(a.abs(), b))]:
        cmp(f"{nm}[{dt}]", f, x, y, tol=tol); cmp(f"{nm}-t[{dt}]", f, x, z, tol=tol)
    for nm in ["exp", "log1p", "tanh", "sin", "erf", "expm1", "sqrt", "floor", "round", "abs", "neg"]:
        cmp(f"{nm}[{dt}]", lambda a, nm=nm: getattr(ember, nm)(a.abs() if nm in ("sqrt", "log1p") else a), z, tol=tol)
    for nm in ["sum", "amax", "amin", "argmax", "argmin"]:
        cmp(f"{nm}[{dt}]", lambda a, nm=nm: getattr(ember, nm)(a, 0), z, tol=tol * 10)
        cmp(f"{nm}-all[{dt}]", lambda a, nm=nm: getattr(ember, nm)(a), x, tol=tol * 10)
    cmp(f"cumsum[{dt}]", lambda a: ember.cumsum(a, 1), z, tol=tol * 10)
    cmp(f"bmm[{dt}]", lambda a, b: a @ b.t(), x, z, tol=tol * 10)
    cmp(f"softmax[{dt}]", lambda a: ember.softmax(a, 1), x, tol=tol * 10)
    cmp(f"cast-int[{dt}]", lambda a: (a * 10).to(ember.int32), x)
for dt in [ember.float32, ember.float16, ember.bfloat16, ember.float64]:
    ember.manual_seed(3); a = ember.rand(1000, dtype=dt, device="opencl").cpu()
    ember.manual_seed(3); b = ember.rand(1000, dtype=dt)
    if not bool((a == b).all()): bad += 1; print("RAND MISMATCH", dt)
ember.manual_seed(3); a = ember.randint(0, 1000, (999,), device="opencl").cpu()
ember.manual_seed(3); b = ember.randint(0, 1000, (999,))
if not bool((a == b).all()): bad += 1; print("RANDINT MISMATCH")
ix = ember.randint(0, 33, (5, 17)); cmp("gather", lambda a, i: ember.gather(a, 0, i), x.float(), ix)
cmp("scatter_add", lambda a, i, s: ember.scatter_add(a, 0, i, s), ember.zeros(33, 17), ix, ember.randn(5, 17))
print("BAD", bad)
rt = ember_opencl.runtime
for n in (1024, 4096):
    a = ember.randn(n, n, device="opencl"); b = ember.randn(n, n, device="opencl")
    c = a @ b; rt.synchronize(); t = time.perf_counter(); reps = 5
    for _ in range(reps): c = a @ b
    rt.synchronize(); dt_ = (time.perf_counter() - t) / reps
    an, bn = a.cpu().numpy(), b.cpu().numpy(); t = time.perf_counter(); an @ bn; tn = time.perf_counter() - t
    print(f"GEMM {n}: opencl {2*n**3/dt_/1e9:.1f} GFLOP/s, numpy {2*n**3/tn/1e9:.1f} GFLOP/s")
x = ember.randn(4 * 2**20, device="opencl"); y = ember.randn(4 * 2**20, device="opencl")
for nm, f in [("add", lambda: x + y), ("sum", lambda: x.sum())]:
    f(); rt.synchronize(); t = time.perf_counter()
    for _ in range(20): f()
    rt.synchronize(); print(f"{nm} 4M: {(time.perf_counter() - t) / 20 * 1e3:.3f} ms")
print(rt.memory_summary())
