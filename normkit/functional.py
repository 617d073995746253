"""The functional API: ``layer_norm``, ``rms_norm``, ``layer_norm_clamped_relu``, autograd-aware, any backend.

Each call flattens the leading dims to ``[M, N]`` (a view where the strides allow it) and runs the backend's
forward; the backward runs the backend's backward. One implementation, reached two ways:

- under ``torch.compile`` (and ``torch.export``): ``torch.library`` custom ops, ``normkit::norm_fwd`` and
  ``normkit::norm_bwd``, tied together with ``register_autograd``, and ``normkit::norm_infer`` where nothing needs
  a gradient. The compiler does not look into them, so a compiled model calls the kernels without graph breaks;
- in eager mode: a ``torch.autograd.Function`` over the same functions, or the inference forward alone where
  nothing needs a gradient. Through the custom ops' dispatch, a 4096 x 768 LayerNorm spent 750-850 microseconds
  of host time a forward and backward on the GPU machine; this way 310-360 (GPU run 66; PyTorch's own 80-100).

Where nothing needs a gradient (``torch.no_grad()``, or no input that requires one), the forward is an inference
call: y alone. The Triton backend then stores neither the statistics nor the clamped ReLU's mask (nor allocates
them), nor does the cuDNN backend (its inference-phase graph); the reference runs its training forward and drops
what the backward would have read.

A call without a weight (``weight=None``, as ``torch.nn.functional.layer_norm`` and ``rms_norm`` allow, and
``nk.LayerNorm(n, elementwise_affine=False)``) scales by 1: the backends read a kept vector of ones as the weight
(``_unit_scale``), and the backward's dW of it is dropped (as any weight's that needs no gradient: ``_gradients``).

The ops are declared with ``Library.define`` / ``Library.impl`` (a schema string and a Python implementation), not
the ``@torch.library.custom_op`` decorator, whose wrappers (aliasing checks, a redispatch through Python) cost
about 11 microseconds a call more on the CPU machine (PyTorch issue 139500; cuDNN frontend's guide to custom ops
gives the same advice). ``tests/test_functional.py`` runs ``torch.library.opcheck`` on each.
"""

import functools
import importlib
from typing import Optional

import torch

from . import checks
from .backends import resolve

KINDS = ("layer_norm", "rms_norm", "layer_norm_clamped_relu")
_EMPTY = (0,)


@functools.cache
def backend_module(backend: str):
    """The module holding the six training-phase functions of a (resolved) backend."""
    name = {"torch": "normkit.reference", "triton": "normkit.triton", "cudnn": "normkit.cudnn"}[backend]
    return importlib.import_module(name)


_LIBRARY = torch.library.Library("normkit", "DEF")  # kept alive here: the ops live as long as this object
_LIBRARY.define(
    "norm_fwd(Tensor x, Tensor weight, Tensor? bias, float eps, str kind, bool zero_centered_gamma, float lower, "
    "float upper, str backend) -> (Tensor, Tensor, Tensor, Tensor)"
)
_LIBRARY.define(
    "norm_infer(Tensor x, Tensor weight, Tensor? bias, float eps, str kind, bool zero_centered_gamma, float lower, "
    "float upper, str backend) -> Tensor"
)
_LIBRARY.define(
    "norm_bwd(Tensor dy, Tensor x, Tensor weight, Tensor mean, Tensor rstd, Tensor mask, str kind, "
    "bool zero_centered_gamma, bool has_dbias, str backend) -> (Tensor, Tensor, Tensor)"
)


def _forward(x, weight, bias, eps, kind, zero_centered_gamma, lower, upper, backend):
    """The backend's forward of a 2-D x: ``(y, mean, rstd, mask)``, mean None for RMSNorm, mask None without the
    clamped ReLU."""
    ops = backend_module(backend)
    if kind == "rms_norm":
        y, rstd = ops.rms_norm_fwd(x, weight, bias, eps, zero_centered_gamma)
        return y, None, rstd, None
    if kind == "layer_norm":
        y, mean, rstd = ops.layer_norm_fwd(x, weight, bias, eps, zero_centered_gamma)
        return y, mean, rstd, None
    return ops.layer_norm_clamped_relu_fwd(x, weight, bias, eps, lower, upper, zero_centered_gamma)


# backends with entry points that skip the argument checks (the eager paths below check every argument once, in
# ``_apply``; the custom ops, which anyone can call, go through the checked functions)
_UNCHECKED = {"triton": "normkit.triton.ops"}


@functools.cache
def _unchecked_module(backend: str):
    return importlib.import_module(_UNCHECKED[backend]) if backend in _UNCHECKED else None


def _eager_forward(x, weight, bias, eps, kind, zero_centered_gamma, lower, upper, backend):
    """``_forward`` on arguments ``_apply`` has checked."""
    ops = _unchecked_module(backend)
    if ops is None:
        return _forward(x, weight, bias, eps, kind, zero_centered_gamma, lower, upper, backend)
    return ops.forward_unchecked(kind, x, weight, bias, eps, zero_centered_gamma, lower, upper)


def _infer(x, weight, bias, eps, kind, zero_centered_gamma, lower, upper, backend):
    """y alone (an inference call) of a 2-D x whose arguments are checked: the backend's inference forward where
    it has one (Triton: ``ops.infer_unchecked``; cuDNN: ``infer``, its inference-phase graph), else its training
    forward's y. ``normkit::norm_infer``."""
    ops = _unchecked_module(backend)
    if ops is not None:
        return ops.infer_unchecked(kind, x, weight, bias, eps, zero_centered_gamma, lower, upper)
    infer = getattr(backend_module(backend), "infer", None)
    if infer is not None:
        return infer(kind, x, weight, bias, eps, zero_centered_gamma, lower, upper)
    return _forward(x, weight, bias, eps, kind, zero_centered_gamma, lower, upper, backend)[0]


def _infer_fake(x, weight, bias, eps, kind, zero_centered_gamma, lower, upper, backend):
    return x.new_empty(x.shape)


def _eager_backward(dy, x, weight, mean, rstd, mask, kind, zero_centered_gamma, has_dbias, backend, needs_dw):
    """``_norm_bwd`` on the outputs of ``_eager_forward`` (db None without ``has_dbias``); the Triton backend sums
    no dW where ``needs_dw`` is False and there is no dB either (its dw is then None)."""
    ops = _unchecked_module(backend)
    if ops is None:
        return _norm_bwd(dy, x, weight, mean, rstd, mask, kind, zero_centered_gamma, has_dbias, backend)
    return ops.backward_unchecked(kind, dy, x, weight, mean, rstd, mask, zero_centered_gamma, has_dbias, needs_dw)


def _norm_fwd(
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
    """``normkit::norm_fwd``: ``(y, mean, rstd, mask)`` of a 2-D x; mean is empty for RMSNorm, mask empty without
    the clamped ReLU (the schema returns tensors)."""
    y, mean, rstd, mask = _forward(x, weight, bias, eps, kind, zero_centered_gamma, lower, upper, backend)
    mean = mean if mean is not None else rstd.new_empty(_EMPTY)
    return y, mean, rstd, mask if mask is not None else x.new_empty(_EMPTY, dtype=torch.uint8)


def _norm_fwd_fake(x, weight, bias, eps, kind, zero_centered_gamma, lower, upper, backend):
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


def _norm_bwd(
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
    """``normkit::norm_bwd``: ``(dx, dw, db)``; db is empty when ``has_dbias`` is False."""
    ops = backend_module(backend)
    if kind == "rms_norm":
        dx, dw, db = ops.rms_norm_bwd(dy, x, weight, rstd, zero_centered_gamma, has_dbias)
    elif kind == "layer_norm":
        dx, dw, db = ops.layer_norm_bwd(dy, x, weight, mean, rstd, zero_centered_gamma, has_dbias)
    else:
        dx, dw, db = ops.layer_norm_clamped_relu_bwd(dy, mask, x, weight, mean, rstd, zero_centered_gamma, has_dbias)
    return dx, dw, db if db is not None else dw.new_empty(_EMPTY)


def _norm_bwd_fake(dy, x, weight, mean, rstd, mask, kind, zero_centered_gamma, has_dbias, backend):
    n = x.shape[1]
    return x.new_empty(x.shape), weight.new_empty((n,)), weight.new_empty((n,) if has_dbias else _EMPTY)


def _setup_context(ctx, inputs, output):
    x, weight, bias, _eps, kind, zero_centered_gamma, _lower, _upper, backend = inputs
    _y, mean, rstd, mask = output
    ctx.save_for_backward(x, weight, mean, rstd, mask)
    ctx.options = (kind, zero_centered_gamma, bias is not None, backend)


def _gradients(ctx, dy, eager: bool):
    """The gradients asked for (``ctx.needs_input_grad``), as PyTorch's own norms: a frozen bias's dB is not
    computed (the backward without dB), a frozen weight's dW (a call without a weight's too) is dropped, and the
    Triton backend's eager backward then sums none where it has no dB to sum either (one launch fewer)."""
    x, weight, mean, rstd, mask = ctx.saved_tensors
    kind, zero_centered_gamma, has_bias, backend = ctx.options
    needs_dw, has_dbias = ctx.needs_input_grad[1], has_bias and ctx.needs_input_grad[2]
    if dy.stride(-1) != 1 or (backend == "cudnn" and not dy.is_contiguous()):
        dy = dy.contiguous()  # autograd may hand over an expanded or transposed gradient; cuDNN's rows packed
    args = (dy, x, weight, mean, rstd, mask, kind, zero_centered_gamma, has_dbias, backend)
    dx, dw, db = _eager_backward(*args, needs_dw) if eager else norm_bwd(*args)
    return dx, dw if needs_dw else None, db if has_dbias else None, None, None, None, None, None, None


def _backward(ctx, dy, _dmean, _drstd, _dmask):
    return _gradients(ctx, dy, eager=False)


# the implementations serve every device (each backend checks its own); the fakes give shapes to torch.compile
_LIBRARY.impl("norm_fwd", _norm_fwd, "CompositeExplicitAutograd")
_LIBRARY.impl("norm_bwd", _norm_bwd, "CompositeExplicitAutograd")
_LIBRARY.impl("norm_infer", _infer, "CompositeExplicitAutograd")
torch.library.register_fake("normkit::norm_fwd", _norm_fwd_fake, lib=_LIBRARY)
torch.library.register_fake("normkit::norm_bwd", _norm_bwd_fake, lib=_LIBRARY)
torch.library.register_fake("normkit::norm_infer", _infer_fake, lib=_LIBRARY)
torch.library.register_autograd("normkit::norm_fwd", _backward, setup_context=_setup_context, lib=_LIBRARY)


def _no_double_backward(ctx, *grads):
    raise RuntimeError("normkit: the norms' backward is not differentiable (double backward is not supported)")


torch.library.register_autograd("normkit::norm_bwd", _no_double_backward, lib=_LIBRARY)


def _no_backward_of_inference(ctx, *grads):
    raise RuntimeError(
        "normkit::norm_infer is the forward of an inference call and has no backward: call normkit::norm_fwd (or "
        "normkit's functions, which pick it) where a gradient is needed"
    )


torch.library.register_autograd(
    "normkit::norm_infer", _no_backward_of_inference, setup_context=lambda ctx, inputs, output: None, lib=_LIBRARY
)
norm_fwd = torch.ops.normkit.norm_fwd.default
norm_bwd = torch.ops.normkit.norm_bwd.default
norm_infer = torch.ops.normkit.norm_infer.default


class _EagerNorm(torch.autograd.Function):
    """Eager mode's autograd: the custom ops' implementations and backward, called without the dispatcher (see the
    module docstring); torch.compile sees the custom ops instead (``_apply``). Double backward raises."""

    @staticmethod
    def forward(ctx, *inputs):
        output = _eager_forward(*inputs)  # mean and mask may be None: saved as such, never read
        _setup_context(ctx, inputs, output)
        return output[0]

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, dy):
        return _gradients(ctx, dy, eager=True)


def _check_x(x) -> None:
    checks.check_float_tensor("x", x)
    if x.dim() == 0:
        raise ValueError("x must have at least one dim (the normalized last dim)")


def _check_args(kind, x, weight, bias, eps, zero_centered_gamma, lower, upper) -> None:
    clamp = (lower, upper) if kind == "layer_norm_clamped_relu" else None
    if checks.valid_fwd_args(x, weight, bias, eps, zero_centered_gamma, clamp):  # 2-D x, rows of unit stride
        return
    _check_x(x)
    checks.check_params(x, weight, bias)
    checks.check_eps(eps)
    checks.check_flag("zero_centered_gamma", zero_centered_gamma)
    if clamp:
        checks.check_clamp_bounds(lower, upper)
    if x.shape[-1] == 0:
        raise ValueError("x must have at least one element in its last (normalized) dim")


_KEPT_UNIT_SCALES: dict = {}  # (n, dtype, device) -> ones, read by calls without a weight, never written


def _unit_scale(x, bias, zero_centered_gamma) -> torch.Tensor:
    """The weight of a call without one (``weight=None``, as ``torch.nn.functional.layer_norm`` allows): ones of
    N, in bias's dtype where bias has one the weight may have (x's or float32), else x's, so that the kernels take
    their launches of a 16-bit weight with 16-bit x. Kept per size, dtype and device, but under ``torch.compile``
    (made in the graph) and where a CUDA graph's capture would make them in its own memory (made there each call).
    On the CPU machine a call without a weight took 8.4 us of host time against 7.4 with one (4096 x 768 bf16, no
    gradient, the launches stubbed; 8.7 with the checks one by one and an ``lru_cache``)."""
    if not (isinstance(x, torch.Tensor) and x.dim() and type(zero_centered_gamma) is bool):  # x's dtype: _check_args
        _check_x(x)
        checks.check_flag("zero_centered_gamma", zero_centered_gamma)
    dtype = bias.dtype if isinstance(bias, torch.Tensor) and bias.dtype in (x.dtype, torch.float32) else x.dtype
    if torch.compiler.is_compiling():
        return torch.ones(x.shape[-1], dtype=dtype, device=x.device)
    key = (x.shape[-1], dtype, x.device)
    ones = _KEPT_UNIT_SCALES.get(key)
    if ones is None:
        with torch.inference_mode(False):  # made inside inference mode, it could not be saved for a later backward
            ones = torch.ones(key[0], dtype=dtype, device=key[2])
        if not (x.is_cuda and torch.cuda.is_current_stream_capturing()):
            _KEPT_UNIT_SCALES[key] = ones
    return ones


def _apply(kind, x, weight, bias, eps, zero_centered_gamma, backend, lower=0.0, upper=0.0):
    if weight is None:  # no scale: ones, which the kernels read as any weight (dW computed and dropped)
        weight, zero_centered_gamma = _unit_scale(x, bias, zero_centered_gamma), False
    _check_args(kind, x, weight, bias, eps, zero_centered_gamma, lower, upper)
    n = x.shape[-1]
    backend = resolve(backend, x)
    # 2-D x as it is (a reshape would add a view to the autograd graph); more dims flattened to rows, a view
    # whenever the leading dims flatten to one row stride
    rows = x if x.dim() == 2 else x.reshape(-1, n)
    if (n > 1 and rows.stride(1) != 1) or (backend == "cudnn" and not rows.is_contiguous()):
        rows = rows.contiguous()  # the kernels need a unit stride along the normalized dim, cuDNN's graphs packed rows
    args = (rows, weight, bias, float(eps), kind, zero_centered_gamma, float(lower), float(upper), backend)
    training = torch.is_grad_enabled() and (
        x.requires_grad or weight.requires_grad or (bias is not None and bias.requires_grad)
    )
    if torch.compiler.is_compiling():  # the custom ops: one opaque node of the compiled graph
        y = norm_fwd(*args)[0] if training else norm_infer(*args)
    elif training:
        y = _EagerNorm.apply(*args)
    else:
        y = _infer(*args)  # nothing to differentiate: y alone
    return y if x.dim() == 2 else y.reshape(x.shape)


def layer_norm(x, weight, bias=None, eps=1e-5, *, zero_centered_gamma=False, backend="auto"):
    """LayerNorm over the last dim of ``x [..., N]``; weight/bias ``[N]`` (weight may be None: no scale); returns y
    with x's shape and dtype."""
    return _apply("layer_norm", x, weight, bias, eps, zero_centered_gamma, backend)


def rms_norm(x, weight, bias=None, eps=1e-5, *, zero_centered_gamma=False, backend="auto"):
    """RMSNorm over the last dim of ``x [..., N]``; weight/bias ``[N]`` (weight may be None: no scale); returns y
    with x's shape and dtype. ``eps=None`` is x's dtype's machine epsilon, as in ``torch.nn.functional.rms_norm``."""
    if eps is None and isinstance(x, torch.Tensor) and x.dtype in checks.FLOAT_DTYPES:
        eps = torch.finfo(x.dtype).eps
    return _apply("rms_norm", x, weight, bias, eps, zero_centered_gamma, backend)


def layer_norm_clamped_relu(
    x, weight, bias=None, eps=1e-5, *, lower=0.0, upper=6.0, zero_centered_gamma=False, backend="auto"
):
    """``clamp(layer_norm(x), lower, upper)``; the backward passes gradient only where ``lower < out < upper``."""
    return _apply("layer_norm_clamped_relu", x, weight, bias, eps, zero_centered_gamma, backend, lower, upper)
