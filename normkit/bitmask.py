"""The packed ReLU bitmask shared by every backend (cuDNN's BOOLEAN layout).

``uint8 [..., ceil(N/8)]``: bit ``b`` (least significant first) of byte ``j`` holds column ``8*j + b``;
the padding bits past column ``N - 1`` are 0. A mask written by one backend is read by any other.
"""

from __future__ import annotations

import torch


def packed_width(n: int) -> int:
    """Bytes per row of a packed mask over ``n`` columns."""
    return (n + 7) // 8


def _bit_weights(device) -> torch.Tensor:
    return torch.tensor([1 << b for b in range(8)], dtype=torch.uint8, device=device)


def pack(bools: torch.Tensor) -> torch.Tensor:
    """Pack ``bool [..., N]`` into ``uint8 [..., ceil(N/8)]`` (least significant bit first)."""
    if not isinstance(bools, torch.Tensor):
        raise TypeError(f"bools must be a torch.Tensor, got {type(bools).__name__}")
    if bools.dtype != torch.bool:
        raise TypeError(f"bools must be a bool tensor, got {bools.dtype}")
    if bools.dim() == 0:
        raise ValueError("bools must have at least one dim")
    n = bools.shape[-1]
    pad = packed_width(n) * 8 - n
    bits = torch.nn.functional.pad(bools.to(torch.uint8), (0, pad))
    bits = bits.reshape(*bools.shape[:-1], packed_width(n), 8)
    # The 8 weighted bits of a byte never overlap, so their sum is their bitwise or.
    return (bits * _bit_weights(bools.device)).sum(dim=-1, dtype=torch.uint8)


def unpack(packed: torch.Tensor, n: int) -> torch.Tensor:
    """Unpack ``uint8 [..., ceil(n/8)]`` into ``bool [..., n]``."""
    if not isinstance(packed, torch.Tensor):
        raise TypeError(f"packed must be a torch.Tensor, got {type(packed).__name__}")
    if packed.dtype != torch.uint8:
        raise TypeError(f"packed must be a uint8 tensor, got {packed.dtype}")
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError(f"n must be a non-negative int, got {n!r}")
    if packed.dim() == 0 or packed.shape[-1] != packed_width(n):
        raise ValueError(
            f"packed must have ceil(n/8) = {packed_width(n)} bytes in its last dim, got shape {tuple(packed.shape)}"
        )
    bits = (packed.unsqueeze(-1) & _bit_weights(packed.device)) != 0
    return bits.reshape(*packed.shape[:-1], packed.shape[-1] * 8)[..., :n]
