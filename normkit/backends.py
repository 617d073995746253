"""Which backends can run here, and why not; ``backend="auto"`` resolution."""

from __future__ import annotations

import functools
import importlib.util
import os
import sys

import torch

from .errors import BackendUnavailable

BACKENDS = ("triton", "cudnn", "torch")

# cuDNN backend versions (as cudnn.backend_version() reports them) that each recipe needs.
CUDNN_MIN_VERSION = {
    "rms_norm": (90100, "needs cuDNN >= 9.1 for RMSNorm"),
    "zero_centered_gamma": (91000, "needs cuDNN >= 9.10 for zero-centered gamma"),
    "relu_bitmask": (91300, "needs cuDNN >= 9.13 for the ReLU bitmask"),
}


def has_cuda() -> bool:
    return torch.cuda.is_available() and torch.cuda.device_count() > 0


def prepare_triton_interpreter() -> None:
    """On a machine without a GPU, make Triton run kernels in its CPU interpreter.

    Triton reads ``TRITON_INTERPRET`` when its own standard library is defined, i.e. on ``import triton``, so this
    runs when normkit is imported, before any Triton import. Where there is no GPU, compiled Triton cannot run at
    all, so switching the process to the interpreter takes nothing away from other Triton code.
    """
    if "triton" not in sys.modules and not has_cuda():
        os.environ.setdefault("TRITON_INTERPRET", "1")


def on_tensor_device(run):
    """``run(t, ...)`` with t's GPU made current (``torch.cuda.device``) where another one is, as PyTorch's own ops
    do: Triton compiles for and launches on the current device (normkit's launcher keys its kernels and takes its
    stream by it too), and a cuDNN handle is used with its device current. So a call on tensors of cuda:1 while cuda:0
    is current (a model split over GPUs in one process, ``device_map="auto"``) would launch on the wrong GPU: a
    pointer error, or wrong results where the GPUs see each other's memory (Liger-Kernel issue 1303). A CPU tensor
    (Triton's interpreter) and the current GPU's run as they are, at the cost of one query of the current device."""

    @functools.wraps(run)
    def on_its_device(t, *args, **kwargs):
        index = t.get_device()
        if index < 0 or index == torch._C._cuda_getDevice():
            return run(t, *args, **kwargs)
        with torch.cuda.device(index):
            return run(t, *args, **kwargs)

    return on_its_device


def _constant_under_compile(fn):
    """Cache a status check and let torch.compile treat its result as a constant.

    The checks probe packages with importlib, which Dynamo will not trace (a graph break under ``fullgraph=True``).
    ``torch.compiler.assume_constant_result`` marks a function this way, but calling it imports torch._dynamo, and
    with it triton, before ``prepare_triton_interpreter`` has run; so the same mark is set here directly.
    """
    cached = functools.cache(fn)

    @functools.wraps(fn)
    def status(*args):
        return cached(*args)

    status._dynamo_marked_constant = True
    return status


@_constant_under_compile
def triton_status() -> str:
    if importlib.util.find_spec("triton") is None:
        return "needs the triton package (pip install triton)"
    if has_cuda() and os.environ.get("TRITON_INTERPRET") != "1":
        return "ok"
    import triton.language as tl

    if type(tl.standard.cdiv).__name__ != "InterpretedFunction":
        return "needs TRITON_INTERPRET=1 set before triton is first imported (there is no GPU here)"
    return "interpreter"


@functools.cache
def cudnn_backend_version() -> int | None:
    """The cuDNN library version as an int (91900 for 9.19.0), or None where cuDNN cannot be loaded."""
    try:
        import cudnn
    except Exception:  # ImportError, or a library load failure inside the frontend
        return None
    return int(cudnn.backend_version())


@_constant_under_compile
def cudnn_status(recipe: str | None = None) -> str:
    """Return "ok", or why the cuDNN backend (or one recipe of it) cannot run here."""
    if importlib.util.find_spec("cudnn") is None:
        return "needs the cuDNN frontend (pip install nvidia-cudnn-frontend)"
    if not has_cuda():
        return "needs an NVIDIA GPU"
    version = cudnn_backend_version()
    if version is None:
        return "the cuDNN library could not be loaded"
    recipes = [recipe] if recipe else list(CUDNN_MIN_VERSION)
    for name in recipes:
        need, reason = CUDNN_MIN_VERSION[name]
        if version < need:
            return f"{reason} (found {version})"
    return "ok"


def backends() -> dict[str, str]:
    """For each backend: ``"ok"``, ``"interpreter"`` (Triton on the CPU), or the reason it cannot run here."""
    return {"triton": triton_status(), "cudnn": cudnn_status(), "torch": "ok"}


def resolve(backend: str, x: torch.Tensor) -> str:
    """Turn ``backend`` (``"auto"`` included) into a backend that can run on ``x``; raise if it cannot."""
    if not isinstance(backend, str) or backend not in BACKENDS + ("auto",):
        raise ValueError(f"backend must be one of 'auto', 'triton', 'cudnn', 'torch', got {backend!r}")
    if backend == "auto":
        return "triton" if x.is_cuda and triton_status() == "ok" else "torch"
    if backend == "triton":
        require_triton_device(x)
    if backend == "cudnn":
        status = cudnn_status()
        if status != "ok" and not status.startswith("needs cuDNN >="):
            raise BackendUnavailable(f"cudnn backend: {status}")
        if not x.is_cuda:
            raise BackendUnavailable(f"cudnn backend: needs CUDA tensors; x is on {x.device}")
    return backend


def require_triton_device(x: torch.Tensor) -> None:
    """Raise ``BackendUnavailable`` unless the Triton backend can run on x's device here: CUDA tensors where Triton
    compiles for the GPU, CPU tensors in its interpreter (a meta tensor, say, has no data for either)."""
    status = triton_status()
    if status == "ok":
        if not x.is_cuda:
            raise BackendUnavailable(
                f"triton backend: on a machine with a GPU it runs on CUDA tensors; x is on {x.device}"
            )
    elif status == "interpreter":
        if not x.is_cpu:
            raise BackendUnavailable(
                f"triton backend: Triton runs in its CPU interpreter here, on CPU tensors; x is on {x.device}"
            )
    else:
        raise BackendUnavailable(f"triton backend: {status}")
