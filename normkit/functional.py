"""The functional API: ``layer_norm``, ``rms_norm``, ``layer_norm_clamped_relu``, autograd-aware, any backend.

Each call flattens the leading dims to ``[M, N]`` (a view where the strides allow it) and runs two
``torch.library`` custom ops, ``normkit::norm_fwd`` and ``normkit::norm_bwd``, tied together with
``register_autograd``. Custom ops are opaque to ``torch.compile``, so a compiled model calls the kernels
without graph breaks.
"""

import importlib
from typing import Optional

import torch

from . import checks
from .backends import resolve

KINDS = ("layer_norm", "rms_norm", "layer_norm_clamped_relu")
_EMPTY = (0,)


def backend_module(backend: str):
    """The module holding the six training-phase functions of a (resolved) backend."""
    name = {"torch": "normkit.reference", "triton": "normkit.triton", "cudnn": "normkit.cudnn"}[backend]
    return importlib.import_module(name)


@torch.library.custom_op("normkit::norm_fwd", mutates_args=())
def norm_fwd(
    x: torch.Tensor,
    weight: torch.Tensor,
    bias: Optional[torch.Tensor],
    eps: float,
    kind: str,
    zero_centered_gamma: bool,
    lower: float,
    upper: float,
    backend: str,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(y, mean, rstd, mask)`` of a 2-D x; mean is empty for RMSNorm, mask empty without the clamped ReLU."""
    ops = backend_module(backend)
    if kind == "rms_norm":
        y, rstd = ops.rms_norm_fwd(x, weight, bias, eps, zero_centered_gamma)
        return y, rstd.new_empty(_EMPTY), rstd, x.new_empty(_EMPTY, dtype=torch.uint8)
    if kind == "layer_norm":
        y, mean, rstd = ops.layer_norm_fwd(x, weight, bias, eps, zero_centered_gamma)
        return y, mean, rstd, x.new_empty(_EMPTY, dtype=torch.uint8)
    return ops.layer_norm_clamped_relu_fwd(x, weight, bias, eps, lower, upper, zero_centered_gamma)


@norm_fwd.register_fake
def _(x, weight, bias, eps, kind, zero_centered_gamma, lower, upper, backend):
    m, n = x.shape
    stat = torch.float64 if x.dtype == torch.float64 else torch.float32
    mask_shape = (m, (n + 7) // 8) if kind == "layer_norm_clamped_relu" else _EMPTY
    mean_shape = _EMPTY if kind == "rms_norm" else (m,)
    return (
        x.new_empty((m, n)),
        x.new_empty(mean_shape, dtype=stat),
        x.new_empty((m,), dtype=stat),
        x.new_empty(mask_shape, dtype=torch.uint8),
    )


@torch.library.custom_op("normkit::norm_bwd", mutates_args=())
def norm_bwd(
    dy: torch.Tensor,
    x: torch.Tensor,
    weight: torch.Tensor,
    mean: torch.Tensor,
    rstd: torch.Tensor,
    mask: torch.Tensor,
    kind: str,
    zero_centered_gamma: bool,
    has_dbias: bool,
    backend: str,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(dx, dw, db)``; db is empty when ``has_dbias`` is False."""
    ops = backend_module(backend)
    if kind == "rms_norm":
        dx, dw, db = ops.rms_norm_bwd(dy, x, weight, rstd, zero_centered_gamma, has_dbias)
    elif kind == "layer_norm":
        dx, dw, db = ops.layer_norm_bwd(dy, x, weight, mean, rstd, zero_centered_gamma, has_dbias)
    else:
        dx, dw, db = ops.layer_norm_clamped_relu_bwd(dy, mask, x, weight, mean, rstd, zero_centered_gamma, has_dbias)
    return dx, dw, db if db is not None else dw.new_empty(_EMPTY)


@norm_bwd.register_fake
def _(dy, x, weight, mean, rstd, mask, kind, zero_centered_gamma, has_dbias, backend):
    n = x.shape[1]
    return x.new_empty(x.shape), weight.new_empty((n,)), weight.new_empty((n,) if has_dbias else _EMPTY)


def _setup_context(ctx, inputs, output):
    x, weight, bias, _eps, kind, zero_centered_gamma, _lower, _upper, backend = inputs
    _y, mean, rstd, mask = output
    ctx.save_for_backward(x, weight, mean, rstd, mask)
    ctx.options = (kind, zero_centered_gamma, bias is not None, backend)


def _backward(ctx, dy, _dmean, _drstd, _dmask):
    x, weight, mean, rstd, mask = ctx.saved_tensors
    kind, zero_centered_gamma, has_bias, backend = ctx.options
    if dy.stride(-1) != 1:  # autograd may hand over an expanded or transposed gradient
        dy = dy.contiguous()
    dx, dw, db = norm_bwd(dy, x, weight, mean, rstd, mask, kind, zero_centered_gamma, has_bias, backend)
    return dx, dw, db if has_bias else None, None, None, None, None, None, None


torch.library.register_autograd("normkit::norm_fwd", _backward, setup_context=_setup_context)


def _apply(kind, x, weight, bias, eps, zero_centered_gamma, backend, lower=0.0, upper=0.0):
    checks.check_float_tensor("x", x)
    if x.dim() == 0:
        raise ValueError("x must have at least one dim (the normalized last dim)")
    checks.check_params(x, weight, bias)
    checks.check_eps(eps)
    checks.check_flag("zero_centered_gamma", zero_centered_gamma)
    if kind == "layer_norm_clamped_relu":
        checks.check_clamp_bounds(lower, upper)
    backend = resolve(backend, x)
    n = x.shape[-1]
    rows = x.reshape(-1, n)  # a view whenever the leading dims flatten to one row stride
    if n > 1 and rows.stride(1) != 1:
        rows = rows.contiguous()  # the kernels need a unit stride along the normalized dim
    y = norm_fwd(rows, weight, bias, float(eps), kind, zero_centered_gamma, float(lower), float(upper), backend)[0]
    return y.reshape(x.shape)


def layer_norm(x, weight, bias=None, eps=1e-5, *, zero_centered_gamma=False, backend="auto"):
    """LayerNorm over the last dim of ``x [..., N]``; weight/bias ``[N]``; returns y with x's shape and dtype."""
    return _apply("layer_norm", x, weight, bias, eps, zero_centered_gamma, backend)


def rms_norm(x, weight, bias=None, eps=1e-5, *, zero_centered_gamma=False, backend="auto"):
    """RMSNorm over the last dim of ``x [..., N]``; weight/bias ``[N]``; returns y with x's shape and dtype."""
    return _apply("rms_norm", x, weight, bias, eps, zero_centered_gamma, backend)


def layer_norm_clamped_relu(
    x, weight, bias=None, eps=1e-5, *, lower=0.0, upper=6.0, zero_centered_gamma=False, backend="auto"
):
    """``clamp(layer_norm(x), lower, upper)``; the backward passes gradient only where ``lower < out < upper``."""
    return _apply("layer_norm_clamped_relu", x, weight, bias, eps, zero_centered_gamma, backend, lower, upper)
