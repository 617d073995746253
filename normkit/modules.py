"""``nk.LayerNorm`` and ``nk.RMSNorm``: drop-in for ``torch.nn.LayerNorm`` / ``torch.nn.RMSNorm`` over the last dim.

Parameter names match PyTorch's (``weight``, ``bias``), so a ``state_dict`` loads both ways.
With ``zero_centered_gamma=True`` the stored weight is zero-centered: it starts at 0 and the scale is ``1 + weight``.
"""

from __future__ import annotations

import torch
from torch import nn

from . import checks
from .functional import layer_norm, rms_norm


def _hidden_size(normalized_shape) -> int:
    if isinstance(normalized_shape, int) and not isinstance(normalized_shape, bool):
        n = normalized_shape
    elif isinstance(normalized_shape, (tuple, list, torch.Size)) and len(normalized_shape) == 1:
        n = int(normalized_shape[0])
    else:
        raise ValueError(
            f"normalized_shape must be an int or a 1-element shape (the last dim), got {normalized_shape!r}"
        )
    if n < 1:
        raise ValueError(f"normalized_shape must be >= 1, got {n}")
    return n


class _Norm(nn.Module):
    _functional = None

    def __init__(self, normalized_shape, eps, bias, zero_centered_gamma, backend, device, dtype):
        super().__init__()
        checks.check_eps(eps)
        checks.check_flag("bias", bias)
        checks.check_flag("zero_centered_gamma", zero_centered_gamma)
        n = _hidden_size(normalized_shape)
        self.normalized_shape = (n,)
        self.eps = eps
        self.zero_centered_gamma = zero_centered_gamma
        self.backend = backend
        self.weight = nn.Parameter(torch.empty(n, device=device, dtype=dtype))
        self.bias = nn.Parameter(torch.empty(n, device=device, dtype=dtype)) if bias else None
        self.reset_parameters()

    def reset_parameters(self) -> None:
        # the identity transform: scale 1 (stored as 0 when zero-centered), shift 0
        nn.init.zeros_(self.weight) if self.zero_centered_gamma else nn.init.ones_(self.weight)
        if self.bias is not None:
            nn.init.zeros_(self.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return type(self)._functional(
            x, self.weight, self.bias, self.eps, zero_centered_gamma=self.zero_centered_gamma, backend=self.backend
        )

    def extra_repr(self) -> str:
        return (
            f"{self.normalized_shape}, eps={self.eps}, bias={self.bias is not None}, "
            f"zero_centered_gamma={self.zero_centered_gamma}, backend={self.backend!r}"
        )


class LayerNorm(_Norm):
    """LayerNorm over the last dim of ``[..., n]``; ``bias=True`` by default, as in ``torch.nn.LayerNorm``."""

    _functional = staticmethod(layer_norm)

    def __init__(self, n, eps=1e-5, *, bias=True, zero_centered_gamma=False, backend="auto", device=None, dtype=None):
        super().__init__(n, eps, bias, zero_centered_gamma, backend, device, dtype)


class RMSNorm(_Norm):
    """RMSNorm over the last dim of ``[..., n]``; ``bias=False`` by default, as in ``torch.nn.RMSNorm``."""

    _functional = staticmethod(rms_norm)

    def __init__(self, n, eps=1e-5, *, bias=False, zero_centered_gamma=False, backend="auto", device=None, dtype=None):
        super().__init__(n, eps, bias, zero_centered_gamma, backend, device, dtype)
