"""Launch parameters of the norm kernels, chosen from the problem shape by a heuristic.

The heuristic is plain Python (no ``@triton.autotune``), so it behaves the same under the CPU interpreter. Its
numbers come from a measured sweep (``python -m normkit.bench.tune`` on an H200, see benchmarks/README.md): the
tuner forces each candidate with ``forced()`` and times it. Where a GPU of slower DRAM (an H100) measured another
launch faster, the forward's rules take it there (``slower_dram``).
"""

from __future__ import annotations

import contextlib
import functools
from dataclasses import dataclass, replace
from typing import NamedTuple

import torch

# fwd_one_tile_max_n: the longest row the forward keeps in registers in one tile; longer rows are processed in
# chunks. bwd_max_block_n: the same for the backward, whose longer rows are split over several programs
# (``split_rows_config``) or, RMSNorm's at 16384, processed in chunks. fwd/bwd_max_block_n: the widest tile, chunks
# included; chunk_n: the widest chunk.
# rms/ln_bwd_chunked_max_n: the longest row whose backward runs as one program a row, in chunks, with the whole
# row's dW/dB partials in registers (two float32 rows of 16384 fill half the register file of an SM); longer rows
# are split. LayerNorm has no chunked rows (its limit is bwd_max_block_n): its split rows ran 1.34x (32768 x 12288)
# to 1.52x (4096 x 15872, fp16) faster than its chunked ones or the two kernels that came before (GPU run 82), and
# again 1.10-2.0x faster than today's chunked kernel (chunks of 2048 / 4096 at 16 / 32 warps, one program a SM, forced)
# at 4096 and 32768 rows of 12288-16384 (GPU run 503); with dB's partials in registers too they spill 72-112 bytes a
# thread (sm_90), but fp16's chunks of 4096 at 16 warps spill none and still ran 0.70-0.91x the split rows;
# RMSNorm's chunked rows at 16384 ran 1.03x faster than split ones (at 9216 and 12288 slower: ``chunked_max_n``).
# rms_bwd_staged_min_m / ln_bwd_staged_min_m: the fewest rows whose RMSNorm / LayerNorm backward takes the staged
# Gluon kernel (``_staged_bwd``); rms_bwd_staged_short_min_m: RMSNorm's at its short rows (``STAGED_RMS_SHORT_BWD_N``)
# of at most ``STAGED_FEWER_ROWS_N`` columns, rms_bwd_staged_7168_min_m at the longer ones (7168 and 7680);
# rms_bias_bwd_staged_short_min_m: RMSNorm's with dB (a bias) at its short rows ``STAGED_RMS_SHORT_DB_BWD_N``,
# rms_bias_bwd_staged_7168_min_m at 7168 and 7680 (``STAGED_RMS_LONG_CALL_DB_BWD_N``, an H200's DRAM only);
# ln_masked_bwd_staged_min_m: LayerNorm + clamped ReLU's (``STAGED_MASKED_BWD_N``).
# tile_3d_min_n: from this tile width on, the forward's one-tile rows with float32 weights over 16-bit x hold their
# tile as [rows, N / 8, 8] (``TILE_3D`` in norm_fwd.py, ``ops._tiles_3d``).
LIMITS = {
    "fwd_one_tile_max_n": 4096,
    "fwd_max_block_n": 8192,
    "tile_3d_min_n": 2048,
    "bwd_max_block_n": 8192,
    "chunk_n": 8192,
    "rms_bwd_chunked_max_n": 16384,
    "ln_bwd_chunked_max_n": 8192,
    "rms_bwd_staged_min_m": 2048,
    "ln_bwd_staged_min_m": 2048,
    "ln_masked_bwd_staged_min_m": 3072,
    "rms_bwd_staged_short_min_m": 2560,
    "rms_bwd_staged_7168_min_m": 4096,
    "rms_bias_bwd_staged_short_min_m": 4096,
    "rms_bias_bwd_staged_7168_min_m": 24576,
    "split_staged_min_m": 4096,
    "ln_dbias_split_staged_16384_min_m": 8192,
    "split_staged_fwd_min_m": 4096,
}


@dataclass(frozen=True)
class LaunchConfig:
    block_m: int  # rows per program (per step of a persistent program)
    block_n: int  # columns per tile (the whole row when num_chunks == 1)
    num_chunks: int
    num_warps: int
    # persistent programs per SM (the backward's; a forward's of one-tile rows); 0: one program per row block
    programs_per_sm: int = 0
    # backward of long rows: each row split into this many parts of block_n columns, one program a part
    # (``split_rows_kernel``); 1: not split
    parts: int = 1
    # a step ahead: split rows publish a row block's sums before its dx (``split_rows_kernel``'s AHEAD); the masked
    # backward by the TMA loads the next row block's mask bytes before it works on the current one (MASK_AHEAD); a
    # chunked forward's second pass loads the next chunk's x before it stores the current one (``X_AHEAD``)
    ahead: bool = False
    # one-tile rows: a tail tile of this many columns after the head tile of block_n (0: none)
    tail_n: int = 0
    # backward of whole rows: dy and x loaded by the TMA (``norm_bwd_tma_kernel``), and dx stored by it too
    tma: bool = False
    tma_store: bool = False
    # the TMA backward's 16-bit weights are not held in float32 across its loop (``norm_bwd_tma_kernel``'s WIDEN_W):
    # fp16's are held as loaded and widened at every row block; the masked launches' bfloat16's are loaded again there
    # (elsewhere held in float32)
    widen_w: bool = False
    # the masked TMA backward's packed mask by the TMA as bytes rather than 32-bit words (``ops._descriptors``)
    mask_bytes: bool = False
    # the backward by the Gluon kernel that stages its rows in shared memory (``norm_bwd_staged.py``,
    # ``_staged_bwd``): one program of num_warps a SM, block_n the whole row; with parts > 1 the split staged kernel
    # (``_split_staged_bwd``): each row in parts slices of block_n columns, one program a slice; a forward's: the split
    # staged forward (``norm_fwd_staged.py``, ``_split_staged_fwd``), in parts slices the same way
    staged: bool = False

    @property
    def per_thread(self) -> int:
        """Elements of a tile (a chunk, a part) each thread holds."""
        return self.block_m * self.block_n // (32 * self.num_warps)


_FORCED: dict[str, LaunchConfig] = {}
# changes whenever limits() or forced() is entered or left: the launchers' cached plans (ops.py) carry it in their key
generation = 0


@contextlib.contextmanager
def _overridden(table: dict, overrides: dict):
    global generation
    saved = dict(table)
    table.update(overrides)
    generation += 1
    try:
        yield
    finally:
        table.clear()
        table.update(saved)
        generation += 1


def limits(**overrides):
    """Temporarily change ``LIMITS`` (tests use it to reach the chunked path with small rows)."""
    unknown = set(overrides) - set(LIMITS)
    if unknown:
        raise ValueError(f"unknown limits: {sorted(unknown)}")
    return _overridden(LIMITS, overrides)


def forced(fwd: LaunchConfig | None = None, bwd: LaunchConfig | None = None):
    """Launch with these configs instead of the heuristic's (the tuner and tests use it)."""
    return _overridden(_FORCED, {k: v for k, v in (("fwd", fwd), ("bwd", bwd)) if v is not None})


# Plain Python: triton.cdiv and triton.next_power_of_2 are constexpr functions, about 2 microseconds a call on the
# host, and a small call's launch asks for several.
def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def next_power_of_2(n: int) -> int:
    """The smallest power of two >= n (1 for n <= 1)."""
    return 1 << max(0, n - 1).bit_length()


def row_block_n(n: int) -> int:
    """The tile width that holds a whole row: N rounded up to a power of two, at least 16 (the mask packs whole
    bytes of 8 columns)."""
    return max(16, next_power_of_2(n))


def _chunked(n: int, max_block_n: int, chunk: int, per_thread: int, one_tile_n: int = 0) -> LaunchConfig | None:
    """None when a row fits one tile of at most ``one_tile_n`` (default: max_block_n) and max_block_n; else one row a
    program in chunks of ``chunk`` columns (at most ``LIMITS["chunk_n"]`` and max_block_n: a chunk is a tile too),
    ``per_thread`` elements a thread."""
    if row_block_n(n) <= min(max_block_n, one_tile_n or max_block_n):
        return None
    chunk = min(LIMITS["chunk_n"], max_block_n, chunk)
    return LaunchConfig(1, chunk, cdiv(n, chunk), max(1, chunk // (32 * per_thread)))


def _rows_per_tile(m: int, block_n: int, tile: int) -> int:
    return max(1, min(tile // block_n, next_power_of_2(max(m, 1))))


def _row_tiles(block_m: int, block_n: int) -> LaunchConfig:
    """Tiles of ``block_m`` whole rows of ``block_n`` columns, 32 elements a thread (1-16 warps)."""
    return LaunchConfig(block_m, block_n, 1, max(1, min(16, block_m * block_n // (32 * 32))))


def fwd_config(
    m: int, n: int, is_rms: bool = False, has_mask: bool = False, w_bytes: int = 2, x_fp16: bool = False,
    slower_dram: bool = False, has_bias: bool = False, zero_centered: bool = False, staged: bool = False,
    x_bytes: int = 2,
) -> LaunchConfig:  # fmt: skip
    """Whole rows in tiles of 4096 elements (8192 at N = 4096; 2048 for at most 4096 rows of at most 1024 columns, 1024
    of at most 128), 32 elements a thread (RMSNorm's tiles of 2 rows of 1024: 16). Above 4096 columns, when there are
    more than 2048 rows, 4 elements a thread (as Inductor's looped reductions): chunks of 2048 at 16 warps, or for
    LayerNorm up to 8192 columns (7168 on slower DRAM, ``slower_dram``) 1024 at 8 warps; with fewer rows, chunks of 2048
    (4096 above N = 8192) at 4 warps, so that every program runs in the first wave. Many rows above 16384 columns: one
    program of 32 warps a SM, chunks of 4096 (above 32768 columns 8192, 8 elements a thread). The clamped ReLU's forward
    of more than 4096 rows of 512-4096 columns: two rows a tile (one of 4096); of many rows above 4096 columns, and of
    few rows (at most 2048) of 4097-16384: 8 chunks a row (N rounded up to a power of two, / 8), 8 elements a thread
    (1024 at 4 warps up to 8192 columns, 2048 at 8 up to 16384, 4096 at 16, 8192 at 32), but on slower DRAM many rows of
    4097-8192 columns (16-element aligned) the plain forward's chunks of 4 a thread, their mask bytes by nibbles
    (7169-8192: chunks of 2048 at 8 warps), and 129-256 and 513-1024 rows of 8193-9216 columns (16-element aligned) the
    plain forward's chunks of 4 a thread, their mask bytes by nibbles (``ops._pair_nibbles``). The forwards (the fused
    one too) of more than 4096 rows of 256 columns: eight rows a tile of 2 warps, above 8192 rows on a persistent grid,
    8 programs a SM. Calls of 2049-4096 rows (a few waves of programs) of 1153-3072 columns: most on a persistent grid
    (``_few_waves_persistent_fwd``; the masked forward's rows of 1793-2048 two a step); RMSNorm's of 3073-4095 columns
    one row a tile of 8 warps; of 4097-16384 columns: ``_few_waves_fwd``, 8 elements a thread (RMSNorm's of 7169-8192
    without a bias, with 16-bit weights or float32 at 8192, one tile of 8192 at 16 warps), and LayerNorm's rows of
    4609-6144 columns as a head tile of 4096 and a tail tile (``tail_n``; of 10241-12288 with 16-bit weights 8192 and
    4096; with a bias and 16-bit weights, of 6145-8192 two tiles of 4096 and of 8193-9216 8192 and 1024; the masked
    forward's too at 4353-5888 with 16-bit weights, its tail of 2048 at 4 warps); 1025-2048 rows of
    4353-8191 columns: LayerNorm's as a few waves' (a head tile of 4096 and a tail up to 6144, one tile of 8192 above
    or, with a bias and 16-bit weights, two of 4096),
    RMSNorm's of 6145-8191 one tile of 8192 at 16 warps. LayerNorm's few rows (at most 2048) of 8193-12288 columns: a
    head tile of 8192 and a tail tile (513-1024 rows of 9217-12288 with 16-bit weights on a persistent grid of 2
    programs a SM; 257-512 rows: chunks of 2048 at 8 warps; 513-1024 rows of 4097-8192: chunks of 1024 at 4; 513-2048
    rows of 8193-9216: chunks of 4 a thread, 1024 at 8 warps or, above 1024 rows, 2048 at 16; 1-256 rows of 8193-9216:
    chunks of 2048 at 16); of 12289-16384 (RMSNorm's 8192-16384): chunks of 4096 at 8 warps (RMSNorm 16), but RMSNorm's
    513-1024 rows of 8193-8448 and 8705-12288 a head tile of 8192 and a tail tile at 16 warps on a persistent grid of 2
    programs a SM (8 warps with a bias or a tail of 2048; at 8705-9216 columns of whole 16-element vectors, without a
    bias or with one and 16-bit weights, chunks of 2048 at 8 warps a chunk ahead; on slower DRAM, ``slower_dram``,
    8193-12288 and 1025-2048 rows too, those not persistent), and LayerNorm's 1025-2048 rows of 12289-14336 chunks of
    2048 at 8 warps. Some chunked rows' second pass loads a chunk ahead (``_second_pass_ahead``).

    Measured on an H200 (bf16 x, fp32 weights, M = 32768; benchmarks/tuning/): at every N from 256 to 4096 this
    choice was the fastest candidate timed or within 1% of it. GPU runs 60-61 timed 4-16 elements a thread and tiles
    of 256-8192 at N = 256-1024 too: the fastest candidate, a different one in each run, was 1-4% ahead, and tiles
    of 2048 at every N <= 1024 ran 0.98-1.03x this rule side by side (run 61), so it stays. Chunked rows (GPU runs
    24-29: chunks of 1024-16384 at 4-32 warps): 2048 at 16 warps was the fastest at 8192 and 16384 for both norms
    (RMSNorm 4.15-4.25 TB/s, 98-100% of copy; LayerNorm 3.3-3.8) and for LayerNorm at 65536, while RMSNorm at 65536
    ran 18% faster in chunks of 8192 at 32 warps (taken in round 12, below). At 1024 x 12288 the 16-warp programs
    (run 29) ran 4% (LayerNorm) and 13% (with the clamped ReLU) slower than the 4-warp ones had in run 22, hence the
    rule for few rows. GPU runs 52-53 (round 7): chunks of 1024 at 8 warps ran LayerNorm at 32768 x 6144 and x 8192
    at 3995 and 4035 GB/s against 3440 and 3775 for 2048 at 16 (with the clamped ReLU 2630 against 2280, 2700
    against 2565), but RMSNorm at 8192 at 3980 against 4240; at 16384, 2048 at 16 stayed LayerNorm's fastest (4011
    against 3645). Above 16384 columns (GPU runs 89-93, the backlog timer, 32768 rows): a two-pass row is read
    again from L2 only while the rows of all the programs on the GPU at once fit there; 2048-column chunks at 16 warps
    run 4 programs a SM (34 MB of rows at 32768 columns), 4096 at 32 warps one (8.4 MB). LayerNorm at 32768 2681 ->
    3762 GB/s, RMSNorm 3002 -> 4230 (torch.compile 2847 and 4227); RMSNorm at 65536 2607 (2048) and 2934 (4096) ->
    3231 (8192); LayerNorm at 65536 2476-2581 against 2394 (2048 at 16 warps, run 93), 8192 1576; LayerNorm at
    16384 2048 at 16 warps 3970, 4096 at 32 3554. Where a thread holds 8 elements of a chunk, the second pass
    holds 3-D tiles (``ops._tiles_3d``): there each thread makes its own mask bytes, and float32 weights load in x's
    layout (GPU runs 95-96): LayerNorm at 65536 in chunks of 8192 2479 -> 3056, RMSNorm 3235 -> 3408; the clamped
    ReLU's forward at 32768 in 4096 at 16 warps 2149 -> 2981-3015 (8192 at 32: 2529; 2048 at 8: 2920), at 65536
    in 8192 at 32 warps 2037 -> 2922-2941 (4096 at 16: 2606); at 6144-16384 (runs 103-104, against 1024 at 8 warps
    or 2048 at 16, 4 a thread) 6144 3214 -> 3379, 8192 3317 -> 3414, 12288 2806 -> 3430, 16384 2880-2963 ->
    3376-3395 (a chunk of N / 16: 8192 2944, 16384 2984; of N / 4: 8192 3081, 16384 2893; of N / 2: 8192 2280).
    LayerNorm's own forward at 16384 in 3-D chunks ran slower (3542-3744 against 3980).

    ``w_bytes``: the size of an element of the weights (``ops`` passes the weight's), which some rules of calls of a few
    waves follow (``_few_waves_persistent_fwd``, ``_few_waves_fwd``): their launches that gain with 16-bit weights lose
    with float32 ones. ``x_fp16``: x is float16 (``_few_waves_fwd``'s rows of 12289-14336 columns). ``slower_dram``: the
    GPU's DRAM is slower than the H200's that the rules were fitted on (``slower_dram``, an H100's): RMSNorm's 1025-2048
    rows of 8193-12288 columns (513-1024 rows of 8449-8704) then take a head tile and a tail tile (at 16 warps at
    9217-10240 too), LayerNorm's many rows of 7169-8192 columns chunks of 2048 at 16 warps, the clamped ReLU's
    forward of many rows of 4097-7168 columns chunks of 4 elements a thread (7169-8192 chunks of 2048 at 8 warps), and
    RMSNorm's of more than 16384 rows of 256 of fp16 x and weights (16385-32768 rows of bf16 x and float32 weights)
    without a bias sixteen rows a tile of 4 warps, 16 programs a SM asked (5-6 fit), LayerNorm's of 16897-32768 rows of
    256 of 16-bit x and weights with a bias and RMSNorm's of bf16 x and weights their eight rows a tile on 12 programs
    a SM (``_slower_dram_fwd_256_twelve_a_sm``), LayerNorm's of more than 8192 rows of 1024 of 16-bit x with float32
    weights and a bias tiles of two rows, not four (``_slower_dram_ln_fwd_1024_two_rows``), and RMSNorm's of more
    than 4096 rows of 12289-16384 columns a head tile of 8192 and a tail of 8192 at 32 warps (16 with a bias, which
    below 16384 columns leaves 16-bit x with float32 weights in chunks), not chunks
    (``_rms_fwd_head_and_tail_of_8192``), but RMSNorm's of float32 x of more than 4096 rows of 6144-16384 columns
    (of 16-bit x and weights without a bias of 12288-16384, of 16-bit x with float32 weights and a bias of
    14336-16384) chunks of 4096 (8192 at 16384 of float32 x) at 32 warps (``_slower_dram_rms_fwd_chunks_at_32_warps``,
    rounds 133-134), LayerNorm's of float32 x of more than 4096 rows of 9217-16384 columns a head tile of 8192 and a
    tail at 16 warps (``_ln_fp32_fwd_head_and_tail``), and LayerNorm's of 16-bit x and weights of more than 4096 rows
    of 14337-16384 columns (with a bias 15360-16384), but the clamped ReLU's, chunks of 4096 at 32 warps (round 134,
    ``_slower_dram_ln_fwd_in_chunks_of_4096``).
    On an H200 (not ``slower_dram``, round 129): RMSNorm's of float32 x of more than 4096 rows of 16384 columns that
    head and tail of 8192 at 32 warps (16 with a bias; ``_rms_fwd_head_and_tail_of_8192``), and its
    forward of 16897-32768 rows of 256 of bf16 x without a bias sixteen rows a tile of 4 warps, 8 programs a SM
    asked, 6 fitting (``_faster_dram_rms_fwd_256_sixteen_rows``). On either, the clamped ReLU's forward of float32 x
    of more than 4096 rows of 12288, 14336 and 16384 columns LayerNorm's head tile of 8192 and tail at 16 warps.
    ``has_bias``: the call adds a bias, whose loads take RMSNorm's persistent grid to 8 warps a program.
    ``zero_centered``: the weights are zero-centered (``1 + gamma``), which keep LayerNorm's few waves of 8193-9216
    columns of fp16 x in chunks, off the head + tail launch (``_few_waves_fwd``). ``staged``: the split staged Gluon
    forward can run on the call's device (``ops._staged_capable``; its rows are asked after, of a config that takes
    it), and ``_split_staged_fwd``'s long rows (``x_bytes``: x's element size) take it: ``parts`` slices of
    ``block_n`` columns, one program a slice on one SM (``norm_fwd_staged.py``)."""
    if "fwd" in _FORCED:
        return _FORCED["fwd"]
    if staged and _split_staged_fwd(m, n, is_rms, x_bytes, w_bytes, has_bias):
        return _split_staged_fwd_config(n)
    if slower_dram and _slower_dram_fwd_256_twelve_a_sm(m, n, is_rms, has_mask, w_bytes, has_bias, x_fp16, x_bytes):
        return LaunchConfig(8, 256, 1, 2, 12)
    if slower_dram and _slower_dram_ln_fwd_1024_two_rows(m, n, is_rms, has_mask, w_bytes, has_bias, x_bytes):
        return LaunchConfig(2, 1024, 1, 4, 0)
    if not slower_dram and _faster_dram_rms_fwd_256_sixteen_rows(m, n, is_rms, has_mask, has_bias, x_fp16, x_bytes):
        return LaunchConfig(16, 256, 1, 4, 8)
    long_rows = _long_rows(m, n, is_rms, has_mask, has_bias, x_bytes, w_bytes, slower_dram)
    if long_rows:
        return long_rows
    limits = tuple(LIMITS.values())
    rules = (w_bytes, x_fp16, slower_dram, has_bias, zero_centered)
    return _fwd_heuristic(_rows_key(m), n, is_rms, has_mask, *rules, limits, x_bytes)


def _slower_dram_fwd_256_twelve_a_sm(
    m: int, n: int, is_rms: bool, has_mask: bool, w_bytes: int, has_bias: bool, x_fp16: bool, x_bytes: int
) -> bool:
    """Whether a forward of 16897-32768 rows of 256 of 16-bit x and weights, LayerNorm's with a bias (fp16 or bf16 x)
    or RMSNorm's of bf16 x (with a bias or without), on slower DRAM (an H100), takes eight rows a tile of 2 warps on a
    persistent grid of 12 programs a SM, not 8 (round 124; the tuner's best at LayerNorm's 24576 x 256 fp16, GPU run
    866: 1785 -> 1992 GB/s, asked as 16 a SM, of which 12 fit on an H100, ``ops._fitted_grid``). The gain is a pass
    saved: 8 programs a SM on the H100's 132 SMs take 8 x 132 x 8 = 8448 rows a pass, so up to 16896 rows two passes,
    which 12 a SM do no faster (LayerNorm x0.913 at 16896 fp16, x0.912-0.917 at 16400; RMSNorm x0.928 at 16400 bf16
    with a bias, x1.000 without), and from 16897 three, which 12 a SM do in two up to 25344 (round 125, H100 runs
    870-878). In turns against 8 a SM (``bench.ab``, runs 867-878):

    - LayerNorm fp16 x1.014 / 1.031 / 1.042 / 1.049 / 1.075 / 1.113 / 1.082 / 1.040 at 16960 / 17408 / 17920 / 18432 /
      20480 / 24576 / 28672 / 32768 rows, bf16 x1.003-1.011 / 1.101 / 1.041 at 17408-18432 / 24576 / 32768;
    - RMSNorm bf16 with a bias x1.037 / 1.092-1.114 / 1.036 at 17408 / 24576 / 32768, without x1.027 / 1.039 / 1.022
      at 16960 / 24576 / 32768.

    Not taken: 65536 rows (LayerNorm fp16 x0.990; six passes for eight), float32 weights (LayerNorm bf16 x fp32
    x0.982-0.993, RMSNorm's with a bias x1.000), RMSNorm's fp16 x (with a bias x0.907-0.945 at 17408-32768; without,
    its own rule in ``_fwd_heuristic``), LayerNorm's without a bias (at 16 a SM of 2 warps x0.870-0.946, of 4 warps
    x0.991-1.014), the mask, an H200 (not timed). ``m``: the call's rows, not as ``_rows_key`` rounds them (16400 and
    32768 share a key). ``x_fp16``: x is float16; ``x_bytes``: x's element size."""
    rows = n == 256 and 16896 < m <= 32768
    return rows and (has_bias or is_rms) and x_bytes == w_bytes == 2 and not has_mask and not (is_rms and x_fp16)


def _slower_dram_ln_fwd_1024_two_rows(
    m: int, n: int, is_rms: bool, has_mask: bool, w_bytes: int, has_bias: bool, x_bytes: int
) -> bool:
    """Whether LayerNorm's forward of more than 8192 rows of 1024 columns of 16-bit x with float32 weights and a bias,
    no mask, on slower DRAM (an H100), takes tiles of two rows at 4 warps, one program a tile, not the heuristic's four
    rows at 4 warps (round 126). The tuner on the H100 (``bench.tune``, GPU run 882, 32768 x 1024 bf16 x float32) timed
    the heuristic's tile at 2614 GB/s and two rows at 2665, its best. In turns against four rows (``bench.ab``, runs
    883-884, outputs checked first): bf16 x float32 x1.055 / 1.047 / 1.029 / 1.017 / 1.015 at 8200 / 12300 / 16400 /
    32768 / 65536 rows, fp16 x float32 x1.016 at 32768.

    Not taken: 16-bit weights (x0.993 bf16, x0.985 fp16 at 32768 rows), float32 x (x0.988), LayerNorm's without a bias
    (x0.996 at 32768 bf16 x float32), an H200 (not timed). Not RMSNorm's (the tuner at 32768 x 1024 bf16 x float32 put
    its heuristic within 0.3% of its best), nor the inference call (``infer_config``, its own rules). The tile stores
    its statistics as held (``ops._stats_as_held`` takes every tile of 2 x 1024 without the mask), as timed. ``m``:
    the call's rows; ``x_bytes``, ``w_bytes``: x's and the weights' element sizes."""
    rows = n == 1024 and m > 8192
    return rows and not is_rms and has_bias and not has_mask and x_bytes == 2 and w_bytes == 4


def bwd_config(
    m: int, n: int, has_dbias: bool = True, has_mask: bool = False, is_rms: bool = False, tma: bool = False,
    x_bytes: int = 2, w_bytes: int = 2, staged: bool = False, x_fp16: bool = False, slower_dram: bool = False,
) -> LaunchConfig:  # fmt: skip
    """Whole rows up to 8192 columns, ``(tile, elements a thread, warps a SM)``: (2048 below N = 2048, else max(4096,
    N); 32; 8) with dB or at N <= 256, (same tiles; 16; 16) without (and RMSNorm's 16-bit rows of 4097-8192 with dB:
    ``_rms_dbias_as_dw``); the masked backward (max(2048, N); 32; 8). Programs per SM = warps a SM // warps a program.
    RMSNorm's rows of 16384 (``chunked_max_n``) in chunks, one persistent program per SM, the whole row's dW (and dB)
    partials in registers (chunks of 2048 at 16 warps for dW alone, 4096 at 32 warps with dB as well: the second
    accumulator needs the registers of more threads). Longer rows, and the others above 8192 columns, split over several
    programs (``split_rows_config``). Calls of 2049-4096 rows (no mask): ``_few_waves_bwd`` (rows of 2049-4096 columns
    two a tile at 16 elements a thread, one 16-warp program a SM; LayerNorm's of 4097-5120 split in parts of 1024, of
    5121-6144 a head and a tail tile; LayerNorm's of 6145-8192 with dB by the TMA, ``_few_waves_tma_bwd``); with the
    mask, ``_few_waves_masked_bwd`` (rows of 4097-5632, 6144 and 7168 columns split in parts of 1024). RMSNorm's rows of
    4097-5120 and 8193-12288 columns with 16-bit x (``x_bytes``, the size of an element of x; ``w_bytes``, of the
    weights): ``_rms_head_tail_bwd`` (at 8193-12288 by the TMA where ``tma``).

    Measured on an H200 (bf16 x, fp32 weights, M = 32768; GPU runs 40-43, every candidate of tiles 1024-8192, 4-32
    elements a thread and 1-8 programs a SM timed in one process, ``benchmarks/results/logs/run4[013]_*``): the
    whole-row rules are the fastest candidate, or within 1%, for LayerNorm at N = 256, 1024, 2048, 4096, 8192, RMSNorm
    at 256, 1024, 4096, 8192. The masked LayerNorm's rule is round 7's (GPU run 50, 8-32 elements a thread and 8 or 16
    warps a SM timed with the mask bits tested in place): the fastest candidate at 1024-8192 columns, or within 1%
    (32768 x 2048 3421 GB/s, the plain backward 3425; x 8192 3466 against 3446); round 20 changed its rows of 512-1024
    (``_masked_tile``), and rounds 19-20 gave it the TMA at 2048-8192 (``_tma_bwd``). Small calls (5-20 us, timings that
    swing by 30%): at 4096 x 768 the rules are within 0.95-1.0 of the fastest candidate; at 4096 x 1024 (fp16) and 4096
    x 128 the rule's config was not among the 12 fastest printed (so at most 0.86 and 0.96 of the fastest). Split rows:
    ``split_rows_config``. ``tma``: the call's rows may be loaded by the TMA (a GPU of compute capability 9.0 or newer,
    rows 16-byte aligned: ``ops._tma_capable``, ``ops._tma_rows``): ``_tma_bwd``'s shapes then are, in calls of at least
    ``TMA_MIN_ELEMENTS`` (LayerNorm's ``TMA_MIN_ELEMENTS_LAYER_NORM``). ``staged``: the Gluon kernel that stages rows
    in shared memory can run on the call's device (``ops._staged_capable``), and ``_staged_bwd``'s shapes take it (the
    call's rows are asked after, of a config that takes it: ``ops._staged_rows``), but for ``_pointer_rms_bwd``'s
    (``x_fp16``: x is float16), which take neither it nor the TMA; there too ``_split_staged_bwd``'s long rows
    (RMSNorm's of 16384-65536 columns, LayerNorm's of 16384-32768 and without dB 65536, from 4096 rows, masked or
    not) take its split form, ahead of the chunks and split rows above. ``slower_dram``: the GPU's DRAM is slower than
    the H200's the rules were fitted on (``slower_dram``, an H100's): ``_staged_bwd``'s ``STAGED_RMS_SLOWER_DRAM_N``,
    and 16-bit x's rows of 2048, and LayerNorm's of 4096, off the TMA (``_slower_dram_bwd``); RMSNorm's rows of 4096
    with dB two rows a tile of 16 warps, one program a SM (``_slower_dram_rms_dbias_bwd``).
    """
    if "bwd" in _FORCED:
        return _FORCED["bwd"]
    pointer_only = _pointer_rms_bwd(n, has_dbias, has_mask, is_rms, x_fp16, w_bytes)
    if staged and not pointer_only and _staged_bwd(m, n, has_dbias, has_mask, is_rms, x_bytes, w_bytes, slower_dram):
        return LaunchConfig(1, n, 1, staged_warps(n, is_rms, has_dbias), 1, staged=True)
    if staged and _split_staged_bwd(m, n, has_dbias, has_mask, is_rms, x_bytes):
        slice_n = split_staged_slice(n, has_dbias)
        return LaunchConfig(1, slice_n, 1, SPLIT_STAGED_SLICES[slice_n][0], 1, parts=n // slice_n, staged=True)
    if slower_dram and _slower_dram_rms_dbias_bwd(m, n, has_dbias, has_mask, is_rms, x_bytes):
        return _few_waves_bwd(n, is_rms)
    few_waves_tma = _few_waves_tma_bwd(m, n, has_dbias, has_mask, is_rms, x_bytes)
    tma_rows = _tma_call_large_enough(m, n, is_rms) or few_waves_tma
    tma = tma and not pointer_only and tma_rows
    limits = tuple(LIMITS.values())
    launch = _bwd_heuristic(_rows_key(m), n, has_dbias, has_mask, is_rms, tma, x_bytes, w_bytes, limits)
    if launch.tma and slower_dram and x_bytes == 2:
        return _slower_dram_bwd(n, has_dbias, has_mask, is_rms, w_bytes) or launch
    return launch


def _slower_dram_rms_dbias_bwd(m: int, n: int, has_dbias: bool, has_mask: bool, is_rms: bool, x_bytes: int) -> bool:
    """RMSNorm's backward with dB (a bias) of at least 2048 rows of 4096 columns of 16-bit x on slower DRAM (an H100)
    takes two rows a tile of 16 warps, one program a SM, the launch of a few waves of rows (2049-4096, on either DRAM:
    ``_few_waves_bwd``), not the pointer kernel's one row of 4 warps, 2 a SM (round 123). The tuner (``bench.tune
    --whole-rows``, GPU run 856) timed it at 2882 GB/s at 32768 x 4096 bf16 against 2859; in turns against the rules
    before it (``bench.ab``, runs 857-858) x1.008 at 32768 bf16, x1.007 at 65536 bf16, x1.014 at 16400 fp16 and at 8200
    bf16 x float32 weights, x1.061 at 2048 bf16, x1.000 at 4096 fp16. RMSNorm's backward without dB took none of the
    tuner's launches by more than 0.3%, nor one row of 8 or 4 warps, 4 programs a SM (run 854: x1.000 / 0.993 at 32768
    bf16)."""
    return is_rms and has_dbias and not has_mask and n == 4096 and x_bytes == 2 and m >= 2048


def _slower_dram_bwd(n: int, has_dbias: bool, has_mask: bool, is_rms: bool, w_bytes: int) -> LaunchConfig | None:
    """On slower DRAM (an H100), the pointer kernel's launch for a backward of 16-bit x that the TMA's would run on an
    H200 (``_tma_bwd``), where the H100 timed it faster; None elsewhere. ``bwd_config`` asks where its rules launch
    the TMA, whatever the rows. Rows of 2048 columns (round 58's TMA launch: one row of 4 warps a program, 4 programs
    a SM): RMSNorm's (with dB or without) and LayerNorm's without dB two rows of 8 warps, 4 programs a SM (16 elements a
    thread), LayerNorm's with dB one row of 4 warps, 8 a SM; the masked backward's (with dB or without) of 16-bit
    weights (``w_bytes`` 2) two rows of 4 warps, 2 a SM. LayerNorm's rows of 4096 (no mask) one row of 8 warps, 4 a
    SM, with 16-bit weights, and with float32 weights without dB.

    Round 120 (GPU runs 846-847, H100; both DRAMs' launches against the reference on an H200, run 848): the tuner
    (``bench.tune``, 32768 x 2048 bf16) timed the TMA's launch at 2671 / 2738 / 2741 / 2750 GB/s (RMSNorm with dB /
    without, LayerNorm with dB / without) and these at 2780 / 2815 / 2790 / 2810. In turns against the TMA's
    (``bench.ab``, GB/s, run 847): RMSNorm with dB x1.035 / x1.033 / x1.031 at 32768 rows bf16 / fp16 / bf16 x float32,
    x1.029 at 65536 bf16, x1.040 at 16400 (32768 x 2048 bf16 143.3 us, cuDNN's 143.0, 0.954 of it before); without dB
    x1.025-1.029 (65536 and 16400 too). LayerNorm's (run 850): x1.026 / 1.019 with dB and x1.025 / 1.024 without at
    32768 bf16 / fp16; at 16400 bf16 x float32 x0.995 with dB, x1.028 without.

    Round 121 (GPU runs 850-851, H100): the tuner at 32768 x 2048 bf16 timed the masked backward's TMA launch at 2680
    GB/s and two rows of 4 warps, 2 a SM, at 2761; LayerNorm's with dB at 32768 x 4096 bf16 2808 (the TMA's one row of
    8 warps, 2 a SM) against 2913 (the pointer kernel's, 4 a SM). In turns against the TMA's (run 851): the masked
    backward x1.019 / 1.018 with dB and x1.013 / 1.014 without at 32768 bf16 / fp16; LayerNorm's at 4096 x1.025 /
    1.028 with dB and x1.017 / 1.018 without at 32768 bf16 / fp16. Its losses, x0.993 / 1.001 (the masked backward at
    16400 rows) and x0.892 (LayerNorm's with dB at 8200), were at bf16 x float32 weights; round 121 read them as fewer
    rows' and took these launches from 32768 rows only.

    Round 122 (GPU runs 852-853, H100, in turns against the TMA's): float32 weights, not fewer rows, lose. At 32768 bf16
    x float32 the masked backward ran x0.980 / 0.994 (with dB / without), LayerNorm's at 4096 x0.865 with dB and x1.020
    without. With 16-bit weights every TMA-sized call gains: the masked backward x1.019 / 1.012 at 24576 bf16 and
    x1.030 / 1.020 at 16400 bf16 and fp16; LayerNorm's at 4096 x1.020 / 1.012 at 24576 bf16, x1.020 / 1.011 at 16400
    bf16, x1.028 with dB at 12300 fp16 and x1.035 at 8200 bf16 (without dB below 16385 rows is not a TMA call).
    LayerNorm's without dB with float32 weights was timed at 32768 rows only.

    Round 135 (GPU runs 931-936, H100, 32768 x 4096 bf16 x float32 weights, Nsight Compute): why float32 weights with
    dB keep the TMA. The pointer kernel's one row of 8 warps holds 147 registers a thread with dB (128 without), so one
    program fits a SM, not two: 315 us at 2.53 TB/s of DRAM against 264 us at 3.00 without dB; the TMA's launch (123
    registers, two a SM) 270 us, 96% of the copy. Capped at 128 registers (Triton's ``maxnreg``) the pointer kernel
    spills and ran x0.905 of the TMA's; every other launch forced in turns x0.50-1.002. At 8192 columns the TMA storing
    dx too ran x1.005-1.008 (x0.96-0.99 at 6144 / 7168), not taken.

    The programs a SM above are those asked; fewer fit, and each launch was timed at what fits (``ops._backward_grid``).
    Compiled for sm_90 on the CPU (round 139; round 135's 128 registers without dB at 4096 read again): LayerNorm's one
    row of 4 warps with dB at 2048 holds 128 registers with 16-bit weights (4 a SM run) and 146-148 with float32 ones
    (3), the two rows of 8 warps at 2048 121-128 (2), the one row of 8 warps at 4096 128 (2); the masked backward's
    two rows of 4 warps 222-246 (the 2 asked)."""
    if n == 2048 and not has_mask:
        if has_dbias and not is_rms:
            return LaunchConfig(1, 2048, 1, 4, 8)
        return LaunchConfig(2, 2048, 1, 8, 4)
    if n == 2048 and has_mask and w_bytes == 2:
        return LaunchConfig(2, 2048, 1, 4, 2)
    if n == 4096 and not has_mask and not is_rms and (w_bytes == 2 or not has_dbias):
        return LaunchConfig(1, 4096, 1, 8, 4)
    return None


def infer_config(
    m: int, n: int, is_rms: bool = False, w_bytes: int = 2, x_fp16: bool = False, slower_dram: bool = False,
    has_bias: bool = False, zero_centered: bool = False, staged: bool = False, x_bytes: int = 2,
) -> LaunchConfig:  # fmt: skip
    """The inference forward's launch (y alone, no statistics or mask stored: ``ops.infer_unchecked``): for many rows
    (more than 8192) of 256 columns, four rows (RMSNorm eight) a program of 2 warps, one program a row block; RMSNorm's
    rows of 257-1024 columns in tiles of 1024 elements at one warp (Inductor's tile for these rows); LayerNorm's at most
    4096 rows of 65-128 columns in tiles of 16 rows at 2 warps (the training forward's: 8 at one); elsewhere the
    training forward's (``fwd_config``, the clamped ReLU's as the plain LayerNorm's: it stores no mask here).

    Measured on an H200 (GPU run 216; bf16 x, fp32 weights; us a call of tiles forced in turns, median of 3 rounds,
    against the training forward's tiles and torch.compile, which stores no statistics either): at 32768 x 256
    LayerNorm 14.02 -> 13.44 (torch.compile 14.02), the clamped ReLU 14.62 -> 13.63 (15.10), RMSNorm 13.41 -> 12.80
    (12.90); RMSNorm at 512 22.02 -> 20.99 (20.93), 1024 37.89 -> 36.83 (36.86), 16384 x 512 13.73 -> 13.09 (13.02),
    8200 x 1024 13.92 -> 13.50 (13.60). LayerNorm's rows of 512 and 1024 kept the training forward's tiles (every
    other tile within 1.6% or slower; level with torch.compile at 32768 rows), as did calls of 4096 rows (tiles of 1024
    at one warp 0.91-0.97x there). ``w_bytes``, ``x_fp16``, ``slower_dram``, ``has_bias``, ``zero_centered``,
    ``staged``, ``x_bytes``: as ``fwd_config``'s. The inference calls of LayerNorm, RMSNorm and LayerNorm + clamped ReLU
    take the split staged forward where LayerNorm's training forward does (``_split_staged_fwd``), the kernel storing y
    alone (round 90). On slower DRAM (an H100) RMSNorm's inference calls without a bias of more than 4096 rows of
    12289-16384 columns take the training forward's head tile of 8192 and tail of 8192 at 32 warps (round 128,
    ``_rms_fwd_head_and_tail_of_8192``), and with a bias its launch at 16 warps (round 132), those of float32 x of
    6144-16384 columns (16-bit x and weights without a bias: 12288-16384; 16-bit x with float32 weights and a bias:
    13824-16384, round 135) its chunks at 32 warps (rounds 133-135, ``_slower_dram_rms_fwd_chunks_at_32_warps``),
    LayerNorm's and LayerNorm + clamped ReLU's of float32 x of 9217-16384 columns its head tile and tail at 16 warps
    (``_ln_fp32_fwd_head_and_tail``), and those of 16-bit x and weights with a bias of 14337-16384 columns chunks of
    4096 at 32 warps (round 133 at 16384, round 134 below, ``_slower_dram_ln_fwd_in_chunks_of_4096``); on an H200
    RMSNorm's of float32 x of 16384 columns without a bias its head and tail at 32 warps (round 129, the same helper;
    with a bias, not timed there, the chunks)."""
    if "fwd" in _FORCED:
        return _FORCED["fwd"]
    if staged and _split_staged_fwd(m, n, is_rms, x_bytes, w_bytes, has_bias):
        return _split_staged_fwd_config(n)
    long_rows = _long_rows(m, n, is_rms, False, has_bias, x_bytes, w_bytes, slower_dram, inference=True)
    if long_rows:
        return long_rows
    limits = tuple(LIMITS.values())
    rules = (w_bytes, x_fp16, slower_dram, has_bias, zero_centered)
    return _infer_heuristic(_rows_key(m), n, is_rms, *rules, limits, x_bytes)


# The launchers ask on every call; a few microseconds of Python each time is worth caching for small calls.
# LIMITS is part of the key, so limits() still takes effect.
@functools.lru_cache(maxsize=1024)
def _infer_heuristic(
    m: int, n: int, is_rms: bool, w_bytes: int, x_fp16: bool, slower_dram: bool, has_bias: bool, zero_centered: bool,
    _limits: tuple, x_bytes: int,
) -> LaunchConfig:  # fmt: skip
    block_n = row_block_n(n)
    if m > 8192 and block_n == 256:
        return LaunchConfig(8 if is_rms else 4, 256, 1, 2)
    if m > 8192 and is_rms and block_n in (512, 1024):
        return LaunchConfig(1024 // block_n, block_n, 1, 1)
    # RMSNorm's rows of at most 9216 columns with a bias keep the launch without one (``_fwd_heuristic``'s round 51
    # rule: the inference call x0.943-0.975 there at 8 warps), but their 513-1024 rows of 8705-9216 take the training
    # forward's launch with its bias: its chunks where it has them (16-bit weights, whole 16-element vectors; round
    # 56, ``rmsbias56.py``, GPU run 463: x1.038-1.075 at 1024 x 8720-9216), else its head + tail at 16 warps. So do
    # RMSNorm's 7169-8192 columns with a bias: the launch without one there (``_few_waves_fwd``'s one tile at 16 warps,
    # round 65) ran x0.94-0.95 of the chunks in the training forward with a bias (GPU run 520). LayerNorm's ask with
    # their bias: below 9217 columns only round 83's launches of a few waves read it (``_few_waves_fwd``), and the
    # inference call ran them x1.003-1.048 (GPU runs 647-651)
    widest = LIMITS["fwd_max_block_n"]
    bias_rule = has_bias and (not is_rms or n > widest * 9 // 8 or _rms_one_tile_n(n, widest))
    if is_rms and has_bias and m == 1024 and not slower_dram and widest + widest // 16 < n <= widest * 9 // 8:
        trained = _fwd_heuristic(
            m, n, is_rms, False, w_bytes, x_fp16, slower_dram, True, zero_centered, _limits, x_bytes
        )
        return trained if trained.num_chunks > 1 else replace(trained, num_warps=16)
    if not is_rms and block_n == 128 and _few_short_rows(m, block_n):
        # LayerNorm's inference call of at most 4096 rows of 65-128 columns keeps tiles of 2048 elements (16 rows at 2
        # warps), not the training forward's 1024 (round 65): in turns against them (``bench.ab``, GPU run 526) 4096 x
        # 128 x0.969 with float32 weights, x0.994-1.006 at 2048-4096 rows of 16-bit weights (run 521 at 96 columns:
        # x0.989-1.018)
        return _row_tiles(_rows_per_tile(m, block_n, 2048), block_n)
    return _fwd_heuristic(m, n, is_rms, False, w_bytes, x_fp16, slower_dram, bias_rule, zero_centered, _limits, x_bytes)


def _rows_key(m: int) -> int:
    """M matters to the heuristic only through ``_rows_per_tile``'s power of two (at most 512 rows a tile), so
    M = 3000 and M = 4000 share one cache entry."""
    return min(next_power_of_2(max(m, 1)), 1 << 16)


def _rms_head_and_tail(m: int, tail_n: int, widest: int, w_bytes: int, has_bias: bool, slower_dram: bool) -> bool:
    """Whether RMSNorm's few rows (``m`` as ``_rows_key`` rounds it) of ``widest`` + 1 to 1.5 x ``widest`` columns
    take a head tile of ``widest`` and a tail tile of ``tail_n`` rather than chunks (``_fwd_heuristic``, where the
    measurements are): 513-1024 rows with a tail tile of at most a 32nd of the head or at least an 8th (an H200's tail
    of 512 columns lost; so did a tail of 256 or less with a bias and float32 weights); on slower DRAM (an H100)
    513-2048 rows with any tail."""
    if slower_dram:
        return m in (1024, 2048)
    short_tail = tail_n <= widest // 32 and (not has_bias or w_bytes == 2)
    return m == 1024 and (short_tail or tail_n >= widest // 8)


@functools.lru_cache(maxsize=4096)
def _fwd_heuristic(
    m: int, n: int, is_rms: bool, has_mask: bool, w_bytes: int, x_fp16: bool, slower_dram: bool, has_bias: bool,
    zero_centered: bool, _limits: tuple, x_bytes: int,
) -> LaunchConfig:  # fmt: skip
    widest, one_tile = LIMITS["fwd_max_block_n"], LIMITS["fwd_one_tile_max_n"]
    if 2048 < m <= 4096 and not has_mask:
        persistent = _few_waves_persistent_fwd(n, is_rms, w_bytes)
        if persistent:
            return persistent
    if 2048 < m <= 4096 and has_mask and 1792 < n <= 2048:
        # the clamped ReLU's forward of a few waves of rows of 1793-2048: two rows a step of a persistent grid of 4
        # programs a SM (4096 x 2048 fp16, forced configs in turns, GPU run 200: 16.86 -> 15.90 us; one row a
        # program at 2 warps 16.00; at 1024 columns and at 32768 rows the rule below stayed the fastest). Against
        # the rule below in turns (``bench.ab``, run 201): 4096 x 2048 fp16 x1.081, bf16 x with fp32 weights
        # x1.032, 3000 x 2048 x1.044; rows of 1600 x0.983 (4096) and x1.003 (3000), so not there
        return LaunchConfig(2, 2048, 1, 4, 4)
    if 2048 < m <= 4096 and has_mask and w_bytes == 2 and one_tile < n <= 5888:
        # the clamped ReLU's forward of a few waves of rows of 4353-5888 with 16-bit weights: the plain forward's
        # head and tail tiles (_few_waves_fwd: 4096 + 512 at 2 warps, 4096 + 1024 at 4), but the tail of 2048 at 4
        # warps (the plain forward's at 8). Forced in turns against 5-6 chunks of 1024 (outputs checked against the
        # chunks'): 4096 x 4608 / 5120 fp16 x1.096 / x1.052 on an H100 (GPU run 396; on an H200 x1.187 / x0.989 in
        # turns, run 397); on an H200 (runs 397-398) bf16 4096 x 4400 / 4608 / 5120 x1.291 / x1.307 / x1.054, 3000 x
        # 4608 / 5120 x1.236 / x1.036, 4096 x 5376-5888 x1.078-1.108 (fp16 and bf16; the tail at 8 warps x1.03-1.08),
        # but 6144 x0.997, and float32 weights x0.949-1.008 (4608-6144): those keep their chunks
        head_tail = _few_waves_fwd(n, is_rms, w_bytes, x_fp16, has_bias, zero_centered, widest, one_tile)
        if head_tail.tail_n:
            return replace(head_tail, num_warps=min(4, head_tail.num_warps))
    if m == 2048 and not has_mask and one_tile + one_tile // 16 < n < widest and (not is_rms or n > one_tile * 3 // 2):
        # the plain forwards of 1025-2048 rows of 4353-8191 columns (RMSNorm's of 6145-8191) in one program a row
        # without chunks, where chunks of 2048 at 4 warps (16 a thread) ran 1.05-1.29x slower (forced in turns, GPU runs
        # 403 on an H100 and 404 on an H200, 1536-2048 rows): LayerNorm's as a call of a few waves (_few_waves_fwd: a
        # head tile of 4096 and a tail tile up to 6144 columns, so not float32 weights at 4353-4608; one tile of 8192 at
        # 8 warps above, or with a bias and 16-bit weights two tiles of 4096, x1.021 / x1.030 at 2048 x 6656 / 7680 fp16
        # at 8 warps, GPU run 647), RMSNorm's one tile of 8192 at 16 warps. In turns against the chunks (``bench.ab``,
        # H200, runs 404-405, the training forward and the inference call): LayerNorm x1.04-1.34 at 1100-2048 rows of
        # 4400-7680 (bf16, fp16, bf16 x float32 weights), x1.63 at 2048 x 8191; RMSNorm x1.04-1.23 at 1100-2048 rows of
        # 6200-8000, but x0.979-1.000 at 1100 x 7168 and 2048 x 8191. Below 6145 columns RMSNorm's head + tail tiles ran
        # x1.04-1.15 at 2048 rows but x0.945-0.990 at 1100-1536 rows, and one tile of 8192 x0.97-0.99 there (run 407),
        # so RMSNorm keeps its chunks there
        whole_row = (
            LaunchConfig(1, widest, 1, 16)
            if is_rms
            else _few_waves_fwd(n, is_rms, w_bytes, x_fp16, has_bias, zero_centered, widest, one_tile)
        )
        if whole_row.num_chunks == 1:
            return whole_row
    if has_mask and m in (256, 1024) and widest < n <= widest + widest // 8 and n % 16 == 0:
        # the clamped ReLU's forward of 129-256 and 513-1024 rows of 8193-9216 columns, 16-element aligned: the plain
        # forward's chunks of 4 elements a thread (below: 2048 at 16 warps, 1024 at 8), whose mask bytes span two
        # lanes; on a GPU the two lanes swap nibbles by a shuffle (``ops._pair_nibbles``; 16-element aligned rows let
        # them). Against 8 chunks of 8 a thread in turns (``bench.ab``, GPU run 430, H100): 1024 x 8704 / 9216
        # x1.097 / x1.080, with float32 weights x1.107, 600 x 9216 x1.132, 256 x 9216 x1.029; but 2048 x 8704 / 9216
        # (chunks of 2048 at 16) x0.988 / x0.987 and 1536 x 9216 fp16 x0.924, so not 1025-2048 rows
        chunked = _chunked(n, widest, 1024 if m == 1024 else 2048, 4, one_tile)
    elif has_mask and slower_dram and m > 2048 and one_tile < n <= widest and n % 16 == 0:
        # the clamped ReLU's forward of many rows of 4097-8192 columns (16-element aligned) on a GPU of slower DRAM (an
        # H100): up to 7168 columns the plain forward's chunks of 1024 at 8 warps, 4 elements a thread, whose mask
        # bytes are made by nibbles (``ops._pair_nibbles``); above, chunks of 2048 at 8 warps (8 a thread), not 1024 at
        # 4. Forced in turns against 8 chunks of 8 a thread (GPU runs 432-434, H100): 1024 at 8 x1.006-1.021 at
        # 4096-32768 rows of 4608-7168 (bf16 x float32 weights, bf16, fp16), x0.990-0.997 at 7680-8192; 2048 at 16 (4
        # a thread) x1.008-1.079 at 8192 columns, x0.991 at 7680, x0.81-0.95 at 4608-7168. In turns (``bench.ab``, run
        # 435): 1024 at 8 x1.008-1.033 at 32768 rows of 4608-7168 (bf16 x float32 weights), x1.016 at 4096 x 6144 and
        # 16384 x 5632 fp16. Run 438 (forced, 8192-32768 rows of 7424-8192): 2048 at 8 x1.044-1.083 against 1024 at 4,
        # x1.045 against 2048 at 16 (32768 x 8192); 2048 at 4 x0.99-1.04, 4096 at 16 x0.81-0.90; in turns (run 439)
        # x1.045-1.107 at 5000-32768 rows of 7424-8192. Not timed on an H200, nor at 2049-4096 rows of 7169-8192
        chunk, per_thread = (1024, 4) if n <= 7168 else (2048, 8)
        chunked = _chunked(n, widest, chunk, per_thread, one_tile)
    elif has_mask and (m > 2048 or (row_block_n(n) <= 16384 and (m > 512 or n > 8192))):
        # the clamped ReLU's forward: rows in 8 chunks of 8 elements a thread (each thread makes its own mask bytes),
        # few rows (at most 2048) too up to 16384 columns, where chunks of 2048-4096 at 4 warps (16-32 a thread) ran
        # 1.03-1.44x slower (forced in turns on an H200, GPU run 398: 512-2048 rows of 6144-16384 columns; bench.ab
        # in turns, run 399: 1024-2048 rows x1.049-1.406, 128-256 rows of 12288-16384 x1.029-1.040), but not at most
        # 512 rows of at most 8192 (128 x 8192 fp16 x0.916; M as _rows_key rounds it up to a power of two)
        chunked = _chunked(n, widest, row_block_n(n) // 8, 8, one_tile)
    elif 2048 < m <= 4096 and row_block_n(n) <= 16384 and row_block_n(n) > one_tile:
        return _second_pass_ahead(
            _few_waves_fwd(n, is_rms, w_bytes, x_fp16, has_bias, zero_centered, widest, one_tile), n, is_rms, has_mask
        )
    elif m > 2048 and row_block_n(n) > 16384:
        # one program of 32 warps a SM, so that the rows pass two reads again stay in L2: chunks of 4096 (4 elements
        # a thread), above 32768 columns 8192 (8 a thread). At 65536 columns with float32 weights and bias what sets
        # the pace is pass two's reads of each chunk's weights and bias from L2, again for every row (768 KB a row
        # with x's; 76% of copy, without the bias 87%; GPU run 529); a split-row forward that holds them, two rows a
        # program and pass two's chunks in other orders ran 0.36-1.05x (round 67, runs 528-535)
        chunk, per_thread = (8192, 8) if row_block_n(n) > 32768 else (4096, 4)
        chunked = _chunked(n, widest, chunk, per_thread, one_tile)
    elif m > 2048:  # 4 elements a thread; rows enough to fill the GPU many times over
        # LayerNorm's chunks of 1024 at 8 warps up to 8192 columns (GPU runs 52-53, H200), but on slower DRAM (an H100)
        # only up to 7168: at 7680-8192 chunks of 2048 at 16 warps ran x1.064-1.145 forced in turns (GPU run 434,
        # 8192-32768 rows of 7680-8192, bf16 x float32 weights, bf16, fp16), x0.963-0.979 at 7168. In turns
        # (``bench.ab``, run 435): x1.045-1.099 at 5000-32768 rows of 7424-8192 (the inference call x1.047-1.067)
        longest = 7168 if slower_dram else 8192
        chunked = _chunked(n, widest, 1024 if n <= longest and not is_rms else 2048, 4, one_tile)
    elif (
        not is_rms
        and not has_mask
        and ((m == 512 and widest < n <= widest + widest // 2) or (m == 1024 and n <= widest))
    ):
        # LayerNorm's 257-512 rows of 8193-12288 columns and 513-1024 rows of 4097-8192 (M as _rows_key rounds it):
        # chunks of 8 elements a thread (2048 at 8 warps, 1024 at 4). Against the rules of few rows in turns
        # (``bench.ab``, H200, GPU run 402, bf16): 512 x 10240 / 12288 x1.187 / x1.163, 1024 x 4608 / 6144 / 8192
        # x1.142 / x1.109 / x1.079; but 512 x 6144 / 8192 x0.895 / x0.840, 256 x 8192 / 12288 fp16 x0.837 / x0.972
        chunked = _chunked(n, widest, 2048 if n > 8192 else 1024, 8, one_tile)
    elif not is_rms and not has_mask and widest < n <= widest + widest // 8:
        # LayerNorm's few rows (but 257-512, above) of 8193-9216 columns (a tail of at most an eighth of the head, 2-4
        # elements a thread in the head + tail launch below): chunks of 4 elements a thread, 1024 at 8 warps (513-1024
        # rows) or 2048 at 16 (1-256 and 1025-2048 rows). 1-256 rows forced in turns (GPU run 422, H100, 64-256 rows):
        # x1.051-1.083 (bf16, fp16), x1.125 with float32 weights (256 x 9216); chunks of 2048 at 8 warps x1.000-1.108,
        # of 1024 x0.84-0.97; in turns (``bench.ab``, runs 423 and 426, H100) x1.038-1.112 at 128-256 rows of 8448-9216
        # (the inference call x1.065-1.097), level at 9728. 513-2048 rows forced in turns (GPU run 411, H100): 1024 x
        # 9216 x1.18-1.21 (bf16, fp16, bf16 x float32 weights), 600 x 9216 x1.34, 2048 x 9216 x1.24 (chunks of 2048 at
        # 16), 1536 x 9216 fp16 x1.23; at 9728-12288 and at 512 rows the launches before stayed the fastest. In turns
        # (``bench.ab``, training forward and inference call): on an H100 (runs 412-413 and 416) x1.090-1.332 at
        # 600-2048 rows of 8448-9216 (bf16, fp16, bf16 x float32 weights), level at 8200 (a last chunk of 8 columns:
        # x1.002-1.007); on an H200 (run 420) x1.277-1.415 at 600-2048 rows of 8704 / 9216
        chunked = _chunked(n, widest, 1024 if m == 1024 else 2048, 4, one_tile)
    elif (
        is_rms
        and not has_mask
        and widest < n <= widest + widest // 2
        and _rms_head_and_tail(m, row_block_n(n - widest), widest, w_bytes, has_bias, slower_dram)
    ):
        # RMSNorm's 513-1024 rows of 8193-8448 and 8705-12288 columns (tails of 256 or less, or of at least 1024; with a
        # bias and float32 weights not 8193-8448; on a GPU of slower DRAM, an H100, 8193-12288, and 1025-2048 rows too):
        # a head tile of 8192 and a tail tile at 16 warps (8 at 9217-10240 columns, a tail of 2048, but on slower DRAM;
        # at 8705-9216, rows of whole 16-element vectors without a bias, chunks of 2048 at 8 warps instead, below), not
        # chunks of 4096 (below, fitted on an H200). Round 54 on an H200 (``bench.ab`` against round 53's rule, GPU run
        # 454): 1024 x 8320 / 8448 x1.084 / x1.078 (the inference call x1.104 / x1.090), 600 x 8448 fp16 x1.071, 768 x
        # 8448 x1.036, float32 weights x1.094; but 8576 and 8704 (a tail of 512) x1.025 / x1.048 slower as head + tail
        # (run 453), so they keep their chunks. The tail of 2048 at 8 warps: x1.051-1.058 at 1024 x 9472-10240
        # (inference x1.065-1.080), 600 x 9728 / 10240 fp16 x1.128 / x1.133, 768 x 10240 x1.069, float32 weights
        # x1.064-1.065; forced in turns (runs 453-454) 8 warps were slower at tails of 256, 1024 and 4096 (x0.901,
        # x0.876-0.902, x0.963). With a bias (``rmsbias54.py``): 1024 x 8320 / 8448 x1.090 / x1.058, but with float32
        # weights x0.858 at 8448 (so not there), 600 x 8448 fp16 x0.988.
        # Round 53 on an H200 (``bench.ab`` against the chunks, bf16): the persistent grid
        # below x1.035-1.101 at 1024 x 9216-12288 (GPU run 450; the inference call x1.010-1.088 at 9728-12288, level at
        # 9216), with float32 weights x1.027-1.099, 600 x 12288 fp16 x1.120, 600 x 9728 fp16 x0.980; run 451:
        # x1.032-1.104 at 1024 x 9216-12288 (inference x1.002-1.088), 768 x 10240 x1.037, 600 x 12288 fp16 x1.128, 600 x
        # 9728 fp16 x0.970, float32 weights 9216 / 12288 x0.988 / x1.106; but 8704 x0.969 (1024 rows) and x0.971 (600
        # fp16), so not 8193-8704 (8448 x1.080 left). At 2048 rows x1.007 / x0.976 (9216 / 12288, run 450), so 1025-2048
        # rows keep their chunks there. Before (rounds 48-50), forced in turns (GPU run 411, H100, 1024 rows):
        # x1.026-1.088 (9216-12288). In turns (``bench.ab``, training forward and inference call): on two H100s (runs
        # 412-413, 416) x1.024-1.111 at 600-2048 rows of 8200-12288 (bf16, fp16), with float32 weights x1.010-1.044
        # (1024 x 9216 / 12288, 1536 x 10240), 2048 x 11000 fp16 level (x0.997); on an H200 (run 420) x0.954-0.984 at 6
        # of 9 shapes, so not there. Taken (round 49), against chunks of 4096 on an H100 (``bench.ab``, runs 423 and
        # 426): x1.027-1.077 at 1024-2048 rows of 8704-12288 (the inference call x1.018-1.066), x1.116-1.119 at 600 x
        # 9216 fp16, x1.014 at 1536 x 10240 with float32 weights. Its 513-1024 rows on a persistent grid of 2 programs a
        # SM, each loading its next row before it works on the current one (round 50, forced in turns, GPU run 433,
        # H100): x1.015-1.135 (the inference call x0.997-1.128) at 600-1024 rows of 8704-12288 (bf16, fp16, bf16 x
        # float32 weights); at 1536-2048 rows x0.966-1.000, at 256-512 rows (chunks of 4096) x0.963-0.992
        # With a bias (``has_bias``), 8 warps a program on the persistent grid, not 16 (round 51): RMSNorm's 16-warp
        # programs hold 62 registers a thread without a bias at 12288 columns (sm_90, read on the CPU), so two fit a SM,
        # but 72 with one, and the grid's second half waited for its first (at 8 warps 124: two fit). Forced in turns
        # (GPU run 442, H100, bf16): 8 warps x1.03-1.19 at 768-1024 rows of 9216-12288, 16 warps one a SM x0.88-1.05.
        # Against the rule before in turns (run 443, the training forward and the inference call): x1.039-1.265 at
        # 600-1024 rows of 9216-12288 (bf16, fp16, bf16 x float32 weights; 1024 x 12288 with float32 weights
        # x0.989-0.996), the inference call x1.012-1.174 above 9216 columns but x0.943-0.975 at 9216 (there it keeps
        # 16 warps, ``_infer_heuristic``). On an H200 since round 53 too (``rmsbias53.py``, GPU run 451, against the
        # chunks of 4096 in turns, the training forward / the inference call): x1.077-1.091 / x1.029-1.103 at 1024 x
        # 9216-12288, x1.182 / x1.157 at 768 x 12288, with float32 weights x1.039-1.047 / x1.005-1.047, 1024 x 11264
        # fp16 x1.088 / x1.082; 600 x 9216 fp16 x0.979 / x0.949
        tail_n = row_block_n(n - widest)
        if tail_n == widest // 8 and m == 1024 and not slower_dram and n % 16 == 0 and (not has_bias or w_bytes == 2):
            # its 8705-9216 columns (rows of whole 16-element vectors; with a bias, 16-bit weights) in chunks of 2048
            # at 8 warps, the second pass a chunk ahead. With a bias (round 56, ``rmsbias56.py`` forced in turns, GPU
            # run 463, the training forward / the inference call): 1024 x 8720-9216 bf16 x1.027-1.042 /
            # x1.048-1.075, fp16 x1.030 / x1.038; with float32 weights x0.900-0.908 / x0.926-0.936 (so not there).
            # Without (round 54, ``bench.ab`` against the head + tail, GPU runs 456-457): 1024 x
            # 8720-9216 x1.17-1.21 (the inference call x1.21-1.25), 600 x 8720-9216 fp16 x1.14-1.17, 768 x 9216
            # x1.07 / x1.14, float32 weights x1.07 / x1.06; but rows of 8705, 8711 and 9210 (not whole vectors)
            # x0.81-0.89: they keep the head + tail. Forced in turns beside cuDNN (``peers54.py``, runs 453-454) the
            # same launch was only x1.025 at 1024 x 9216 (the timings of the head + tail launch differ between the
            # tools; benchmarks/README.md, round 54), and on another machine, in rotating turns, x1.007 / x1.054
            # (round 55, run 458): the head + tail's time moves between machines, the chunks' does not
            return LaunchConfig(1, 2048, cdiv(n, 2048), 8, ahead=True)
        warps = 8 if m == 1024 and (has_bias or (tail_n == widest // 4 and not slower_dram)) else 16
        return LaunchConfig(1, widest, 1, warps, 2 if m == 1024 else 0, tail_n=tail_n)
    elif not is_rms and not has_mask and widest < n <= widest + widest // 2:
        # few rows of 8193-12288 columns: a head tile of 8192 and a tail tile, 8 warps (1024 x 12288 bf16: 2148 ->
        # 2419 GB/s, one tile of 16384 at 16 warps 2234; cuDNN 2868; GPU run 110). On a GPU of slower DRAM (an H100),
        # 513-1024 rows of 9217-12288 with 16-bit weights on a persistent grid of 2 programs a SM, each loading its
        # next row before it works on the current one (round 51): forced in turns (GPU run 442, bf16) x1.030-1.100 at
        # 768-1024 rows of 10240-12288, x0.869 at 9216 (that keeps its chunks, above); in turns (``bench.ab``, run
        # 443) x1.028-1.111 at 600-1024 rows of 9728-12288 (bf16, fp16; the inference call x1.034-1.150), but
        # x0.971-1.018 at 1536-2048 rows and with float32 weights x0.898 at 1024 x 12288 (x1.103 at 10240). On an
        # H200 too since round 53 (``bench.ab`` against the launch without it, GPU run 450, bf16): x1.071-1.119 at
        # 1024 x 9728-12288 (the inference call x1.072-1.110), 600 x 9728 / 12288 fp16 x1.030 / x1.068; run 451:
        # x1.057-1.118 (inference x1.057-1.107), 768 x 10240 x1.055, 600 x 9728 / 12288 fp16 x1.042 / x1.066
        persistent = 2 if m == 1024 and w_bytes == 2 else 0
        return LaunchConfig(1, widest, 1, 8, persistent, tail_n=row_block_n(n - widest))
    elif not is_rms and not has_mask and m == 2048 and 12288 < n <= 14336:
        # LayerNorm's 1025-2048 rows of 12289-14336 columns: chunks of 2048 at 8 warps (8 a thread), not 4096 (16).
        # Forced at 2048 x 13312 bf16 (GPU run 407, H200): x1.068. In turns (``bench.ab``, run 408, H200): 2048 x
        # 12800 / 13312 / 14336 x1.040-1.076 (training forward and inference call), 1100 x 13312 / 14000 fp16
        # x1.005-1.018
        chunked = _chunked(n, widest, 2048, 8, one_tile)
    elif not has_mask and (12288 < n <= 16384 or (is_rms and 8192 <= n <= 12288)):
        # few rows of 12289-16384 columns (RMSNorm's of 8192-16384): chunks of 4096 at 8 warps, 16 elements a thread
        # (RMSNorm's at 16, 8 a thread). Forced in turns against the rule below (4 warps, 32 a thread; GPU run 399,
        # H200, bf16): LayerNorm 2048 / 1024 x 16384 x1.093 / x1.097; RMSNorm 2048 x 8192 / 12288 x1.104 / x1.132,
        # 1024 x 16384 x1.156. RMSNorm's 513-2048 rows of 8193-12288 as a head tile of 8192 and a tail at 16 warps
        # (round 48, ``bench.ab``): x1.02-1.11 on an H100 (runs 412-416), but on an H200 (run 420) x0.954-0.984 at 6
        # of 9 shapes (1024 x 8704 / 10240 / 12288, 2048 x 12288, 1536 x 10240 with float32 weights) and x1.007-1.067
        # at the other 3: taken on slower DRAM alone (above)
        chunked = _chunked(n, widest, 4096, 8 if is_rms else 16, one_tile)
    else:  # few rows: small programs (at most 4 warps), so that all of them run in the first wave
        chunked = _chunked(n, widest, 2048 if n <= 8192 else 4096, 16, one_tile)
        if chunked:
            chunked = replace(chunked, num_warps=min(4, chunked.num_warps))
    if chunked:
        return _second_pass_ahead(chunked, n, is_rms, has_mask)
    block_n = row_block_n(n)
    if m > 4096 and n == 256:
        # more than 4096 rows of 256: eight a tile of 2 warps (4 of a row's columns a thread in any layout, so the
        # fused forward's float32 weights load in the tile's, ops._weights_in_tile); more than 8192 rows on a
        # persistent grid of 8 programs a SM, each issuing its next row block's loads before it works on the current
        # one. GPU run 183 (32768 x 256, bf16 x, fp32 weights, us in turns against tiles of 16 rows at 4 warps, one a
        # program): LayerNorm 14.98 -> 14.27, RMSNorm 14.46 -> 13.89 (16 programs a SM 14.75 / 14.14); at 512 and
        # 1024 columns persistent grids ran 0.85-0.99x the rule. Against it in turns (``bench.ab``, run 184): 32768
        # rows x1.035 / x1.044, 16384 x1.151 / x1.000, 8200 x1.000 / x0.982; rows of 200 LayerNorm x0.92-0.96
        # (RMSNorm x1.04-1.11), so only 256. The fused forward and 4097-8192 rows since round 39 (GPU runs 331-334).
        fp16_rows = x_fp16 and w_bytes == 2
        bf16_fp32_rows = m == 32768 and not x_fp16 and x_bytes == 2 and w_bytes == 4
        if m > 16384 and is_rms and slower_dram and (fp16_rows or bf16_fp32_rows) and not has_bias and not has_mask:
            # RMSNorm's forward of more than 16384 rows of 256 of fp16 x and weights, no bias, on slower DRAM (an H100):
            # sixteen rows a tile of 4 warps, 16 programs a SM asked (round 123; the tuner's best at 32768 x 256 bf16 x
            # float32, GPU runs 856 and 862), of which 5 fit with fp16 x and weights (86 registers a thread) and 6 with
            # bf16 x and float32 weights (80; both read on the CPU for sm_90, round 139). In turns against the rule
            # below (``bench.ab``, H100, runs 857-859): fp16 x1.162 / 1.117 / 1.091 / 1.118 / 1.078 / 1.071 at 16400 /
            # 24576 / 32768 / 40000 / 65536 / 131072 rows; but fp16 x float32 weights x0.989, with a bias x0.982-1.033
            # and LayerNorm's x0.945-1.106 (x0.922 / 1.021 / 0.995 at 16400 / 32768 / 65536 fp16, run 863), so none of
            # those. bf16 x with float32 weights (genai's dtypes) at 16385-32768 rows (round 124, ``m`` as ``_rows_key``
            # rounds it; runs 857-863): x1.000 / 1.052 / 1.019-1.020 at 16400 / 24576 / 32768, but x0.995-0.997 at
            # 40000, x0.997-0.998 at 65536, x1.002 at 131072 (with a bias x0.986-1.030); bf16 weights x0.970 at 16400
            # (x1.051 / 1.016 at 24576 / 32768), so not those (16897-32768 rows of bf16 x and weights: 12 a SM,
            # ``_slower_dram_fwd_256_twelve_a_sm``, round 125). On an H200 bf16 x's 16897-32768 rows take sixteen rows
            # of 4 warps at 8 a SM asked, 6 fitting (round 129, ``_faster_dram_rms_fwd_256_sixteen_rows``)
            return LaunchConfig(16, 256, 1, 4, 16)
        return LaunchConfig(8, 256, 1, 2, 8 if m > 8192 else 0)
    if has_mask and m > 4096 and 512 <= block_n <= 4096:
        # the fused forward of many rows: two rows a tile, one of 4096 (the tuner, GPU run 170; against tiles of
        # 4096-8192 in turns, run 171, bf16 x, fp32 weights: 32768 x 512 x1.054, x 4096 x1.057, x 1024 and x 2048
        # level; 8200 x 512 x1.008, x 4096 x1.042)
        tile = min(4096, 2 * block_n)
    else:
        tile = (1024 if block_n == 128 else 2048) if _few_short_rows(m, block_n) else max(4096, 2 * block_n)
    block_m = _rows_per_tile(m, block_n, tile)
    if is_rms and not has_mask and 2048 < m <= 4096 and 3072 < n < 4096:
        # RMSNorm's few waves of 3073-4095 columns: one row a tile of 8 warps, not two (the tuner, GPU run 354: 4096
        # x 3584 fp16 2882 -> 2966 GB/s; in turns, run 355: 4096 x 3328 / 3584 fp16 x1.027 / x1.029, the inference
        # call x1.011-1.012, 3000 x 3584 bf16 x with fp32 weights x1.074; run 356: 3200 / 4000 x1.029 / x1.025, the
        # inference call x1.007-1.014, 4096 columns, two rows a tile as before, x1.000)
        return LaunchConfig(1, 4096, 1, 8)
    if is_rms and not has_mask and block_m == 2 and block_n == 1024:
        # RMSNorm's few short rows of 513-1024 columns at 4 warps, 16 elements a thread (the tuner, GPU run 351: 4096
        # x 1024 fp16 1881 -> 1944 GB/s; in turns against 2 warps, run 352: 4096 x 896 / 1024 x1.020 / x1.026,
        # 2048 x 768 x1.019, level at 640-768 and 3000 x 1000-1024; run 353: the inference call at 4096 x 1024
        # x1.030; LayerNorm's stays at 2, its fastest)
        return LaunchConfig(2, 1024, 1, 4)
    return _row_tiles(block_m, block_n)


def _second_pass_ahead(cfg: LaunchConfig, n: int, is_rms: bool, has_mask: bool) -> LaunchConfig:
    """Chunked rows whose second pass loads the next chunk's x before it stores the current chunk's y (``ahead``:
    norm_fwd.py's ``X_AHEAD``), where that was measured faster: RMSNorm's chunks of 8192 (rows above 32768 columns);
    LayerNorm's rows of 16384 in 8 chunks of 2048 at 4 elements a thread (more than 4096 rows) and its few waves'
    rows of 5 chunks at 8 a thread (2049-4096 rows of 4097-4608 and 8193-10240 columns). Not the clamped ReLU's
    forward with its mask (x0.95-0.98 at 32768 rows of 6144-32768 and 4096 of 4608-12288).

    Measured on an H200 against the second pass without it (``bench.ab``, GB/s in turns, the training forward and
    the inference call; GPU runs 337-340): RMSNorm at 32768 x 65536 (bf16 x, fp32 weights) x1.058, 16384 x 65536
    x1.060 / x1.056; LayerNorm at 32768 x 16384 x1.014-1.017 / x1.007 (fp16 x1.085), 8192 x 16384 x1.017 / x1.008,
    at 4096 x 4352-4608 and 8704-9728 (fp16) x1.02-1.04. Elsewhere it was level (RMSNorm at 6144-40960, LayerNorm at
    32768 x 6144, 12288, 32768, 65536, at 4096 x 5120-8192 and 10240) or slower, with no reason found in the sm_90
    code (read on the CPU: the same loads, the next chunk's issued before the store, at 40 registers instead of 32):
    LayerNorm at 32768 x 8192 (chunks of 1024) x0.94, at 32768 x 13312 / 14336 (7 chunks of 2048) x1.002 / x0.984
    (the inference call x0.889 / x0.985), at 4096 x 10752-12288 (6 chunks of 2048 at 4 a thread) x0.92-0.97 and
    14848-15872 (8 at 8 a thread) x0.93-0.94, though 4096 x 12800-14336 (7 at 4 a thread) ran x1.015-1.031."""
    if cfg.num_chunks == 1 or has_mask:
        return cfg
    if is_rms:
        ahead = cfg.block_n == 8192
    else:
        ahead = (n == 16384 and cfg.block_n == 2048 and cfg.per_thread == 4) or (
            cfg.per_thread == 8 and cfg.num_chunks == 5
        )
    return replace(cfg, ahead=True) if ahead else cfg


def _rms_one_tile_n(n: int, widest: int) -> bool:
    """RMSNorm's rows of the last eighth below ``widest`` (7169-8192 columns), which a few waves of rows without a
    bias take in one tile at 16 warps (``_few_waves_fwd``) and where the inference call with a bias keeps the training
    forward's launch with its bias (``_infer_heuristic``'s ``bias_rule``): one band for both (round 65)."""
    return widest * 7 // 8 < n <= widest


def _few_waves_fwd(
    n: int, is_rms: bool, w_bytes: int, x_fp16: bool, has_bias: bool, zero_centered: bool, widest: int, one_tile: int
) -> LaunchConfig:
    """Rows too long for one tile of ``one_tile`` when there are 2049-4096 of them (a call of a few waves of programs):
    8 elements a thread, where many rows are faster at 4. RMSNorm in chunks of 2048 (4096 above 8192 columns), but
    7169-8192 columns with 16-bit weights (float32 weights: 8192) and no bias in one tile at 16 warps; LayerNorm up to
    ``widest`` (8192) columns by the row's length past the half tile ``head`` (4096): up to an eighth of it, chunks of
    head / 4 (with 16-bit weights, ``w_bytes`` 2, past a sixteenth of it the head and a tail of 512 at 2 warps); up to a
    half, the head and a tail tile after it (``tail_n``, 8 elements a thread: 5120 = 4096 + 1024 at 4 warps, 6144 = 4096
    + 2048 at 8); longer, one tile of 32 a thread (with a bias and 16-bit weights two tiles of 4096, round 83); above,
    chunks of 2048, 8 a thread but at 10241-14336 columns 4 (16 warps), where 8 ran 2-4% slower (fp16 x with 16-bit
    weights: 10241-12288); with 16-bit weights, rows of 10241-12288 columns as a head tile of 8192 and a tail of 4096
    at 8 warps (round 63), and with a bias too rows of 8193-9216 as 8192 + 1024 at 4 (round 83; zero-centered fp16 x
    in chunks, round 84).

    Measured on an H200 (4096 rows, fp16; the tuner, GPU run 107, then runs 109-110 in turns in one process,
    ``benchmarks/results/logs/run1{07,09,10}*``), the rules for many rows (4 elements a thread) -> these (cuDNN):
    LayerNorm at 4608 2736 -> 2890 (3169), 5120 2931 -> 3191 (head + tail; chunks of 1024: 3072; 3219), 6144 3141
    -> 3299 (3289), 6656 3042 -> 3214 (one tile; chunks of 2048: 3077; 3430), 8704 2929 -> 3308 (3489), 10240 3224
    -> 3527 (3525), 15360 3335 -> 3470 (3539), but 12800 3480 -> 3390 (3614) (bench runs 106 and 113, across
    machines: 10752-13824 2-4% slower, 9728 14% and 14848-15872 3-5% faster); RMSNorm at 4608 2783 -> 3237 (3211),
    5120 2990 -> 3328 (3274), 6144 3323 -> 3488 (3319), 8704 3618 -> 3666 (3721), 10240 3693 -> 3748 (3740), 15360
    3798 -> 3846 (3771). Head + tail tiles were slower where the tail is 4 elements a thread (4608 = 4096 + 512:
    2285) and at 8192 + 2048 (3449 against 3527). Round 42 (the tuner, GPU run 357: 4096 x 4608 fp16 3015 -> 3131
    GB/s for 4096 + 512 at 2 warps, a head of 64 elements a thread; in turns, ``bench.ab``, run 358): LayerNorm's
    4353-4608 columns with 16-bit weights x1.026-1.038 at 4608 (fp16, training and inference) and x1.195 at 4096 x
    4400 bf16 (whose chunks of 1024 end in a ragged one), but 3000 x 4608 bf16 x with float32 weights x0.92, and
    4224 / 4352 (a tail of 256 at 2 warps) x0.80-0.82. Round 43 (the tuner, GPU runs 373-374: at 4096 x 12800
    fp16 chunks of 2048 at 8 warps 3652 GB/s against the rule's 16 warps 3396, since round 42's whole chunks; in
    turns, ``bench.ab``, runs 374-375): 12289-14336 columns at 8 a thread, 4096 x 12800 / 13312 / 13824 / 14336 fp16
    x1.073 / x1.060 / x1.056 / x1.032 (the inference call x1.029-1.049), but bf16 x1.001 at 4096 x 12800, x1.002 /
    x0.971 at 3000 x 12800 / 14336 (the inference call x0.982 / x0.965), and with float32 weights x0.983 / x0.946:
    those keep 4 a thread (``x_fp16``, ``w_bytes``)."""
    full = row_block_n(n)
    if is_rms and not has_bias and _rms_one_tile_n(n, widest) and (w_bytes == 2 or n == widest):
        # RMSNorm's 7169-8192 columns with 16-bit weights (float32 weights at 8192 only): one tile of 8192 at 16
        # warps, not chunks of 2048 (round 65). Forced (round 64, GPU runs 512-513, 4096 fp16) x1.005-1.034; in turns
        # against the chunks (``bench.ab``, H200, run 519; training forward / inference call) at 7680 / 8192: 4096
        # rows fp16 x1.025 / x1.015, x1.024 / x1.005, bf16 x1.010 / x1.002, x1.007 / x1.014, 3000 rows fp16 x1.022 /
        # x1.029, x1.028 / x0.992, float32 weights at 8192 x1.034 / x1.030; but float32 weights at 7680 x0.962 /
        # x0.968 and every call at 7168 x0.995-1.001, which keep their chunks. With a bias (forced in turns, run 520)
        # x0.951 at 4096 x 7680 fp16, x0.939 at 4096 x 7424 bf16, x0.982-0.999 at 8192: it keeps them too
        return LaunchConfig(1, widest, 1, 16)
    if is_rms:
        return _chunked(n, widest, 2048 if full <= 8192 else 4096, 8, one_tile)
    if w_bytes == 2 and widest + widest // 4 < n <= widest + widest // 2:
        # 10241-12288 columns with 16-bit weights: the few rows' head tile of 8192 and tail of 4096 at 8 warps, one
        # program a row, not chunks of 2048 (round 63). In turns against the chunks (``bench.ab``, H200, GPU run 508,
        # 10752 / 11264 / 11776 / 12288): 4096 rows fp16 x1.044-1.067 (the inference call x1.060-1.122), bf16
        # x1.079-1.116 (x1.053-1.139), 3000 rows fp16 x1.048-1.088 (x1.079-1.137), 2500 rows bf16 x1.087-1.108
        # (x1.065-1.144); but float32 weights x0.949-0.973 (4096 and 3000 rows), which keep their chunks. Forced (run
        # 507, fp16): 16 warps x0.88-0.93, chunks of 4096 at 16 x0.87-0.89. Tails of 512-2048 (8704-10240 columns)
        # at 8 or 4 warps ran x0.65-0.98 of the chunks there (run 508), but 9216's 8192 + 1024 at 4 warps x1.018
        return LaunchConfig(1, widest, 1, 8, tail_n=widest // 2)
    if has_bias and w_bytes == 2 and not (zero_centered and x_fp16) and widest < n <= widest + widest // 8:
        # with a bias and 16-bit weights, 8193-9216 columns as a head tile of 8192 and a tail of 1024 at 4 warps, not
        # 5 chunks of 2048 at 8 (round 83). Forced beside cuDNN (GPU run 647, 4096 x 8704 fp16): 41.25 -> 40.10 us
        # (cuDNN 40.58); the tail of 1024 at 8 or 16 warps 64.8-66.7, of 512 at 2-8 warps 54.1-55.6. In turns against
        # the chunks (``bench.ab``, run 648; the training forward / the inference call): 4096 x 8704 / 9216 fp16 x1.027
        # / x1.034, x1.022 / x1.027; bf16 4096 x 8448 / 8704 x1.180 / x1.176 (the clamped ReLU's inference call x1.180
        # / x1.145), 3000 x 8704 x1.187. Zero-centered weights (y = xhat * w + xhat since round 84) in turns against
        # the chunks (runs 654 and 656): bf16 x1.117 at 4096 x 8704, x1.108 at 3000 x 8704; but fp16 x0.889 / x0.875 at
        # 4096 x 8704 / 9216, x0.905 / x0.887 at 3000 (their chunks ran 3380-3420 GB/s, bf16's 2570-2720), which keep
        # the chunks. Their y as xhat * (1 + w) held 167 registers a thread here and ran x0.786 (round 83)
        return LaunchConfig(1, widest, 1, 4, tail_n=widest // 8)
    if full > widest:  # 8 a thread, but 4 (the rule of many rows) at 10241-14336 columns unless fp16 x, 16-bit weights
        return _chunked(n, widest, 2048, 4 if 10240 < n <= 14336 and not (x_fp16 and w_bytes == 2) else 8, one_tile)
    head = full // 2
    if n <= head + head // 8:
        if w_bytes == 2 and n > head + head // 16:
            return LaunchConfig(1, head, 1, 2, tail_n=head // 8)
        return _chunked(n, widest, head // 4, 8, one_tile)
    if n <= head + head // 2:
        tail = row_block_n(n - head)
        return LaunchConfig(1, head, 1, max(1, tail // (32 * 8)), tail_n=tail)
    if has_bias and w_bytes == 2:
        # with a bias and 16-bit weights, 6145-8192 columns as a head tile of 4096 and a tail tile of 4096 at 8 warps
        # (at 4 up to 7168 columns), not one tile of 8192 (round 83). Forced beside cuDNN (GPU run 646, 4096 fp16): 6656
        # 35.04 -> 34.75 us (4 warps 34.24; cuDNN 33.44), 7680 38.21 -> 37.60 (cuDNN 38.24). At 8 warps in turns against
        # one tile (``bench.ab``, run 647; the training forward / the inference call): 4096 x 6656 / 7680 / 8192 fp16
        # x1.007 / x1.013, x1.015 / x1.018, x1.008 / x1.003, 4096 x 7168 bf16 x1.023 (the clamped ReLU's inference call
        # x0.997), 3000 x 7680 bf16 x1.026, 2048 x 6656 / 7680 fp16 x1.021 / x1.030; without a bias x0.965-0.980 and
        # with float32 weights x0.971-0.981, which keep the one tile. 4 warps against 8 (run 650): 4096 x 6400 / 6656 /
        # 7168 fp16 x1.011 / x1.045, x1.011 / x1.047, x1.010 / x1.020, 3000 x 6656 bf16 x0.995. Zero-centered weights at
        # 4 warps x0.962 there while their y was xhat * (1 + w); as xhat * w + xhat (round 84, runs 654-655, against 8
        # warps and xhat * (1 + w)) 4096 x 6656 fp16 x1.023-1.031, 3000 x 6656 bf16 x1.028
        warps = 4 if n <= head + head * 3 // 4 else 8
        return LaunchConfig(1, head, 1, warps, tail_n=head)
    return _row_tiles(1, full)


def _few_waves_persistent_fwd(n: int, is_rms: bool, w_bytes: int) -> LaunchConfig | None:
    """2049-4096 rows of 1153-3072 columns (LayerNorm's with float32 weights up to 2560): one row a step of a
    persistent grid of 8-16 programs a SM, each issuing its next row's loads before it works on the current one
    (``PERSISTENT`` in norm_fwd.py); the row as a head tile and a tail tile where it is more than an eighth past 1024
    or 2048 (1024 + 256-512 at 1 warp, 16 programs a SM, but RMSNorm's 1024 + 512 with 16-bit weights, ``w_bytes`` 2,
    at 2; LayerNorm's 2048 + 512 or 1024 at 2 warps, RMSNorm's 2048 + 1024 at 4, a tail of 512 columns held in one of
    1024, 8 a SM), a row of 1537-2048 columns in one tile of 2048 at 4 warps, 8 a SM. None elsewhere (the rules of
    one program a row block).

    Measured on an H200 (4096 rows, fp16; forced configs in turns in one process, GPU runs 117-118,
    ``benchmarks/results/logs/run11[78]*``), the rule of one program a row block -> this (cuDNN): LayerNorm at 1536 1979
    -> 2270 (2035), 2048 2243 -> 2430 (2599), 2560 2266 -> 2499 (2624); RMSNorm at 1536 2104 -> 2378 (2139), 2048 2363
    -> 2492 (2440), 2560 2479 -> 2618 (2790), 3072 2708 -> 2936 (2914). LayerNorm at 3072 (then 2581 against 2282-2519
    for 2048 + 1024 at 2-4 warps, 6-16 a SM) kept its tiles of 2 x 4096 at 8 warps until round 82: there, with the
    forward's code of round 81, 2048 + 1024 at 2 warps ran 18.24 us against 19.58 (4 warps 18.88; cuDNN 18.88; forced in
    turns, GPU run 641), and in turns against the old rule (``bench.ab``, run 643) at 4096 x 3072 / 2816 fp16 x1.087 /
    x1.088 (the inference call x1.066 / x1.089, the clamped ReLU's x1.093 / x1.094, without a bias x1.060 / x1.088), but
    bf16 x with float32 weights x0.982, which keeps the old tiles. RMSNorm's 2305-2560 columns took 2048 + 1024 at 4
    warps in round 82 (its 3072's launch; 2048 + 512 at 2 warps before): forced, 15.17 us against 15.46 (2048 + 512 at 4
    warps 15.33, at 8 or 16 a SM; cuDNN 14.85; run 641); in turns (run 643) 4096 x 2560 / 2400 fp16 x1.019 / x1.011 (the
    inference call x1.025 / x1.015), bf16 x float32 weights at 2560 x1.062. Not taken: a persistent 2 x 4096 tile at
    2560-4096, 2-4 rows a step, more programs a SM than fit at once by registers (2048 at 4 warps, 12 a SM: 2108).
    RMSNorm's 1024 + 512 at 2 warps (the tuner, GPU run 354; in turns against 1 warp, ``bench.ab``, runs 355-358): with
    16-bit weights 4096 x 1536 fp16 x1.030-1.037 (the inference call x1.071-1.100), 3000 x 1536 fp16 x1.033, bf16
    x1.033; with float32 weights (bf16 x) x0.976 at 4096 rows, x0.888-0.893 at 3000; LayerNorm's x0.82-0.94; a tail of
    256 (1280 fp16 x1.003-1.015, 3000 x 1200 bf16 x1.027 but its inference call x0.955) keeps 1 warp. Nor (round 74, GPU
    runs 583-585, a Gluon probe in benchmarks/results/logs/round74_probe_gluon_fwd.py.txt) LayerNorm's rows staged in
    shared memory by a load warp, as cuDNN's forward does: at 4096 x 2048 / 2560 fp16 0.978-0.991 / 1.053-1.057 of this
    rule's speed, 0.93 / 0.96 of cuDNN's (at 3584, 6656 and 7168 0.97-0.99 of the rules there)."""
    if n <= 1024 or n > 3072 or (n > 2560 and not is_rms and w_bytes != 2):
        return None
    if 1536 < n <= 2048:
        return LaunchConfig(1, 2048, 1, 4, 8)
    head = 1024 if n <= 1536 else 2048
    if n <= head + head // 8:  # a tail of at most head / 8 columns would hold a few elements a thread
        return None
    tail = row_block_n(n - head)
    if head == 1024:
        return LaunchConfig(1, 1024, 1, 2 if is_rms and w_bytes == 2 and tail == 512 else 1, 16, tail_n=tail)
    if is_rms:
        return LaunchConfig(1, 2048, 1, 4, 8, tail_n=1024)
    return LaunchConfig(1, 2048, 1, 2, 8, tail_n=tail)


def _few_short_rows(m: int, block_n: int) -> bool:
    """At most 4096 rows of at most 1024 columns: a call of a few microseconds, where the forward's smaller tiles
    (2048 elements) win (tuner, GPU run 33: 4096 x 768 and 4096 x 128); rows of 65-128 columns in tiles of 1024 (8
    rows at 1 warp; round 65). Those, forced in turns on an H200 (GPU run 520, 4096 x 128 bf16 LayerNorm, GPU time):
    x1.045 over 16 rows at 2 warps (8 rows at 2 warps x1.028, 4 rows at 1 warp x1.022). In turns against 16 rows
    (``bench.ab``, run 521; training forward, inference call, fused forward): 2048-4096 rows of 96 LayerNorm
    x1.035-1.056 / x0.989-1.018 / x0.984-1.048, RMSNorm x1.000-1.019 / x1.000-1.074; 1024 x 128 bf16 LayerNorm
    x1.030, RMSNorm x0.988. LayerNorm's inference call keeps 16 rows at 2 warps there (``_infer_heuristic``, round
    66)."""
    return m <= 4096 and block_n <= 1024


@functools.lru_cache(maxsize=4096)
def _bwd_heuristic(
    m: int, n: int, has_dbias: bool, has_mask: bool, is_rms: bool, tma: bool, x_bytes: int, w_bytes: int,
    _limits: tuple,
) -> LaunchConfig:  # fmt: skip
    if tma:
        by_tma = _tma_bwd(m, n, has_dbias, has_mask, is_rms, x_bytes, w_bytes)
        if by_tma:
            return by_tma
    if is_rms and x_bytes == 2:
        head_tail = _rms_head_tail_bwd(m, n, has_dbias, w_bytes, tma)
        if head_tail:
            return head_tail
    full = row_block_n(n)
    # RMSNorm's chunked rows only where the row is a power of two (16384); split at 9216 and 12288 (chunked_max_n)
    if full > chunked_max_n(is_rms) or (is_rms and full > LIMITS["bwd_max_block_n"] and n != full):
        return split_rows_config(n, is_rms, has_mask)
    if 2048 < m <= 4096:  # a few waves of programs (``_few_waves_bwd``, ``_few_waves_masked_bwd``)
        few_waves = _few_waves_masked_bwd(n) if has_mask else _few_waves_bwd(n, is_rms)
        if few_waves:
            return few_waves
    chunked = _chunked(n, LIMITS["bwd_max_block_n"], 4096 if has_dbias else 2048, per_thread=4)
    if chunked:  # partials in registers, 4 elements a thread in each chunk, one program a SM
        return replace(chunked, programs_per_sm=1)
    block_n = row_block_n(n)
    # (tile elements, elements a thread, warps a SM)
    if has_mask:
        tile, per_thread, warps_per_sm = _masked_tile(m, block_n), 32, 8
    elif (has_dbias and not _rms_dbias_as_dw(block_n, is_rms, x_bytes)) or block_n <= 256:
        tile, per_thread, warps_per_sm = (2048 if block_n < 2048 else max(4096, block_n)), 32, 8
    else:
        tile, per_thread, warps_per_sm = (2048 if block_n < 2048 else max(4096, block_n)), 16, 16
    block_m = _rows_per_tile(m, block_n, tile)
    warps = max(1, min(32, block_m * block_n // (32 * per_thread)))
    return LaunchConfig(block_m, block_n, 1, warps, max(1, warps_per_sm // warps))


def _rms_dbias_as_dw(block_n: int, is_rms: bool, x_bytes: int) -> bool:
    """Whether RMSNorm's backward with dB (a bias) takes the whole-row launch of its backward without dB (16 elements
    a thread, 16 warps a SM) rather than LayerNorm's with dB (32 a thread, 8 warps a SM): rows of 4097-8192 columns
    (tiles of 8192) of 16-bit x.

    Round 32 (GPU run 280; H200; forced in turns, us a call, dB's launch -> dW's): 4096 rows fp16 4608 47.2 -> 45.3,
    6144 55.5 -> 53.2, 8192 63.8 -> 62.6, bf16 x float32 weights x1.017-1.048; 32768 rows fp16 x1.041-1.074 (4608
    291.4 -> 271.4), bf16 x float32 x1.010-1.016; 1024 rows fp16 x1.048 / x1.049 (4608 / 8192). Not at other widths:
    at 4096 columns 0.969 (4096 rows fp16) and 0.784 (32768 rows bf16 x float32), at 1024-2048 0.975-1.049."""
    return is_rms and x_bytes == 2 and block_n == 8192


def _masked_tile(m: int, block_n: int) -> int:
    """The elements of a tile of the masked backward (LayerNorm + clamped ReLU) on ``norm_bwd_kernel``, 32 a thread,
    8 warps a SM. Where ``m`` (the rows' power of two, ``_rows_key``) is at least 16384, so in calls of more than 8192
    rows: rows of 512 eight a tile (4 warps, 2 programs a SM) and rows of 513-1024 alone (one warp, 8 programs a SM).
    Else, and at other widths, at least 2048 elements.

    The tuner (GPU runs 167-168, 32768 rows, bf16 x, fp32 weights; the rule before first): at 512 tiles of four
    rows and two warps 2220 GB/s, of eight rows and four warps 2426; at 1024 two rows of two warps 2691, one row of
    one warp 3055; at 256 and 2048 the rule's tiles were the fastest. Against the rule before in turns (``bench.ab``,
    runs 168-169): 32768 x 1024 x1.10-1.11 (2729-2779 -> 3011-3068 GB/s, the plain backward's 3032-3093), x 1000
    x1.128, x 512 x1.055; 16384 x 1024 x1.065, x 512 x1.082; 8200 x 1024 x1.031, x 512 x1.048. At 4096 rows (fp16)
    both lost: 1024 x0.825 (twice the programs write twice the dW/dB partials, 1056 rows of them, 8.6 MB at 1024
    columns: a third of that call's bytes) and 512 x0.834, so fewer rows keep the tiles of 2048."""
    if m >= 16384 and block_n == 512:
        return 4096
    if m >= 16384 and block_n == 1024:
        return 1024
    return max(2048, block_n)


# the fewest elements (M x N) of a backward call that takes the TMA kernel. Its host time a call was about 20
# microseconds above norm_bwd_kernel's (six tensor descriptors built, 7 us, and encoded as tensor maps, 8.5 us; the
# alignment check, 4 us for the three matrices it then checked, two since: GPU run 153), so it is taken where its GPU
# time gains and covers that. At 2**25 elements (LayerNorm bf16, GPU runs 153-154, in turns with the rule before):
# 16384 x 2048 x1.01 and 8192 x 4096 x1.03 in GPU time (62.8 and 64.2 us), but calls back to back 69.8 and 68.1 us
# against 61.5 and 63.4: not taken. Above: 4100 x 8192 x1.12, 32768 x 2048 x1.07 (round 18). Since the tensor maps
# are kept per address (launch._TensorMaps, GPU run 163) the TMA kernel's calls cost 9-15 us less host time; at
# 2**25 elements again (run 166, in turns with this rule): GPU x1.047 (8192 x 4096) and x1.009 (16384 x 2048), but
# back to back 66.4 us against 63.4 at 8192 x 4096 (58.2 against 60.9 at 16384 x 2048), and the masked backward at
# 8192 x 4096 85.9 against 67.0: the minimum stays. Round 59 keeps the TMA kernel's descriptors encoded per rows
# (``ops._BackwardPlan.encoded``): a small call's host time 4-12 us above the pointer kernel's, from 20-41 (GPU run
# 488, in turns in one process). Calls back to back at 2**25 elements then (run 489, 6 turns of 300 calls, H200):
# LayerNorm x1.070 / x1.155 at 32768 x 1024 (bf16 x float32 / fp16), x1.048 at 16384 x 2048, x1.071 at 8192 x 4096
# (its GPU time x1.04-1.14), so LayerNorm's takes it from 2**25 (``TMA_MIN_ELEMENTS_LAYER_NORM``); RMSNorm x1.003 /
# x1.015 and the masked backward x0.87-1.06 (0.91 / 0.87 in turns whose host set the pace, at 67-109 us a call, which
# the TMA's 6-14 us more host time a call made slower): not. Round 113 (GPU runs 823 and 825, H200): the masked
# backward by the TMA at 2**25 elements, in turns against the rule before (``bench.ab``, GB/s): x1.045 / 1.048 at
# 32768 x 1024 (bf16 x float32 / fp16), x1.033 at 8192 x 4096 fp16, x1.028 at 16384 x 2048 bf16 x float32. 1000 calls
# back to back (``bench.overhead``, each tree in a process of its own, us a call, masked / plain): 64.1 / 63.9 -> 56.6 /
# 57.1 at 32768 x 1024 bf16, 86.6 / 78.1 -> 76.3 / 72.5 at 8192 x 4096 fp16 (the plain backward's code is the same in
# both: the hosts differed by up to 10%, but the masked call no longer runs behind the plain one's TMA launch). So it
# takes LayerNorm's minimum too: 1.018x the plain backward's time at 32768 x 1024 bf16 x float32 (1.066x before).
# From 2**24 (run 826, 4096 x 4096's launch at 4096 rows too): x1.006 at 4096 x 4096 fp16, x1.009 at 8192 x 2048: not.
TMA_MIN_ELEMENTS = (1 << 25) + 1
TMA_MIN_ELEMENTS_LAYER_NORM = 1 << 25


def _tma_call_large_enough(m: int, n: int, is_rms: bool) -> bool:
    """Whether a backward of m x n is large enough for the TMA's launches (``bwd_config``, ``_tma_bwd``): at least
    ``TMA_MIN_ELEMENTS`` elements (RMSNorm's), LayerNorm's (the masked backward's too, since round 113)
    ``TMA_MIN_ELEMENTS_LAYER_NORM``."""
    return m * n >= (TMA_MIN_ELEMENTS if is_rms else TMA_MIN_ELEMENTS_LAYER_NORM)


# the TMA backward loads the packed clamped-ReLU mask by the TMA too (``ops._mask_tma``) where its rows are a multiple
# of 16 bytes, as a mask of rows of a multiple of this many columns has
MASK_TMA_COLUMNS = 128


def _tma_bwd(
    m: int, n: int, has_dbias: bool, has_mask: bool, is_rms: bool, x_bytes: int, w_bytes: int
) -> LaunchConfig | None:
    """The backward's shapes whose dy and x load faster by the TMA (``norm_bwd_tma_kernel``), one row a program but at
    513-1024 columns (two; last sentence of this paragraph): LayerNorm (with dB) at 2048 columns (4 warps, 4 programs a
    SM), 4096 (8 warps, 2 a SM; dx stored by the TMA at both) and 8192 (8 warps, one a SM, dx stored by each thread), in
    calls of at least ``TMA_MIN_ELEMENTS_LAYER_NORM`` elements (``_tma_call_large_enough``, the masked backward's
    minimum too since round 113): from 16384 rows of 2048, 8192 of 4096, 4097 of 8192;
    LayerNorm's with dB of 6145-8192 columns at 2049-4096 rows of 16-bit x in 8192's tile from three quarters of that
    minimum (``_few_waves_tma_bwd``). The masked backward (LayerNorm + clamped ReLU) the same, its programs of 4 warps
    at 4096, its mask loaded by the TMA (``ops._mask_tma``; where that cannot be, its bytes a row block ahead at 2048
    and 4096: ``ahead``). With 16-bit x (``x_bytes``), head + tail tiles (round 33, below): LayerNorm's rows of
    8193-10240 columns a head of 8192 and a tail of 2048 at 8 warps, one a SM (any rows, as the call is large enough;
    fp16 weights held as loaded, ``widen_w``); LayerNorm's and the masked backward's rows of 4097-5120 in calls of more
    than 4096 rows a head of 4096 and a tail of 1024 at 4 warps, two a SM, dx stored by the TMA; LayerNorm's rows of
    5121-8191 in calls of more than 4096 rows in 8192's tile. None elsewhere (RMSNorm's head + tail tiles by the TMA are
    ``_rms_head_tail_bwd``'s, beside their launches on ``norm_bwd_kernel``). The masked backward's rows of a multiple of
    ``MASK_TMA_COLUMNS`` (its mask loaded by the TMA too, round 34, below), more than 4096 rows: LayerNorm's launches at
    5121-10240 as well, and at 4097-5120 and 8193-10240 dx stored by each thread, at 8193-10240 16-bit weights not held
    in float32 (``widen_w``: fp16's held as loaded and widened at every row block, bfloat16's loaded again; at
    4097-5120 held since round 111), float32 weights held and the mask by the TMA as bytes rather than words
    (``mask_bytes``). Rows of 513-1024 columns of 16-bit x (from 32769 rows of 1024), LayerNorm's and RMSNorm's with
    or without dB and the masked backward's of a multiple of 128 columns: two rows a program of 4 warps, 4 programs a
    SM, dx stored by the TMA (round 57, below). Rows of 2048 of
    16-bit x without the mask, RMSNorm's and LayerNorm's without dB too: LayerNorm's launch (round 58; on slower DRAM
    the pointer kernel's instead, ``_slower_dram_bwd``, round 120; the masked backward's too, and LayerNorm's of
    4096, rounds 121-122). LayerNorm's
    without dB of 16-bit x, more than 16384 rows (``m`` as ``_rows_key`` rounds it), of 4096 and 5121-8192 columns:
    LayerNorm's launches with dB (round 58); of 4097-5120 and 8193-10240 columns wherever those with dB are taken
    (round 103: calls of at least ``TMA_MIN_ELEMENTS_LAYER_NORM``, and more than 4096 rows at 4097-5120). The masked
    backward without dB (no bias): its launches with dB, wherever they are taken (round 114).

    Round 114 (GPU runs 827 and 829, H200, in turns against the rule before, ``bench.ab``, GB/s, ``ln_relu_nobias_bwd``
    op): the masked backward without dB had no launch here, so in calls large enough for the TMA it ran the pointer
    kernel's tiles (8192's at 4097-5120, where the staged kernel steps aside for the TMA: ``_staged_masked_bwd``). In
    its launches with dB: 32768 rows bf16 x float32 x1.058 / x1.115 / x1.435 / x1.332 / x1.100 at 2048 / 4096 / 4608 /
    5120 / 8192 (93-95% of the copy), fp16 x1.445 / x1.359 / x1.174 at 4608 / 5120 / 8192; 8192 rows fp16 x1.071 /
    x1.341 / x1.144 at 4096 / 4608 / 8192; 16384 x 2048 bf16 x1.028. 1.030 / 1.029x the plain backward's time without dB
    (``ln_nobias_bwd``) at 32768 x 4608 / 8192 bf16 x float32. The staged kernel there instead (16-bit weights, in turns
    against the TMA's): 32768 rows bf16 x0.920 / x0.974 / x0.993 at 4608 / 5120 / 8192, 8192 rows fp16 x0.975 / x0.997 /
    x1.024: not taken, as with dB.

    Round 111 (GPU runs 819-822, H200, in turns against the rule before, ``bench.ab``, GB/s): the masked backward's
    launch at 4097-5120 with its 16-bit weights held in float32 (no longer ``widen_w``): bf16 x1.083 / x1.007 at 32768
    x 4608 / 5120 (3691 -> 3999 GB/s at 4608, the plain backward's 3987), x1.111 / x1.037 at 32768 x 4352 / 4864,
    x1.077 / x1.021 at 16384, x1.054 / x1.020 at 8192; fp16 level (x1.001-1.002). dx stored by the TMA ran x0.95-0.99
    (the mask as bytes too x0.95-0.99), one program of 8 warps a SM x0.48-0.58.

    Round 103 (GPU runs 762-764, H200, in turns against the rule before, ``bench.ab``, GB/s): LayerNorm's backward
    without dB at 4097-5120 and 8193-10240 columns in the head + tail launches of its backward with dB, where it ran
    ``norm_bwd_kernel``'s tile of 8192 at 16 warps (4608 / 5120) or split rows of 1024 (8704-10240): float32 weights
    (16-bit weights take the staged kernel, ``_staged_bwd``, where it can run) at 32768 bf16 rows x1.601 / x1.513 /
    x1.248 / x1.273 at 4608 / 5120 / 9216 / 10240 (95-98% of the copy; x1.258 at 8704), fp16 x x1.611 / x1.251 at 4608
    / 9216; 16384 rows x1.543 / x1.218; 8192 rows x1.506 / x1.389 / x1.227 / x1.217 at 4608 / 5120 / 8704 / 10240;
    4096 rows x1.184 / x1.159 / x1.172 at 8704 / 9216 / 10240, 4100 x 9216 fp16 x1.168. With 16-bit weights where the
    staged kernel is not taken (forced off) x1.823 / x1.250 at 32768 bf16 x 4608 / 9216. LayerNorm's with dB there
    unchanged (x0.999-1.001).

    Round 58 (GPU run 483, H200, forced in turns, us a call, L2 flushed, ``.ab/probe/rms2048_58.py``): at 2048 columns
    by the TMA in one row of 4 warps, 4 programs a SM, dx stored by the TMA, against ``norm_bwd_kernel``'s two rows of 8
    warps (4 with dB), 2 a SM: RMSNorm at 32768 rows x1.008 / x1.028 / x1.022 (bf16 x float32 / fp16 / bf16), x1.045
    with dB, x1.022 at 65536 rows, x1.005 at 16400; LayerNorm without dB x1.039. dy and x loaded by the TMA alone (dx
    by each thread) x1.000-1.042, two rows of 8 warps x0.990-1.034, one row of 8 warps 0.86-0.89. At 32768 x 4096
    (RMSNorm) x1.003-1.005: not taken. LayerNorm without dB in the launches of LayerNorm's with dB against
    ``norm_bwd_kernel``'s (one row of 8 warps, 2 a SM, at 4096; of 16 warps, 1 a SM, at 5121-8192; GPU run 486,
    ``.ab/probe/lnnodb58.py``): 32768 x 4096 x1.026 / x1.032 (bf16 x float32 / fp16), 32768 x 8192 x1.024 / x1.019,
    32768 x 6144 x1.170; but 8200 x 4096 x0.998 and 4100 x 8192 x0.979, so from 16385 rows. RMSNorm at 32768 x 8192
    x1.016: not taken.

    Round 57 (GPU runs 467-469, H200, 32768 rows bf16 x, float32 weights unless named; us a call, forced in turns, L2
    flushed, ``.ab/probe/bwdsum57.py`` and ``bwdtma57.py``): at 1024 columns ``norm_bwd_kernel``'s LayerNorm launch
    (two rows of 2 warps, 4 a SM) runs 12.5% of the warps a SM can hold (250 registers a thread, ncu) at 68% of the
    DRAM's bandwidth, RMSNorm's (4 warps, 125 registers) at 74%. By the TMA, two rows of 4 warps, 4 a SM (the rows in
    shared memory, not registers): LayerNorm x1.061 / x1.162 / x1.165 (bf16 x float32 / fp16 / bf16), x1.040 without
    dB, x1.124 at 768, x1.092 at 65536 x 1024, x1.062 at 16384 x 1024; RMSNorm x1.028 / x1.035 (bf16 x float32 / fp16),
    x1.084 with dB, x1.087 at 768, x1.031 at 65536 x 1024; the masked backward x1.079 / x1.126 (bf16 x float32 / fp16);
    at 512 slower (0.86). Its host time is the TMA's: back to back, 50 calls, 32768 x 1024 took 72-118 us a call
    against the rule's 58-74 (62 -> 77 for LayerNorm bf16 x float32), 65536 x 1024 104 against 114 (LayerNorm) and 102
    against 105 (RMSNorm), so these too wait for ``TMA_MIN_ELEMENTS``. Other launches tried: 2 warps x1.018-1.142, dx
    by each thread x1.013-1.147 (the masked 0.81), four rows of 4 warps two a SM x1.012-1.142, of 8 warps 0.94-1.06.
    Against round 56 in turns (``bench.ab``, run 470, GB/s, with round 57's ``ops._sum_plan``): 65536 rows bf16 x
    float32 x1.109 / x1.088 (LayerNorm at 768 / 1024), x1.105 / x1.029 (RMSNorm), x1.076 / x1.064 (masked); fp16
    x1.178 / x1.049 / x1.143 at 1024. Back to back at 65536 x 1024 (``bench.overhead``): 102-104 us a call, the GPU's
    106-109 (the host's 61-79).

    Round 37 (GPU runs 321-323): LayerNorm's own head + tail launch at 8193-10240 with ``widen_w`` (its fp16 weights
    held as loaded; bfloat16's stay held in float32): forced in turns (run 321, us a call) 32768 x 8704 / 9216 / 10240
    x1.015 / x1.005 / x0.999, 4096 x 9216 / 10240 x1.017 / x1.014; against round 36's rule (``bench.ab``, runs
    322-323, GB/s) 32768 rows x1.014 / x1.006 / x0.998 (8704 / 9216 / 10240), 8192 rows x1.019 / x1.007 / x0.999,
    4096 rows x1.017 / x1.017 / x0.995; bf16 unchanged (x1.000 / x0.999).

    Round 36 (GPU runs 314-316, ``bench.ab`` against round 35's rules in turns, GB/s): the fp16 weights of those
    launches held in 16 bits and widened in the loop rather than loaded again (``norm_bwd_tma_kernel``'s WIDEN_W),
    with dx in two fused multiply-adds: 32768 rows x1.077 / x0.996 / x1.198 / x1.202 / x1.149 (4608 / 5120 / 8704 /
    9216 / 10240), 8192 rows x1.064 / x1.185 / x1.136 (4608 / 9216 / 10240); bfloat16's widened so 0.91-0.99, so
    they are still loaded again.

    Round 35 (GPU runs 309-310, ``bench.ab`` against round 34's rules in turns, GB/s): the mask by the TMA as bytes
    where the weights are float32, at the head + tail launches: 32768 rows bf16 x float32 x1.066 / x1.041 / x1.108 /
    x1.101 / x1.111 (4608 / 5120 / 8704 / 9216 / 10240), 8192 rows x1.051 / x1.033 / x1.093 / x1.094, fp16 x float32
    x1.000-1.010. Not taken: bytes with 16-bit weights (fp16 0.986 / 1.000 / 0.992-0.998 at 4608 / 5120 / 8704-10240;
    bf16 at 8192 rows 0.985-1.004) and in whole tiles (fp16 0.981-0.984 at 6144 / 8192, bf16 x float32 0.997-1.003).
    A byte's 8 bits are tested against constants, a word's against per-thread bit registers: ptxas (sm_90) gives the
    bytes 0-10 registers and 8-32 instructions less, and 4096 + 1024 with fp16 weights held 16 bytes of stack for 40.

    Round 34 (GPU runs 297-302, 32768 rows, launches forced in turns, us a call; ``.ab/probe/r34a.py``): with the
    mask by the TMA, the masked backward in 8192's tile at 6144 / 7168 x1.085 / x1.130 (bf16 x float32) and x1.087 /
    x1.132 (fp16) against ``norm_bwd_kernel``'s (16 warps 0.94-1.07; a head of 4096 and a tail of 2048 0.83-0.94);
    at 8704 / 9216 / 10240 a head of 8192 and a tail of 2048 against split rows of 1024: bf16 x float32 x1.168 /
    x1.011 / x1.089 (dx by the TMA 0.92-1.05, weights again 0.95-1.11), fp16 with the weights again x1.070 / x1.027 /
    x1.123 (held 0.99-1.04, dx by the TMA too 0.98-1.08), bf16 x1.062 at 9216; 9472-9984 x1.26-1.27 (bf16 x float32)
    and x1.09 (fp16); at 4096 rows 0.96-1.03, so not there. At 4608 / 5120 dx by each thread x1.095 / x1.087 (bf16 x
    float32), with fp16 weights loaded again x1.022 / x1.029 (bf16 x1.036); programs of 8 or 16 warps 0.50-0.71, a
    tail of 512 0.69-0.83, 2 or 4 stages 0.77-0.99. Against the rules before in turns (``bench.ab``, runs 303-304,
    GB/s): 32768 rows x1.217 / x1.220 / x1.102 / x1.140 / x1.169 / x1.010 / x1.087 (bf16 x float32 at 4608 / 5120 /
    6144 / 7168 / 8704 / 9216 / 10240) and x1.325 / x1.321 / x1.108 / x1.140 / x1.071 / x1.027 / x1.126 (fp16); 2048 /
    4096 x1.017 / x1.058 and x1.006 / x1.092; 8192 0.985 / x1.003; 8192 rows fp16 x1.013-1.294, bf16 x1.057-1.298.

    Round 33 (GPU runs 290-291; H200; ``.ab/probe/r33a.py``, forced in turns, us a call, against the rules then:
    split rows of 1024 at 8193-10240, one tile of 8192 at 32 elements a thread at 4097-5120). LayerNorm at 8193-10240
    (8704 / 9216 / 9728 / 10240), dx by each thread: 4096 rows fp16 x1.190 / x1.144 / x1.213 / x1.155, bf16 x float32
    x1.188 / x1.115 / x1.215 / x1.144; 32768 rows fp16 x1.267 / x1.217 / x1.323 / x1.245, bf16 x float32 x1.270 /
    x1.216 / x1.338 / x1.251 (dx by the TMA 1.007-1.274; a tail of 1024 at 9216 0.92 in fp16). At 4097-5120, 32768
    rows: LayerNorm x1.521 / x1.428 (4608 / 5120, fp16), x1.477 / x1.438 (bf16 x float32; dx by each thread x1.40-1.51),
    8192 rows (bf16 x float32) x1.375 / x1.325; the masked backward (its mask bytes in step) x1.196 / x1.179 (bf16 x
    float32; a row block ahead 0.95-0.97). Not taken: the pointer kernel's head + tail there (0.92-1.05), LayerNorm's
    head + tail by the TMA at 5121-6144 (fp16 x1.11-1.14, bf16 x float32 0.87-0.95), at 7168 (a tail of 4096 spills:
    0.06) and at 10241-12288 (0.72-0.96; 16 warps 0.40-0.74), the masked backward at 6144 (0.59-0.88). Against the
    rules before in turns (``bench.ab``, run 292, GB/s): LayerNorm 4096 rows fp16 x1.197 / x1.126 / x1.219 / x1.165
    (8704-10240), 8192 rows fp16 x1.321 / x1.201 (5120 / 10240), 32768 rows bf16 x float32 x1.479 / x1.432 / x1.215
    (4608 / 5120 / 9216: 93-96% of copy); the masked backward there x1.193 / x1.184 (4608 / 5120). Beside cuDNN
    (single timings): 4096 x 9216 / 10240 fp16 1.31 / 1.92, 32768 x 4608 / 5120 / 9216 bf16 x float32 1.04 / 1.27 /
    1.44. LayerNorm's rows of 5121-8191 (run 293, 32768 rows, the rule then: the same tile by ``norm_bwd_kernel``) in
    8192's tile by the TMA: 5632 / 6144 x1.129 / x1.140 (fp16), x1.125 / x1.133 (bf16), x1.120 / x1.123 (bf16 x
    float32), 7168 / 7680 x1.149 / x1.162 (fp16) and x1.146 / x1.160 (bf16 x float32); a head of 4096 and a tail of
    2048 0.92-1.14; the masked backward's 0.84-0.87 (6144 / 7168), its head + tail at 9216 / 10240 0.998-1.038.
    Against the rule before in turns (run 294): 32768 x 6144 / 7168 bf16 x float32 x1.120 / x1.135 (cuDNN 1.17 /
    2.35 behind), 8192 rows fp16 x1.111 / x1.100 / x1.130 (5632 / 6144 / 7168), 6000 x 6144 bf16 x1.123.

    Round 21 (GPU runs 176-178, bf16 x, fp32 weights, us a call, configs forced in turns, then ``bench.ab`` against
    round 20's rule): the plain backward at 32768 x 2048 in the masked one's one-row tiles of 4 warps 109.0 against
    111.5 in tiles of two rows at 8 warps (x1.023; ``bench.ab`` x1.004, 16400 rows x1.030 within that call's
    spread); the masked backward at 32768 x 4096 in programs of 4 warps 219.6-219.9 against 222.7-223.0 at 8 warps
    (``bench.ab`` x1.014, 8200 and 16400 rows x1.009 / x1.004; 1.075x the plain backward's time, was 1.09x); one or
    two rows of 8 or 16 warps a program alone on a SM 243-304, 4 warps 3 a SM 264.5, 4 a SM 229.9 (shared memory for
    three row blocks in flight); 2 or 4 stages (``TMA_STAGES``) no faster (282.8 / 219.8).

    The masked backward (GPU run 156, us a call of each kernel forced, in turns, bf16 x, fp32 weights): at 8192
    columns 32768 rows 477.2-478.0 -> 407.6-407.8 (x1.17; the plain backward's 400.2, so 1.02x its time where
    ``norm_bwd_kernel`` took 1.19x), 4100 rows 77.0-77.2 -> 67.2-69.0 (x1.12-1.15; plain 66.1); at 2048 and 4096
    slower: 32768 x 2048 118.2-118.6 -> 134.8-135.0, x 4096 236.9-237.0 -> 249.6-249.7, 16400 x 2048 67.2 ->
    75.6-76.7. There the mask's byte loads (two a thread, too narrow for an asynchronous copy, so Triton's pipeliner
    leaves them in the loop) waited at every row block; loaded a row block ahead (GPU run 161, ``bench.ab``
    against ``norm_bwd_kernel``, in turns): 32768 x 4096 3516-3537 -> 3679-3709 GB/s (x1.048), 16400 x 4096
    x1.028, but 32768 x 2048 x0.994 and 16400 x 2048 x1.007 (level in the plain backward's tiles of two rows) and at
    8192 slower (32768 rows 4045-4057 -> 3674-3686, x0.911; 255 registers either way), so 8192 loads them in step.
    At 2048 (GPU run 174, 32768 rows, configs forced in turns, us): ``norm_bwd_kernel`` 118.4, the TMA kernel with
    the mask ahead in tiles of two rows at 8 warps 119.8 (in step 134.7), of one row at 4 warps, 4 programs a SM
    112.5 (1.02x the plain backward's 110.2; dx by each thread 115.2), others 125-136; the rule against the one
    before (run 175): 32768 x 2048 x1.061, 16400 x 2048 x1.057.

    Measured on an H200 (trial kernels side by side with ``norm_bwd_kernel``'s rule and cuDNN, GPU runs 142-143; then
    the rule against the one before in turns, ``bench.ab``, runs 144-145; ``benchmarks/README.md`` round 18): LayerNorm
    at 32768 rows (bf16 x, fp32 weights) 2048 3439 -> 3687 (x1.07; cuDNN 3419-3512), 4096 3683 -> 3931 (x1.07;
    3694-3699), 8192 3453 -> 4043 (x1.17; 3331-3423). Fewer rows (GPU runs 151-153, microseconds a call of each kernel
    forced, in turns): 8192 x 8192 131.3 -> 113.1-114.4, 16384 x 4096 120.9 -> 111.7-114.5, x 8192 244.8 -> 209.1-210.1;
    the rule against the one before (run 154): 4100 x 8192 2701-2757 -> 3034-3123 GB/s (x1.12); at 2**25 elements see
    ``TMA_MIN_ELEMENTS``. Not taken: RMSNorm at 4096 rows of 4608 and 5120 columns (fp16), x1.07-1.11 in GPU time (42-46
    us; cuDNN 38-42) but 56-61 us of host time a call against the pointer kernel's 35-56 (GPU run 153: ``Launcher``'s
    direct path, the descriptors built unchecked; 81 us through Triton's own; 51 with the tensor maps kept, run 163,
    against 35), so calls back to back would run slower; RMSNorm at 4096 x 6144 (x0.91: with a tail of 2048 its program
    takes 143 registers, so one fits a SM where two were launched) and 32768 x 4096 (x1.00); LayerNorm at 4096 rows
    (0.78-0.98 in the trials: 170-250 registers with a tail or at 8192; at 16 warps 0.45-0.97; since round 64 its
    6145-8192 by the TMA there, ``_few_waves_tma_bwd``, with the kernel as it is now); RMSNorm at 4096 x 7168
    and x 8192 (0.88-0.97); rows of 1024 one a program (0.87-0.99; round 57's two a program, above, gained);
    RMSNorm at 2048-3072 (0.97-1.05: level)."""
    mask_by_tma = has_mask and n % MASK_TMA_COLUMNS == 0  # the mask by the TMA too (round 34)
    if 512 < n <= 1024 and x_bytes == 2 and (mask_by_tma or not has_mask):  # any norm, with dB or without
        return LaunchConfig(2, 1024, 1, 4, 4, tma=True, tma_store=True)
    # rows that take LayerNorm's launches with dB below where they are RMSNorm's or without dB (round 58): 2048 of
    # 16-bit x without the mask; LayerNorm's without dB at 4096 and 5121-8192 from 16385 rows, and at the head + tail
    # tiles' 4097-5120 and 8193-10240 wherever those with dB are taken (round 103)
    head_tail = 4096 < n <= 5120 or 8192 < n <= 10240
    wide_ln = not is_rms and ((m >= 32768 and (n == 4096 or 5120 < n <= 8192)) or head_tail)
    as_with_dbias = x_bytes == 2 and not has_mask and (n == 2048 or wide_ln)
    # the masked backward without dB (no bias) takes its launches with dB (round 114)
    if (is_rms or not has_dbias) and not as_with_dbias and not has_mask:
        return None
    if 8192 < n <= 10240 and x_bytes == 2 and not has_mask:
        return LaunchConfig(1, 8192, 1, 8, 1, tail_n=2048, tma=True, widen_w=w_bytes == 2)
    if m <= 4096 and not (6144 < n <= 8192 and x_bytes == 2 and not has_mask):
        return None  # at 2049-4096 rows only LayerNorm's 6145-8192 (``_few_waves_tma_bwd``): 8192's tile, below
    if 8192 < n <= 10240 and x_bytes == 2 and mask_by_tma:
        return LaunchConfig(1, 8192, 1, 8, 1, tail_n=2048, tma=True, widen_w=w_bytes == 2, mask_bytes=w_bytes == 4)
    if 4096 < n <= 5120 and x_bytes == 2 and mask_by_tma:  # every weight held in float32 (round 111)
        return LaunchConfig(1, 4096, 1, 4, 2, tail_n=1024, tma=True, mask_bytes=w_bytes == 4)
    if 4096 < n <= 5120 and x_bytes == 2:
        return LaunchConfig(1, 4096, 1, 4, 2, tail_n=1024, tma=True, tma_store=True)
    if n == 2048:  # one row of 4 warps a program, 4 a SM (``ahead``: mask bytes ahead, where not by the TMA)
        return LaunchConfig(1, 2048, 1, 4, 4, ahead=has_mask, tma=True, tma_store=True)
    if n == 4096:  # one row a program, two a SM: of 8 warps, the masked backward's of 4 (``ahead`` as at 2048)
        return LaunchConfig(1, 4096, 1, 4 if has_mask else 8, 2, ahead=has_mask, tma=True, tma_store=True)
    if n == 8192 or (5120 < n < 8192 and x_bytes == 2 and (mask_by_tma or not has_mask)):
        return LaunchConfig(1, 8192, 1, 8, 1, tma=True)
    return None


# the backward by the staged Gluon kernel (``_staged_bwd``): RMSNorm's widths, LayerNorm's with dB and without, the
# compute warps, and LayerNorm's dB warps of their own and their registers a thread by width
# (``norm_bwd_staged_kernel``'s DB_WARPS and DB_REGISTERS; elsewhere none: the compute warps sum dB). With 4 dB warps at
# 112 registers the 8 compute warps get 184 (sm_90) and spill 16-24 bytes at 11264; at 104 they get 192 and spill none
# at 10752-11264, but the dB warps spill 48 at 11776 (GPU run 590: 104 ran x1.03-1.11 of 112 at 11264, level at 10752).
STAGED_BWD_N = (10240, 12288, 12800, 13312, 13824, 14336, 14848, 15360, 15872)
# with dB; 14848-15872 (32 + 16 + 16 rows of 256, padded) since round 105, with PAIR_SCRATCH (``STAGED_PAIR_SCRATCH_N``)
STAGED_LN_BWD_N = (10752, 11264, 11776, 12288, 12800, 13312, 13824, 14336, 14848, 15360, 15872)
STAGED_LN_NO_DB_BWD_N = tuple(range(10240, 15873, 512))  # without dB (no bias; 12800-14336 as 32 + 8 + 16 rows)
STAGED_WARPS = 8
STAGED_DB_WARPS = {10752: (4, 104), 11264: (4, 104), 11776: (4, 112)}
# RMSNorm's backward staged at these widths too (round 117, ``_staged_bwd``), its dB (a bias) in LayerNorm's warps of
# their own there
STAGED_RMS_MID_BWD_N = (10752, 11264, 11776)
# RMSNorm's short rows (22-30 rows of 256, 11-15 KB of each tensor a row in 16 bits): 4 compute warps and 3 rows in
# flight a program, where the long rows take 8 and 2 (``staged_stages``). Forced at 4096 x 5632-7680 fp16 against the
# rule before (GPU runs 605-606): 8 warps x0.93-0.95 at 2 stages and x0.98-1.07 at 3; 4 warps and 3 stages
# x1.004-1.092. Not 4608 / 5120 (16 + 2 / 16 + 4 rows of 256): x0.971 / x0.981 of the head and tail tiles at 4096
# fp16 rows, 4608 bf16 x0.968 (round 85, run 670).
STAGED_RMS_SHORT_BWD_N = (5632, 6144, 6656, 7168, 7680)
STAGED_SHORT_N = STAGED_RMS_SHORT_BWD_N[-1]  # rows of at most this many columns are short
# short rows of at most this many columns take the kernel from fewer rows (``LIMITS["rms_bwd_staged_short_min_m"]``,
# 2560) than the longer ones (7168, 7680: ``LIMITS["rms_bwd_staged_7168_min_m"]``, 4096). Forced at 4 warps and 3
# stages against the rule before, 16-bit (GPU runs 611-612, H200): 5632 / 6144 / 6656 x1.034 / x1.069 / x1.034 at 3072
# rows, x1.024 / x1.057 / x1.014 at 2560 (6144 x1.054 at 2304, 5632 bf16 x1.041 at 3072, 6656 bf16 x1.010 at 2560);
# 7168 x1.013 / x1.019 at 3072 / 3584, 7680 x0.986 / x1.001 (within a run's 1-2%, so they keep 4096); at 2048 rows
# 5632 / 6656 had run x0.984 / x0.961 (run 606)
STAGED_FEWER_ROWS_N = 6656
# RMSNorm's backward with dB (a bias) staged at these of its short rows, in LayerNorm's short-row form (8 compute warps,
# ``staged_warps``; 3 rows in flight; dB summed by the compute warps), from 4096 rows
# (``LIMITS["rms_bias_bwd_staged_short_min_m"]``; round 118 from 8192, round 119 from 4096; ``_staged_bwd``); 5632 on
# slower DRAM only (``STAGED_RMS_SLOWER_DRAM_N``)
STAGED_RMS_SHORT_DB_BWD_N = (5632, 6144)
# and at 7168 / 7680 in calls of at least ``LIMITS["rms_bias_bwd_staged_7168_min_m"]`` rows where the DRAM is an H200's
# (not ``slower_dram``; round 120)
STAGED_RMS_LONG_CALL_DB_BWD_N = (7168, 7680)
# RMSNorm's backward staged at these widths with dB (a bias) only, 8 compute warps and 3 rows in flight (LayerNorm's
# short-row form there, ``staged_stages``), from ``LIMITS["rms_bwd_staged_min_m"]`` rows (round 118, ``_staged_bwd``);
# without dB the TMA's head and tail tiles (the staged kernel x0.985 at 4096 x 9728 fp16, round 73)
STAGED_RMS_DB_ONLY_BWD_N = (8704, 9216, 9728)
# of those, ``STAGED_RMS_SHORT_DB_BWD_N`` and ``STAGED_RMS_MID_BWD_N``, the widths RMSNorm's backward takes the staged
# kernel at on slower DRAM only (``slower_dram``, an H100's), by dB (a bias) or not: on an H200 they ran slower than
# the rule before in turns (GPU run 842: without dB x0.942 at 4096 x 10752 fp16, H100 x1.036-1.040; with dB x0.978 at
# 4096 x 9728, H100 x1.025; runs 843-844: with dB x0.932-0.954 at 8192-32768 x 5632, H100 x1.046-1.066)
STAGED_RMS_SLOWER_DRAM_N = {False: (10752,), True: (5632, 9728)}
STAGED_SHORT_WARPS = 4
STAGED_STAGES = 2  # 3 ran level or slower at the long rows (x0.98-1.01, run 547; with the load warp, run 582)
STAGED_SHORT_STAGES = 3
# LayerNorm's short rows (round 101; 22-40 rows of 256): with dB and without (without it up to 9728: 10240 is a long
# row of ``STAGED_LN_NO_DB_BWD_N``), 8 compute warps (RMSNorm's short rows take 4) and 3 rows in flight, dB summed by
# the compute warps. Forced in turns against the rule before, the pointer kernel's head + tail tiles (5632-6144), a
# row by the TMA (6656-8192) or split rows (8704-10240), 16-bit x and weights (``bench.ab``, H200, GPU runs 752-753):
# with dB at 4096 rows fp16 x1.083 / 1.105 / 1.092 / 1.064 / 1.042 / 1.012 / 1.030 / 1.028 / 1.020 / 1.028 at 5632 /
# 6144 / ... / 10240 (at 2 stages x0.996-1.035, at 4 x1.017-1.101), bf16 x1.041-1.086, zero-centered x1.031-1.095; at
# 32768 bf16 rows x1.018-1.182 (5632 at 93% of the copy, 6656-10240 at 97-100%), at 16384 fp16 x1.020-1.158, 3000
# x1.069 / x1.211 (5632 / 8704), 2048 x1.001-1.177. Without dB at 4096 fp16 x1.012-1.270 (bf16 x1.120-1.352), at
# 32768 bf16 x1.208 / x0.998 / x1.272 at 5632 / 8192 / 9216. Round 78 had found LayerNorm there x0.57-0.98 in every form
# (4 or 8 compute warps, 2-4 stages), before round 93 took the parts' sums across the warps once a row.
# Round 102 (H200, GPU runs 757-758): 4608 and 5120 (18 and 20 rows of 256) too, with dB in calls of at most 4096
# rows (the pointer kernel's few waves, rows in parts of 1024, ``_few_waves_bwd``), without dB in calls of any size;
# round 103 (GPU runs 762-763): with dB in calls too small for the TMA's head and tail tiles (fewer elements than
# ``TMA_MIN_ELEMENTS_LAYER_NORM``: at most 7281 rows of 4608, 6553 of 5120; the pointer kernel's tile of 8192 at
# 4097 rows and more), x1.322 / x1.302 at 6144 rows fp16, x1.349 at 7168 x 4608 bf16 (x0.984 / x1.023 against the TMA's
# at 8192 rows). Forced in turns against the rule before, 16-bit x and weights:
# with dB x1.167 / x1.096 and x1.159 / x1.086 at 4096 rows fp16 (4 stages level), x1.206 / x1.199 at 2048, but
# x0.956 / x0.982 at 16384 fp16 and x0.936 / x0.965 at 32768 bf16 (the TMA's head and tail tiles, ``_tma_bwd``);
# without dB x1.123 / x1.087 at 4096 fp16, x1.686 / x1.650 at 32768 bf16 (2253 -> 3799 GB/s at 4608). Not narrower:
# 2048-4096 ran x0.77-1.01 of the pointer kernel at 4096 fp16 (3 or 6 stages).
STAGED_LN_SHORT_BWD_N = tuple(range(4608, 10241, 512))
STAGED_LN_FEW_ROWS_BWD_N = (4608, 5120)
# LayerNorm + clamped ReLU's backward in the whole-row staged kernel, its mask's bytes staged with x and dy: LayerNorm's
# short rows (``STAGED_LN_SHORT_BWD_N``), round 110's whose parts hold whole mask bytes a thread at 8 compute warps
# (6144 = 16 + 8 rows of 256, 7680 = 16 + 8 + 8 padded, 8192 = 32, 10240 = 32 + 8) and round 111's whose parts of
# fewer rows than warps share a byte among lanes (``norm_bwd_staged.mask_layout``: 4608 = 16 + 2, 5632 = 16 + 4 + 2,
# 8704 = 32 + 2, ...); these only in calls too small for the TMA kernel (``_staged_masked_bwd``)
STAGED_MASKED_BWD_N = STAGED_LN_SHORT_BWD_N
STAGED_MASKED_BELOW_TMA_N = (4608, 5120, 8192)


def _ln_short_rows(n: int, has_dbias: bool) -> bool:
    """Whether LayerNorm's staged backward of rows of n columns takes its short-row form (``STAGED_LN_SHORT_BWD_N``)."""
    return n in STAGED_LN_SHORT_BWD_N and (has_dbias or n not in STAGED_LN_NO_DB_BWD_N)


def _ln_short_rows_taken(m: int, n: int, has_dbias: bool) -> bool:
    """Whether the rule takes LayerNorm's short-row form (``_ln_short_rows``) in a call of m rows: with dB at
    ``STAGED_LN_FEW_ROWS_BWD_N`` in calls too small for the TMA's head and tail tiles (``_tma_call_large_enough``:
    fewer elements than ``TMA_MIN_ELEMENTS_LAYER_NORM``), which ran faster in calls large enough for them."""
    few_rows = not has_dbias or n not in STAGED_LN_FEW_ROWS_BWD_N or not _tma_call_large_enough(m, n, False)
    return _ln_short_rows(n, has_dbias) and few_rows


def staged_warps(n: int, is_rms: bool, has_dbias: bool) -> int:
    """Compute warps a program of the staged kernel at rows of n columns: RMSNorm's 4 at short rows (at most
    ``STAGED_SHORT_N`` columns) without dB, else 8; LayerNorm's 8 at every width. RMSNorm's short rows with dB (a
    bias, ``STAGED_RMS_SHORT_DB_BWD_N``) take LayerNorm's short-row form, 8 warps: at 4 they held 255 registers a
    thread and spilled at 7680 (round 115, compiled on the CPU; 8 warps 168, none spilled)."""
    return STAGED_SHORT_WARPS if is_rms and n <= STAGED_SHORT_N and not has_dbias else STAGED_WARPS


def staged_stages(n: int, is_rms: bool, has_dbias: bool) -> int:
    """Rows in flight a program of the staged kernel at rows of n columns (``norm_bwd_staged_kernel``'s STAGES): 3 at
    short rows (at most ``STAGED_SHORT_N`` columns; a forced config's narrower ones too), at RMSNorm's with dB at
    ``STAGED_RMS_DB_ONLY_BWD_N`` and at LayerNorm's (``STAGED_LN_SHORT_BWD_N``), else 2."""
    short = n <= STAGED_SHORT_N or (not is_rms and _ln_short_rows(n, has_dbias))
    short = short or (is_rms and has_dbias and n in STAGED_RMS_DB_ONLY_BWD_N)  # round 118
    return STAGED_SHORT_STAGES if short else STAGED_STAGES


# LayerNorm's dB at these widths, where the compute warps sum it: its last part's (its last two parts') in shared
# memory, not in registers beside dW (``norm_bwd_staged_kernel``'s DB_SHARED). With all in registers the compute warps
# spill 32-80 bytes a thread at 13824-15872 (sm_90); with the last part's in shared memory 4-12, the last two's 0-12
STAGED_DB_SHARED = {13824: 2, 14336: 2, 14848: 1, 15360: 1, 15872: 1}
# RMSNorm's with dB (a bias, round 114), on its own parts (``norm_bwd_staged.parts``): with all in registers its
# compute warps spill 20-52 bytes a thread at 12800, 13312 and 14848-15872 (sm_90, compiled on the CPU); so 0-4
STAGED_RMS_DB_SHARED = {12800: 2, 13312: 1, 13824: 2, 14336: 2, 14848: 2, 15360: 2, 15872: 2}


def staged_db_shared(n: int, is_rms: bool = False) -> int:
    """The staged kernel's parts at rows of n columns whose dB sum lies in shared memory (the last ones:
    ``STAGED_DB_SHARED``, RMSNorm's ``STAGED_RMS_DB_SHARED``, else 0)."""
    return (STAGED_RMS_DB_SHARED if is_rms else STAGED_DB_SHARED).get(n, 0)


# LayerNorm's backward with dB at these widths takes its row's two sums across the compute warps through a scratch of
# its own, not ``gl.reduce`` (``norm_bwd_staged_kernel``'s PAIR_SCRATCH): ``gl.reduce``'s exchange left them spilling 8
# bytes a thread (sm_90), reloaded from local memory just before the row's barrier; with the scratch none spill
STAGED_PAIR_SCRATCH_N = (14848, 15360, 15872)


def staged_pair_scratch(n: int, is_rms: bool, has_dbias: bool) -> bool:
    """Whether the staged kernel at rows of n columns takes LayerNorm's two row sums across its compute warps through
    a scratch of its own (``norm_bwd_staged._cross_warps_pair``): with dB at ``STAGED_PAIR_SCRATCH_N``. Elsewhere it
    ran x0.90-0.99 of ``gl.reduce`` (GPU run 775: 10240 x0.914, 13824 / 14336 x0.92-0.99 at 4096 fp16, x0.90 / 0.94
    at 32768 bf16; without dB x0.98-1.00), and RMSNorm's one sum keeps ``gl.sum``."""
    return not is_rms and has_dbias and n in STAGED_PAIR_SCRATCH_N


def staged_db_partition(n: int) -> tuple[int, int]:
    """The staged kernel's dB partition at rows of n columns: its warps and their registers a thread
    (``STAGED_DB_WARPS``; ``(0, 0)``: none, the compute warps sum dB)."""
    return STAGED_DB_WARPS.get(n, (0, 0))


def _pointer_rms_bwd(n: int, has_dbias: bool, has_mask: bool, is_rms: bool, x_fp16: bool, w_bytes: int) -> bool:
    """RMSNorm's backward of rows of 10240 columns of float16 x and 16-bit weights without dB: the pointer kernel's head
    tile of 8192 and tail of 2048 (``_rms_head_tail_bwd``), neither the staged kernel (``_staged_bwd``) nor the TMA
    (round 84).

    The tuner (GPU run 653, 4096 rows) timed that launch at 73.3 us against the call's 75.7, the staged kernel's (its
    row said the pointer kernel's launch, which ``bench.tune.heuristic_config`` printed without the staged kernel and
    the TMA then). In turns against the staged kernel (``bench.ab``, H200, runs 660-662): fp16 x1.049 / x1.048 / x1.030
    / x1.027 / x1.023 / x1.013 at 2048 / 3000 / 4096 / 8192 / 16384 / 32768 rows; by the TMA x1.021 at 4096. But bf16
    x0.978 / x0.971 at 16384 / 32768 rows, which keep the staged kernel (round 73 had timed it against the TMA's head
    and tail tiles, x1.000-1.036). Not at 12288 (round 85, run 665, fp16 against the staged kernel at 4096 / 2048 /
    32768 rows): the pointer kernel's 8192 + 4096 at 8 warps x0.905 / x0.954 / x0.865, the TMA's at 16 x0.958 / x0.949 /
    x0.954."""
    return is_rms and x_fp16 and w_bytes == 2 and n == 10240 and not has_dbias and not has_mask


def _staged_bwd(
    m: int, n: int, has_dbias: bool, has_mask: bool, is_rms: bool, x_bytes: int, w_bytes: int, slower_dram: bool
) -> bool:  # fmt: skip
    """RMSNorm's backward, 16-bit x and weights, at rows of ``STAGED_BWD_N`` (parts of 32, 8-16 and 2-16 rows of 256,
    ``norm_bwd_staged.parts``: 10240 as 32 + 8 and 12288 as 32 + 16, 13824 and 14848-15872 padded to three), with dB (a
    bias) too since round 114 (its last parts' dB in shared memory, ``staged_db_shared``), in calls of at least
    ``LIMITS["rms_bwd_staged_min_m"]`` rows, and without dB at its short rows ``STAGED_RMS_SHORT_BWD_N``
    (5632-7680) in calls of at least ``LIMITS["rms_bwd_staged_short_min_m"]`` rows at 5632-6656 (2560;
    ``STAGED_FEWER_ROWS_N``), ``LIMITS["rms_bwd_staged_7168_min_m"]`` at 7168-7680 (4096), with dB at 5632 and 6144
    (``STAGED_RMS_SHORT_DB_BWD_N``, 8 compute warps) in calls of at least
    ``LIMITS["rms_bias_bwd_staged_short_min_m"]`` rows (4096) and at 7168 / 7680
    (``STAGED_RMS_LONG_CALL_DB_BWD_N``) in calls of at least ``LIMITS["rms_bias_bwd_staged_7168_min_m"]`` (24576) where
    the DRAM is an H200's, and with dB only at 8704-9728
    (``STAGED_RMS_DB_ONLY_BWD_N``, 3 stages), but for ``STAGED_RMS_SLOWER_DRAM_N``'s widths (10752 without dB, 5632
    and 9728 with) where the DRAM is not slower than the H200's (``slower_dram``); LayerNorm's with dB at
    ``STAGED_LN_BWD_N`` and without dB (no bias) at
    ``STAGED_LN_NO_DB_BWD_N`` (every multiple of 512 from 10240 to
    15872), and at its short rows ``STAGED_LN_SHORT_BWD_N`` (4608-10240) with dB or without (with dB at 4608-5120 in
    calls of fewer than ``TMA_MIN_ELEMENTS_LAYER_NORM`` elements), in calls of at least
    ``LIMITS["ln_bwd_staged_min_m"]`` rows (with the clamped ReLU's mask: ``_staged_masked_bwd``): the Gluon kernel
    with rows staged in shared memory (``norm_bwd_staged.py``), one program a SM of 8 compute warps (4 at RMSNorm's
    short rows without dB, ``staged_warps``) and a load warp, 2 rows in flight (3 at the short rows, ``staged_stages``);
    LayerNorm's dB summed by 4 warps of its own at 10752-11776 (``staged_db_partition``), by the compute warps
    elsewhere.

    Round 69 (H200). In turns against the rule before it, which split these rows (run 548): at 4096 rows x1.159 /
    x1.126 / x1.057 at 12800 / 13312 / 14336 fp16 (bf16 x1.185 / x1.144 / x1.083), at 32768 x1.12-1.27, at 2048
    x1.015-1.121; at 1024, forced, x0.91-1.08, hence the fewest rows. Beside cuDNN at 4096 fp16 (run 549): 1.116 /
    0.969 / 0.961. Not taken (runs 547-548): 12288 (x0.98 of the head and tail tiles by the TMA,
    ``_rms_head_tail_bwd``), 13824, 14848 and 15360 (four parts, the last of 2 or 4 rows of 256 at 2-4 halves a
    thread: x0.955-0.971), 16 warps (128 registers a thread: x0.89-1.07 in the probe). LayerNorm's backward and dB's
    sums in the same kernel (run 550) ran x0.80-0.95 of the split rows.

    Round 70 (H200, runs 551-557). Rows of four binary digits padded to three parts, dW in registers at every width
    (no longer in shared memory above 13312). In turns at 4096 fp16 (run 554, the probe's kernel): 14336 x1.070 of
    dW in shared memory (101.5 us, cuDNN 103.8), 14848 as 32 + 16 + 16 x1.124 of the rule before (105.2 us, cuDNN
    109.2), 15360 x1.113 (107.7, cuDNN 1247). normkit's kernel against the rule before: 13824 as 32 + 16 + 8 (run
    554) x1.118 / x1.180 at 4096 / 32768 rows fp16 (bf16 x1.167 / x1.229), x1.083 at 2048 (bf16 x1.085), level at
    1024 (where it is not taken); 14336-15360 (run 555) x1.04-1.10 at 2048 rows, x1.10-1.17 at 4096, x1.16-1.22 at
    32768, cuDNN's time over normkit's 0.99-1.09 at 14336-14848 and 5.4-11.7 at 15360. Not taken: 12800 padded to
    32 + 16 + 4 (x0.995 of its digits).

    Round 71 (H200, runs 559-563). 15872 (62 rows of 256) as 32 + 16 + 16 against the rule before, which split its
    rows (``bench.ab``, run 560): x1.137 / x1.169 at 4096 rows fp16 / bf16, x1.096 at 2048 fp16, x1.241 at 32768 bf16;
    109.9 us at 4096 fp16, Liger's time over it 1.172, cuDNN's 11.7. Not taken (the kernel forced, run 559): 10240 and
    11264 (x0.991 / x0.984 of the head and tail tiles), 12288 (x1.003). Nor, at 12288-14336 and 32768 x 13312, 16
    warps (x0.988-1.003 of 8), 16 warps and 3 stages (x0.974-0.984), a load warp (``gl.warp_specialize``: x1.003-1.026
    at 2 stages, x0.98-1.02 at 3) or a cache hint on dx's stores (x0.996-1.011) (runs 559-563).

    Round 72 (H200, runs 565-572). The kernel stores its dW partial coalesced (``norm_bwd_staged._partial_layout``):
    x0.993-1.035 of the kernel before at 4096 rows fp16, x1.017-1.022 at 2048 (run 571). Beside the peers at 4096
    fp16 (run 572): cuDNN's time over normkit's 1.130 / 0.976 / 1.098 / 1.053 / 1.061 at 12800 / 13312 / 13824 /
    14336 / 14848, Liger's 1.198 / 1.171 at 15360 / 15872 (normkit 93.1 us at 13312, cuDNN 90.8).

    Round 73 (H200, runs 575-579). The kernel has a load warp. Against round 72's rule (run 575, ``bench.ab``):
    x1.005-1.041 at 4096 x 12800-15872 fp16, x1.008-1.022 at 2048, x1.023 / x1.007 at 4096 / 32768 x 13312 bf16; 12288,
    taken from the head and tail tiles, x1.030 / x1.007 at 4096 fp16 / bf16, x1.023 at 2048, x1.038 at 32768 bf16. 10240
    (from them too, runs 578-579) x1.000-1.031 at 4096 rows, x1.009-1.010 at 2048 (x0.981 in run 578), x1.036 at 32768
    bf16. Not taken (run 578): 9728 (x0.985), 10752 (x0.961), 11264 (x1.007 / x1.034 at 4096 / 2048, x0.984 at 32768
    bf16) and 11776 (x1.010 at 4096 only). Beside the peers at 4096 fp16 (runs 576, 579): cuDNN's time over normkit's
    0.984 / 1.011 / 1.131 / 0.980 / 1.097 / 1.063 / 1.044 at 12288 / 10240 / 12800 / 13312 / 13824 / 14336 / 14848,
    Liger's 1.214 / 1.211 at 15360 / 15872.

    Round 74 (H200, run 582). With the load warp, 3 stages (``STAGED_STAGES``), 16 compute warps
    (``STAGED_WARPS``) or both ran slower than this rule but for 3 stages at 4096 x 13312, 0.1% faster (``bench.ab``,
    the rule's speed over theirs): 3 stages x0.999-1.079, 16 warps x1.003-1.046, both x1.022-1.044 at 4096 x 10240-13312
    fp16 (5 rounds); x1.001-1.026 at 32768 x 12288 / 13312 bf16.

    Round 75 (H200, runs 587-591): LayerNorm's backward with dB (round 74's probe, ``.ab/probe/staged_ln75.py``). In
    turns against the split rows at 4096 fp16 (run 587): dB in 4 warps of their own x1.115 / 1.068 / 1.177 at 10752 /
    11264 / 11776, in the compute warps x1.138 at 12288 (4 warps of their own there x1.038); at 10240, 12800 and 13312
    every form ran slower (x0.78-0.99); dB in shared memory x0.89-0.95 at 10752-11776, x1.03 at 12288. At 2048 x 12800
    fp16 x0.92-0.94, at 32768 x 11776 / 12800 bf16 x1.017 / 1.010 (dB in the compute warps). As landed, against this
    rule before (``bench.ab``, runs 588-591): x1.04-1.16 at 4096 rows fp16 (zero-centered gamma included), x1.02-1.12 at
    2048, x1.12-1.24 at 32768 bf16. Beside the peers at 4096 fp16 (run 589): cuDNN's time over normkit's 2.04 / 2.15 /
    1.18 / 1.22 at 10752 / 11264 / 11776 / 12288, Liger's 2.2-2.3.

    Round 76 (H200, runs 593-597): LayerNorm's backward without dB, forced into the kernel against the rule before (the
    split rows or the head and tail tiles; run 593, ``.ab/probe/ln76.py``): x1.05-1.24 at 4096 x 10240-15872 fp16,
    x1.019 at 2048 x 13312 (zero-centered gamma). As landed, against the rule before in turns (run 595,
    ``.ab/probe/ln77.py``): x1.050-1.244 at every width of 4096 rows fp16 (3525-3547 GB/s at 14848-15872; zero-centered
    gamma x1.127 / 1.194 at 11264 fp16 / 14848 bf16), x1.013-1.160 at 2048, x1.075-1.267 at 32768 bf16 (4100 GB/s at
    15872). Not taken (run 597, forced): below 2048 rows, x0.959-1.128 at 1536 and 1024 without dB; with dB at 1536 rows
    x0.949-1.028 (dB warps) and x0.861-1.032 (compute warps), at 1024 x 11264 x0.88-0.90; with dB at 10240 (run 593)
    x0.963-0.973 (dB warps at 104 or 112 registers) and x0.84-0.87 (compute warps) at 4096 fp16 / 32768 bf16.

    Round 77 (H200, runs 600-604b): the widths are the same; LayerNorm's without dB at 12800-14336 are cut into parts of
    32 + 8 + 16 rows of 256 (``norm_bwd_staged.parts``), x1.12-1.13 at 4096 rows fp16. Beside the peers (the bench's
    ``ln_nobias_bwd``, run 600 and, after that change, run 603): 1.15-1.36x the best peer at every width of 4096 rows
    fp16, 1.13-1.24x at 32768 x 10752 / 13312 bf16 (run 600: 13312 before the change).

    Round 78 (H200, runs 605-608b): RMSNorm's short rows, 5632-7680 (22-30 rows of 256), from the whole-row kernel
    (a row in 8192's tile, 16 warps, one program a SM). The kernel forced there (``.ab/probe/stages78.py``, in turns
    with the rule before, 4096 rows fp16): at 8 warps and 2 stages x0.93-0.95 of the rule; 3 stages x0.98-1.07; 4 warps
    and 3 stages x1.004-1.092 (4 stages x1.010-1.103), x1.090 at 16384 x 5632, x1.070 in bf16. Not taken: 2048 rows
    (x0.96-0.98 at 3 stages), 4608 and 5120 (x1.004 / x0.981), 8704 and 9728 (x0.70-1.00 in every form); LayerNorm's
    backward there, with dB or without (x0.57-0.98 and x0.76-0.90).

    Round 79 (H200, runs 611-613): the short rows' fewest rows (``STAGED_FEWER_ROWS_N``). Forced in turns against the
    rule before at 2304-3584 rows: 5632-6656 gained from 2560 rows (x1.014-1.069), 7168 and 7680 by at most 2% at
    3072-3584 (7680 x0.986 at 3072), so 5632-6656 take the kernel from 2560 rows and 7168-7680 from 4096 as before.

    Round 94 (H200, GPU runs 711-713, against the split rows before): LayerNorm's with dB at 12800-13824, dB summed by
    the compute warps (round 77 had this form x0.89-0.98 there; round 93's parts' sums taken across the warps once a
    row). 12800 / 13312 / 13824 at 2048, 4096 and 32768 rows: fp16 x1.153 / x1.077 / x1.003, x1.227 / x1.138 / x1.044,
    x1.287 / x1.186 / x1.082 (96% of the copy at 32768 x 12800); bf16 x1.143 / x1.080 / x1.056, x1.221 / x1.141 /
    x1.117, x1.280 / x1.185 / x1.153; zero-centered at 4096 fp16 x1.222 / -, x1.126 at 13824. Not 14336 (x0.963 /
    x1.007 / x1.029 fp16, x0.964 / x1.014 / x1.029 bf16) nor 14848-15872 (x0.925-0.971 at 4096 fp16).

    Round 101 (H200, GPU runs 752-754): LayerNorm's short rows, 5632-10240 with dB and without, at 8 compute warps and
    3 stages (``STAGED_LN_SHORT_BWD_N``, where the measurements are), against the pointer kernel's launches before.

    Round 102 (H200, GPU runs 757-759): 4608 and 5120 too, with dB in calls of at most 4096 rows
    (``STAGED_LN_FEW_ROWS_BWD_N``, where the measurements are); round 103 (GPU runs 762-763) in calls of up to 7281 /
    6553 rows, too small for the TMA's head and tail tiles.

    Round 104 (H200, GPU runs 768-771): LayerNorm's with dB at 14336 from 2048 rows, 14848 from 4096 and 15360-15872
    from 8192 (then ``STAGED_LN_WIDE_BWD_MIN_M``, gone in round 105), its last parts' dB in shared memory at 13824-15872
    (``STAGED_DB_SHARED``): against the rule before x1.19 / x1.16 at 4096 x 13824 / 14336 fp16, x1.06 at 4096 x 14848,
    x1.02-1.03 at 8192 x 15360-15872 (x1.00 at 4096, x0.96 at 2048), x1.10-1.23 at 32768 bf16.

    Round 105 (H200, GPU runs 775-777): 14848-15872 with dB from 2048 rows, their row sums across the compute warps
    through the kernel's scratch (``staged_pair_scratch``): against round 104's rule x1.143 / x1.094 / x1.081 at 2048
    x 14848 / 15360 / 15872 fp16, x1.19 / x1.13 / x1.11 at 3072, x1.159 / x1.165 / x1.150 at 4096, x1.19 / x1.17 /
    x1.16 at 8192, x1.145 / x1.129 / x1.111 at 32768 bf16.

    Round 114 (H200, GPU run 832, in turns against the rule before, ``bench.ab``, GB/s, ``rms_bias_bwd``): RMSNorm's
    backward with dB, which took the split rows of 1024 (the TMA's head and tail tiles at 10240) where without dB it
    is staged. Staged: at 4096 rows fp16 x1.037 / x1.175 / x1.173 / x1.199 / x1.182 / x1.161 at 10240 / 12288 / 12800 /
    13312 / 14336 / 15872 (82% of the copy at 13312-15872; cuDNN's graph 215.2 us at 13312, normkit's 94.9, 93.6
    without dB), x1.475 at 32768 x 13312 bf16 (100% of the copy). Not at the short rows: x1.004 / x1.049 / x0.746 at
    4096 x 5632 / 6144 / 7680 fp16 (4 compute warps, 3 stages), which keep their tiles with dB.

    Round 117: at 10752-11776 too (``STAGED_RMS_MID_BWD_N``), where the split rows ran; dB in 4 warps of their own as
    LayerNorm's there (``STAGED_DB_WARPS``). In turns against the rule before, with dB: H200 (GPU run 833, round 114's
    probe) x1.202 / x1.180 / x1.209 at 4096 x 10752 / 11264 / 11776 fp16 (78-79% of the copy; 11776 was 0.94 of
    cuDNN), x1.487 / x1.444 at 32768 x 10752 / 11264 bf16 (98%); H100 (run 834, as landed) x1.075 / 1.055 / 1.069 at
    4096 fp16, x1.042 / 1.045 at 2048 x 10752 / 11776, x1.173 / 1.146 / 1.160 at 32768 bf16. Without dB, H100 only
    (runs 834-835): x1.040 / 1.018 / 1.018 at 4096 fp16, x1.007 / 1.011 at 2048 x 10752 / 11776, x1.019 / 1.004 /
    1.005 at 32768 bf16.

    Round 118 (H100, GPU run 837, in turns against the rule before, ``rms_bias_bwd``): with dB at the short rows
    5632 / 6144 (``STAGED_RMS_SHORT_DB_BWD_N``) in LayerNorm's short-row form, 8 compute warps and 3 stages, where the
    pointer kernel's tiles ran: x1.046 / x1.018 at 8192 rows fp16, x1.058 / x1.015 at 16384, x1.066 / x1.004 at 32768
    (5632 at 98% of the copy), bf16 x1.048 at 8192 x 5632 and x1.060 / x1.015 at 16384. From 8192 rows: at 4096 fp16
    x1.006 / x0.995 and at 2560 x0.975 (run 836); at 6656-7680 x0.94-0.99 at 2560-32768 rows (run 836), not taken.
    In 4 compute warps as without dB (5632-6656 from 2560 rows, run 839): x0.96-1.02, not taken. With dB at 8704 /
    9216 / 9728 (``STAGED_RMS_DB_ONLY_BWD_N``; the TMA's head and tail tiles ran, 0.940 of cuDNN at 4096 x 9216 fp16,
    run 839), 8 compute warps and 3 stages (run 840): x1.016 / x1.042 / x1.024 at 4096 rows fp16, x1.067 at 2048 x
    9216, x1.058 at 32768 x 9216 bf16 (100% of the copy); with 2 stages and dB in 4 warps of their own (as at
    10752-11776) x1.036 / x1.022 / x1.016, x1.068, x1.011. On an H200 (run 842), in turns against the rules before:
    with dB x1.106 / x1.027 / x0.978 at 4096 x 8704 / 9216 / 9728 fp16; without dB at 10752-11776 (round 117's, timed on
    the H100 only till then) x0.942 / x1.008 / x1.018. So 9728 with dB and 10752 without take the staged kernel on
    slower DRAM only (``STAGED_RMS_SLOWER_DRAM_N``).

    Round 119 (H200, GPU runs 843-845, in turns, ``rms_bias_bwd``): round 118's short rows with dB, fitted on an H100,
    against the rule before them: 5632 x0.940 / 0.932 at 8192 / 16384 rows fp16, x0.953 / 0.954 at 8192 / 32768 bf16
    (the staged kernel 326 us at 32768 bf16, cuDNN's graph 439, the tiles faster still); 6144
    x1.093 / 1.109 fp16, x1.127 at 32768 bf16 (97% of the copy). So 5632 with dB joins the slower-DRAM widths. Forced
    from 2048 rows against the rule (probe p1): 6144 x1.037 at 4096 fp16 (the H100 x0.995 there, run 836), x0.947 at
    2048, so 6144 (and 5632 on slower DRAM, x1.006 at 4096 on the H100) from 4096 rows; 6656 / 7168 / 7680 x0.979 /
    0.987 / 0.985 at 4096 fp16, x1.012 / 1.024 / 1.035 at 32768 bf16 (the H100 x0.94-0.99), not taken.

    Round 120 (H200, GPU runs 848-849, probe p2: 6656-7680 with dB staged from 16384 rows where the DRAM is not slower,
    in turns against the rule before): 16384 rows fp16 x0.992 / x1.001 / x1.007 at 6656 / 7168 / 7680, 32768 fp16
    x1.008 / x1.017 / x1.026, 24576 bf16 x1.015 / x1.021 at 7168 / 7680, 65536 bf16 x1.031 / x1.043 (100% of the copy
    at 7680). So 7168 / 7680 with dB (``STAGED_RMS_LONG_CALL_DB_BWD_N``) from 24576 rows
    (``LIMITS["rms_bias_bwd_staged_7168_min_m"]``) on an H200's DRAM; 6656 not.
    """
    if x_bytes != 2 or w_bytes != 2:
        return False
    if has_mask:  # LayerNorm + clamped ReLU's (RMSNorm has no mask)
        return not is_rms and _staged_masked_bwd(m, n)
    if is_rms:  # with dB (a bias) or without (round 114); with dB at the short rows 5632 / 6144 (round 118) and
        # 7168 / 7680 in long calls (round 120)
        if n in STAGED_RMS_SLOWER_DRAM_N[has_dbias] and not slower_dram:  # rounds 118-119
            return False
        if n in STAGED_RMS_SHORT_BWD_N:
            if has_dbias:  # round 118
                if n in STAGED_RMS_LONG_CALL_DB_BWD_N:  # round 120
                    return not slower_dram and m >= LIMITS["rms_bias_bwd_staged_7168_min_m"]
                return n in STAGED_RMS_SHORT_DB_BWD_N and m >= LIMITS["rms_bias_bwd_staged_short_min_m"]
            fewer = n <= STAGED_FEWER_ROWS_N
            return m >= LIMITS["rms_bwd_staged_short_min_m" if fewer else "rms_bwd_staged_7168_min_m"]
        if has_dbias and n in STAGED_RMS_DB_ONLY_BWD_N:  # round 118
            return m >= LIMITS["rms_bwd_staged_min_m"]
        return n in STAGED_BWD_N + STAGED_RMS_MID_BWD_N and m >= LIMITS["rms_bwd_staged_min_m"]
    widths = STAGED_LN_BWD_N if has_dbias else STAGED_LN_NO_DB_BWD_N
    return (n in widths or _ln_short_rows_taken(m, n, has_dbias)) and m >= LIMITS["ln_bwd_staged_min_m"]


def _staged_masked_bwd(m: int, n: int) -> bool:
    """Whether LayerNorm + clamped ReLU's backward (16-bit x and weights, with dB or without) takes the whole-row staged
    kernel: at ``STAGED_MASKED_BWD_N`` in calls of at least ``LIMITS["ln_masked_bwd_staged_min_m"]`` rows, at
    ``STAGED_MASKED_BELOW_TMA_N`` only in calls the TMA kernel does not take (too small, ``_tma_call_large_enough``,
    or of 4096 rows or fewer, which ``_tma_bwd`` gives no masked launch).

    Round 110 (H200, GPU runs 812-813; in turns against the rule before, ``ln_relu_bwd`` with dB, 3 rounds): at 4096
    rows fp16 x1.149 / 1.109 / 1.053 / 1.224 at 6144 / 7680 / 8192 / 10240 (the split rows' parts of 1024 at 6144, the
    one-row programs of 8192 columns at 7680-8192, the head and tail tiles at 10240), which takes the masked backward
    to 1.014 / 1.022 / 1.021x the plain one's time at 6144 / 7680 / 8192 (1.17 / 1.14 / 1.08x before: target 3 met
    there); at 32768 rows bf16 x1.242 / 1.149 at 6144 / 10240 (97-98% of the copy), but x0.986 at 8192 (the TMA kernel,
    95% of the copy); at 3072 rows fp16 x1.083 / 1.013 at 7680 / 8192; at 2048 x 8192 fp16 x0.985.

    Round 111 (H200, GPU run 816, the same way): the widths whose parts have fewer rows of 256 than warps
    (``norm_bwd_staged.mask_layout``'s lanes sharing a byte). At 4096 rows fp16 x1.169 / 1.110 / 1.219 / 1.185 / 1.193
    / 1.304 / 1.220 / 1.319 at 4608 / 5120 / 5632 / 6656 / 7168 / 8704 / 9216 / 9728; at 32768 rows bf16 x1.285 /
    1.178 / 1.142 / 1.309 / 1.274 / 1.216 at 5632-9728 (94-101% of the copy), but x1.002 / 0.985 at 4608 / 5120 (the
    TMA kernel), which keep it in calls large enough for it. Not 4096 (x0.939 at 4096 rows) nor 3072 (x0.921, run
    815), where the plain backward keeps the pointer kernel too.

    Round 114 (GPU run 827): without dB the same. Until then the TMA kernel had no launch for the masked backward
    without dB, so at 4608 / 5120 / 8192 in calls large enough for it that backward ran the pointer kernel's tiles;
    with its launches with dB (``_tma_bwd``) the staged kernel ran x0.920 / 0.974 / 0.993 of them at 32768 rows bf16,
    x0.975 / 0.997 / 1.024 at 8192 rows fp16."""
    # asked of ``_tma_bwd`` itself (16-bit x and weights, as here; with dB or without, the same launch since round 114),
    # which gives the masked backward no launch at 4096 rows: 4096 x 8192 (2**25 elements) stays staged
    by_tma = _tma_call_large_enough(m, n, False) and _tma_bwd(_rows_key(m), n, True, True, False, 2, 2) is not None
    return (
        n in STAGED_MASKED_BWD_N
        and m >= LIMITS["ln_masked_bwd_staged_min_m"]
        and not (n in STAGED_MASKED_BELOW_TMA_N and by_tma)
    )


# the backward of long rows by the split staged Gluon kernel (``_split_staged_bwd``): a program stages a slice of its
# rows (``split_staged_slice``'s columns, some rows in flight) and holds the slice's weights in registers; from
# ``LIMITS["split_staged_min_m"]`` rows (4096), LayerNorm's with dB at 16384 columns from
# ``LIMITS["ln_dbias_split_staged_16384_min_m"]`` (8192)
SPLIT_STAGED_RMS_BWD_N = (16384, 32768, 65536)
SPLIT_STAGED_LN_BWD_N = (16384, 32768, 65536)  # with dB (65536 since round 97, with a warp's sums)
SPLIT_STAGED_LN_NO_DB_BWD_N = (16384, 32768, 65536)
SPLIT_STAGED_WIDE_N = (32768, 65536)  # without dB: in slices of 16384
# a slice's columns -> (its compute warps, its rows in flight): 16384's 3 stages of x and dy take 192 KB
SPLIT_STAGED_SLICES = {8192: (8, 4), 16384: (16, 3)}


def split_staged_slice(n: int, has_dbias: bool) -> int:
    """The columns of the split staged backward's slices of rows of n (``_split_staged_bwd``): 16384 at
    ``SPLIT_STAGED_WIDE_N`` without dB, else 8192. LayerNorm's with dB keeps 8192: at 16 compute warps its dW and dB
    terms spill (48 bytes of stack a thread at 65536, compiled for sm_90)."""
    return 16384 if not has_dbias and n in SPLIT_STAGED_WIDE_N else 8192


def split_staged_weights_shared(has_dbias: bool) -> bool:
    """Whether the split staged backward stages its slice of the weights in shared memory by the TMA (round 86's form;
    LayerNorm's with dB), rather than reading them from global memory into registers (round 87; the rest). Read from
    global memory LayerNorm's with dB at 32768 ran x0.984 / x0.989 / x0.992 of the staged weights at 32768 / 8192 /
    4096 rows (GPU run 679), where the others gained: the shared memory they free gives slices of 16384 a third stage
    (``SPLIT_STAGED_SLICES``)."""
    return has_dbias


# the masked backward with dB at these columns: one row ahead, this row's sums fetched first, a warp's sums each
SPLIT_STAGED_MASKED_ONE_AHEAD_N = (32768,)  # 65536 too in rounds 98-99


def _masked_one_ahead(n: int, has_dbias: bool, has_mask: bool) -> bool:
    """Whether the masked backward (with dB) at n columns takes ``SPLIT_STAGED_MASKED_ONE_AHEAD_N``'s form: one row
    ahead (``split_staged_ahead``), this row's sums fetched before the next row's publish
    (``split_staged_fetch_first``), a warp's sums each (``split_staged_warp_sums``).

    Round 98 (H200, bf16 x, float32 weights but where fp16 is named; the form forced in turns against round 97's rule
    of two rows ahead, GPU runs 734-735, GB/s now over before): the masked backward x1.113 at 32768 x 32768 (92% of the
    copy: 1.041x the plain backward's time, 1.16x before), x1.121 at 32768 x 65536, x1.135 / x1.103 at 4096 x 32768 /
    65536 fp16; not at 16384 (x0.991). LayerNorm's plain backward with dB in this form ran x0.912 / x0.927 / x0.993 at
    32768 x 16384 / 32768 / 65536, so it keeps two rows ahead. As landed (run 736, against round 97's rule): x1.108 /
    x1.123 / x1.128 at 32768 / 8192 / 4096 x 32768, x1.123 at 8192 x 65536; the masked backward 1.045x the plain
    backward's time at 32768 x 32768 and 0.951x at 32768 x 65536 (90.4% of the copy, the plain one 84.2%).

    Round 100 (GPU runs 749-750, with the row statistics staged, ``split_staged_stats_staged``): at 65536 the plain
    backward's order (two rows ahead) in 5 stages (``split_staged_stages``) x1.023 / x1.015 / x1.027 at 32768 / 8192 /
    4096 rows (the last fp16), in 4 stages x1.001, so 65536 left this form; at 32768 x 32768 that order ran x0.850 (5
    stages) / x0.860 (4)."""
    return has_mask and has_dbias and n in SPLIT_STAGED_MASKED_ONE_AHEAD_N


def split_staged_ahead(n: int, has_dbias: bool, is_rms: bool, has_mask: bool = False) -> int:
    """The rows the split staged backward's pass one runs ahead (``norm_bwd_staged._split_compute``'s AHEAD): 2 for
    LayerNorm's in slices of 8192 (``split_staged_slice``: with dB, and without at 16384), which fetch each row's slice
    sums a step before they use them, but the masked backward's with dB at 32768 (``_masked_one_ahead``), else 1
    (the next row's published after this row's sums are fetched or before: ``split_staged_fetch_first``).

    Round 88 (H200, GPU run 682, the probe's forms forced at 32768 rows of bf16 x, float32 weights, in turns, their
    speed over round 87's rule): LayerNorm's with dB two rows ahead x1.037 / x1.038 at 32768 / 16384 columns (4 or 5
    stages alike), this row's fetched before the publish x0.977 / x0.987; RMSNorm's at 16384 two rows ahead x0.987 at
    4 stages, x1.002 at 5 (fetched before the publish x1.024; at 65536 in slices of 16384 x1.010, LayerNorm's without
    dB there x1.040: that order is ``split_staged_fetch_first``'s since round 89). Round 89 (GPU run 688, in turns
    against the landed rule's other forms): LayerNorm's without dB at 32768 x 16384 two rows ahead x1.028 over one
    (x1.001 at 8192 rows, where the rule does not take the kernel), RMSNorm's there x0.968 of the sums fetched
    first."""
    if _masked_one_ahead(n, has_dbias, has_mask):
        return 1
    return 2 if not is_rms and split_staged_slice(n, has_dbias) == 8192 else 1


SPLIT_STAGED_FETCH_FIRST_N = {True: (16384, 65536), False: (32768, 65536)}  # without dB, by is_rms


def split_staged_fetch_first(n: int, has_dbias: bool, is_rms: bool, has_mask: bool = False) -> bool:
    """Whether the split staged backward one row ahead fetches this row's slice sums before it publishes the next
    row's (``norm_bwd_staged._split_compute``'s FETCH_FIRST), so the trip to L2 for them overlaps the publish: without
    dB at ``SPLIT_STAGED_FETCH_FIRST_N`` (RMSNorm at 16384 and 65536, LayerNorm at 32768 and 65536), and the masked
    backward with dB at 32768 (``_masked_one_ahead``).

    Round 89 (H200, bf16 x, float32 weights; ``bench.ab`` against round 88's rule, GPU run 687, GB/s now over before
    at 32768 / 8192 rows): LayerNorm without dB at 32768 x1.048 / x1.061, 65536 x1.043 / x1.051 (95-97% of the copy at
    32768 rows), RMSNorm at 16384 x1.020 (32768 rows), 65536 x1.012 / x1.020; not taken: LayerNorm without dB at 16384
    x0.974 (slices of 8192, two reductions a row; it runs two rows ahead, ``split_staged_ahead``), RMSNorm at 32768
    x0.995 / x1.002. LayerNorm's with dB runs two rows ahead, where this order ran x0.977-0.987 (run 682's probe). As
    landed with ``split_staged_ahead`` (runs 688-689, against round 88's rule): at 32768 rows LayerNorm without dB at
    16384 / 32768 / 65536 x1.028 / x1.056 / x1.046 (86 / 97 / 95% of the copy), RMSNorm x1.022 / x1.002 / x1.011; at
    4096 rows LayerNorm without dB at 32768 / 65536 x1.070 / x1.079, RMSNorm at 16384 / 65536 x1.020 / x1.020."""
    return (not has_dbias and n in SPLIT_STAGED_FETCH_FIRST_N[is_rms]) or _masked_one_ahead(n, has_dbias, has_mask)


# the split staged backward's row sums published a warp each (``split_staged_warp_sums``), by has_mask: LayerNorm's
# at these columns
SPLIT_STAGED_WARP_SUMS_N = {False: (16384, 32768), True: (16384,)}
SPLIT_STAGED_WARP_SUMS_DB_N = (65536,)  # with dB, masked or not


def split_staged_warp_sums(n: int, has_dbias: bool, is_rms: bool, has_mask: bool) -> bool:
    """Whether the split staged backward publishes its row sums a warp each (``norm_bwd_staged._split_compute``'s
    WARP_SUMS): each warp's two sums within the warp, to a slot of its own, and every warp fetches and adds all the
    row's slots, so no exchange between the compute warps (two or three CTA barriers a row) stands in a step; else a
    slice's sums as one reduction over the warps. LayerNorm's at ``SPLIT_STAGED_WARP_SUMS_N`` (the masked
    backward's at 16384) and, with dB, masked or not, at ``SPLIT_STAGED_WARP_SUMS_DB_N``; the masked backward's with dB
    at 32768 too (``_masked_one_ahead``).

    Round 96 (H200, bf16 x, float32 weights, in turns against round 95's kernel, GB/s now over before). GPU run 726,
    every form a warp each: LayerNorm's with dB at 32768 x 16384 / 32768 x1.075 / x1.115 (92 / 95% of the copy), at
    4096 x 32768 fp16 x1.137; the masked backward at 32768 x 16384 x1.106 (91%), but at 32768 x 32768 x0.981;
    RMSNorm's x0.965 / x0.988 / x0.976 at 32768 x 16384 / 32768 / 65536, x0.985 at 4096 x 32768 fp16; LayerNorm's
    without dB at 32768 x 65536 x1.000. Run 727: without dB at 32768 x 16384 / 32768 x1.070 / x1.022, 8192 x 32768
    x1.026; the masked at 32768 x 32768 x0.984, 8192 x 32768 x0.991; as landed (dB's forms), x1.107 / x1.075 / x1.084
    the masked / LayerNorm's / zero-centered at 32768 x 16384, LayerNorm's x1.116 at 32768 x 32768, x1.084-1.137 at
    8192 and 4096 rows.

    Round 97 (GPU runs 729-730, against round 96's rule, which kept LayerNorm's with dB at 65536 on the split rows):
    with dB at 65536 (``SPLIT_STAGED_WARP_SUMS_DB_N``, ``SPLIT_STAGED_LN_BWD_N``), the masked backward too, in 8
    slices of 8192 a row: LayerNorm's x1.061 / x1.057 / x1.192 at 32768 / 8192 / 4096 rows (the last fp16), the
    zero-centered x1.057, the masked x1.210 / x1.177 / x1.083. Nsight Compute on the masked backward at 32768 x 32768
    (run 729): 1.85 ms with a slice's sums, 1.88 with a warp's; DRAM 73.9 / 72.6% of peak, L2 81.3 / 80.9%."""
    if _masked_one_ahead(n, has_dbias, has_mask):
        return True
    return not is_rms and (n in SPLIT_STAGED_WARP_SUMS_N[has_mask] or has_dbias and n in SPLIT_STAGED_WARP_SUMS_DB_N)


# LayerNorm's backward with dB (its slices of 8192 and their weights staged): rows in flight; the masked one's at
# these columns only; LayerNorm's without dB at 16384 too (round 103)
SPLIT_STAGED_DB_STAGES = 5
SPLIT_STAGED_MASKED_DB_STAGES_N = (16384, 65536)


def split_staged_stages(n: int, slice_n: int, has_dbias: bool, has_mask: bool, is_rms: bool) -> int:
    """Rows in flight of the split staged backward at n columns in slices of ``slice_n`` (``SPLIT_STAGED_SLICES``),
    but LayerNorm's with dB: ``SPLIT_STAGED_DB_STAGES`` (5 stages of x and dy and the slice's weights staged take
    229484 bytes of shared memory, compiled for sm_90), the masked one's at ``SPLIT_STAGED_MASKED_DB_STAGES_N`` only
    (its mask's bytes beside 5 stages leave no room for the partial's layout change, so it stores its dW and dB
    partials as they lie: ``norm_bwd_staged._scratch_fits``); and LayerNorm's without dB at 16384 (slices of 8192,
    its weights read from global memory), not masked: ``SPLIT_STAGED_DB_STAGES`` too (round 103).

    Round 103 (H200, GPU run 766, a probe in turns against 8693ac4's rule, ``bench.ab``, GB/s now over before):
    LayerNorm's backward without dB at 16384 in 5 stages x1.057 at 32768 rows bf16 x float32 weights (97% of the copy;
    830 us against 788 with dB in run 763), with the weights staged and the row statistics staged too x1.054 (bf16
    weights x1.050, 8192 rows x1.054); the statistics or the weights staged alone in 4 stages x1.005. Not timed at 4096
    rows, nor RMSNorm's or the masked backward's without dB.

    Round 99 (H200, bf16 x, float32 weights; the form forced by a probe in turns against round 98's rule of 4 stages,
    GPU run 742, GB/s now over before): x1.033 at 32768 x 32768 (98% of the copy), x1.007 at 32768 x 65536; 3 stages
    x0.687-0.696. As landed (run 743, against round 98's rule): x1.051 / x1.035 / x1.006 at 32768 x 16384 / 32768 /
    65536 (96.8 / 97.7 / 84.6% of the copy); not timed at fewer rows.

    Round 100 (GPU runs 747-750, with the row statistics staged, ``split_staged_stats_staged``; in turns against that
    kernel): the masked backward in 5 stages, its partials stored as they lie, x1.025 at 32768 x 16384 in a probe
    (x1.026 / x1.016 at 32768 / 8192 rows as landed, run 749), at 65536 in the plain backward's order x1.023
    (``_masked_one_ahead``); one row ahead in 5 stages x1.000 / x0.995 at 32768 x 32768 / 65536, x0.990 / x0.993 at
    4096 x 32768 / 65536 fp16; its partials stored so in 4 stages x0.997 / x1.001 at 32768 x 16384 / 32768."""
    if slice_n == 8192 and has_dbias and (not has_mask or n in SPLIT_STAGED_MASKED_DB_STAGES_N):
        return SPLIT_STAGED_DB_STAGES
    if slice_n == 8192 and n == 16384 and not (has_dbias or has_mask or is_rms):
        return SPLIT_STAGED_DB_STAGES
    return SPLIT_STAGED_SLICES[slice_n][1]


def split_staged_stats_staged(has_dbias: bool) -> bool:
    """Whether the split staged backward's load warp stages each row's mean and rstd with its slice
    (``norm_bwd_staged._split_loader``'s STATS_STAGED): LayerNorm's with dB, masked or not. Else the compute warps
    load them from global memory a row or two ahead and carry them in registers from step to step: ptxas moves the
    loaded pair into uniform registers at the step's end for that rotation, so each step waits out the load's trip
    (19% of the plain backward's warp samples at 32768 x 65536 in Nsight Compute, GPU run 740).

    Round 100 (H200, bf16 x, float32 weights but where fp16 is named; a probe in turns against round 99's kernel, GPU
    run 746, GB/s now over before): LayerNorm's with dB x0.996 / x1.003 / x1.129 at 32768 x 16384 / 32768 / 65536 (96%
    of the copy at 65536, 84% before), x0.997 / x1.125 at 4096 x 32768 / 65536 fp16; the masked backward x1.015 /
    x1.037 / x1.011, x1.042 / x1.024 at 4096 rows. Not taken: LayerNorm's without dB x1.004 / x0.946 / x0.998,
    RMSNorm's x1.005 / x1.000 / x0.985 (x0.999 / x0.987 at 4096 fp16)."""
    return has_dbias


class SplitStagedForm(NamedTuple):
    """The split staged backward's form for a call (``split_staged_form``): its rows in flight, its slice's weights
    staged, the rows its pass one runs ahead, the order of its sums' fetch, its sums a warp's each and its row
    statistics staged."""

    stages: int
    weights_shared: bool
    ahead: int
    fetch_first: bool
    warp_sums: bool
    stats_staged: bool


def split_staged_form(n: int, slice_n: int, has_dbias: bool, is_rms: bool, has_mask: bool) -> SplitStagedForm:
    """The split staged backward's form at n columns in slices of ``slice_n`` (``split_staged_slice``), each field
    its rule's: ``split_staged_stages``, ``split_staged_weights_shared``, ``split_staged_ahead``,
    ``split_staged_fetch_first``, ``split_staged_warp_sums``, ``split_staged_stats_staged``."""
    return SplitStagedForm(
        split_staged_stages(n, slice_n, has_dbias, has_mask, is_rms), split_staged_weights_shared(has_dbias),
        split_staged_ahead(n, has_dbias, is_rms, has_mask), split_staged_fetch_first(n, has_dbias, is_rms, has_mask),
        split_staged_warp_sums(n, has_dbias, is_rms, has_mask), split_staged_stats_staged(has_dbias),
    )  # fmt: skip


def _split_staged_bwd(m: int, n: int, has_dbias: bool, has_mask: bool, is_rms: bool, x_bytes: int) -> bool:
    """Whether the backward of m x n takes the split staged Gluon kernel (``norm_bwd_staged.split_staged_kernel``):
    16-bit x, calls of at least ``LIMITS["split_staged_min_m"]`` rows (4096), RMSNorm's at ``SPLIT_STAGED_RMS_BWD_N``
    columns (with dB since round 114, in LayerNorm's form with dB: slices of 8192, 5 stages, the weights and the row
    statistics staged; GPU run 832, against the pointer kernel's tiles and the split rows before: x1.951 / 1.110 /
    1.105 at 4096 x 16384 / 32768 / 65536 bf16 x float32, x1.645 / 1.279 at 32768 x 16384 / 32768 bf16, 90-92% of
    the copy), LayerNorm's (and LayerNorm + clamped ReLU's, ``has_mask``: the same rule) with
    dB at ``SPLIT_STAGED_LN_BWD_N``, without at ``SPLIT_STAGED_LN_NO_DB_BWD_N``, with dB at 16384 from
    ``LIMITS["ln_dbias_split_staged_16384_min_m"]`` rows (8192); 16-bit or float32 weights. Each row in slices
    (``split_staged_slice``: of 16384 columns at 32768 and 65536 without dB, else of 8192), one program a slice on one
    SM: a load warp stages the program's slices of x and dy by the TMA (3 rows in flight for slices of 16384, 4 for
    8192, 5 for LayerNorm's with dB but the masked one's at 32768, and for LayerNorm's without dB at 16384:
    ``split_staged_stages``), with dB each row's mean and rstd too (``split_staged_stats_staged``), and its compute
    warps (16 or 8) publish a row's slice sums a row or two ahead of its dx (``split_staged_ahead``,
    ``split_staged_fetch_first``), as the split rows' ``AHEAD``. The slice's weights are held in registers, read from
    global memory but with dB (``split_staged_weights_shared``). The masked backward's bits are staged by the TMA
    with x and dy (a byte for each thread's 8 columns of a row of 256) and tested in both passes. ``split_staged_form``
    gathers these rules.

    Round 91 (H200, bf16 x, float32 weights but where fp16 is named; ``bench.ab`` against round 90's rule, GPU run
    699, GB/s now over before): the masked backward (with dB) at 16384 / 32768 columns x1.053 / x1.245 at 32768 rows
    (81% of the copy; 1.07x / 1.06x the plain backward's time, 1.13x / 1.32x before), x1.036 / x1.248 at 8192 rows,
    x1.267 at 4096 x 32768 fp16. Its bits first read from global memory in both passes ran x0.863 / x1.001 at 32768
    rows (run 698: each step waited on the bytes' trip), hence staged by the TMA with x and dy. Not taken: with dB at
    65536 (x1.010 of the split rows, run 699, 67% of the copy either way: LayerNorm's plain backward keeps the split
    rows there too; taken in round 97 with a warp's sums, ``split_staged_warp_sums``), the masked dy stored back over
    the stage in pass one for pass two to read (x0.983-0.993, run 700).

    Round 89 (H200; ``bench.ab`` against 9d9fd24, GPU run 691, GB/s now over before): LayerNorm's at 16384 columns,
    two rows ahead since rounds 88-89 (``split_staged_ahead``), at fewer than 32768 rows: without dB x1.029 / x1.053 /
    x1.062 at 4096 / 8192 / 16384 rows of bf16 x, fp32 weights (x1.055 / x1.069 at 4096 / 8192 of fp16), so from 4096
    rows; with dB x0.994 / x1.017 / x1.032 (fp16 x1.007 / x1.018), so from 8192.

    Round 87 (H200, bf16 x, float32 weights; ``bench.ab`` against round 86's rule, GPU runs 680 at 32768 rows and 679
    at 8192 / 4096, GB/s now over before): RMSNorm at 32768 x1.084 / x1.096 / x1.087, 65536 x1.159 / x1.164 / x1.151
    (97-98% of the copy at 32768 rows); LayerNorm without dB at 32768 x1.134 / x1.115 / x1.098, 65536 x1.137 / x1.106
    / x1.083 (split rows before), 16384 x1.027 at 32768 rows (slices of 8192, the weights from global memory); the
    rest x0.999-1.001. Slices of 16384 need the weights out of shared memory: at 2 stages (the weights staged) they
    ran x1.02 at RMSNorm's 65536 and x0.93-0.94 at 32768 (run 677; with pass one a row ahead, a program holds two rows
    staged, so 2 stages leave none in flight), at 3 x1.08-1.16 (run 678). Slices of 8192 ran 128 of an H200's 132 SMs
    at 65536 columns (8 a row); slices of 16384 take all 132. LayerNorm's with dB spills at 16 compute warps (48 bytes
    of stack a thread) and ran x0.86 of the split rows there (run 678).

    Round 86 (H200, bf16 x, float32 weights). In turns against the rule before (``bench.ab``, GPU run 674; GB/s now over
    before at 32768 / 8192 / 4096 rows): RMSNorm at 16384 x1.044 / x1.031 / x1.037 (chunked rows before), 32768
    x1.104 / x1.077 / x1.062, 65536 x1.059 / x1.052 / x1.049 (split rows); LayerNorm with dB at 32768 x1.054 / x1.043 /
    x1.040, at 16384 x1.009 / x0.982 / x0.969 (so from 32768 rows), at 65536 x1.000 (not taken); without dB at 32768
    x1.050 / x1.046 / x1.040, at 16384 x1.030 / x0.999 / x0.993, at 65536 x0.971 / x0.970 / x0.960 (not taken).
    Beside cuDNN at 32768 rows (run 674, 3 rounds in turns; us): RMSNorm 824.1 / 1683.1 / 3655.2 at 16384 / 32768 /
    65536 against 853.1 / 2373.3 / 3665.4 (1.035 / 1.410 / 1.003 of its speed; 92.5 / 90.6 / 83.4% of the copy),
    LayerNorm 931.3 / 1870.9 at 16384 / 32768 against 933.7 / 1954.4 (1.003 / 1.045). Forms of the probe (run 673,
    ``benchmarks/results/logs/round86_probe.py.txt``) that ran slower, their time over this form's at 32768 rows:
    each row's sums read in the step that published them (no ``AHEAD``; RMSNorm at 65536, run 672) 1.8-3.9x, the
    weights loaded from shared memory in both passes rather than held 1.05-1.15x, 4 compute warps 1.10-1.24x, slices
    of 4096 at 4 warps with two programs a SM 1.5-2.3x."""
    if x_bytes != 2 or m < LIMITS["split_staged_min_m"]:
        return False
    if is_rms:  # with dB (a bias) or without (round 114)
        return not has_mask and n in SPLIT_STAGED_RMS_BWD_N
    widths = SPLIT_STAGED_LN_BWD_N if has_dbias else SPLIT_STAGED_LN_NO_DB_BWD_N
    return n in widths and (n != 16384 or not has_dbias or m >= LIMITS["ln_dbias_split_staged_16384_min_m"])


# the forward of long rows by the split staged Gluon kernel (``_split_staged_fwd``, ``norm_fwd_staged.py``): a program
# stages a slice of its rows' x and holds the slice's weights and bias in registers; from
# ``LIMITS["split_staged_fwd_min_m"]`` rows
SPLIT_STAGED_FWD_N = (65536,)
SPLIT_STAGED_FWD_BIAS_N = (32768,)  # LayerNorm's (and LayerNorm + clamped ReLU's) with a bias and float32 weights
SPLIT_STAGED_FWD_SLICE_N = 16384
SPLIT_STAGED_FWD_WARPS = 8
# LayerNorm's (stages, rows ahead): its statistics published two rows ahead, 5 rows in flight; RMSNorm's one row ahead,
# 4 in flight (``norm_fwd_staged.py``'s AHEAD)
SPLIT_STAGED_FWD_FORMS = {False: (5, 2), True: (4, 1)}
# the clamped ReLU's training forward: its clamped y in 2 slices of shared memory of its own, apart from x's stages
# (``norm_fwd_staged._fwd_masker``), of bf16 x; of fp16 x y over x's stage
SPLIT_STAGED_FWD_Y_SLOTS = 2


def split_staged_fwd_form(is_rms: bool) -> tuple[int, int]:
    """The split staged forward's rows in flight and rows ahead (``SPLIT_STAGED_FWD_FORMS``)."""
    return SPLIT_STAGED_FWD_FORMS[is_rms]


def split_staged_fwd_y_slots(x_fp16: bool) -> int:
    """The clamped ReLU's training forward's slots of y in the split staged forward (``norm_fwd_staged``'s
    ``Y_SLOTS``): ``SPLIT_STAGED_FWD_Y_SLOTS`` of bf16 x, 0 of fp16 x (``x_fp16``: y written over x's stage and stored
    by the mask partition, round 94's way).

    Round 95 (H200, GPU runs 718-724, ``bench.ab`` against round 94's kernel, GB/s now over before): y in 2 slots of
    its own, so that the compute warps no longer wait at a CTA barrier between their reads of x and their writes of y
    (Nsight Compute, run 714: 10.6% of the kernel's warp samples there), and stored by the compute warps (the mask
    partition makes the mask alone). bf16 x, float32 weights: x1.015 / x1.014 / x1.013 at 32768 / 8192 / 4096 rows of
    65536 (run 722); with y still stored by the mask partition x1.011 / x1.008 / x1.006, x1.043 at 32768 x 32768, and
    with bf16 weights x1.011 / x1.006 at 32768 / 8192 rows. fp16 x: x1.001 / x0.999 / x1.000 with float32 weights
    (8192 rows), x0.992-0.994 / x0.989 / x0.988 with fp16 weights at 32768 / 8192 / 4096 rows (y stored by the compute
    warps x0.998 / x0.997 / x0.995, run 724): y stays over x's stage. One slot ran as two (x1.010 at 32768 x 65536
    bf16); the mask partition of 8 warps spills (184 bytes of stack, compiled for sm_90 on the CPU; not run). Round 96
    (runs 726-728): the mask partition has the TMA store y from its slot: x1.008-1.011 at 4096-32768 rows of 65536
    (bf16 x, float32 weights; 1.051x the plain forward's time at 32768 rows); of fp16 x from x's stage, x0.98."""
    return 0 if x_fp16 else SPLIT_STAGED_FWD_Y_SLOTS


def _split_staged_fwd_config(n: int) -> LaunchConfig:
    """The split staged forward's launch at rows of n columns: ``parts`` slices of ``block_n`` columns."""
    slice_n = SPLIT_STAGED_FWD_SLICE_N
    return LaunchConfig(1, slice_n, 1, SPLIT_STAGED_FWD_WARPS, 1, parts=n // slice_n, staged=True)


def _long_rows(
    m: int, n: int, is_rms: bool, has_mask: bool, has_bias: bool, x_bytes: int, w_bytes: int, slower_dram: bool,
    inference: bool = False,
) -> LaunchConfig | None:  # fmt: skip
    """Rounds 127-135's launches of many long rows, for ``fwd_config`` and ``infer_config`` alike, or None: RMSNorm's on
    slower DRAM in chunks at 32 warps (``_slower_dram_rms_fwd_chunks_at_32_warps``, rounds 133-135), and LayerNorm's of
    16-bit x and weights of 14337-16384 columns (the inference call with a bias, the training forward without the mask,
    with a bias from 15360) in chunks of 4096 at 32 warps there (``_slower_dram_ln_fwd_in_chunks_of_4096``, rounds
    133-134); the launches that hold a row whole as a head tile of 8192 columns and a tail: RMSNorm's, its warps from
    ``_rms_fwd_head_and_tail_of_8192`` (an ``inference`` call with a bias on an H200's DRAM keeps its chunks, not timed
    there), and LayerNorm's of float32 x at 16 warps (``_ln_fp32_fwd_head_and_tail``); each asks the GPU's DRAM
    (``slower_dram``)."""
    chunks = _slower_dram_rms_fwd_chunks_at_32_warps(
        m, n, is_rms, has_mask, has_bias, x_bytes, w_bytes, slower_dram, inference
    )  # fmt: skip
    if chunks:
        return chunks
    if _slower_dram_ln_fwd_in_chunks_of_4096(
        m, n, is_rms, has_mask, has_bias, x_bytes, w_bytes, slower_dram, inference
    ):  # fmt: skip
        return LaunchConfig(1, 4096, 4, 32)
    warps = _rms_fwd_head_and_tail_of_8192(m, n, is_rms, has_mask, has_bias, x_bytes, w_bytes, slower_dram)
    if warps and not (inference and has_bias and not slower_dram):
        return LaunchConfig(1, 8192, 1, warps, 0, tail_n=8192)
    if _ln_fp32_fwd_head_and_tail(m, n, is_rms, has_mask, x_bytes, slower_dram):
        return LaunchConfig(1, 8192, 1, 16, 0, tail_n=row_block_n(n - 8192))
    return None


def _slower_dram_rms_fwd_chunks_at_32_warps(
    m: int, n: int, is_rms: bool, has_mask: bool, has_bias: bool, x_bytes: int, w_bytes: int, slower_dram: bool,
    inference: bool = False,
) -> LaunchConfig | None:  # fmt: skip
    """RMSNorm's forward and inference call of more than 4096 rows on slower DRAM (an H100) in one program of 32 warps a
    row, read twice in chunks of 4096 columns (4 elements a thread) or 8192 (8), as torch.compile's kernel there (rounds
    133-135), or None: float32 x of 6144-16384 columns, with a bias or without (chunks of 8192 at 16384), 16-bit x and
    weights without a bias of 12288-16384 columns, and 16-bit x with float32 weights and a bias of 14336-16384, its
    ``inference`` call from 13824 (chunks of 4096). Before it, float32 x took chunks of 2048 at 16 warps up to 12288
    columns and round 127-132's head tile of 8192 and tail at 32 warps (16 with a bias) above
    (``_rms_fwd_head_and_tail_of_8192``), 16-bit x and weights without a bias chunks of 2048 at 16 warps at 12288 and
    the head and tail at 32 warps above, 16-bit x with float32 weights and a bias chunks of 2048 at 16 warps below 16384
    columns and the head and tail at 16 warps at 16384.

    Inductor's kernel for these rows on the H100 (GPU run 918, 32768 x 16384 float32, with a bias and without) is a
    looped reduction of one row a program, chunks of 8192 at 32 warps, 38 registers (one program a SM), its first
    loop's loads ``evict_last``, its second's ``evict_first``: 100.5-100.8% of the copy, where normkit's head and tail
    ran 99.0-99.2%. normkit's own chunked kernel in that launch ran as fast (run 919: 1.013-1.016x the head and tail at
    16384, training forward and inference call). In turns against the rule before, forced in one process with outputs
    checked first (run 920, 32768 rows; rule time over the chunks'):

    | columns | no bias, chunks of 4096 (8192 at 16384) | with a bias |
    |---|---|---|
    | 9216 | 1.028 / 1.028 (training / inference) | 1.012 / 1.012 |
    | 10240 | 1.038 / 1.038 | 1.013 / 1.014 |
    | 12288 | **1.089 / 1.086** (the chunks of 2048 at 92.5% of the copy) | 1.037 / 1.036 |
    | 13000 | 1.011 / 1.011 | 1.008 / 1.007 |
    | 14336 | 1.008 / 1.009 | 1.006 / 1.006 |
    | 16384 (chunks of 8192) | 1.014 / 1.013 | 1.016 / 1.015 |

    With a bias at 16384, chunks of 4096 ran x0.998-0.999 (so 8192 there); without one either size was level. The
    rule against 2e7f753 (``bench.ab``, run 921): x1.005-1.092 at 32768 rows as above, 101% of the copy, level with
    torch.compile at 12288 / 16384 (ahead of it by 1.9% at 12288 with a bias); 8200 / 4200 rows x1.007-1.080.
    One tile of 16384 at 32 warps (the row read once) x0.90-1.08, chunks of 8192 below 16384 x0.88-1.02 with a bias.
    16-bit x with float32 weights and a bias, chunks of 4096 (run 921, 32768 rows; training / inference): bf16 x
    x1.011 / 1.015, 1.026 / 1.029, 1.015 / 1.028 at 14336 / 15360 / 16384, fp16 x x1.014 / 1.020, 1.026 / 1.026, 1.014
    / 1.029 (chunks of 8192 x0.95-1.00); at 12288 / 13000 bf16 x x0.987 / 0.970 (run 920), so from 14336. The rule
    (``bench.ab`` against the float32 rule's tree, run 922): x1.005-1.028 at 32768 rows (100-101% of the copy at 15360
    / 16384), 8200 / 4200 rows x1.009-1.046; 13000 x1.000 (not taken).

    Round 134 (forced in turns as above, GPU runs 925-928, 32768 rows; training / inference, with a bias training):
    float32 x below 9216, chunks of 4096 (two up to 8192) x1.017-1.034 / 1.017-1.031 at 7168-8960 without a bias, with
    one x1.008-1.012; x1.013 / 1.013 / 1.018 (a bias) at 6144, x1.014 / 1.013 / 1.007 at 6656; at 5120 x0.98-0.998 and
    at 4608 x0.94-0.95, so from 6144 (8200 rows of 7168 and 4200 of 6144 / 8192 x1.000-1.018). 16-bit x and weights
    without a bias, chunks of 4096: **x1.015-1.018** at 12288, fp16 and bf16 (the chunks of 2048 at 16 warps before),
    x1.003-1.008 at 13312-15360 against the head and tail (x1.007 at 16384 in run 920; 10240 x0.976, so from 12288).
    The rule against ac8ebbd (``bench.ab``, run 929, 32768 rows): float32 x **x1.005-1.028** at 6144 / 7168 / 8192 /
    8960 (x1.025-1.028 without a bias from 8192), 101% of the copy (1.028x torch.compile at 8192), 8200 x 7168
    x1.002-1.007; 16-bit x and weights x1.011-1.012 at 12288, x1.003-1.006 at 13312-16384.

    Round 135 (GPU run 932, forced in turns as above, 32768 rows): 16-bit x with float32 weights and a bias, the
    inference call in chunks of 4096, x1.008 / 1.012 at 13824 and x1.010 / 1.018 at 14080 (bf16 / fp16 x; run 925
    x1.019 / 1.020 at 13824), x1.004 / 0.997 at 13312 (run 925 x1.009 / 1.013), so from 13824; the training forward
    x0.999-1.006 at 13312 / 13824 (run 925), not taken.

    Not taken: other 16-bit x (bf16 x float32 weights without a bias x0.94-0.98 at 9216-10240, x0.995-1.017 at
    12288-16384; 16-bit weights with a bias x1.005-1.010 at 14336-16384),
    LayerNorm (its float32 x x0.99-1.01 in chunks of 4096 against ``_ln_fp32_fwd_head_and_tail``), an H200 (not
    timed). Read on the CPU (sm_90, as ``ops`` plans them): chunks of 4096 hold 24-30 registers a thread (two
    programs of 1024 threads a SM), chunks of 8192 with a bias 38 (one), none spills
    (``test_slower_dram_rms_forward_head_and_tail_fits_two_programs_a_sm_on_hopper``). ``m``: the call's rows;
    ``x_bytes``, ``w_bytes``: x's and the weights' element sizes."""
    if not (slower_dram and is_rms and not has_mask and m > 4096 and n <= 16384):
        return None
    if x_bytes == 4 and n >= 6144:
        block_n = 8192 if n == 16384 else 4096
    elif x_bytes == 2 and w_bytes == 2 and not has_bias and n >= 12288:
        block_n = 4096
    elif x_bytes == 2 and w_bytes == 4 and has_bias and n >= (13824 if inference else 14336):
        block_n = 4096
    else:
        return None
    return LaunchConfig(1, block_n, -(-n // block_n), 32)


def _slower_dram_ln_fwd_in_chunks_of_4096(
    m: int, n: int, is_rms: bool, has_mask: bool, has_bias: bool, x_bytes: int, w_bytes: int, slower_dram: bool,
    inference: bool,
) -> bool:  # fmt: skip
    """Whether LayerNorm's forward of more than 4096 rows of 14337-16384 columns of 16-bit x and weights, on slower DRAM
    (an H100), reads each row twice in chunks of 4096 at 32 warps (4 elements a thread), not the heuristic's chunks of
    2048 at 16 warps (a chunk ahead at 16384): the ``inference`` call (and LayerNorm + clamped ReLU's: y alone, no mask)
    with a bias, at 16384 since round 133, and since round 134 below it and the training forward without the mask
    (``has_mask``: the clamped ReLU's), without a bias and with one from 15360 columns. Round 133's at 16384 forced
    against the rule in turns (``sweep.py``, GPU run 923, 32768 rows, outputs checked first; rule time over the
    chunks'): LayerNorm bf16 **x1.036**, fp16 **x1.029**, the clamped ReLU's bf16 **x1.030**, fp16 **x1.029** (the rule
    at 97.5-98.3% of the copy). The rule (``bench.ab`` against 2df5498, run 924): LayerNorm x1.030 / 1.028 (bf16 /
    fp16), the clamped ReLU's x1.038 / 1.036 at 32768 rows (101% of the copy; 0.2% ahead of torch.compile at bf16), 8200
    / 4200 rows of bf16 x1.033-1.041; 14336 x1.000 (not taken). Not taken: 14336 columns (bf16 x1.005 / 0.985, fp16
    x1.021 / 1.018), 12288 (x0.970-0.989), float32 weights (x0.984-1.001), the training forward (x1.006 / 1.011 at
    16384, x0.975 / 1.002 at 14336), chunks of 8192 (x0.68-0.78), an H200 (not timed).

    Round 134, forced in turns as in round 133 (``sweep.py``, GPU runs 925-928, 32768 rows; bf16 / fp16):

    | columns | inference, a bias | its clamped ReLU | training, a bias | training, no bias |
    |---|---|---|---|---|
    | 13312 | 0.970 / 1.008 | 0.956 / 0.999 | | |
    | 13824 | 0.994 / 1.005 | 0.985 / 1.020 | | |
    | 14336 | 1.009 / 1.030 (1.005 / 1.021 in run 923) | 0.985 / 1.018 (run 923) | 0.988 / 1.010 | 1.023 / 1.024 |
    | 14592 | 1.025 / 1.031 | | 1.007 / 1.026 | 1.009 / 1.009 |
    | 14848 | 1.021-1.023 / 1.031-1.034 | 1.026 / 1.031 | 1.001 / 1.030 | 1.009 / 1.010 |
    | 15360 | 1.036 / 1.036 | 1.038 / 1.035 | 1.014 / **1.047** | 1.010 / 1.010 |
    | 15872 | 1.037 / 1.039 | 1.037 / 1.038 | | |
    | 16384 | (the rule) | (the rule) | 1.014 / 1.013 | 1.008 / 1.008 |

    So from 14337 (14336 with the clamped ReLU's bf16 and the training forward's bf16 below 1). Zero-centered weights
    alike (training with a bias x1.019 / 1.050 at 15360, x1.014 / 1.012 at 16384); 8200 rows of 15360 x1.028-1.063, 4200
    x1.021-1.036. The rule against ac8ebbd (``bench.ab``, outputs checked first, GPU run 929, 32768 rows): the inference
    call x1.018-1.031 at 14848 / 15360 bf16 (the clamped ReLU's x1.020-1.029, fp16 x1.025-1.029), the training forward
    without a bias x1.004-1.007, with one bf16 **x0.995** at 14848, x1.010 / 1.013 at 15360 / 16384, fp16 x1.019 / 1.042
    at 14592 / 15360 (zero-centered x1.033 / 1.046), 8200 x 15360 bf16 x1.009; 100-101% of the copy, 1.07x torch.compile
    at 15360 bf16. So the training forward with a bias from 15360 (run 930: 14848 x1.000, 15360 x1.013, zero-centered
    x1.020). Not taken: the clamped ReLU's training forward, which stores the mask (x0.935-1.010 with a bias at 15360 /
    16384, x0.978-1.035 without), and the inference call without a bias (not timed: no bench op). ``m``: the call's
    rows; ``x_bytes``, ``w_bytes``: x's and the weights' element sizes."""
    if not (slower_dram and not is_rms and x_bytes == w_bytes == 2 and m > 4096 and 14336 < n <= 16384):
        return False
    if inference:
        return has_bias
    return not has_mask and (n >= 15360 or not has_bias)


def _rms_fwd_head_and_tail_of_8192(
    m: int, n: int, is_rms: bool, has_mask: bool, has_bias: bool, x_bytes: int, w_bytes: int, slower_dram: bool
) -> int:
    """The warps of RMSNorm's forward of more than 4096 rows where it holds each row whole in one program, as a head
    tile of 8192 columns and a tail tile of 8192, rather than the heuristic's chunks of 2048 at 16 warps read twice: 32
    without a bias, 16 with one; 0 where it keeps the chunks. On slower DRAM (an H100; rounds 127-128 and 131-132) at
    12289-16384 columns (with a bias not 16-bit x with float32 weights, which round 128 gave it at 16384; float32 x, and
    16-bit x with float32 weights and a bias from 14336, take round 133's chunks at 32 warps first, and 16-bit x and
    weights without a bias round 134's, ``_slower_dram_rms_fwd_chunks_at_32_warps``), on an H200's (round 129) float32 x
    at 16384 columns alone. Named ``_slower_dram_rms_fwd_head_and_tail_of_8192`` in rounds 127-128, when it took an H100
    alone, and round 129's H200 rule ``_faster_dram_fp32_rms_fwd_head_and_tail_of_8192``.

    On slower DRAM: The tuner on the H100 (``bench.tune --whole-rows``, GPU run 887, 32768 x
    16384 bf16 x float32, no bias) timed the chunks at 2919 GB/s and the two tiles at 3013 (32 warps), 3002 (4) and
    2949 (16). In turns against the chunks (``bench.ab``, outputs checked first; GB/s now over before):

    - no bias (runs 888-890), 32768 x 16384: bf16 x float32 x1.035 / 1.034 (4 warps x1.029, 16 x1.012), bf16 x1.028,
      fp16 x1.030, fp16 x float32 x1.034, float32 x1.147; 16384 / 8200 / 4200 rows of bf16 x float32 x1.033 / 1.033 /
      1.030-1.031; 32768 rows of 12400 / 13000 / 14336 bf16 x float32 x1.014 / 1.021 / 1.018;
    - a bias at 16384 columns, 16 warps (probe runs 892-893, the rule run 894): 32768 rows of bf16 x float32 x1.030 /
      1.030 (8 warps x1.018, 32 x0.743), bf16 x1.035, fp16 x float32 x1.036 / 1.030, 4200 rows of bf16 x float32
      x1.016 / 1.018; 13000 columns (the chunks kept) x1.000;
    - the inference call (``infer_config``, y alone) without a bias, 32 warps (probe runs 894 and 896): 32768 x 16384
      bf16 x float32 x1.034 (16 warps x1.013), bf16 x1.029, fp16 x float32 x1.034, float32 x1.148; 4200 x 16384 bf16 x
      float32 x1.031; 32768 rows of 12400 / 13000 x1.015 / 1.022, 8200 x 14336 x1.014.

    - a bias at 12289-16383 columns, 16 warps (probe runs 911-914, round 131; 32768 rows unless named): float32 x
      x1.018 / 1.034 / 1.048 / 1.053 at 12320 / 13000 / 14336 / 15360 (4200 / 8192 / 16384 x 14336 x1.052 / 1.049 /
      1.048; 32 warps x1.012 / 1.004 / 1.061 / 1.067, and x1.009 at 16384), fp16 x1.017-1.021 (8192 x 13000 x1.015),
      bf16 x1.015-1.020; but bf16 x float32 weights x0.970 at 12320 / 13000 (round 128's x0.971 at 13000), x1.013 at
      14336 / 15360, so 16-bit x with float32 weights keeps its chunks there.
    - the inference call with a bias, 16 warps (probe run 916, round 132; 32768 rows of 13000 / 14336 / 16384):
      float32 x x1.034 / 1.047 / 1.064 (8200 x 14336 x1.046), fp16 x1.021 / 1.016 / 1.032, bf16 x1.018 / 1.016 /
      1.032, bf16 x float32 weights x0.971 / 1.013 / 1.034: the training forward's launch, its exception too.

    Not taken: a tail tile narrower than 8192 (x0.833 / 0.916 / 0.988 at 9216 / 10240 / 12288 columns, tails of
    1024-4096), 16-bit x with float32 weights and a bias below 16384 columns (above), a bias at 32 warps,
    LayerNorm's (the tuner put its chunks at its best at 32768 x 16384 bf16 x float32), float32 x with a bias at 32
    warps from 14336 columns (x1.013 / 1.014 over 16 at 14336 / 15360 in run 916, 1.3% for a second bound).
    ``m``: the call's rows; ``x_bytes``, ``w_bytes``: x's and the weights' element sizes.

    On an H200's DRAM (not ``slower_dram``), in turns against the chunks (probe runs 902-903, float32 x): 32768 x 16384
    x1.091 (16 warps x1.088), 4200 x 16384 x1.091, the inference call x1.088; with a bias at 16 warps x1.029 (32 warps
    x0.977). The rule (run 904): x1.101, with a bias x1.178, the inference call x1.098; 1027.5 us at 32768 x 16384, 98%
    of the copy, 0.969x torch.compile's 995.7 (from about 0.88); the tuner's best of the whole-row launches (run 905:
    32 warps 4177 GB/s, 4 warps 4175, 16 warps 4156). Not taken there: 16-bit x (bf16 x float32 weights at 32 warps
    x0.988), 12400 columns (x0.977; the H200's chunks of 12289-16383 columns are left as they are, not timed between).

    Read on the CPU (sm_90, the launch as ``ops`` plans it): without a bias it holds 31-32 registers a thread and
    spills nothing (bf16 / fp16 / float32 x, 16-bit or float32 weights, zero-centered, 12289-16384 columns), so two
    programs of 1024 threads fill a SM's 65536 registers and 64 warps; with a bias at 32 warps 34, which leave room for
    one (the likely cause of the x0.743), at 16 warps 64, two programs a SM of 16 warps. The chunks hold 31-32 at 16
    warps (four a SM). A change to the kernel that takes the launch without a bias past 32 registers halves its
    programs a SM (``test_slower_dram_rms_forward_head_and_tail_fits_two_programs_a_sm_on_hopper``)."""
    if not is_rms or has_mask or m <= 4096:
        return 0
    if not slower_dram:
        return (16 if has_bias else 32) if x_bytes == 4 and n == 16384 else 0
    if not 12288 < n <= 16384:
        return 0
    if has_bias:  # 16-bit x with float32 weights: chunks below 14336, round 133's chunks at 32 warps from there
        return 0 if x_bytes == 2 and w_bytes == 4 else 16
    return 32


def _ln_fp32_fwd_head_and_tail(m: int, n: int, is_rms: bool, has_mask: bool, x_bytes: int, slower_dram: bool) -> bool:
    """Whether LayerNorm's forward of float32 x of more than 4096 rows holds each row whole in one program of 16 warps,
    a head tile of 8192 columns and a tail tile of the rest's power of two (2048-8192), rather than the heuristic's
    chunks of 2048 read twice: with the mask (the clamped ReLU's training forward) at 12288, 14336 and 16384 columns on
    any GPU (round 129 on an H200), without it at 9217-16384 columns on slower DRAM (an H100) alone (round 128). In
    turns against the chunks (``bench.ab``, outputs checked first; GB/s now over before; 32768 rows unless named):

    - an H100 (probe runs 897-901), no mask, 16384: x1.084 (32 warps x1.080, 8 x1.070), no bias x1.050 (32 warps
      x1.057), zero-centered x1.072, 4200 rows x1.071; 14336 at 8200 rows x1.158, 13000 x1.137 (32 warps x1.090), 12400
      x1.104, 12288 x1.139, 10240 x1.061, 9728 x1.057, 9300 x1.061; the inference call (y alone) at 16384 / 12400
      x1.093 / 1.081; the mask: 16384 x1.371 (32 warps x1.229, 8 x1.368), 4200 rows x1.336, 14336 x1.184, 12288 x1.129;
    - an H200 (probe runs 902-903), the mask: 16384 x1.412 (8 warps x1.394), without a bias x1.275, 4200 rows x1.353,
      14336 x1.161, 12288 x1.123; but no mask at 16384 x0.925 (so not on an H200). The rule (run 904): 16384 / 12288
      x1.403 / 1.152, 13000 x0.999 (not taken, as meant); 32768 x 16384 at 1047.5 us against torch.compile's 2182.5
      (2.08x), 98% of the copy; the tuner's best of the whole-row launches there (run 906).

    Not taken: 9216 columns (a tail of 1024: x0.586 on the H100), the mask at 12400 / 13000 (H100 x0.941 / 0.967, H200
    13000 x0.774), 16-bit x (H100: bf16 x float32 weights at 32 warps x0.616, fp16 x float32 at 16 warps x0.978, the
    tuner put bf16 x's chunks at their best at 16384, GPU run 887; H200: the mask with bf16 x float32 weights x0.811).
    The probe's launches are the rule's (the same ``LaunchConfig`` from ``fwd_config`` and ``infer_config``). The rule
    on an H100 (run 907, round 130, against the tree before round 128): the mask at 16384 x1.370-1.390, without a bias
    x1.305, LayerNorm x1.132, its inference call x1.099, 4200 x 12288 x1.117, 13000 x1.000 (the chunks kept); 32768 x
    16384 with the mask 1.98x torch.compile, without it 0.993x (the tuner's best launch, run 908). Its GPU tests passed
    on both GPUs (runs 904 and 907). ``x_bytes``: x's element size; ``slower_dram``: the GPU's DRAM is as slow as an
    H100's. Named ``_slower_dram_ln_fp32_fwd_head_and_tail`` in round 128, when it took an H100 alone."""
    if is_rms or x_bytes != 4 or m <= 4096:
        return False
    if has_mask:
        return n in (12288, 14336, 16384)
    return slower_dram and 9216 < n <= 16384


def _faster_dram_rms_fwd_256_sixteen_rows(
    m: int, n: int, is_rms: bool, has_mask: bool, has_bias: bool, x_fp16: bool, x_bytes: int
) -> bool:
    """Whether RMSNorm's forward of 16897-32768 rows of 256 columns of bf16 x without a bias, no mask, on DRAM as fast
    as an H200's (not ``slower_dram``), takes tiles of sixteen rows at 4 warps on a persistent grid of 8 programs a
    SM asked, not the heuristic's eight rows at 2 warps (round 129). Of the 8, 6 fit (``ops._persistent_grid``): the
    program holds 80 registers a thread, bf16 or float32 weights (compiled for sm_90 on the CPU, round 139), so 792
    programs on the H200's 132 SMs, 12672 rows a pass. The tuner on the H200 (``bench.tune``, GPU run 902, 32768 x
    256 bf16 x float32) timed the heuristic at 2471 GB/s and sixteen rows of 4 warps at 2537, its best (8 programs a
    SM or 16 alike: both run the 6 that fit). In turns against the heuristic (``bench.ab``, probe runs 902-903,
    outputs checked first): bf16 x float32 x1.055 / 1.053 / 1.024-1.027 at 20480 / 24576 / 32768 rows, bf16 x1.044 at
    32768. The rule (run 904): x1.003 / 1.041 / 1.017 at 17408 / 24576 / 32768 rows; 13.6 us at 32768 x 256, 0.993x
    torch.compile's 13.5 (the scoreboard's 0.973).

    Not taken: 16400 rows (x0.940: both take two passes there, the heuristic's eight rows, 8 programs a SM of 8 rows
    taking 8448 rows a pass, a second of 994 programs of 1056, the sixteen rows one of 233 of 792) nor 65536 (x0.978);
    fp16 x, float32 x and a bias (not timed), the inference call (its own launch, ``infer_config``). The bounds: 16897
    rows, from which the eight rows need a third pass and the sixteen rows two up to 25344 (as
    ``_slower_dram_fwd_256_twelve_a_sm``'s on an H100), between 16400 (lost) and 20480 (gained).
    On slower DRAM (an H100) round 123-125's rules stand (``_fwd_heuristic``, ``_slower_dram_fwd_256_twelve_a_sm``).
    ``m``: the call's rows, not as ``_rows_key`` rounds them (16400 and 32768 share a key)."""
    rows = n == 256 and 16896 < m <= 32768
    return rows and is_rms and x_bytes == 2 and not x_fp16 and not has_bias and not has_mask


def _split_staged_fwd(m: int, n: int, is_rms: bool, x_bytes: int, w_bytes: int, has_bias: bool) -> bool:
    """Whether the forward of m x n takes the split staged Gluon kernel (``norm_fwd_staged.split_staged_fwd_kernel``):
    16-bit x, calls of at least ``LIMITS["split_staged_fwd_min_m"]`` rows (4096), LayerNorm's, RMSNorm's and
    LayerNorm + clamped ReLU's at ``SPLIT_STAGED_FWD_N`` columns (65536); 16-bit or float32 weights, a bias or none
    (``has_bias``); LayerNorm's and LayerNorm + clamped ReLU's at ``SPLIT_STAGED_FWD_BIAS_N`` (32768) with a bias and
    float32 weights (``w_bytes``); the clamped ReLU's training forward (its mask stored) too, of float16 x and weights
    as well since round 94. Each row in slices of ``SPLIT_STAGED_FWD_SLICE_N`` columns at
    ``SPLIT_STAGED_FWD_WARPS`` compute warps and a load warp, one program a slice on one SM, the slice's weights and
    bias held in registers (``split_staged_fwd_form``: LayerNorm's statistics two rows ahead, 5 rows in flight;
    RMSNorm's one, 4). ``infer_config`` asks it for the inference calls (y alone; the clamped ReLU's without a mask).

    Round 90 (H200; ``bench.ab`` against the rule before, the chunked forward, GB/s now over before). The inference
    calls (GPU runs 692-696): LayerNorm x1.222-1.251 / x1.173 at 32768 / 4096 rows of bf16 x, float32 weights (90% of
    the copy at 32768), x1.054 at 8192 fp16; RMSNorm x1.056 / x1.106, x0.992 at 8192 fp16; LayerNorm + clamped ReLU
    x1.211-1.218 / x1.163 (the clamp on 16-bit pairs, ``norm_fwd_staged._clamp_16``; in float32 x1.082 / x1.051, run
    694), at 8192 rows x1.066 fp16, x1.044 bf16 with bf16 weights, x1.169 fp16 x with float32 weights. The clamped
    ReLU's training forward, its mask's bits by y's bits (run 696): x1.058 / x1.046 at 32768 / 4096 rows of bf16 x,
    float32 weights (its time 1.16x the plain forward's at 32768 x 65536, 1.27-1.31x before; target 3: 1.05x), at
    8192 rows x1.035 bf16 x with bf16 weights, x1.091 fp16 x with float32 weights, but x0.981 / x0.986 at 8192 / 32768
    rows of fp16 x and weights (the chunked fused forward there 83-84% of the copy), which kept the chunked forward
    until round 94's mask partition (below). The mask by two float compares and the clamp in float32 ran x0.86-0.94
    (run 694); 16 compute warps x0.84 of 8 (run 695).

    Round 88 (H200, bf16 x, float32 weights). The probe's kernel at 32768 rows, in turns with the chunked forward before
    (GPU runs 681-682, us, with a bias): LayerNorm at 65536 2268 against 2742 (x1.21), at 32768 1135 against 1189
    (x1.05); RMSNorm at 65536 2170 against 2276 (x1.05). As landed, against the rule before (``bench.ab``, run 683,
    GB/s now over before at 32768 / 8192 / 4096 rows): LayerNorm at 65536 x1.171 / x1.166 / x1.166 (89% of the copy
    at 32768 rows), without a bias x1.025 / x1.020 / x1.014; RMSNorm at 65536 x1.049 / x1.078 / x1.093. Not taken:
    LayerNorm at 32768 (x1.018 / x0.999 / x0.981; without a bias x0.982 / x0.971 / x0.956), RMSNorm at 32768 (x0.94
    in the probe: the chunked forward runs at 99% of the copy there), both at 16384 (slices of 8192: x0.81-0.88);
    slices of 16384 at 16 warps (x0.97-0.99 of 8 one row ahead, LayerNorm's x0.88-0.93 two ahead), LayerNorm one row
    ahead (x0.95-0.99 of two), RMSNorm two rows ahead (x0.98).

    Round 94 (H200, GPU runs 711-713, against the chunked forward): LayerNorm's and LayerNorm + clamped ReLU's at
    32768 columns (``SPLIT_STAGED_FWD_BIAS_N``: two slices a row) where the call has a bias and float32 weights; bf16
    x at 32768 / 4096 rows: the training forward x1.063 / x1.026, the fused one x1.145 / x1.091, the inference calls
    x1.063 / x1.043 and x1.045 / x1.025, zero-centered x1.061 / x1.033; fp16 x (float32 weights) at 8192 rows x1.039 /
    x1.119. Without a bias x0.970 / x0.992 at 32768 / 8192 rows (the chunked forward reads no bias again there: 94% of
    the copy), with 16-bit weights x0.989-1.009 (fp16 / bf16, 8192 rows): those keep the chunked forward. The clamped
    ReLU's training forward of fp16 x and weights at 65536, its y and mask now stored by a partition of their own
    (``norm_fwd_staged._fwd_masker``; run 716): x1.072 / x1.065 / x1.073 at 32768 / 8192 / 4096 rows (86-90% of the
    copy), taken."""
    if x_bytes != 2 or m < LIMITS["split_staged_fwd_min_m"]:
        return False
    return n in SPLIT_STAGED_FWD_N or (n in SPLIT_STAGED_FWD_BIAS_N and has_bias and w_bytes == 4 and not is_rms)


def _few_waves_tma_bwd(m: int, n: int, has_dbias: bool, has_mask: bool, is_rms: bool, x_bytes: int) -> bool:
    """Whether LayerNorm's backward with dB of 2049-4096 rows of 6145-8192 columns of 16-bit x, no mask, takes the
    TMA kernel (one row of 8192's tile a program of 8 warps, one a SM: ``_tma_bwd``) in calls below
    ``TMA_MIN_ELEMENTS_LAYER_NORM``, from three quarters of it (25165824 elements: at 4096 rows from 6145 columns, at
    3072 rows at 8192). ``norm_bwd_kernel``'s one tile of 8192 at 8 warps ran there before. With 16-bit weights, where
    the staged kernel can run, these rows are its since round 101 (``STAGED_LN_SHORT_BWD_N``).

    Round 64 (GPU runs 512-513, H200, forced in turns, GPU time with L2 flushed, us a call; ``.ab/probe/bwd64.py``,
    ``forced64.py``): 4096 rows fp16 6656 / 7168 / 7680 / 8192 64.1 -> 57.4 (x1.116) / x1.110 / x1.107 / x1.039 (200
    calls back to back x1.118 / x1.120 / x1.141 / x1.043; cuDNN 61.6 at 6656); 3000 rows bf16 x float32 weights x1.095 /
    x1.079 / x1.092 / x1.132 in GPU time, but back to back 1.005 / 1.083 / 0.939 / 0.964 (the rule's calls took 47-63 us
    there against 51-56 of GPU time: the host's time near the GPU's, and the TMA's host time is longer), so calls below
    three quarters of the minimum keep ``norm_bwd_kernel``. At 5121-6144 (a head of 4096 and a tail of 2048 by the TMA,
    or 8192's tile) fp16 0.96-0.99, bf16 x float32 x1.05-1.09 in GPU time but 0.95-0.99 back to back; 4096 x 5120
    0.83-1.06: not there."""
    return (
        2048 < m <= 4096 and 6144 < n <= 8192 and m * n >= 3 * TMA_MIN_ELEMENTS_LAYER_NORM // 4 and has_dbias
        and not has_mask and not is_rms and x_bytes == 2
    )  # fmt: skip


def _few_waves_bwd(n: int, is_rms: bool) -> LaunchConfig | None:
    """2049-4096 rows: rows of 2049-4096 columns two a tile at 16 elements a thread, one 16-warp program a SM
    (LayerNorm's of 2049-4095 one a tile of 4 warps, two programs a SM, as the masked backward's); LayerNorm's rows
    of 4097-5120 columns split in parts of 1024 (``split_rows_config``), of 5121-6144 a head tile of 4096 and a tail
    tile of 2048 (``tail_n``) at 8 warps; else None (the rules for many rows).

    Round 27 (GPU run 237, 4096 rows, fp16, us a call, launches forced in turns, ``.ab/probe/r27b.py``): LayerNorm at
    2560 / 3072 / 3584 in one-row tiles of 4 warps, two a SM, 31.7 / 35.3 / 36.9 against the two-row tiles' 33.2 /
    36.5 / 37.8; at 4096 39.2 against 38.3; RMSNorm's slower in them (30.9-38.0 against 29.1-36.1). Split rows of
    1024 against the rules at 5632-7168 (LayerNorm) and 4608-5120 (RMSNorm): level or slower (0.92-1.01). Against
    the rule before in turns (``bench.ab``, run 238): 4096 x 2560 / 3072 / 3584 x1.040 / x1.025 / x1.006 (fp16; the
    unchanged 4096 moved x1.032 in the same turns), 3000 x 3072 (bf16 x, float32 weights) x1.051.

    Measured on an H200 (4096 rows, fp16; the tuner, GPU run 108, then run 109 in turns; the rules for many rows
    -> these, cuDNN): LayerNorm at 4096 2431 -> 2586 (2212), 2560 1807 -> 1820 (1897), 4608 1935 -> 2053 (2138),
    5120 2026 -> 2203 (2597); RMSNorm at 4096 2584 -> 2734 (2869), 2560 1911 -> 2081 (2042). Not taken: at 2048
    two rows of 2048 at 8 or 16 warps (LayerNorm 1785 and 1645 against 1831), RMSNorm's split rows at 4608-6656
    (2161-2503 against 2349-2857), LayerNorm's at 6656-7680 (2349 and 2598 against 2446 and 2632). Head + tail
    tiles (GPU run 116, in turns with cuDNN): LayerNorm at 6144 2289 -> 2571 (cuDNN 1737); slower than the rules
    elsewhere (RMSNorm at 4608 and 5120 2226-2265 and 2352-2422 against 2315 and 2483, LayerNorm at 4608 and 5120
    1570-1890 and 1706-1930 against split rows' 2055 and 2187, both at 2560 1214-1800 against 2007 and 1820;
    RMSNorm's 8192 + 2048 at 10240 1995-2193 against 2838: the 8192 head spills at 16-32 warps)."""
    full = row_block_n(n)
    if full == 4096 and n > 2048:
        return LaunchConfig(2, 4096, 1, 16, 1) if is_rms or n == 4096 else LaunchConfig(1, 4096, 1, 4, 2)
    if not is_rms and 4096 < n <= 5120:
        return split_rows_config(n, is_rms, False)
    if not is_rms and 5120 < n <= 6144:
        return LaunchConfig(1, 4096, 1, 8, 1, tail_n=2048)
    return None


def _rms_head_tail_bwd(m: int, n: int, has_dbias: bool, w_bytes: int, tma: bool) -> LaunchConfig | None:
    """RMSNorm's backward of 16-bit x, rows a multiple of 16 columns: rows of 4097-5120 columns (in calls of more
    than 1024 rows, without dB) one a program as a head tile of 4096 and a tail tile of 1024 (``tail_n``) at 4 warps,
    two programs a SM; rows of 8193-10240 (any rows; not dB with float32 weights, ``w_bytes``) a head tile of 8192
    and a tail of 2048 at 8 warps, one a SM (32 and 8 elements a thread); rows of 10241-12288 (16-bit weights, no dB)
    a head of 8192 and a tail of 4096 at 8 warps; else None. Where the call's rows can be loaded by the TMA
    (``tma``: ``bwd_config``'s, so at least ``TMA_MIN_ELEMENTS``), rows of 8193-12288 take those head and tail
    tiles on ``norm_bwd_tma_kernel`` (any weights; dB only up to 10240 columns), dx stored by the TMA too where the
    weights are float32 or the tail is of 4096, at 16 warps where that tail has 16-bit weights (round 33, below).
    Before (round 31): one tile of 8192 at 16 warps
    (4097-5120: 16 elements a thread, a third to a half of them padding) and split rows (8193-12288: parts of 1024,
    sums a step ahead). Not where LIMITS caps tiles below 8192, nor for float32 x (its tiles spill: 0.76-0.81x at
    4608 / 5120).

    Round 31 (GPU runs 268-274; H200). Forced in turns (``.ab/probe/r31a.py``, us a call, 4096 rows, fp16): 4608
    40.6 against 45.7 (cuDNN 39.4-39.7), 5120 44.4 / 47.0 (42.8-43.7), 8704 67.3 / 75.7 (66.6-67.2), 9216 69.5 / 77.6
    (69.5-70.4), 9728 71.3 / 83.3 (73.3), 10240 73.9 / 85.0 (72.0). Against the rule before in turns (``bench.ab``,
    GB/s, runs 272-274): 4096 rows fp16 x1.068-1.151 (4608-10240); bf16 x with float32 weights at 32768 rows x1.128 /
    x1.142 (4608 / 5120), x1.039-1.084 (8704-10240), at 8192 rows x1.079 / x1.033 (4608 / 9216), at 3000 x1.014-1.052;
    bf16 at 16384 rows x1.166 / x1.185; fp16 at 2048 rows x1.042 / x1.101, at 1024 rows 9216 / 10240 x1.064-1.080 but
    4608 / 5120 x0.988 / x0.919 (hence more than 1024 rows there). Rows that are not a multiple of 16 columns lost
    (4104 x0.903, 8200 x0.757: a row stride not divisible by 16 elements, so no 16-byte loads, and these tiles have
    fewer threads to spread the narrow loads over); 4112 x1.095 and 8208 x1.132. Compiled for sm_90 on the CPU: 255
    registers and 8-24 bytes of stack, and still ahead. Not taken: the tail of the row's own power of two (4608
    x1.05-1.08 with 512; 9216 with 1024 0.98x in fp16 and 0.69x in bf16 x float32: 80 bytes of stack), a head of
    8192 at 16 warps (x1.10-1.17 at 8704, 0.94 at 9216 fp16, 0.62-0.76 at 9728-10240), 4 warps three or four a SM
    (0.91-0.96), head + tail at 5121-6144 (0.95-1.01) and at 10241-12288 (x1.02-1.05 in fp16, 0.68-0.74 in bf16 x
    float32), the weights loaded again at every row block (0.73-0.95x the same launches holding them; 0-40 bytes of
    stack).

    Round 32 (GPU runs 275-277; H200; ``.ab/probe/r32a.py``, forced in turns, us a call). Rows of 10241-12288 with
    16-bit weights as a head of 8192 and a tail of 4096: 4096 rows fp16 x1.023-1.061 (12288: 95.9 against 98.7; cuDNN
    84.9), bf16 x1.069-1.107, 32768 rows bf16 x1.12-1.14, 1024 rows fp16 x1.02-1.10; with float32 weights 0.71-0.73
    (held in registers they spill), with dB 0.80 (fp16) and 0.09 (bf16 x float32). Against the rule before in turns
    (``bench.ab``, run 276): 4096 rows fp16 x1.040-1.062 (10752-12288), 32768 rows bf16 x1.109 / x1.115 (88% / 86%
    of copy), 1024 x 12288 bf16 x1.070; the genai shapes (float32 weights) unchanged. dB (a bias) takes a second
    accumulator a tile: round 31's head + tail then lost to the launches before it, 4608 / 5120 fp16 0.95-0.98 and bf16
    x float32 0.77-0.79 (60.5 us against 46.6), 9216 / 10240 bf16 x float32 0.83 / 0.87 (split rows 92.5 and 101.4
    us), so dB keeps those launches there (fp16 at 8193-10240 level: 0.99-1.01).

    Round 33 (GPU runs 283-285; H200; ``.ab/probe/r33a.py``, forced in turns, us a call, against the rule then).
    The same tiles by the TMA (three stages: two rows in flight in shared memory, none of them in registers), dx by
    the TMA too (``ts``) or by each thread (``t``). Rows of 10241-12288, 16-bit weights: ``ts`` at 4096 rows fp16
    x1.039-1.070 (12288: 90.1 against 96.4; cuDNN 84.9), bf16 x0.998-1.041, 8192 rows x1.013-1.079, 16384 x1.042-1.104,
    32768 bf16 x1.097 / x1.122; float32 weights (split rows before: the pointer kernel's tiles spill there) 4096 rows
    x1.071 / x1.084, 8192 x1.154 / x1.131, 32768 x1.214 / x1.158 (10752 / 12288). Rows of 8193-10240: 16-bit weights
    ``t`` x1.002-1.044 at 9216 and 0.993-1.019 at 10240 (``ts`` 0.992-1.035, 1.001-1.014), float32 weights ``t``
    x1.131 / x1.158 at 9216 (8192 / 32768 rows), ``ts`` x1.099 / x1.118 at 10240; with dB fp16 ``t`` x1.180 / x1.272
    (9216, 4096 / 32768 rows; ``ts`` x1.140 / x1.217), bf16 x float32 ``ts`` x1.155 / x1.206 (``t`` x1.007 / x1.012).
    With dB at 12288 slower (0.75-0.95: split rows stay). The TMA's host time a call (run 284, 4096 x 12288 fp16,
    issued behind a sleeping GPU): 56-79 us against the pointer kernel's 52, under the GPU's 91 us; below
    ``TMA_MIN_ELEMENTS`` (2048 x 12288) the pointer kernel stays. Then (runs 287-288, against ``ts``): at 16 warps
    with 16-bit weights x1.018-1.055 at 4096 rows (10752-12288; 12288 fp16 88.7 us), x1.015-1.027 at 8192, x1.007-1.024
    at 32768; with float32 weights 0.82-0.83, and at 8193-10240 0.89-0.98. Three stages are the fastest (four
    0.97-1.01, two 0.66-0.81). Against the rule before in turns (``bench.ab``, runs 286 and 289, GB/s): 4096 rows
    fp16 x1.010 / x1.081 / x1.083 / x1.066 (9216 / 10752 / 11264 / 12288), bf16 x1.045 / x1.044 (10752 / 12288), 8192
    x 12288 fp16 x1.110, 32768 rows bf16 x1.146 / x1.110 (11264 / 12288: 99% / 97% of copy), bf16 x float32 x1.156 /
    x1.225 / x1.160 (9216 / 10752 / 12288: 94-96%); beside cuDNN (single timings, 4096 rows fp16) 1.03 / 1.25 /
    0.97 / 0.95, 32768 rows bf16 x float32 1.03 / 0.95 (9216 / 12288). Not taken: the TMA at 4097-5120 (4608
    x1.02-1.03, 5120 0.99-1.00, and host-bound at 4096 rows: 63-68 us a call against 43-46)."""
    if LIMITS["bwd_max_block_n"] < 8192 or n % 16:
        return None
    if tma and 8192 < n <= 10240:
        return LaunchConfig(1, 8192, 1, 8, 1, tail_n=2048, tma=True, tma_store=w_bytes == 4)
    if tma and 10240 < n <= 12288 and not has_dbias:
        return LaunchConfig(1, 8192, 1, 16 if w_bytes == 2 else 8, 1, tail_n=4096, tma=True, tma_store=True)
    if 4096 < n <= 5120 and m > 1024 and not has_dbias:
        return LaunchConfig(1, 4096, 1, 4, 2, tail_n=1024)
    if 8192 < n <= 10240 and not (has_dbias and w_bytes == 4):
        return LaunchConfig(1, 8192, 1, 8, 1, tail_n=2048)
    if 10240 < n <= 12288 and w_bytes == 2 and not has_dbias:
        return LaunchConfig(1, 8192, 1, 8, 1, tail_n=4096)
    return None


def _few_waves_masked_bwd(n: int) -> LaunchConfig | None:
    """The masked backward (LayerNorm + clamped ReLU) at 2049-4096 rows: rows of 4097-5632 columns, of 6144 and of
    7168 split in parts of 1024 (``split_rows_config``, as the plain backward's of 4097-5120); else None (its rules
    for many rows: one tile of the row's power of two).

    Round 28 (GPU runs 252-253, after the split rows' terms moved before their wait): forced in turns at 4096 rows,
    us a call, parts of 1024 against the rule's one tile of 8192: 5632 59.1 / 64.3 (fp16), 64.9 / 65.5 (bf16 x,
    float32 weights); 7168 67.4 / 69.9 and 67.9 / 71.1; but 6656 68.1 / 68.0 and 75.6 / 69.9, and 8192 75.6 / 82.7
    (fp16) against 75.5 / 74.7 (bf16): not taken there (the whole-row tile's fp16 is the slower one: its program
    spilled where bf16's did not; since round 29 it loads its weights again at every row block, no spill, and ran
    73.8 us in GPU run 255). Against the rule before in turns (``bench.ab``, run 253): 4096 rows fp16 5376
    x1.092, 5632 x1.099, 7168 x1.045; 3000 rows bf16 x fp32 weights 5632 x1.017, 7168 x1.059.

    Measured on an H200 (GPU run 236, 4096 rows, fp16, us a call, launches forced in turns, ``.ab/probe/r27a.py``):
    split rows against one tile of 8192 at 4608 50.4 / 60.7, 5120 51.4 / 62.3, 6144 59.3 / 66.5 (six whole parts:
    no column bounds), 5632 65.7 / 65.0 (level); the plain backward's head + tail tiles 63.5-70.6; at 2560-4096 the
    plain backward's two-row tiles of 16 warps slower (39.0-50.5 against the rule's 34.5-44.8). cuDNN's fused
    graph in the same run: 48.7 (4096), 60.5 (5632), 68.7 (6144). Against the rule before in turns (``bench.ab``,
    run 238): 4096 rows (fp16) 4608 x1.177, 5120 x1.210, 6144 x1.103; 3000 rows (bf16 x, float32 weights) 4608
    x1.062, 6144 x1.071; but whole parts at 7168 x1.019 and 8192 x1.098 (4096 rows) and x0.968 (3000 rows, bf16):
    not taken there.

    Round 107 (H200): at 3072 and 4096 columns (4096 rows fp16) the rules' one row of 4096 at 4 warps is within 0.4% of
    the tuner's best launch (run 785), and the plain backward's two rows of 4096 at 16 warps ran 46.6 us against 38.8
    at 4096 and x0.912 at 3000 x 4096 bf16 x float32 weights (run 784)."""
    if 4096 < n <= 5632 or n in (6144, 7168):
        return split_rows_config(n, False, True)
    return None


def chunked_max_n(is_rms: bool) -> int:
    """The longest row whose backward runs as one program a row (see LIMITS); longer rows are split. RMSNorm's
    chunked rows are taken at 16384 columns only (``_bwd_heuristic`` splits the others above 8192): at 4096 x 9216
    and 4096 x 12288 (fp16) split rows ran 1.22x and 1.02x faster, at 4096 x 16384 0.97x (GPU run 87)."""
    return LIMITS["rms_bwd_chunked_max_n" if is_rms else "ln_bwd_chunked_max_n"]


def split_rows_config(
    n: int, is_rms: bool = False, has_mask: bool = False, *, part_n: int = 0, per_thread: int = 32, block_m: int = 1,
    warps_per_sm: int = 8, ahead: bool | None = None,
) -> LaunchConfig:  # fmt: skip
    """Rows too long for one program: each split into parts of ``part_n`` columns, one program a part, 1 row a step, 32
    elements a thread, 8 warps a SM (``split_rows_kernel``). The parts: 1024 columns up to rows of 16384; LayerNorm's
    32768 exactly and the masked backward's rows of 16385-32768 4096; longer rows 1/32 of the row (LayerNorm) or 1/16
    (RMSNorm), at least 2048. Those longer rows (but the ones of 4096), and RMSNorm's split rows of any length, publish
    their sums a step ahead (``ahead``, ``split_rows_kernel``'s AHEAD). Keyword arguments force the rest (the tuner and
    tests).

    Measured on an H200 (GPU runs 80-82 and 87, ``benchmarks/results/logs/run8[0127]_split.txt``; GB/s, bf16 x, fp32 w,
    32768 rows unless said), against the best other part width and the path before (two kernels or chunks):
    LayerNorm 12288 3030 (4096: 2882; before 2262), 4096 x 15872 fp16 2930 (8192: 2720; 1920), 16384 3225 (1024:
    3067, 2048: 2961; 2266), 32768 2844 (4096: 2743; 2438), 65536 2650 (4096: 2520; 2440); the masked LayerNorm at
    16384 2717 (2048: 2365; 1510); RMSNorm 32768 3355 (1024 the same, 4096: 3328; 2459), 65536 3134-3154 (2048:
    2961-3000; 2489); at 4096 rows, fp16: 9216 2785 (2048: 2513; chunked 2287), 12288 2923 (2048: 2928; 2863)
    (run 87). Sums a step ahead (GPU runs 88 and 91, side by side with the same parts published in step): LayerNorm
    at 32768 2927 against 2846, at 65536 2928 against 2652 (cuDNN 2264); RMSNorm at 32768 3440 against 3356, at
    65536 3276 against 3129; RMSNorm at 4096 x 9216 and 12288 (fp16) 2751 against 2742 and 2944 against 2900; but
    LayerNorm's rows up to 16384 ran 3.5% (12288, parts of 1024) and 8-20% (16384, parts of 1024 and 8192) slower
    (the terms of a block are computed twice, and a third row block takes registers), so not there. Issuing the
    loads of the block after next after publishing (two blocks in registers) was slower nearly everywhere (run 88).
    Parts of 4096 (4 warps, 2 programs a SM) published in step, since round 24 (32768 x 32768, configs forced in
    turns, bf16 x, fp32 weights, us): the masked backward 2448.8 against the rule before's 2662.5 (parts of 2048 a
    step ahead; parts of 4096 a step ahead 2546.2, of 8192 2626.0; run 208), the plain one 1982.0 against 2046.0
    (4096 a step ahead 2069.4, 8192 2177.3; cuDNN 1959.9; run 212). Against the rule before in turns (``bench.ab``,
    runs 210 and 213): the masked backward x1.086 (32768) and x1.309 (20000), the plain one x1.038 (32768) but
    x0.950 at 20000, so the plain one takes them at 32768 columns only. At 12288 and 16384 columns the masked
    backward's parts of 1024 stayed the fastest (4096: 0.92x and 0.98x), at 65536 the parts of 2048 a step ahead
    (4096: 0.77-0.93x).

    Round 30 (GPU runs 263-264, forced in turns, us a call): LayerNorm's rows of 16384 at more than 4096 rows had parts
    of 8192 (8 warps, one program a SM) since round 11; since round 28 moved the parts of 1024's terms before their wait
    the parts of 1024 are faster: 32768 rows 932.7 against 992.2 (bf16 x, fp32 weights; parts of 4096 954.0, of 2048
    963.0), 926.5 against 980.7 (fp16), 930.3 against 988.4 (bf16); 16384 and 8192 rows x1.067-1.081; at 4096 rows
    still the fastest (parts of 8192 0.92x). At 12288 columns and in the masked backward's rows of 12288 and 16384
    parts of 1024 stayed the fastest (the others 0.74-0.90x); the masked backward at 65536 columns and RMSNorm's
    there kept theirs (in step, 16 elements a thread, other widths: 0.60-0.99x)."""
    full = row_block_n(n)
    # LayerNorm's rows of 32768 columns, and the masked backward's of 16385-32768
    in_step_4096 = not is_rms and (n == 32768 or (has_mask and full == 32768))
    if not part_n:
        if full <= 16384:
            part_n = 1024
        elif is_rms:
            part_n = max(2048, full // 16)
        else:
            part_n = 4096 if in_step_4096 else max(2048, full // 32)
    if ahead is None:
        ahead = (full > 16384 and not in_step_4096) or is_rms
    part_n = min(part_n, LIMITS["bwd_max_block_n"], row_block_n(cdiv(n, 2)))
    warps = max(1, min(32, block_m * part_n // (32 * per_thread)))
    return LaunchConfig(block_m, part_n, 1, warps, max(1, warps_per_sm // warps), parts=cdiv(n, part_n), ahead=ahead)


GPU_MAX_POLLS = 1 << 22  # max_polls' on a GPU (the split staged kernel's too, which runs only there)


def max_polls(x: torch.Tensor) -> int:
    """How often a split-row program reads a missing part's row sums before it gives up on it (``split_rows_kernel``):
    on a GPU about a second of reads (a partner that runs publishes within microseconds); in the interpreter 0."""
    return GPU_MAX_POLLS if x.is_cuda else 0


def stands_in(x: torch.Tensor) -> bool:
    """Whether a split-row program reduces a part still missing after ``max_polls`` itself (``STAND_IN``): in the
    interpreter, which runs programs one after another, so a partner that has not published yet will not until this
    program ends; not on a GPU, where the partners run side by side."""
    return not x.is_cuda


@functools.cache
def multiprocessor_count(device_index: int) -> int:
    return torch.cuda.get_device_properties(device_index).multi_processor_count


# the peak DRAM bandwidth (bytes a second) below which a GPU takes the rules of ``slower_dram``: between an H100's
# 3.35e12 (HBM3) and an H200's 4.8e12 (HBM3e), which have the same 132 SMs and 50 MB of L2
SLOWER_DRAM_BELOW = 4.0e12


def dram_bytes_per_s(props) -> float:
    """A GPU's peak DRAM bandwidth by its memory clock and bus width (two transfers a clock), from its
    ``torch.cuda.get_device_properties``; 0 where they do not say (a torch without the fields)."""
    clock_khz, bus_bits = getattr(props, "memory_clock_rate", 0), getattr(props, "memory_bus_width", 0)
    return 2 * clock_khz * 1e3 * bus_bits / 8


@functools.cache
def slower_dram(device_index: int) -> bool:
    """Whether the rules take their launches for a GPU whose DRAM is slower than the H200's they were fitted on
    (``fwd_config``'s ``slower_dram``): a peak below ``SLOWER_DRAM_BELOW``. False on the CPU (``device_index`` -1)
    and where the device does not say."""
    if device_index < 0:
        return False
    return 0 < dram_bytes_per_s(torch.cuda.get_device_properties(device_index)) < SLOWER_DRAM_BELOW


# the whole-row backward (``norm_bwd_kernel``) loads dy and x "evict_first" in calls of at most this many bytes of x,
# dy alone (and the mask) in calls of at most BWD_DY_EVICT_MAX_BYTES
BWD_ROW_EVICT_MAX_BYTES = 36 << 20
BWD_DY_EVICT_MAX_BYTES = 64 << 20


def bwd_row_evict(m: int, n: int, x_bytes: int) -> tuple[str, str]:
    """The L2 policies of the whole-row backward's loads, which read each row once (``norm_bwd_kernel``'s ROW_EVICT,
    dy's and the clamped-ReLU mask's bytes, and ROW_X_EVICT, x's): both "evict_first" where x is at most
    ``BWD_ROW_EVICT_MAX_BYTES`` (36 MiB); dy's alone up to ``BWD_DY_EVICT_MAX_BYTES`` (64 MiB); else "" (the default).

    The lines a call's dx allocates in L2 replace lines already there; those the call finds may be dirty (the
    benchmark's timer leaves L2 full of its 256 MB flush, a training step the writes of the kernels before), and each
    costs a write to DRAM. Marked "evict_first", dy's and x's lines, clean, go first. Round 106 (H200, GPU runs
    780-781, in turns against the default): 4096 rows fp16 x1.02 / x1.03-1.05 / x1.03-1.04 at 1024 / 2048 / 4096
    (RMSNorm / LayerNorm), RMSNorm's x1.019 at 4608 (36 MiB), and 32768 rows bf16 x1.03 at 256, x1.02-1.05 at 512
    (32 MiB); but x0.993 / x0.990 / x0.955 at 4096 x 5120 / 8192 / 10240 (40-80 MiB), level at 32768 x 1024 (64 MiB)
    and x0.896 at 32768 x 4096 (RMSNorm, 256 MiB). Round 107 (run 783): the masked backward (LayerNorm + clamped
    ReLU) x1.012 / x1.039 / x1.060 / x1.026 at 4096 x 1024 / 2048 / 3072 / 4096 fp16, x1.040 / x1.046 at 32768 x 256
    / 512 bf16 x float32 weights. Nsight Compute after a 256 MB write (run 783, RMSNorm's): the policy cut the call's
    DRAM writes by 7.8-9.2 MB, at 4096 x 4608 (25.4 -> 16.2 MB) and above the bound too (4096 x 10240 71.0 -> 63.2
    MB, 32768 x 4096 bf16 255 -> 247), its reads level or fewer, yet those two ran 3% and 12% longer: above the bound
    the loss is not in DRAM's bytes. Round 108 (runs 793-795), dy's loads alone marked: against both marked, x0.973-
    0.998 at 4096 x 1024 / 2048 fp16 and 32768 x 256 / 512 bf16 (so both stay there); against the default, x1.011 /
    x1.007 at 4096 x 5120 / 8192 fp16 and x1.011 at 32768 x 1024 bf16 (RMSNorm), x1.008 at 4096 x 8192 (the masked
    backward), but x0.996 at 4096 x 10240 (80 MiB) and x0.973 at 32768 x 4096 bf16 (256 MiB)."""
    size = m * n * x_bytes
    if size <= BWD_ROW_EVICT_MAX_BYTES:
        return "evict_first", "evict_first"
    return ("evict_first" if size <= BWD_DY_EVICT_MAX_BYTES else ""), ""


def persistent_programs(device: int, row_blocks: int, programs_per_sm: int) -> int:
    """Programs of a persistent grid (the backward's, a persistent forward's) on the GPU ``device`` (an index; -1:
    the CPU, as ``Tensor.get_device()`` says): ``programs_per_sm`` (a config's, or fewer where fewer fit:
    ``ops._persistent_grid``) a SM on a GPU, a handful in the interpreter; at most one per row block."""
    if device >= 0:
        return max(1, min(row_blocks, programs_per_sm * multiprocessor_count(device)))
    return max(1, min(row_blocks, 4))


def split_staged_groups(device: int, m: int, parts: int) -> int:
    """Groups of rows of the split staged backward (``_split_staged_bwd``), whose grid is parts x groups, one program a
    SM: as many whole groups as the GPU ``device`` (an index) has SMs for, at most one a row; on the CPU (-1), where
    the kernel cannot run but its plan is worked out in tests, one."""
    if device < 0:
        return 1
    return max(1, min(m, multiprocessor_count(device) // parts))


def row_groups(x: torch.Tensor, row_blocks: int, parts: int, cfg: LaunchConfig) -> int:
    """Groups of rows of the split-row backward, whose grid is parts x groups: on a GPU about ``persistent_programs``
    programs in all (what fits at once); in the interpreter 3 groups (so tests see a last group that is part full).
    At least one group, at most one per row block."""
    if x.is_cuda:
        programs = persistent_programs(x.get_device(), row_blocks * parts, cfg.programs_per_sm)
        return max(1, min(row_blocks, programs // parts))
    return max(1, min(row_blocks, 3))
