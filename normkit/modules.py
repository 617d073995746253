"""``nk.LayerNorm`` and ``nk.RMSNorm``: drop-in for ``torch.nn.LayerNorm`` / ``torch.nn.RMSNorm`` over the last dim.

Parameter names match PyTorch's (``weight``, ``bias``), so a ``state_dict`` loads both ways.
With ``zero_centered_gamma=True`` the stored weight is zero-centered: it starts at 0 and the scale is ``1 + weight``.
With ``elementwise_affine=False`` a module has no parameters (its bias neither), as PyTorch's.
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
    _eps_may_be_none = False  # RMSNorm's None: x's dtype's machine epsilon, as in torch.nn.RMSNorm

    def __init__(self, normalized_shape, eps, elementwise_affine, bias, zero_centered_gamma, backend, device, dtype):
        super().__init__()
        if eps is not None or not self._eps_may_be_none:
            checks.check_eps(eps)
        checks.check_flag("elementwise_affine", elementwise_affine)
        checks.check_flag("bias", bias)
        checks.check_flag("zero_centered_gamma", zero_centered_gamma)
        if zero_centered_gamma and not elementwise_affine:
            raise ValueError("zero_centered_gamma=True needs a weight to center: elementwise_affine must be True")
        n = _hidden_size(normalized_shape)
        self.normalized_shape = (n,)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        self.zero_centered_gamma = zero_centered_gamma
        self.backend = backend
        if elementwise_affine:
            self.weight = nn.Parameter(torch.empty(n, device=device, dtype=dtype))
            self.bias = nn.Parameter(torch.empty(n, device=device, dtype=dtype)) if bias else None
        else:  # no parameters (bias too, as in PyTorch): the normalized x alone
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        # the identity transform: scale 1 (stored as 0 when zero-centered), shift 0
        if self.weight is not None:
            nn.init.zeros_(self.weight) if self.zero_centered_gamma else nn.init.ones_(self.weight)
        if self.bias is not None:
            nn.init.zeros_(self.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return type(self)._functional(
            x, self.weight, self.bias, self.eps, zero_centered_gamma=self.zero_centered_gamma, backend=self.backend
        )

    def extra_repr(self) -> str:
        return (
            f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}, "
            f"bias={self.bias is not None}, "
            f"zero_centered_gamma={self.zero_centered_gamma}, backend={self.backend!r}"
        )


class LayerNorm(_Norm):
    """LayerNorm over the last dim of ``[..., n]``; ``bias=True`` by default, as in ``torch.nn.LayerNorm``;
    ``elementwise_affine=False``: no weight nor bias."""

    _functional = staticmethod(layer_norm)

    def __init__(
        self, n, eps=1e-5, *, elementwise_affine=True, bias=True, zero_centered_gamma=False, backend="auto",
        device=None, dtype=None,
    ):  # fmt: skip
        super().__init__(n, eps, elementwise_affine, bias, zero_centered_gamma, backend, device, dtype)


class RMSNorm(_Norm):
    """RMSNorm over the last dim of ``[..., n]``; ``bias=False`` by default, as in ``torch.nn.RMSNorm``;
    ``elementwise_affine=False``: no weight nor bias; ``eps=None``: x's dtype's machine epsilon, as PyTorch's."""

    _functional = staticmethod(rms_norm)
    _eps_may_be_none = True

    def __init__(
        self, n, eps=1e-5, *, elementwise_affine=True, bias=False, zero_centered_gamma=False, backend="auto",
        device=None, dtype=None,
    ):  # fmt: skip
        super().__init__(n, eps, elementwise_affine, bias, zero_centered_gamma, backend, device, dtype)
