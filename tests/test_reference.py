"""The reference's hand-written backward formulas against torch.autograd, and its forward against torch."""

import pytest
import torch

from normkit import bitmask, reference

N_VALUES = [1, 7, 100]


def _inputs(n, bias=True):
    x = torch.randn(6, n, dtype=torch.float64) * 2 + 0.5
    w = torch.randn(n, dtype=torch.float64)
    b = torch.randn(n, dtype=torch.float64) if bias else None
    return x, w, b


def _autograd_grads(fn, x, w, b, dy):
    leaves = [t.clone().requires_grad_(True) if t is not None else None for t in (x, w, b)]
    y = fn(*leaves)
    y.backward(dy)
    return [t.grad if t is not None else None for t in leaves]


def _torch_norm(kind, n, zero_centered_gamma):
    """The op as PyTorch computes it, for autograd to differentiate."""

    def fn(x, w, b):
        scale = 1 + w if zero_centered_gamma else w
        if kind == "layer_norm":
            return torch.nn.functional.layer_norm(x, (n,), scale, b, 1e-5)
        y = torch.nn.functional.rms_norm(x, (n,), scale, 1e-5)
        return y + b if b is not None else y

    return fn


@pytest.mark.parametrize("kind", ["layer_norm", "rms_norm"])
@pytest.mark.parametrize("n", N_VALUES)
@pytest.mark.parametrize("zero_centered_gamma", [False, True])
@pytest.mark.parametrize("has_bias", [False, True])
def test_backward_matches_autograd(kind, n, zero_centered_gamma, has_bias):
    x, w, b = _inputs(n, has_bias)
    dy = torch.randn_like(x)
    fn = _torch_norm(kind, n, zero_centered_gamma)
    if kind == "layer_norm":
        y, mean, rstd = reference.layer_norm_fwd(x, w, b, 1e-5, zero_centered_gamma)
        dx, dw, db = reference.layer_norm_bwd(dy, x, w, mean, rstd, zero_centered_gamma, has_dbias=has_bias)
    else:
        y, rstd = reference.rms_norm_fwd(x, w, b, 1e-5, zero_centered_gamma)
        dx, dw, db = reference.rms_norm_bwd(dy, x, w, rstd, zero_centered_gamma, has_dbias=has_bias)
    torch.testing.assert_close(y, fn(x, w, b))
    gx, gw, gb = _autograd_grads(fn, x, w, b, dy)
    torch.testing.assert_close(dx, gx)
    torch.testing.assert_close(dw, gw)
    if has_bias:
        torch.testing.assert_close(db, gb)
    else:
        assert db is None


@pytest.mark.parametrize("n", [7, 100])
def test_clamped_relu_matches_autograd_of_clamp(n):
    x, w, b = _inputs(n)
    dy = torch.randn_like(x)
    lower, upper = -0.3, 0.8

    def fn(x, w, b):
        return torch.clamp(torch.nn.functional.layer_norm(x, (n,), w, b, 1e-5), lower, upper)

    y, mean, rstd, mask = reference.layer_norm_clamped_relu_fwd(x, w, b, 1e-5, lower, upper)
    expected = fn(x, w, b)
    torch.testing.assert_close(y, expected)
    assert torch.equal(bitmask.unpack(mask, n), (expected > lower) & (expected < upper))
    dx, dw, db = reference.layer_norm_clamped_relu_bwd(dy, mask, x, w, mean, rstd)
    gx, gw, gb = _autograd_grads(fn, x, w, b, dy)
    torch.testing.assert_close(dx, gx)
    torch.testing.assert_close(dw, gw)
    torch.testing.assert_close(db, gb)


def test_mixed_precision_outputs_keep_their_dtypes():
    x = torch.randn(4, 16, dtype=torch.bfloat16)
    w = torch.randn(16)
    y, mean, rstd = reference.layer_norm_fwd(x, w, w, 1e-5)
    assert (y.dtype, mean.dtype, rstd.dtype) == (torch.bfloat16, torch.float32, torch.float32)
    dx, dw, db = reference.layer_norm_bwd(torch.randn_like(x), x, w, mean, rstd)
    assert (dx.dtype, dw.dtype, db.dtype) == (torch.bfloat16, torch.float32, torch.float32)


def test_rstd_is_inverse_sqrt_of_biased_variance():
    x = torch.randn(3, 50)
    _, mean, rstd = reference.layer_norm_fwd(x, torch.ones(50), None, 1e-5)
    torch.testing.assert_close(mean, x.mean(-1))
    torch.testing.assert_close(rstd, torch.rsqrt(x.var(-1, unbiased=False) + 1e-5))
