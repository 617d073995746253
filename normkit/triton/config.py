"""Launch parameters of the norm kernels, chosen from the problem shape by a heuristic.

The heuristic is plain Python (no ``@triton.autotune``), so it behaves the same under the CPU interpreter.
"""

from __future__ import annotations

import contextlib
import functools
from dataclasses import dataclass

import torch
import triton

# Longest row (elements) kept in registers in one tile; longer rows are processed in chunks of CHUNK_N.
LIMITS = {"fwd_max_block_n": 32768, "bwd_max_block_n": 8192, "chunk_n": 4096}
# Elements per program for short rows (several rows per program).
TILE_ELEMENTS = 4096


@dataclass(frozen=True)
class LaunchConfig:
    block_m: int  # rows per program (per step of a persistent program)
    block_n: int  # columns per tile (the whole row when num_chunks == 1)
    num_chunks: int
    num_warps: int


@contextlib.contextmanager
def limits(**overrides):
    """Temporarily change ``LIMITS`` (tests use it to reach the chunked path with small rows)."""
    unknown = set(overrides) - set(LIMITS)
    if unknown:
        raise ValueError(f"unknown limits: {sorted(unknown)}")
    saved = dict(LIMITS)
    LIMITS.update(overrides)
    try:
        yield
    finally:
        LIMITS.clear()
        LIMITS.update(saved)


def _config(m: int, n: int, max_block_n: int, max_warps: int) -> LaunchConfig:
    block_n = max(16, triton.next_power_of_2(n))  # >= 16: the mask packs whole bytes of 8 columns
    num_chunks = 1
    if block_n > max_block_n:
        block_n = LIMITS["chunk_n"]
        num_chunks = triton.cdiv(n, block_n)
    block_m = 1
    if num_chunks == 1:
        block_m = max(1, min(TILE_ELEMENTS // block_n, triton.next_power_of_2(max(m, 1))))
    num_warps = max(1, min(max_warps, block_m * block_n // 512))
    return LaunchConfig(block_m, block_n, num_chunks, triton.next_power_of_2(num_warps))


def fwd_config(m: int, n: int) -> LaunchConfig:
    return _config(m, n, LIMITS["fwd_max_block_n"], max_warps=16)


def bwd_config(m: int, n: int) -> LaunchConfig:
    return _config(m, n, LIMITS["bwd_max_block_n"], max_warps=16)


@functools.cache
def multiprocessor_count(device_index: int) -> int:
    return torch.cuda.get_device_properties(device_index).multi_processor_count


def bwd_programs(x: torch.Tensor, row_blocks: int) -> int:
    """Programs of the persistent backward grid: a few per SM on a GPU, a handful in the interpreter."""
    if x.is_cuda:
        per_sm = 4
        index = x.device.index if x.device.index is not None else torch.cuda.current_device()
        return max(1, min(row_blocks, per_sm * multiprocessor_count(index)))
    return max(1, min(row_blocks, 4))
