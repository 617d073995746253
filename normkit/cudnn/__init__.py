"""normkit's cuDNN backend: the six training-phase functions through cuDNN frontend graphs, and
the inference-phase forward (``infer``: y alone) of the functional API's inference call.

Graph builders (what the notebooks teach): ``graphs.py``. Cached execution of the six functions: ``ops.py``.
Importing this module needs the ``nvidia-cudnn-frontend`` package; ``import normkit`` does not.
"""

from ..backends import cudnn_status
from ..errors import BackendUnavailable

try:
    import cudnn as _cudnn  # noqa: F401
except ImportError as error:
    raise BackendUnavailable(f"cudnn backend: {cudnn_status()}") from error

from . import graphs  # noqa: E402
from .ops import (  # noqa: E402
    build_count,
    clear_cache,
    infer,
    layer_norm_bwd,
    layer_norm_clamped_relu_bwd,
    layer_norm_clamped_relu_fwd,
    layer_norm_fwd,
    rms_norm_bwd,
    rms_norm_fwd,
)

__all__ = [
    "build_count",
    "clear_cache",
    "graphs",
    "infer",
    "layer_norm_fwd",
    "layer_norm_bwd",
    "layer_norm_clamped_relu_fwd",
    "layer_norm_clamped_relu_bwd",
    "rms_norm_fwd",
    "rms_norm_bwd",
]
