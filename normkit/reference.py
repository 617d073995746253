"""The reference: the six training-phase functions in plain PyTorch, written out as formulas.

One reference per op, used by the tests, the notebooks and the benchmarks alike. Math and statistics
in float32 (float64 for float64 inputs), outputs in x's dtype, gradients of the weights in the weight's dtype.

Notation for a row ``x`` of length N, with ``s = weight`` (or ``1 + weight`` for zero-centered gamma):

- LayerNorm: ``mean = sum(x)/N``, ``rstd = 1/sqrt(sum((x-mean)^2)/N + eps)``, ``xhat = (x-mean)*rstd``,
  ``y = xhat*s + b``.
- RMSNorm: ``rstd = 1/sqrt(sum(x^2)/N + eps)``, ``xhat = x*rstd``, ``y = xhat*s + b``.
- Backward, with ``g = dy*s``: ``dx = rstd*(g - xhat*mean(xhat*g) - mean(g))`` for LayerNorm and
  ``dx = rstd*(g - xhat*mean(xhat*g))`` for RMSNorm; ``dw = sum_rows(dy*xhat)``, ``db = sum_rows(dy)``.
- Clamped ReLU: ``out = clamp(y, lower, upper)``, mask bit 1 where ``lower < out < upper`` for ``out`` as stored
  (in x's dtype, as cuDNN compares it); its backward is the norm backward applied to ``dy*mask``.
"""

from __future__ import annotations

import torch

from . import bitmask
from .checks import check_bwd_args, check_fwd_args


def _acc_dtype(x: torch.Tensor) -> torch.dtype:
    return torch.float64 if x.dtype == torch.float64 else torch.float32


def _scale(weight: torch.Tensor, zero_centered_gamma: bool, acc: torch.dtype) -> torch.Tensor:
    w = weight.to(acc)
    return w + 1 if zero_centered_gamma else w


def _affine(xhat, weight, bias, zero_centered_gamma):
    y = xhat * _scale(weight, zero_centered_gamma, xhat.dtype)
    if bias is not None:
        y = y + bias.to(xhat.dtype)
    return y


def _layer_norm_stats(x: torch.Tensor, eps: float):
    xf = x.to(_acc_dtype(x))
    mean = xf.mean(dim=-1)
    var = (xf - mean[:, None]).square().mean(dim=-1)  # biased variance, as torch and cuDNN use
    return xf, mean, torch.rsqrt(var + eps)


def layer_norm_fwd(x, weight, bias, eps, zero_centered_gamma=False):
    """x ``[M, N]``, weight/bias ``[N]`` -> y ``[M, N]`` (x's dtype), mean ``[M]``, rstd ``[M]`` (float32)."""
    check_fwd_args(x, weight, bias, eps, zero_centered_gamma)
    xf, mean, rstd = _layer_norm_stats(x, eps)
    xhat = (xf - mean[:, None]) * rstd[:, None]
    return _affine(xhat, weight, bias, zero_centered_gamma).to(x.dtype), mean, rstd


def rms_norm_fwd(x, weight, bias, eps, zero_centered_gamma=False):
    """x ``[M, N]``, weight/bias ``[N]`` -> y ``[M, N]`` (x's dtype), rstd ``[M]`` (float32)."""
    check_fwd_args(x, weight, bias, eps, zero_centered_gamma)
    xf = x.to(_acc_dtype(x))
    rstd = torch.rsqrt(xf.square().mean(dim=-1) + eps)
    xhat = xf * rstd[:, None]
    return _affine(xhat, weight, bias, zero_centered_gamma).to(x.dtype), rstd


def clamp_and_mask(y_acc: torch.Tensor, lower: float, upper: float, out_dtype: torch.dtype):
    """The clamped ReLU of the float32 norm output: ``out = clamp(y)`` stored in ``out_dtype``, and the bool mask
    ``lower < out < upper`` of that stored ``out`` (as cuDNN computes it, so every backend's mask agrees)."""
    out = torch.clamp(y_acc, lower, upper).to(out_dtype)
    stored = out.to(y_acc.dtype)
    return out, (stored > lower) & (stored < upper)


def layer_norm_clamped_relu_fwd(x, weight, bias, eps, lower=0.0, upper=6.0, zero_centered_gamma=False):
    """LayerNorm then ``clamp(., lower, upper)``; also returns the packed mask ``uint8 [M, ceil(N/8)]``."""
    check_fwd_args(x, weight, bias, eps, zero_centered_gamma, clamp=(lower, upper))
    xf, mean, rstd = _layer_norm_stats(x, eps)
    y = _affine((xf - mean[:, None]) * rstd[:, None], weight, bias, zero_centered_gamma)
    out, keep = clamp_and_mask(y, lower, upper, x.dtype)
    return out, mean, rstd, bitmask.pack(keep)


def _norm_bwd(g_dy, x, weight, mean, rstd, zero_centered_gamma, has_dbias):
    """Shared backward; ``mean is None`` selects RMSNorm. ``g_dy`` is the incoming gradient (masked if any)."""
    acc = _acc_dtype(x)
    xf = x.to(acc)
    dy = g_dy.to(acc)
    centered = xf if mean is None else xf - mean[:, None]
    xhat = centered * rstd[:, None]
    g = dy * _scale(weight, zero_centered_gamma, acc)
    n = x.shape[1]
    c1 = (xhat * g).sum(dim=-1, keepdim=True) / n
    dx = g - xhat * c1
    if mean is not None:
        dx = dx - g.sum(dim=-1, keepdim=True) / n
    dx = dx * rstd[:, None]
    dw = (dy * xhat).sum(dim=0).to(weight.dtype)
    db = dy.sum(dim=0).to(weight.dtype) if has_dbias else None
    return dx.to(x.dtype), dw, db


def layer_norm_bwd(dy, x, weight, mean, rstd, zero_centered_gamma=False, has_dbias=True):
    """dy, x ``[M, N]``, mean/rstd ``[M]`` -> dx ``[M, N]``, dw ``[N]``, db ``[N]`` or None."""
    check_bwd_args(dy, x, weight, mean, rstd, None, zero_centered_gamma, has_dbias)
    return _norm_bwd(dy, x, weight, mean, rstd, zero_centered_gamma, has_dbias)


def layer_norm_clamped_relu_bwd(dy, mask, x, weight, mean, rstd, zero_centered_gamma=False, has_dbias=True):
    """The LayerNorm backward of ``dy * unpack(mask)``."""
    check_bwd_args(dy, x, weight, mean, rstd, mask, zero_centered_gamma, has_dbias)
    keep = bitmask.unpack(mask, x.shape[1])
    return _norm_bwd(dy * keep.to(dy.dtype), x, weight, mean, rstd, zero_centered_gamma, has_dbias)


def rms_norm_bwd(dy, x, weight, rstd, zero_centered_gamma=False, has_dbias=False):
    """dy, x ``[M, N]``, rstd ``[M]`` -> dx ``[M, N]``, dw ``[N]``, db ``[N]`` or None."""
    check_bwd_args(dy, x, weight, None, rstd, None, zero_centered_gamma, has_dbias)
    return _norm_bwd(dy, x, weight, None, rstd, zero_centered_gamma, has_dbias)
