"""normkit's Triton backend: the six training-phase functions of the API.

Kernels: ``norm_fwd.py`` (LayerNorm / RMSNorm / LayerNorm + clamped ReLU forward), ``norm_bwd.py`` (their backward
and the deterministic dW/dB reduction), ``norm_bwd_staged.py`` (RMSNorm's backward at a few widths on Hopper, in
Gluon: rows staged in shared memory). Launch parameters: ``config.py``. Launchers: ``ops.py``.
On a machine without a GPU the kernels run in Triton's CPU interpreter (``normkit.backends()`` says so).
"""

from ..backends import triton_status
from ..errors import BackendUnavailable

if triton_status() not in ("ok", "interpreter"):
    raise BackendUnavailable(f"triton backend: {triton_status()}")

from .ops import (  # noqa: E402
    layer_norm_bwd,
    layer_norm_clamped_relu_bwd,
    layer_norm_clamped_relu_fwd,
    layer_norm_fwd,
    rms_norm_bwd,
    rms_norm_fwd,
)

__all__ = [
    "layer_norm_fwd",
    "layer_norm_bwd",
    "layer_norm_clamped_relu_fwd",
    "layer_norm_clamped_relu_bwd",
    "rms_norm_fwd",
    "rms_norm_bwd",
]
