"""The providers the benchmark compares: what a user would pick instead of normkit, and normkit itself.

``make(provider, case, inputs)`` returns a zero-argument callable that runs the op once and returns its outputs
(forward: y first; backward: dx, dw first), or raises ``Unsupported`` with the reason. ``SAME_SIZE_COPY`` is no
peer but a yardstick: a plain copy that moves as many bytes as the case's op (``same_size_copy``).
"""

from __future__ import annotations

import importlib

import torch
import torch.nn.functional as F

from .. import bitmask
from .cases import EPS, LOWER, UPPER, Case, Inputs, bytes_moved

SAME_SIZE_COPY = "copy"
PROVIDERS = ("triton", "cudnn", "eager", "compile", "liger", "quack", SAME_SIZE_COPY)


class Unsupported(Exception):
    """This provider does not offer this op (or cannot run here)."""


def _normkit(backend: str, case: Case, t: Inputs):
    try:
        ops = importlib.import_module(f"normkit.{backend}")
    except Exception as error:  # BackendUnavailable, or a missing package
        raise Unsupported(str(error)) from error
    if case.direction == "infer":  # through the functional API, as a user calls it (an inference call)
        import normkit

        fn, clamp = getattr(normkit, case.kind), _clamp_of(case)
        zc = case.zero_centered_gamma
        return lambda: fn(t.x, t.weight, t.bias, EPS, zero_centered_gamma=zc, backend=backend, **clamp)
    return normkit_call(ops, case, t)


def _clamp_of(case: Case) -> dict:
    return {"lower": LOWER, "upper": UPPER} if case.kind == "layer_norm_clamped_relu" else {}


def normkit_call(ops, case: Case, t: Inputs):
    """The case's op from a module with normkit's six functions (a backend, or another version's: ``bench.ab``).
    An inference call: the Triton backend's ``ops.infer_unchecked`` (y alone), or where a version has none its
    training forward's y."""
    zc = case.zero_centered_gamma
    unchecked = getattr(ops, "ops", None)
    if case.direction == "infer" and hasattr(unchecked, "infer_unchecked"):
        return lambda: unchecked.infer_unchecked(case.kind, t.x, t.weight, t.bias, EPS, zc, LOWER, UPPER)
    if case.direction != "bwd":
        if case.kind == "rms_norm":
            return lambda: ops.rms_norm_fwd(t.x, t.weight, t.bias, EPS, zc)
        if case.kind == "layer_norm":
            return lambda: ops.layer_norm_fwd(t.x, t.weight, t.bias, EPS, zc)
        return lambda: ops.layer_norm_clamped_relu_fwd(t.x, t.weight, t.bias, EPS, LOWER, UPPER, zc)
    if case.kind == "rms_norm":
        return lambda: ops.rms_norm_bwd(t.dy, t.x, t.weight, t.rstd, zc, case.has_bias)
    if case.kind == "layer_norm":
        return lambda: ops.layer_norm_bwd(t.dy, t.x, t.weight, t.mean, t.rstd, zc, case.has_bias)
    return lambda: ops.layer_norm_clamped_relu_bwd(t.dy, t.mask, t.x, t.weight, t.mean, t.rstd, zc, case.has_bias)


def torch_composition(case: Case):
    """The op as a PyTorch user writes it (unfused for the clamped ReLU + mask); mixed dtypes upcast like genai."""
    n = case.n

    def norm(x, w, b):
        scale = 1 + w if case.zero_centered_gamma else w
        xs = x.float() if scale.dtype != x.dtype else x
        if case.kind == "rms_norm":
            y = F.rms_norm(xs, (n,), scale, EPS)
            y = y + b if b is not None else y
        else:
            y = F.layer_norm(xs, (n,), scale, b, EPS)
        return y.to(x.dtype)

    if case.kind != "layer_norm_clamped_relu":
        return norm
    if case.direction == "infer":  # an inference call: the clamp, no mask
        return lambda x, w, b: norm(x, w, b).clamp(LOWER, UPPER)

    def norm_relu(x, w, b):
        y = norm(x, w, b)
        keep = (y > LOWER) & (y < UPPER)
        # torch.clamp's backward also passes the gradient at the bounds; the API's mask is strict, so select
        out = torch.where(keep, y, y.clamp(LOWER, UPPER).detach())
        return out, bitmask.pack(keep)

    return norm_relu


def _autograd(fn, case: Case, t: Inputs):
    """The op through autograd, as a training step runs it. A forward is timed on inputs that require a gradient,
    so it is the training forward: PyTorch's (eager or compiled) saves the statistics its backward reads, as
    normkit's, cuDNN's and Liger's forwards store them (run on inputs that need no gradient, torch.compile's forward
    stored none and was 1-5% faster at 32768 x 256-1024: benchmarks/README.md, round 25). An inference call runs on
    inputs that need no gradient. A backward: the forward once outside the timed region; the timed callable runs
    only the backward, on its own copy of dy: Liger's RMSNorm backward writes dx into the gradient it is handed (its
    ``in_place``, on by default), which left the shared dy changed for every provider timed after it (torch.compile's
    RMSNorm backward, timed after Liger's, failed its check: benchmarks/README.md, round 48)."""
    if case.direction == "infer":
        return lambda: fn(t.x, t.weight, t.bias)
    x = t.x.detach().requires_grad_(True)
    w = t.weight.detach().requires_grad_(True)
    b = t.bias.detach().requires_grad_(True) if t.bias is not None else None
    if case.direction == "fwd":
        return lambda: _detached(fn(x, w, b))
    y = fn(x, w, b)
    y = y[0] if isinstance(y, tuple) else y
    leaves = [x, w] + ([b] if b is not None else [])
    dy = t.dy.clone()
    return lambda: torch.autograd.grad(y, leaves, dy, retain_graph=True)


def _detached(out):
    """A forward's outputs without their autograd graph (each call's graph is freed when the call returns)."""
    return tuple(o.detach() for o in out) if isinstance(out, tuple) else out.detach()


def _liger(case: Case, t: Inputs):
    try:
        from liger_kernel.ops.layer_norm import LigerLayerNormFunction
        from liger_kernel.ops.rms_norm import LigerRMSNormFunction
    except Exception as error:
        raise Unsupported(f"liger-kernel not importable: {error}") from error
    if case.kind == "layer_norm_clamped_relu":
        raise Unsupported("Liger has no fused LayerNorm + clamped ReLU")
    if case.kind == "layer_norm" and case.zero_centered_gamma:
        raise Unsupported("Liger's LayerNorm has no zero-centered gamma")
    if case.kind == "rms_norm":
        if case.has_bias:
            raise Unsupported("Liger's RMSNorm has no bias")
        offset = 1.0 if case.zero_centered_gamma else 0.0

        def fn(x, w, b):
            return LigerRMSNormFunction.apply(x, w, EPS, offset)
    else:
        # Liger's LayerNorm forward reads a bias; without one a user hands it zeros that need no gradient, and its
        # backward then computes no dB (``needs_input_grad``)
        zeros = torch.zeros_like(t.weight) if t.bias is None else None

        def fn(x, w, b):
            return LigerLayerNormFunction.apply(x, w, b if b is not None else zeros, EPS)

    return _autograd(fn, case, t)


def _quack(case: Case, t: Inputs):
    """quack-kernels (CuTe DSL, Hopper/Blackwell), written against quack 0.6.5's ``quack.rmsnorm`` functions."""
    try:
        from quack import rmsnorm as q
    except Exception as error:
        raise Unsupported(f"quack not importable: {error}") from error
    if case.kind == "layer_norm_clamped_relu":
        raise Unsupported("quack has no fused LayerNorm + clamped ReLU")
    offset = 1.0 if case.zero_centered_gamma else 0.0
    if case.kind == "layer_norm":
        if case.zero_centered_gamma:
            raise Unsupported("quack's LayerNorm has no zero-centered gamma")
        if t.weight.dtype != torch.float32:
            raise Unsupported("quack's LayerNorm wants float32 weights")
        if case.direction != "bwd":
            stats = case.direction == "fwd"
            return lambda: q.layernorm_fwd(t.x, t.weight, t.bias, EPS, return_rstd=stats, return_mean=stats)
        return lambda: q.layernorm_bwd(t.x, t.weight, t.dy, t.rstd, t.mean, has_bias=case.has_bias)
    if case.direction != "bwd":
        stats = case.direction == "fwd"
        return lambda: q.rmsnorm_fwd(t.x, t.weight, t.bias, eps=EPS, store_rstd=stats, weight_offset=offset)
    if case.has_bias:
        raise Unsupported("quack's RMSNorm backward computes no dB")
    return lambda: q.rmsnorm_bwd(t.x, t.weight, t.dy, t.rstd, weight_offset=offset)


def same_size_copy(case: Case, t: Inputs):
    """A device-to-device copy of half the case's bytes (``bytes_moved``) into a buffer of its own: as many bytes
    read and written as the op moves, timed in turns with the providers. The run's 1 GiB copy is the bandwidth a long
    stream reaches; a call of a few MB cannot, whatever its kernel, and this says how near a copy of its size comes.
    Its output is the copy itself, which the harness does not check against the reference."""
    half = bytes_moved(case) // 2
    src = torch.empty(half, dtype=torch.uint8, device=t.x.device)
    dst = torch.empty_like(src)
    return lambda: dst.copy_(src)


def make(provider: str, case: Case, t: Inputs):
    if provider == SAME_SIZE_COPY:
        return same_size_copy(case, t)
    if provider in ("triton", "cudnn"):
        return _normkit(provider, case, t)
    if provider == "eager":
        return _autograd(torch_composition(case), case, t)
    if provider == "compile":
        torch._dynamo.reset()  # a fresh compile per shape: no recompile-limit fallbacks
        return _autograd(torch.compile(torch_composition(case), fullgraph=True, dynamic=False), case, t)
    if provider == "liger":
        return _liger(case, t)
    if provider == "quack":
        return _quack(case, t)
    raise ValueError(f"provider must be one of {PROVIDERS}, got {provider!r}")
