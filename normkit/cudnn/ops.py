"""The six training-phase functions of the API over cached cuDNN graphs.

A graph is built once per key (op, flags, shapes, strides, dtypes, device, clip bounds) and reused; epsilon and
the clip comparisons are passed by value at execution, so changing eps builds nothing. ``build_count()`` lets a
test see that a second call with the same key builds nothing.
"""

from __future__ import annotations

import functools
import threading

import cudnn
import torch

from .. import checks
from ..backends import cudnn_status, on_tensor_device
from ..bitmask import packed_width
from ..errors import BackendUnavailable
from . import graphs
from .graphs import as_nchw

_cache: dict = {}
_handles: dict = {}
_lock = threading.Lock()
_builds = 0


def build_count() -> int:
    """How many graphs this process has built (cache misses)."""
    return _builds


def clear_cache() -> None:
    _cache.clear()


def _require_packed_rows(**tensors) -> None:
    # cuDNN's norm nodes deduce the row length from the row stride, so rows must be packed back to back.
    for name, t in tensors.items():
        if t.shape[0] > 1 and t.stride(0) != t.shape[1]:
            raise ValueError(
                f"{name}: the cudnn backend needs packed rows (row stride {t.shape[1]}), got row stride {t.stride(0)}; "
                "use backend='triton' (any row stride) or pass a contiguous tensor"
            )


def _require(recipe: str | None, x: torch.Tensor) -> None:
    status = cudnn_status(recipe)
    if status != "ok":
        raise BackendUnavailable(f"cudnn backend: {status}")
    if not x.is_cuda:
        raise BackendUnavailable(f"cudnn backend: needs CUDA tensors; x is on {x.device}")
    if x.dtype == torch.float64:
        raise TypeError("x: the cudnn backend supports float32, float16 and bfloat16, got torch.float64")


def _handle(device: torch.device):
    index = device.index if device.index is not None else torch.cuda.current_device()
    if index not in _handles:
        with torch.cuda.device(index):
            _handles[index] = cudnn.create_handle()
    handle = _handles[index]
    cudnn.set_stream(handle=handle, stream=torch.cuda.current_stream(index).cuda_stream)
    return handle


def _layout(*tensors) -> tuple:
    return tuple((tuple(t.shape), tuple(t.stride()), t.dtype) if t is not None else None for t in tensors)


def _cached(key, build):
    global _builds
    with _lock:
        built = _cache.get(key)
        if built is None:
            try:
                built = build()
            except (cudnn.cudnnGraphNotSupportedError, RuntimeError) as error:
                reason = str(error).splitlines()[0][:300]
                raise BackendUnavailable(f"cudnn backend: no cuDNN engine supports {key[0]} here: {reason}") from error
            _cache[key] = built
            _builds += 1
    return built


def _run(built: graphs.BuiltGraph, device, buffers: dict) -> None:
    workspace = torch.empty(built.workspace_size, dtype=torch.uint8, device=device)
    pack = {built.tensors[name]: buf for name, buf in buffers.items() if name in built.tensors}
    built.graph.execute(pack, workspace, handle=_handle(device))


def _host_scalar(value: float) -> torch.Tensor:
    return torch.full((1, 1, 1, 1), float(value), dtype=torch.float32)


def _check_fused_relu_dtypes(x, weight) -> None:
    # cuDNN 9.19's engine for a norm with pointwise epilogue nodes rejects weights wider than x
    # ("hasScale && sizeof(inputDataType) < sizeof(weightDataType)"), so mixed precision cannot fuse the ReLU.
    if weight.dtype != x.dtype:
        raise TypeError(
            f"weight: the cudnn backend's fused LayerNorm + ReLU needs weight in x's dtype ({x.dtype}), "
            f"got {weight.dtype}; use backend='triton' for mixed precision"
        )


def _check_fused_relu_size(x) -> None:
    # cuDNN 9.19's fused LayerNorm + ReLU bitmask forward reads or writes out of bounds from 2**31 elements on
    # (an illegal memory access, which ends the process's CUDA context; H200, GPU run 101): 32767 x 65536 ran,
    # 32768 x 65536, 65536 x 32768 and 16384 x 131072 did not. Its backward ran at 32768 x 65536.
    if x.numel() >= 2**31:
        raise ValueError(
            f"x: the cudnn backend's fused LayerNorm + ReLU forward takes fewer than 2**31 elements (cuDNN 9.19 "
            f"fails at {x.shape[0]} x {x.shape[1]} with an illegal memory access); use backend='triton'"
        )


def _check_mask_width(n: int) -> None:
    # cuDNN packs the BOOLEAN tensor's bits back to back over the whole tensor; rows start on a byte only when
    # N is a multiple of 8, which docs/api.md's per-row layout needs.
    if n % 8:
        raise ValueError(f"x: the cudnn backend's ReLU bitmask needs N % 8 == 0 (got N={n}); use backend='triton'")


def _zeros_bias(weight: torch.Tensor) -> torch.Tensor:
    # cuDNN's layernorm node takes a bias; a missing one is a zero vector (N elements, cached per layout)
    return _cached(("zero_bias", weight.shape[0], weight.dtype, weight.device), lambda: torch.zeros_like(weight))


@on_tensor_device
def _forward(x, weight, bias, eps, *, rms, zero_centered_gamma, clamp, training=True):
    """``(y, mean, rstd, mask)``; not ``training`` (the inference phase): y alone, the others None."""
    _require_packed_rows(x=x)
    m, n = x.shape
    y = torch.empty((m, n), dtype=x.dtype, device=x.device)
    mean = rstd = mask = None
    if training:
        mean = torch.empty(m, dtype=torch.float32, device=x.device)
        rstd = torch.empty_like(mean)
        mask = torch.empty((m, packed_width(n)), dtype=torch.uint8, device=x.device) if clamp else None
    if m == 0:
        return y, mean, rstd, mask
    if bias is None and not rms:
        bias = _zeros_bias(weight)
    x4, w4, b4 = as_nchw(x), as_nchw(weight), as_nchw(bias) if bias is not None else None
    key = ("rms_fwd" if rms else "ln_fwd", zero_centered_gamma, clamp, training, x.device, _layout(x4, w4, b4))
    handle = _handle(x.device)
    builder = graphs.build_rms_norm_fwd if rms else functools.partial(graphs.build_layer_norm_fwd, clamp=clamp)
    try:
        built = _cached(
            key, lambda: builder(x4, w4, b4, zero_centered_gamma=zero_centered_gamma, training=training, handle=handle)
        )
    except BackendUnavailable as error:
        if clamp is None:
            raise
        # H200, cuDNN 9.19 (GPU run 224): the fused graph, training or inference, built for rows of 64, 128, 192,
        # 256 and 4160 bf16 elements (and of 32 and 96 float32 ones), for no other length tried (1-56, 72, 96-104,
        # 136, 200, 264, 4097, 4104)
        raise BackendUnavailable(
            f"{error}; x: cuDNN 9.19 builds the fused LayerNorm + clamp for rows of a multiple of 128 bytes (N % 64 "
            "== 0 in 16 bits, N % 32 in float32), use backend='triton' for any N"
        ) from error
    buffers = {"x": x4, "weight": w4, "bias": b4, "eps": _host_scalar(eps), "one": _host_scalar(1.0), "y": as_nchw(y)}
    if training:  # the inference graph has no statistics, and its clamp no mask nor the bounds the mask compares
        buffers.update(mean=mean.view(m, 1, 1, 1), rstd=rstd.view(m, 1, 1, 1), mask=mask)
        if clamp is not None:
            buffers.update(lower=_host_scalar(clamp[0]), upper=_host_scalar(clamp[1]))
    _run(built, x.device, buffers)
    return y, mean, rstd, mask


@on_tensor_device
def _backward(dy, x, weight, mean, rstd, mask, *, rms, zero_centered_gamma, has_dbias):
    _require_packed_rows(dy=dy, x=x)
    m, n = x.shape
    dx = torch.empty((m, n), dtype=x.dtype, device=x.device)
    dw = torch.empty(n, dtype=weight.dtype, device=x.device)
    # cuDNN's layernorm backward always writes dbias; it is returned only when asked for
    db = torch.empty_like(dw) if (has_dbias or not rms) else None
    if m == 0:
        dw.zero_()
        return dx, dw, db.zero_() if has_dbias else None
    dy4, x4, w4 = as_nchw(dy), as_nchw(x), as_nchw(weight)
    rstd4 = rstd.view(m, 1, 1, 1)
    handle = _handle(x.device)
    if rms:
        key = ("rms_bwd", zero_centered_gamma, has_dbias, x.device, _layout(dy4, x4, w4, rstd4))
        built = _cached(
            key,
            lambda: graphs.build_rms_norm_bwd(
                dy4, x4, w4, rstd4, zero_centered_gamma=zero_centered_gamma, has_dbias=has_dbias, handle=handle
            ),
        )
    else:
        mean4 = mean.view(m, 1, 1, 1)
        key = ("ln_bwd", zero_centered_gamma, mask is not None, x.device, _layout(dy4, x4, w4, mean4, rstd4))
        built = _cached(
            key,
            lambda: graphs.build_layer_norm_bwd(
                dy4, x4, w4, mean4, rstd4, zero_centered_gamma=zero_centered_gamma, masked=mask is not None,
                handle=handle,
            ),
        )  # fmt: skip
    buffers = {
        "dy": dy4, "x": x4, "weight": w4, "one": _host_scalar(1.0), "rstd": rstd4,
        "dx": as_nchw(dx), "dw": as_nchw(dw), "db": as_nchw(db) if db is not None else None,
    }  # fmt: skip
    if not rms:
        buffers["mean"] = mean.view(m, 1, 1, 1)
    if mask is not None:
        buffers["mask"] = mask
    _run(built, x.device, buffers)
    return dx, dw, db if has_dbias else None


def layer_norm_fwd(x, weight, bias, eps, zero_centered_gamma=False):
    """x ``[M, N]``, weight/bias ``[N]`` -> y ``[M, N]`` (x's dtype), mean ``[M]``, rstd ``[M]`` (float32)."""
    checks.check_fwd_args(x, weight, bias, eps, zero_centered_gamma)
    _require("zero_centered_gamma" if zero_centered_gamma else None, x)
    y, mean, rstd, _ = _forward(x, weight, bias, eps, rms=False, zero_centered_gamma=zero_centered_gamma, clamp=None)
    return y, mean, rstd


def layer_norm_bwd(dy, x, weight, mean, rstd, zero_centered_gamma=False, has_dbias=True):
    """dy, x ``[M, N]``, mean/rstd ``[M]`` -> dx ``[M, N]``, dw ``[N]``, db ``[N]`` or None."""
    checks.check_bwd_args(dy, x, weight, mean, rstd, None, zero_centered_gamma, has_dbias)
    _require("zero_centered_gamma" if zero_centered_gamma else None, x)
    return _backward(
        dy, x, weight, mean, rstd, None, rms=False, zero_centered_gamma=zero_centered_gamma, has_dbias=has_dbias
    )


def layer_norm_clamped_relu_fwd(x, weight, bias, eps, lower=0.0, upper=6.0, zero_centered_gamma=False):
    """LayerNorm + clamped ReLU in one cuDNN graph, emitting the packed bitmask ``uint8 [M, N/8]`` (N % 8 == 0, M * N
    < 2**31)."""
    checks.check_fwd_args(x, weight, bias, eps, zero_centered_gamma, clamp=(lower, upper))
    _check_fused_relu_size(x)
    _require("relu_bitmask", x)
    _check_mask_width(x.shape[1])
    _check_fused_relu_dtypes(x, weight)
    return _forward(
        x, weight, bias, eps, rms=False, zero_centered_gamma=zero_centered_gamma, clamp=(float(lower), float(upper))
    )


def layer_norm_clamped_relu_bwd(dy, mask, x, weight, mean, rstd, zero_centered_gamma=False, has_dbias=True):
    """The masked dReLU multiply feeding LayerNorm backward, one cuDNN graph (N % 8 == 0)."""
    checks.check_bwd_args(dy, x, weight, mean, rstd, mask, zero_centered_gamma, has_dbias)
    _require("relu_bitmask", x)
    _check_mask_width(x.shape[1])
    _check_fused_relu_dtypes(x, weight)
    if mask.shape[0] > 1 and mask.stride(0) != mask.shape[1]:
        raise ValueError("mask: the cudnn backend needs a contiguous mask")
    return _backward(
        dy, x, weight, mean, rstd, mask, rms=False, zero_centered_gamma=zero_centered_gamma, has_dbias=has_dbias
    )


def rms_norm_fwd(x, weight, bias, eps, zero_centered_gamma=False):
    """x ``[M, N]``, weight/bias ``[N]`` -> y ``[M, N]`` (x's dtype), rstd ``[M]`` (float32)."""
    checks.check_fwd_args(x, weight, bias, eps, zero_centered_gamma)
    _require("rms_norm", x)
    y, _, rstd, _ = _forward(x, weight, bias, eps, rms=True, zero_centered_gamma=zero_centered_gamma, clamp=None)
    return y, rstd


def rms_norm_bwd(dy, x, weight, rstd, zero_centered_gamma=False, has_dbias=False):
    """dy, x ``[M, N]``, rstd ``[M]`` -> dx ``[M, N]``, dw ``[N]``, db ``[N]`` or None."""
    checks.check_bwd_args(dy, x, weight, None, rstd, None, zero_centered_gamma, has_dbias)
    _require("rms_norm", x)
    return _backward(
        dy, x, weight, None, rstd, None, rms=True, zero_centered_gamma=zero_centered_gamma, has_dbias=has_dbias
    )


def infer(kind, x, weight, bias, eps, zero_centered_gamma=False, lower=0.0, upper=6.0):
    """y alone, through cuDNN's inference-phase graph (no mean, rstd or mask stored): the forward of the
    functional API's inference call. ``kind``: "layer_norm", "rms_norm" or "layer_norm_clamped_relu" (the clamp
    without its mask; cuDNN 9.19 builds it, as the training graph, for rows of a multiple of 128 bytes and weights
    in x's dtype)."""
    rms, clamp = kind == "rms_norm", None
    if kind == "layer_norm_clamped_relu":
        clamp = (lower, upper)
    elif kind not in ("layer_norm", "rms_norm"):
        raise ValueError(f"kind: 'layer_norm', 'rms_norm' or 'layer_norm_clamped_relu', got {kind!r}")
    checks.check_fwd_args(x, weight, bias, eps, zero_centered_gamma, clamp=clamp)
    if clamp is not None:
        _check_fused_relu_size(x)  # measured with the mask; the inference graph's limit is not known, so kept
        _check_fused_relu_dtypes(x, weight)
        clamp = (float(lower), float(upper))
    _require("rms_norm" if rms else ("zero_centered_gamma" if zero_centered_gamma else None), x)
    return _forward(
        x, weight, bias, eps, rms=rms, zero_centered_gamma=zero_centered_gamma, clamp=clamp, training=False
    )[0]
