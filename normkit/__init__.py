"""normkit: fused normalization kernels (Triton and cuDNN) over one reference, with the checks that tie them.

Functional API: ``layer_norm``, ``rms_norm``, ``layer_norm_clamped_relu``; modules ``LayerNorm``, ``RMSNorm``.
Explicit training-phase kernels with one signature per function in ``normkit.triton``, ``normkit.cudnn`` and
``normkit.reference``. ``normkit.backends()`` says which can run here.
"""

from .backends import backends, prepare_triton_interpreter

prepare_triton_interpreter()  # before anything imports triton

from . import bitmask, reference, testing  # noqa: E402
from .errors import BackendUnavailable  # noqa: E402
from .functional import layer_norm, layer_norm_clamped_relu, rms_norm  # noqa: E402
from .modules import LayerNorm, RMSNorm  # noqa: E402

__version__ = "0.1.0"

__all__ = [
    "BackendUnavailable",
    "LayerNorm",
    "RMSNorm",
    "backends",
    "bitmask",
    "layer_norm",
    "layer_norm_clamped_relu",
    "reference",
    "rms_norm",
    "testing",
]


def __getattr__(name):
    # The backends import lazily: `import normkit` works with no triton, no cuDNN and no GPU.
    if name in ("triton", "cudnn"):
        import importlib

        return importlib.import_module(f"normkit.{name}")
    raise AttributeError(f"module 'normkit' has no attribute {name!r}")
