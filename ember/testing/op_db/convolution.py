"""Convolutions: convolution, conv1d/2d/3d (int and string padding), conv_transpose1d/2d/3d.

Samples cover stride, padding, dilation, groups, bias or not, unbatched inputs and
non-contiguous layouts; the small ones (at most GRADCHECK_MAX_NUMEL elements) are
gradchecked in float64. Results accumulate like matrix products (LINALG_TOL).
"""
from __future__ import annotations

from ..tolerances import LINALG_TOL
from .samples import FLOAT, OpInfo, Sample, T, fn, is_float, make
from .database import E, add, f32


def aten_or_ember(name: str):
    """torch.ops.aten.<name> for torch, ember._generated.functions.<packet> for ember."""
    packet, _, overload = name.partition(".")

    def call(m, *a, **k):
        if m.__name__ == "torch":
            return getattr(getattr(m.ops.aten, packet), overload or "default")(*a, **k)
        from ember._generated import functions as EF
        return getattr(EF, packet)(*a, **k)
    call.__name__ = f"aten.{name}"
    return call


def _a(rng, dtype):
    return lambda shape, layout="c", grad=True: T(make(rng, shape, dtype, low=-1, high=1), layout,  # noqa: E731
                                                  grad=grad and is_float(dtype))


def _conv2d_samples(rng, dtype):
    a = _a(rng, dtype)
    return [
        Sample((a((1, 1, 4, 4)), a((2, 1, 2, 2)), a((2,))), desc="small, bias"),
        Sample((a((2, 3, 5, 5)), a((4, 3, 3, 3)), a((4,))), desc="3x3, bias"),
        Sample((a((2, 2, 5, 5)), a((3, 2, 3, 3)), None, 2, 1), desc="stride 2, padding 1"),
        Sample((a((1, 2, 6, 5)), a((2, 2, 2, 3)), None, (2, 1), (1, 0), (2, 1)), desc="asymmetric stride/pad/dilation"),
        Sample((a((1, 2, 3, 3)), a((2, 1, 2, 2)), a((2,)), 1, 0, 1, 2), desc="groups 2 (depthwise)"),
        Sample((a((1, 4, 4, 4)), a((6, 2, 3, 3)), None, 1, 1, 1, 2), desc="groups 2"),
        Sample((a((2, 3, 4)), a((2, 2, 2, 2))), desc="unbatched"),
        Sample((a((1, 2, 5, 4), "t"), a((2, 2, 2, 2))), desc="transposed input"),
        Sample((a((1, 2, 4, 4), "s"), a((2, 2, 2, 2))), desc="strided input"),
        Sample((a((0, 2, 4, 4)), a((2, 2, 2, 2))), desc="empty batch"),
        Sample((a((1, 1, 5, 5)), a((1, 1, 3, 3)), None, 1, 0, 2), desc="dilation 2"),
    ]


def _conv_errors(name, call_bias=True):
    def errors(rng):
        return [
            E((T(f32(rng, (2, 3))), T(f32(rng, (2, 3, 3, 3)))), RuntimeError, name, desc="wrong input rank"),
            E((T(f32(rng, (1, 2, 5, 5))), T(f32(rng, (2, 3, 3, 3)))), RuntimeError, name, desc="channel mismatch"),
            E((T(f32(rng, (1, 3, 2, 2))), T(f32(rng, (2, 3, 3, 3)))), RuntimeError, name,
              desc="kernel larger than padded input"),
            E((T(f32(rng, (1, 3, 5, 5))), T(f32(rng, (2, 3, 3, 3))), T(f32(rng, (3,)))), RuntimeError, name,
              desc="bias size"),
            E((T(f32(rng, (1, 4, 5, 5))), T(f32(rng, (3, 2, 3, 3))), None, 1, 0, 1, 2), RuntimeError, name,
              desc="out channels not divisible by groups"),
            E((T(f32(rng, (1, 3, 5, 5))), T(make(rng, (2, 3, 3, 3), "float64"))), RuntimeError, name,
              desc="dtype mismatch"),
            E((T(f32(rng, (1, 3, 5, 5))), T(f32(rng, (2, 3, 3, 3))), None, 0), RuntimeError, name,
              desc="stride 0"),
        ]
    return errors


add(OpInfo("conv2d", fn("conv2d"), _conv2d_samples, dtypes=FLOAT, grad=True, tol=LINALG_TOL,
           errors=_conv_errors("conv2d")))


def _conv2d_padding_samples(rng, dtype):
    a = _a(rng, dtype)
    return [Sample((a((1, 2, 5, 5)), a((2, 2, 3, 3)), a((2,))), {"padding": "same"}, desc="same, odd kernel"),
            Sample((a((1, 1, 4, 5)), a((2, 1, 2, 2))), {"padding": "same"}, desc="same, even kernel"),
            Sample((a((1, 1, 5, 5)), a((1, 1, 2, 3))), {"padding": "same", "dilation": 2}, desc="same, dilation 2"),
            Sample((a((1, 2, 4, 4)), a((2, 2, 3, 3))), {"padding": "valid"}, desc="valid"),
            Sample((a((1, 1, 2, 2)), a((1, 1, 3, 3))), {"padding": "same"}, desc="same, kernel larger than the input")]


add(OpInfo("conv2d.padding", fn("conv2d"), _conv2d_padding_samples, dtypes=FLOAT, grad=True, tol=LINALG_TOL,
           errors=lambda rng: [
               E((T(f32(rng, (1, 2, 5, 5))), T(f32(rng, (2, 2, 3, 3)))), RuntimeError, "conv2d",
                 kwargs={"padding": "same", "stride": 2},
                 desc="same with stride 2")]))


def _conv1d_samples(rng, dtype):
    a = _a(rng, dtype)
    return [Sample((a((2, 2, 6)), a((3, 2, 3)), a((3,))), desc="bias"),
            Sample((a((1, 2, 7)), a((2, 1, 2)), None, 2, 1, 2, 2), desc="stride, padding, dilation, groups"),
            Sample((a((2, 5)), a((2, 2, 2))), desc="unbatched"),
            Sample((a((1, 3, 4), "t"), a((2, 3, 2))), desc="transposed input")]


add(OpInfo("conv1d", fn("conv1d"), _conv1d_samples, dtypes=FLOAT, grad=True, tol=LINALG_TOL,
           errors=lambda rng: [
               E((T(f32(rng, (2, 3, 4, 4))), T(f32(rng, (2, 3, 3)))), RuntimeError, "conv1d", desc="wrong input rank"),
               E((T(f32(rng, (1, 2, 5))), T(f32(rng, (2, 3, 3)))), RuntimeError, "conv1d", desc="channel mismatch"),
               E((T(f32(rng, (1, 3, 2))), T(f32(rng, (2, 3, 3)))), RuntimeError, "conv1d",
                 desc="kernel larger than input")]))


add(OpInfo("conv1d.padding", fn("conv1d"),
           lambda rng, dtype: [Sample((_a(rng, dtype)((1, 2, 6)), _a(rng, dtype)((2, 2, 4))), {"padding": "same"},
                                      desc="same, even kernel"),
                               Sample((_a(rng, dtype)((1, 2, 6)), _a(rng, dtype)((2, 2, 3))), {"padding": "valid"},
                                      desc="valid")],
           dtypes=FLOAT, grad=True, tol=LINALG_TOL,
           errors=lambda rng: [E((T(f32(rng, (1, 2, 5))), T(f32(rng, (2, 2, 3)))), RuntimeError, "conv1d",
                                 kwargs={"padding": "same", "stride": 2}, desc="same with stride 2")]))


def _conv_t2d_samples(rng, dtype):
    a = _a(rng, dtype)
    return [Sample((a((1, 2, 2, 2)), a((2, 1, 2, 2)), a((1,))), desc="small, bias"),
            Sample((a((2, 3, 3, 3)), a((3, 2, 3, 3)), None, 2, 1, 1), desc="stride 2, padding 1, output_padding 1"),
            Sample((a((1, 4, 3, 2)), a((4, 1, 2, 2)), a((2,)), 1, 0, 0, 2), desc="groups 2"),
            Sample((a((1, 2, 3, 3)), a((2, 2, 2, 3)), None, (1, 2), (0, 1), 0, 1, (2, 1)), desc="dilation"),
            Sample((a((2, 3, 3)), a((2, 2, 2, 2))), desc="unbatched"),
            Sample((a((1, 2, 3, 4), "t"), a((2, 2, 2, 2))), desc="transposed input")]


add(OpInfo("conv_transpose2d.input", fn("conv_transpose2d"), _conv_t2d_samples, dtypes=FLOAT, grad=True,
           tol=LINALG_TOL,
           errors=lambda rng: [
               E((T(f32(rng, (1, 3, 4, 4))), T(f32(rng, (2, 2, 3, 3)))), RuntimeError, "conv_transpose2d",
                 desc="channel mismatch"),
               E((T(f32(rng, (3, 4))), T(f32(rng, (3, 2, 3, 3)))), RuntimeError, "conv_transpose2d",
                 desc="wrong input rank"),
               E((T(f32(rng, (1, 2, 3, 3))), T(f32(rng, (2, 2, 3, 3))), None, 1, 0, 1), RuntimeError,
                 "conv_transpose2d", desc="output_padding >= stride")]))


def _conv_t1d_samples(rng, dtype):
    a = _a(rng, dtype)
    return [Sample((a((2, 2, 4)), a((2, 3, 3)), a((3,))), desc="bias"),
            Sample((a((1, 2, 3)), a((2, 1, 2)), None, 2, 1, 1, 2, 1), desc="stride, padding, output_padding, groups"),
            Sample((a((2, 3)), a((2, 2, 2))), desc="unbatched")]


add(OpInfo("conv_transpose1d", fn("conv_transpose1d"), _conv_t1d_samples, dtypes=FLOAT, grad=True, tol=LINALG_TOL,
           errors=lambda rng: [E((T(f32(rng, (1, 3, 4))), T(f32(rng, (2, 2, 3)))), RuntimeError, "conv_transpose1d",
                                 desc="channel mismatch")]))


def _convolution_samples(rng, dtype):
    a = _a(rng, dtype)
    return [Sample((a((1, 2, 4, 4)), a((2, 2, 2, 2)), a((2,)), [1, 1], [0, 0], [1, 1], False, [0, 0], 1),
                   desc="2-d"),
            Sample((a((2, 2, 5)), a((2, 1, 3)), None, [2], [1], [1], False, [0], 2), desc="1-d, groups"),
            Sample((a((1, 2, 3, 3)), a((2, 2, 2, 2)), a((2,)), [2, 2], [1, 1], [1, 1], True, [1, 0], 1),
                   desc="transposed 2-d"),
            Sample((a((1, 2, 3)), a((2, 1, 2)), None, [2], [0], [2], True, [1], 1), desc="transposed 1-d, dilation"),
            Sample((a((1, 1, 2, 2, 2)), a((2, 1, 2, 1, 2)), None, [1, 1, 1], [0, 1, 0], [1, 1, 1], False, [0, 0, 0], 1),
                   desc="3-d")]


add(OpInfo("convolution", aten_or_ember("convolution"), _convolution_samples, dtypes=FLOAT, grad=True,
           tol=LINALG_TOL, second_order=False,
           errors=lambda rng: [
               E((T(f32(rng, (1, 2, 4))), T(f32(rng, (2, 2, 2, 2))), None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1),
                 RuntimeError, "convolution", desc="input rank != weight rank"),
               E((T(f32(rng, (1, 2, 4, 4))), T(f32(rng, (2, 2, 2, 2))), None, [1, 1], [-1, 0], [1, 1], False,
                  [0, 0], 1), RuntimeError, "convolution", "padding", desc="negative padding"),
               E((T(f32(rng, (1, 2, 4, 4))), T(f32(rng, (2, 2, 2, 2))), None, [1, 1], [0, 0], [1, 1], False,
                  [0, 0], 0), RuntimeError, "convolution", "groups", desc="groups 0")]))


def _conv3d_samples(rng, dtype):
    a = _a(rng, dtype)
    return [Sample((a((1, 2, 3, 4, 3)), a((2, 1, 2, 2, 2)), a((2,)), 1, (1, 0, 1), (1, 2, 1), 2),
                   desc="bias, padding, dilation, groups 2"),
            Sample((a((1, 2, 4, 3, 3)), a((2, 2, 2, 1, 2)), None, (2, 1, 1)), desc="stride"),
            Sample((a((2, 3, 3, 2)), a((1, 2, 2, 2, 2))), desc="unbatched"),
            Sample((a((1, 1, 2, 3, 2)), a((1, 1, 2, 2, 1)), a((1,)), 1, 1), desc="small, bias, padding")]


add(OpInfo("conv3d", fn("conv3d"), _conv3d_samples, dtypes=FLOAT, grad=True, tol=LINALG_TOL,
           errors=lambda rng: [
               E((T(f32(rng, (1, 2, 5, 5))), T(f32(rng, (2, 2, 3, 3, 3)))), RuntimeError, "conv3d",
                 desc="wrong input rank"),
               E((T(f32(rng, (1, 2, 3, 3, 3))), T(f32(rng, (2, 3, 2, 2, 2)))), RuntimeError, "conv3d",
                 desc="channel mismatch")]))
add(OpInfo("conv3d.padding", fn("conv3d"),
           lambda rng, dtype: [Sample((_a(rng, dtype)((1, 1, 3, 4, 3)), _a(rng, dtype)((2, 1, 2, 3, 2))),
                                      {"padding": "same"}, desc="same, even kernel"),
                               Sample((_a(rng, dtype)((1, 1, 2, 3, 2)), _a(rng, dtype)((1, 1, 1, 2, 3))),
                                      {"padding": "same"}, desc="same, small")],
           dtypes=FLOAT, grad=True, tol=LINALG_TOL,
           errors=lambda rng: [E((T(f32(rng, (1, 2, 3, 3, 3))), T(f32(rng, (2, 2, 2, 2, 2)))), RuntimeError,
                                 "conv3d", kwargs={"padding": "same", "stride": 2}, desc="same with stride 2")]))


def _conv_t3d_samples(rng, dtype):
    a = _a(rng, dtype)
    return [Sample((a((1, 2, 2, 3, 2)), a((2, 1, 2, 2, 2)), a((1,)), 2, (1, 0, 0), (1, 0, 1)),
                   desc="bias, stride 2, padding, output_padding"),
            Sample((a((1, 4, 2, 2, 2)), a((4, 1, 2, 1, 2)), None, 1, 0, 0, 2, (1, 2, 1)), desc="groups, dilation"),
            Sample((a((2, 2, 2, 2)), a((2, 1, 2, 2, 2))), desc="unbatched")]


add(OpInfo("conv_transpose3d.input", fn("conv_transpose3d"), _conv_t3d_samples, dtypes=FLOAT, grad=True,
           tol=LINALG_TOL,
           errors=lambda rng: [E((T(f32(rng, (1, 3, 2, 2, 2))), T(f32(rng, (2, 2, 2, 2, 2)))), RuntimeError,
                                 "conv_transpose3d", desc="channel mismatch")]))
