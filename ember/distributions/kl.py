"""kl_divergence(p, q) and register_kl (torch.distributions.kl): KL(p || q) by a registry of closed forms keyed
on the pair of distribution types, the most specific registered pair (by method resolution order) winning."""
from __future__ import annotations

import functools
import math

import ember
from ember.nn import functional as F

from .binomial import Binomial
from .continuous import Exponential, Laplace, Normal, Uniform
from .discrete import Bernoulli, Categorical, Poisson
from .gamma_family import Beta, Dirichlet, Gamma
from .distribution import Distribution
from .independent import Independent
from .lowrank_multivariate_normal import LowRankMultivariateNormal, log_det as _lowrank_log_det
from .lowrank_multivariate_normal import mahalanobis as _lowrank_mahalanobis
from .multivariate_normal import MultivariateNormal, batch_mahalanobis, half_log_det
from .transformed_distribution import LogNormal
from .utils import sum_rightmost

__all__ = ["kl_divergence", "register_kl"]

_KL_REGISTRY: dict = {}


def register_kl(type_p: type, type_q: type):
    """Decorator registering fn(p, q) as KL(p || q) for p of type_p and q of type_q."""
    if not (isinstance(type_p, type) and issubclass(type_p, Distribution)):
        raise TypeError(f"Expected type_p to be a Distribution subclass but got {type_p}")
    if not (isinstance(type_q, type) and issubclass(type_q, Distribution)):
        raise TypeError(f"Expected type_q to be a Distribution subclass but got {type_q}")

    def decorator(fn):
        _KL_REGISTRY[type_p, type_q] = fn
        _dispatch.cache_clear()
        return fn
    return decorator


@functools.cache
def _dispatch(type_p: type, type_q: type):
    matches = [(super_p, super_q) for super_p, super_q in _KL_REGISTRY
               if issubclass(type_p, super_p) and issubclass(type_q, super_q)]
    if not matches:
        return None
    rank = lambda pair: (type_p.__mro__.index(pair[0]), type_q.__mro__.index(pair[1]))   # noqa: E731
    return _KL_REGISTRY[min(matches, key=rank)]


def kl_divergence(p: Distribution, q: Distribution):
    """KL(p || q), batched over the distributions' batch shape."""
    fn = _dispatch(type(p), type(q))
    if fn is None:
        raise NotImplementedError(f"No KL(p || q) is implemented for p type {type(p).__name__} and q type "
                                  f"{type(q).__name__}")
    return fn(p, q)


def _inf_where(mask, value):
    return ember.where(mask, float("inf"), value)


@register_kl(Normal, Normal)
def _kl_normal_normal(p, q):
    var_ratio = (p.scale / q.scale).pow(2)
    t1 = ((p.loc - q.loc) / q.scale).pow(2)
    return 0.5 * (var_ratio + t1 - 1 - var_ratio.log())


@register_kl(LogNormal, LogNormal)
def _kl_lognormal_lognormal(p, q):
    return _kl_normal_normal(p.base_dist, q.base_dist)


@register_kl(Bernoulli, Bernoulli)
def _kl_bernoulli_bernoulli(p, q):
    t1 = p.probs * (F.softplus(-q.logits) - F.softplus(-p.logits))
    t1 = ember.where(p.probs == 0, 0.0, _inf_where(q.probs == 0, t1))
    t2 = (1 - p.probs) * (F.softplus(q.logits) - F.softplus(p.logits))
    t2 = ember.where(p.probs == 1, 0.0, _inf_where(q.probs == 1, t2))
    return t1 + t2


@register_kl(Categorical, Categorical)
def _kl_categorical_categorical(p, q):
    t = p.probs * (p.logits - q.logits)
    t = _inf_where((q.probs == 0).expand_as(t), t)
    t = ember.where((p.probs == 0).expand_as(t), 0.0, t)
    return t.sum(-1)


@register_kl(Uniform, Uniform)
def _kl_uniform_uniform(p, q):
    result = ((q.high - q.low) / (p.high - p.low)).log()
    return _inf_where((q.low > p.low) | (q.high < p.high), result)


@register_kl(Exponential, Exponential)
def _kl_exponential_exponential(p, q):
    rate_ratio = q.rate / p.rate
    return -rate_ratio.log() + rate_ratio - 1


@register_kl(Laplace, Laplace)
def _kl_laplace_laplace(p, q):
    scale_ratio = p.scale / q.scale
    loc_abs_diff = (p.loc - q.loc).abs()
    return -scale_ratio.log() + loc_abs_diff / q.scale + scale_ratio * ember.exp(-loc_abs_diff / p.scale) - 1


@register_kl(Independent, Independent)
def _kl_independent_independent(p, q):
    if p.reinterpreted_batch_ndims != q.reinterpreted_batch_ndims:
        raise NotImplementedError
    return sum_rightmost(kl_divergence(p.base_dist, q.base_dist), p.reinterpreted_batch_ndims)


@register_kl(Normal, Laplace)
def _kl_normal_laplace(p, q):
    loc_diff = p.loc - q.loc
    scale_ratio = p.scale / q.scale
    loc_diff_scale_ratio = loc_diff / p.scale
    t1 = ember.log(scale_ratio)
    t2 = math.sqrt(2 / math.pi) * p.scale * ember.exp(-0.5 * loc_diff_scale_ratio.pow(2))
    t3 = loc_diff * ember.erf(math.sqrt(0.5) * loc_diff_scale_ratio)
    return -t1 + (t2 + t3) / q.scale - (0.5 * (1 + math.log(0.5 * math.pi)))


@register_kl(Gamma, Gamma)
def _kl_gamma_gamma(p, q):
    t1 = q.concentration * ember.log(p.rate / q.rate)
    t2 = ember.lgamma(q.concentration) - ember.lgamma(p.concentration)
    t3 = (p.concentration - q.concentration) * ember.digamma(p.concentration)
    t4 = (q.rate - p.rate) * (p.concentration / p.rate)
    return t1 + t2 + t3 + t4


@register_kl(Dirichlet, Dirichlet)
def _kl_dirichlet_dirichlet(p, q):
    sum_p_concentration = p.concentration.sum(-1)
    sum_q_concentration = q.concentration.sum(-1)
    t1 = ember.lgamma(sum_p_concentration) - ember.lgamma(sum_q_concentration)
    t2 = (ember.lgamma(p.concentration) - ember.lgamma(q.concentration)).sum(-1)
    t3 = p.concentration - q.concentration
    t4 = ember.digamma(p.concentration) - ember.digamma(sum_p_concentration).unsqueeze(-1)
    return t1 - t2 + (t3 * t4).sum(-1)


@register_kl(Beta, Beta)
def _kl_beta_beta(p, q):
    return _kl_dirichlet_dirichlet(p._dirichlet, q._dirichlet)       # a Beta is a two-category Dirichlet


@register_kl(Poisson, Poisson)
def _kl_poisson_poisson(p, q):
    return p.rate * (ember.log(p.rate) - ember.log(q.rate)) - (p.rate - q.rate)


@register_kl(Binomial, Binomial)
def _kl_binomial_binomial(p, q):
    """n_p (p log(p / q) + (1 - p) log((1 - p) / (1 - q))) for equal counts; infinite where q has fewer trials
    (p reaches counts q cannot); not implemented where q has more, as torch's."""
    if bool((p.total_count < q.total_count).any()):
        raise NotImplementedError("KL between Binomials where q.total_count > p.total_count is not implemented")
    kl = p.total_count * (p.probs * (p.logits - q.logits) + ember.log1p(-p.probs) - ember.log1p(-q.probs))
    return _inf_where(p.total_count > q.total_count, kl)


@register_kl(Poisson, Bernoulli)
@register_kl(Poisson, Binomial)
def _kl_poisson_bounded(p, q):
    """Infinite: a Poisson reaches every count, the bounded family only finitely many."""
    return ember.full_like(p.rate, float("inf"))


# ---- multivariate normals: KL = (tr(Sq^-1 Sp) + |mq - mp|^2_Sq - n + log det Sq - log det Sp) / 2
def _frobenius2(x):
    """The squared Frobenius norm of each matrix of a batch."""
    return x.pow(2).sum((-2, -1))


def _check_events(p, q, which: str) -> None:
    if p.event_shape != q.event_shape:
        raise ValueError(f"KL-divergence between two {which} with different event shapes cannot be computed")


def _lowrank_parts(d):
    return d._unbroadcasted_cov_factor, d._unbroadcasted_cov_diag, d._capacitance_tril


def _trace_lowrank_inverse_times(q, factor):
    """tr(Sq^-1 F F^T) for q low rank plus diagonal (Woodbury): |D^-1/2 F|^2 - |L_K^-1 W^T D^-1 F|^2."""
    w, d, capacitance = _lowrank_parts(q)
    first = _frobenius2(factor / d.sqrt().unsqueeze(-1))
    projected = ember.matmul(w.mT / d.unsqueeze(-2), factor)
    return first - _frobenius2(ember.linalg.solve_triangular(capacitance, projected, upper=False))


def _lowrank_root_parts(p):
    """Sp = W W^T + diag(D) as two square-root factors: W and diag(sqrt(D))."""
    return p._unbroadcasted_cov_factor, ember.diag_embed(p._unbroadcasted_cov_diag.sqrt())


@register_kl(MultivariateNormal, MultivariateNormal)
def _kl_multivariatenormal_multivariatenormal(p, q):
    _check_events(p, q, "Multivariate Normals")
    lp, lq = p._unbroadcasted_scale_tril, q._unbroadcasted_scale_tril
    n = p.event_shape[0]
    batch = ember.broadcast_shapes(lq.shape[:-2], lp.shape[:-2])
    trace = _frobenius2(ember.linalg.solve_triangular(lq.expand(batch + (n, n)), lp.expand(batch + (n, n)),
                                                      upper=False))
    return half_log_det(lq) - half_log_det(lp) + 0.5 * (trace + batch_mahalanobis(lq, q.loc - p.loc) - n)


@register_kl(LowRankMultivariateNormal, LowRankMultivariateNormal)
def _kl_lowrankmultivariatenormal_lowrankmultivariatenormal(p, q):
    _check_events(p, q, "Low Rank Multivariate Normals")
    n = p.event_shape[0]
    trace = sum(_trace_lowrank_inverse_times(q, f) for f in _lowrank_root_parts(p))
    m = _lowrank_mahalanobis(*_lowrank_parts(q), q.loc - p.loc)
    return 0.5 * (_lowrank_log_det(*_lowrank_parts(q)) - _lowrank_log_det(*_lowrank_parts(p)) + trace + m - n)


@register_kl(MultivariateNormal, LowRankMultivariateNormal)
def _kl_multivariatenormal_lowrankmultivariatenormal(p, q):
    _check_events(p, q, "(Low Rank) Multivariate Normals")
    n = p.event_shape[0]
    trace = _trace_lowrank_inverse_times(q, p._unbroadcasted_scale_tril)
    m = _lowrank_mahalanobis(*_lowrank_parts(q), q.loc - p.loc)
    return 0.5 * (_lowrank_log_det(*_lowrank_parts(q)) - 2 * half_log_det(p._unbroadcasted_scale_tril) + trace + m - n)


@register_kl(LowRankMultivariateNormal, MultivariateNormal)
def _kl_lowrankmultivariatenormal_multivariatenormal(p, q):
    _check_events(p, q, "(Low Rank) Multivariate Normals")
    n = p.event_shape[0]
    lq = q._unbroadcasted_scale_tril
    trace = sum(_frobenius2(ember.linalg.solve_triangular(lq, f, upper=False)) for f in _lowrank_root_parts(p))
    m = batch_mahalanobis(lq, q.loc - p.loc)
    return 0.5 * (2 * half_log_det(lq) - _lowrank_log_det(*_lowrank_parts(p)) + trace + m - n)

