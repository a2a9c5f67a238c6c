"""`ember.optim.LBFGS`: limited-memory BFGS over all parameters as one flat vector, torch's algorithm.

Each `step(closure)` runs up to `max_iter` iterations. An iteration takes the quasi-Newton direction
from the curvature pairs (s, y) of the last `history_size` iterations (the two-loop recursion, scaled
by y.s / y.y of the newest pair; the steepest descent on the first iteration), then moves along it:
a fixed step of `lr` (the first iteration's scaled down by the gradient's L1 norm), or with
`line_search_fn="strong_wolfe"` a step satisfying the strong Wolfe conditions, found by bracketing and
cubic interpolation (Nocedal and Wright, algorithms 3.5 and 3.6). It stops early when the gradient,
the step or the loss change falls below the tolerances, or after `max_eval` closure calls. The
scalars are 0-d tensors of the parameters' dtype where torch's are, so the iterates are torch's.
The state (history, direction, step, counters) lives in `state[first parameter]`, as torch keeps it.
"""
from __future__ import annotations

from typing import Callable

from ember.frontend.autograd.grad_mode import enable_grad, no_grad
from ember.frontend.tensor import Tensor

from ._checks import check_nonnegative
from .optimizer import Optimizer

__all__ = ["LBFGS"]


class LBFGS(Optimizer):
    """LBFGS(params, lr=1, max_iter=20, max_eval=None, tolerance_grad=1e-7, tolerance_change=1e-9,
    history_size=100, line_search_fn=None): one parameter group; `step` needs a closure that
    recomputes the loss (and its gradients) and returns it."""

    def __init__(self, params, lr: float = 1, max_iter: int = 20, max_eval: int | None = None,
                 tolerance_grad: float = 1e-7, tolerance_change: float = 1e-9, history_size: int = 100,
                 line_search_fn: str | None = None) -> None:
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        check_nonnegative(lr=lr)
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        defaults = dict(lr=lr, max_iter=max_iter, max_eval=max_eval, tolerance_grad=tolerance_grad,
                        tolerance_change=tolerance_change, history_size=history_size, line_search_fn=line_search_fn)
        super().__init__(params, defaults)
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        self._params = self.param_groups[0]["params"]

    # -- the parameters as one flat vector -------------------------------------------------------
    def _flat_grad(self):
        from ember._generated import functions as F

        return F.cat([p.grad.reshape(-1) if p.grad is not None else p.new_zeros(p.numel()) for p in self._params], 0)

    def _move(self, step, direction) -> None:
        """Every parameter += step * its slice of `direction`."""
        alpha = float(step)
        offset = 0
        for p in self._params:
            n = p.numel()
            p.add_(direction[offset:offset + n].view_as(p), alpha=alpha)
            offset += n

    def _evaluate_at(self, closure: Callable, start: list, step, direction) -> tuple:
        """(loss, flat gradient) at start + step * direction; the parameters are then put back to `start`."""
        self._move(step, direction)
        with enable_grad():
            loss = float(closure())
        grad = self._flat_grad()
        for p, value in zip(self._params, start):
            p.copy_(value)
        return loss, grad

    # -- one step ----------------------------------------------------------------------------------
    def step(self, closure: Callable):
        """Up to max_iter iterations; returns the loss the closure gave at the starting point."""
        with no_grad():
            return self._step(closure)

    def _step(self, closure: Callable):
        group = self.param_groups[0]
        lr, max_iter, max_eval = group["lr"], group["max_iter"], group["max_eval"]
        tolerance_grad, tolerance_change = group["tolerance_grad"], group["tolerance_change"]
        history_size, line_search_fn = group["history_size"], group["line_search_fn"]
        state = self.state[self._params[0]]
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)
        with enable_grad():
            first_loss = closure()
        loss = float(first_loss)
        evals = 1
        state["func_evals"] += 1
        grad = self._flat_grad()
        if grad.abs().max() <= tolerance_grad:
            return first_loss
        history = _History.of(state, history_size)
        d, t = state.get("d"), state.get("t")
        prev_grad, prev_loss = state.get("prev_flat_grad"), state.get("prev_loss")
        iteration = 0
        while iteration < max_iter:
            iteration += 1
            state["n_iter"] += 1
            if state["n_iter"] == 1:
                d = grad.neg()
                history.clear()
            else:
                history.add(grad.sub(prev_grad), d.mul(t))
                d = history.direction(grad)
            prev_grad = grad.clone() if prev_grad is None else prev_grad.copy_(grad)
            prev_loss = loss
            t = min(1.0, 1.0 / grad.abs().sum()) * lr if state["n_iter"] == 1 else lr
            gtd = grad.dot(d)                          # the directional derivative
            if gtd > -tolerance_change:
                break
            if line_search_fn is not None:
                if line_search_fn != "strong_wolfe":
                    raise RuntimeError("only 'strong_wolfe' is supported")
                start = [p.clone() for p in self._params]
                loss, grad, t, used = _strong_wolfe(lambda x, s, dd: self._evaluate_at(closure, x, s, dd), start, t,
                                                    d, loss, grad, gtd)
                self._move(t, d)
                converged = grad.abs().max() <= tolerance_grad
            else:
                self._move(t, d)
                used, converged = 0, False
                if iteration != max_iter:      # the last iteration's loss is the next step's first evaluation
                    with enable_grad():
                        loss = float(closure())
                    grad = self._flat_grad()
                    converged = grad.abs().max() <= tolerance_grad
                    used = 1
            evals += used
            state["func_evals"] += used
            if iteration == max_iter or evals >= max_eval or converged:
                break
            if d.mul(t).abs().max() <= tolerance_change or abs(loss - prev_loss) < tolerance_change:
                break
        state.update(d=d, t=t, prev_flat_grad=prev_grad, prev_loss=prev_loss)
        history.save(state)
        return first_loss


class _History:
    """The curvature pairs (s, y) of the last `size` iterations with 1 / (y.s), and the scale y.s / y.y of the
    newest: the inverse Hessian approximation the two-loop recursion applies."""

    def __init__(self, size: int, dirs: list, steps: list, ro: list, h_diag, al: list | None) -> None:
        self.size, self.dirs, self.steps, self.ro, self.h_diag, self.al = size, dirs, steps, ro, h_diag, al

    @classmethod
    def of(cls, state: dict, size: int) -> "_History":
        return cls(size, state.get("old_dirs"), state.get("old_stps"), state.get("ro"), state.get("H_diag"),
                   state.get("al"))

    def save(self, state: dict) -> None:
        state.update(old_dirs=self.dirs, old_stps=self.steps, ro=self.ro, H_diag=self.h_diag)
        if self.al is not None:
            state["al"] = self.al

    def clear(self) -> None:
        self.dirs, self.steps, self.ro, self.h_diag = [], [], [], 1

    def add(self, y, s) -> None:
        """Keep the pair when the curvature y.s is positive enough (else the approximation would lose
        positive definiteness)."""
        ys = y.dot(s)
        if ys > 1e-10:
            if len(self.dirs) == self.size:
                del self.dirs[0], self.steps[0], self.ro[0]
            self.dirs.append(y)
            self.steps.append(s)
            self.ro.append(1.0 / ys)
            self.h_diag = ys / y.dot(y)

    def direction(self, grad):
        """-H grad by the two-loop recursion."""
        n = len(self.dirs)
        if self.al is None:
            self.al = [None] * self.size
        al = self.al
        q = grad.neg()
        for i in range(n - 1, -1, -1):
            al[i] = self.steps[i].dot(q) * self.ro[i]
            q.add_(self.dirs[i], alpha=-float(al[i]))
        r = q.mul(self.h_diag)
        for i in range(n):
            be_i = self.dirs[i].dot(r) * self.ro[i]
            r.add_(self.steps[i], alpha=float(al[i] - be_i))
        return r


def _cubic_minimum(x1, f1, g1, x2, f2, g2, bounds=None):
    """The minimiser, within `bounds` (default: between x1 and x2), of the cubic through (x1, f1) and (x2, f2)
    with slopes g1 and g2; the bounds' midpoint when the cubic has no minimum."""
    lo, hi = bounds if bounds is not None else ((x1, x2) if x1 <= x2 else (x2, x1))
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    d2_square = d1 ** 2 - g1 * g2
    if d2_square < 0:
        return (lo + hi) / 2.0
    d2 = d2_square.sqrt()
    if x1 <= x2:
        at = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
    else:
        at = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
    return min(max(at, lo), hi)


def _strong_wolfe(evaluate: Callable, x: list, t, d, f: float, g, gtd, c1: float = 1e-4, c2: float = 0.9,
                  tolerance_change: float = 1e-9, max_ls: int = 25) -> tuple:
    """(loss, flat gradient, step, evaluations) of a step along `d` from the parameters `x` meeting the strong
    Wolfe conditions: sufficient decrease (c1) and curvature (c2). `evaluate(x, t, d)` gives the loss and
    gradient at x + t d. First the step grows until a bracket holds a point meeting them; then the bracket
    shrinks by cubic interpolation (kept away from its ends) until one does."""
    d_norm = d.abs().max()
    g = g.clone()
    f_new, g_new = evaluate(x, t, d)
    evals = 1
    gtd_new = g_new.dot(d)
    t_prev, f_prev, g_prev, gtd_prev = 0, f, g, gtd
    done = False
    ls_iter = 0
    while ls_iter < max_ls:                                   # bracketing
        if f_new > (f + c1 * t * gtd) or (ls_iter > 1 and f_new >= f_prev):
            bracket, bracket_f, bracket_g, bracket_gtd = [t_prev, t], [f_prev, f_new], [g_prev, g_new.clone()], \
                [gtd_prev, gtd_new]
            break
        if abs(gtd_new) <= -c2 * gtd:
            bracket, bracket_f, bracket_g, bracket_gtd = [t], [f_new], [g_new], [gtd_new]
            done = True
            break
        if gtd_new >= 0:
            bracket, bracket_f, bracket_g, bracket_gtd = [t_prev, t], [f_prev, f_new], [g_prev, g_new.clone()], \
                [gtd_prev, gtd_new]
            break
        min_step, max_step = t + 0.01 * (t - t_prev), t * 10
        t_prev, t = t, _cubic_minimum(t_prev, f_prev, gtd_prev, t, f_new, gtd_new, bounds=(min_step, max_step))
        f_prev, g_prev, gtd_prev = f_new, g_new.clone(), gtd_new
        f_new, g_new = evaluate(x, t, d)
        evals += 1
        gtd_new = g_new.dot(d)
        ls_iter += 1
    if ls_iter == max_ls:
        bracket, bracket_f, bracket_g, bracket_gtd = [0, t], [f, f_new], [g, g_new], [gtd, gtd_new]
    insufficient = False
    low, high = (0, 1) if bracket_f[0] <= bracket_f[-1] else (1, 0)
    while not done and ls_iter < max_ls:                      # zoom
        if abs(bracket[1] - bracket[0]) * d_norm < tolerance_change:
            break
        t = _cubic_minimum(bracket[0], bracket_f[0], bracket_gtd[0], bracket[1], bracket_f[1], bracket_gtd[1])
        top, bottom = max(bracket), min(bracket)
        eps = 0.1 * (top - bottom)
        if min(top - t, t - bottom) < eps:                    # too near an end: progress is slow there
            if insufficient or t >= top or t <= bottom:
                t = top - eps if abs(t - top) < abs(t - bottom) else bottom + eps
                insufficient = False
            else:
                insufficient = True
        else:
            insufficient = False
        f_new, g_new = evaluate(x, t, d)
        evals += 1
        gtd_new = g_new.dot(d)
        ls_iter += 1
        if f_new > (f + c1 * t * gtd) or f_new >= bracket_f[low]:
            bracket[high], bracket_f[high], bracket_g[high], bracket_gtd[high] = t, f_new, g_new.clone(), gtd_new
            low, high = (0, 1) if bracket_f[0] <= bracket_f[1] else (1, 0)
        else:
            if abs(gtd_new) <= -c2 * gtd:
                done = True
            elif gtd_new * (bracket[high] - bracket[low]) >= 0:
                bracket[high], bracket_f[high] = bracket[low], bracket_f[low]
                bracket_g[high], bracket_gtd[high] = bracket_g[low], bracket_gtd[low]
            bracket[low], bracket_f[low], bracket_g[low], bracket_gtd[low] = t, f_new, g_new.clone(), gtd_new
    return bracket_f[low], bracket_g[low], bracket[low], evals
