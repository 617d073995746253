"""Launchers: the six training-phase functions of the API over the two Triton kernels."""

from __future__ import annotations

import functools
import math
from dataclasses import replace
from typing import NamedTuple

import torch
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor

from .. import checks, reference
from ..backends import require_triton_device
from ..bitmask import packed_width
from . import config
from .config import cdiv, next_power_of_2
from .launch import Launcher
from .norm_bwd import SENTINEL, norm_bwd_kernel, norm_bwd_tma_kernel, split_rows_kernel, sum_partials_kernel
from .norm_fwd import norm_fwd_kernel

try:  # Gluon's staged kernels (written for Triton 3.6's Gluon; with another Triton the rules never take them)
    from . import norm_bwd_staged as STAGED
    from . import norm_fwd_staged as STAGED_FWD
except ImportError:
    STAGED = STAGED_FWD = None

# the kernels, launched with less host work a call than kernel[grid](...) (launch.py)
NORM_FWD = Launcher(norm_fwd_kernel)
NORM_BWD = Launcher(norm_bwd_kernel)
SUM_PARTIALS = Launcher(sum_partials_kernel, pdl="PDL_WAIT")
SPLIT_ROWS = Launcher(split_rows_kernel, pdl="PDL_WAIT")
NORM_BWD_TMA = Launcher(norm_bwd_tma_kernel)
STAGED_BWD = Launcher(STAGED.norm_bwd_staged_kernel) if STAGED is not None else None
# the split staged kernel with its weights read from global memory (a pointer) and staged by the TMA (a descriptor):
# a Launcher each, as their arguments' kinds differ
SPLIT_STAGED_BWD = Launcher(STAGED.split_staged_kernel) if STAGED is not None else None
SPLIT_STAGED_SHARED_W_BWD = Launcher(STAGED.split_staged_kernel) if STAGED is not None else None
_W_SHARED_AT = SPLIT_STAGED_BWD.constexpr_names.index("W_SHARED") if STAGED is not None else None
SPLIT_STAGED_FWD = Launcher(STAGED_FWD.split_staged_fwd_kernel) if STAGED_FWD is not None else None
# where a split staged forward plan's values hold a slice's rows of 256 and the slices a row
_FWD_SR_AT, _FWD_PARTS_AT, _FWD_Y_SLOTS_AT = (
    (SPLIT_STAGED_FWD.constexpr_names.index(k) for k in ("SR", "PARTS", "Y_SLOTS"))
    if STAGED_FWD is not None
    else (0, 0, 0)
)
_MASK_TMA_AT = NORM_BWD_TMA.constexpr_names.index("MASK_TMA")  # where a plan's values hold it
# where a split staged backward plan's values hold WARP_SUMS
_WARP_SUMS_AT = SPLIT_STAGED_BWD.constexpr_names.index("WARP_SUMS") if STAGED is not None else 0
TMA_STAGES = 3  # norm_bwd_tma_kernel's STAGES: two row blocks in flight (GPU run 142: 4 stages 0.92-1.0x of 3)
MASK_BY_TMA = True  # norm_bwd_tma_kernel's MASK_TMA where the mask's rows allow it (_mask_tma)
ENCODED_ROWS = 256  # a backward plan's rows whose TMA descriptors it keeps encoded (_keep_encoded)


def _acc_of(dtype: torch.dtype):
    """The kernels' accumulator type and the statistics' dtype: float64 for float64 x, else float32."""
    return (tl.float64, torch.float64) if dtype == torch.float64 else (tl.float32, torch.float32)


class _ForwardPlan(NamedTuple):
    """What a forward launch takes that depends on the shape, dtypes and options only (``_forward_plan``)."""

    programs: int
    blocks_per_program: int
    num_warps: int
    values: tuple  # the constexprs, in norm_fwd_kernel's order
    thresholds: tuple  # lower, upper, keep_from, keep_to (the split staged forward's: lower, upper)
    stat_dtype: torch.dtype
    row_blocks: int
    programs_per_sm: int  # a persistent grid's (0: one program a row block)
    # a persistent grid's ``(programs, blocks_per_program)`` as launched, worked out at the plan's first call: fewer
    # programs where fewer fit a SM than it asks (``_persistent_grid``); empty before
    fitted: list
    # the split staged forward's (``SPLIT_STAGED_FWD``): x's descriptor kept encoded by x's address (x's and y's by
    # both, where the TMA stores y)
    # (``_staged_forward``); None for ``norm_fwd_kernel``'s plans
    encoded: dict | None = None


def _pass_two_unrolled(m, cfg) -> bool:
    """The fused forward's chunked rows whose second pass is unrolled (``PASS_TWO_UNROLL``; the plain forwards' the
    compiler unrolls by itself), in programs of fewer than 32 warps: where a thread holds at most 4 elements of a chunk;
    at 5-8, where a row has 6 chunks or more or there are 16384 rows or more.

    At 4 elements a thread (round 8, GPU runs 55-56) the mask's bytes pass through shared memory, whose barrier kept
    the compiler from unrolling: unrolled, 8-20% faster at 32768 x 6144-16384. At 8 a thread (3-D tiles, each thread
    its own bytes; round 45) the compiler kept the loop too, its body about 118 instructions a chunk of 8 elements,
    the loop's own (addresses, the eviction policy's operand) about 20 of them; unrolled (sm_90, read on the CPU: 32768
    x 6656, 824 -> 1216 instructions a program, 56 -> 72 registers, no stack) it ran x1.015-1.086 against the loop on
    an H200 (GPU run 390, ``bench.ab`` in turns: 32768 rows of 4608-32768 columns, bf16 x, float32 weights; 4096 rows
    of 12800-14848, fp16), loading the next chunk's x ahead as well (``X_AHEAD``) x1.009-1.053, not taken. On an H100
    (GPU runs 392-393) it gained where a row has 7-8 chunks (32768 x 6656 x1.037, 4096 x 12800 fp16 x1.008) but lost
    in the few waves of 4096 rows of 5 chunks (4608 x0.973, 8704 x0.951; the H200 x1.03 there): its 72 registers fit
    fewer programs on an SM, and 4096 rows are 3-10 waves of them. At 32768 rows of 5 chunks (4608) the H100 ran
    x0.995, the H200 x1.08: unrolled. Not at 16-32 elements a thread (at most 2048 rows of more than 16384 columns;
    before round 46 also those of 8193-16384: 2048 x 12288 x0.984, 1024 x 12288 x1.006, run 391; round 8: 0.935 at
    1024 x 12288), nor in the 32-warp programs of rows above 32768 columns, which spill unrolled (8 bytes, not
    timed)."""
    if cfg.num_chunks == 1 or cfg.num_warps >= 32:
        return False
    return cfg.per_thread <= 4 or (cfg.per_thread <= 8 and (cfg.num_chunks >= 6 or m >= 16384))


@functools.lru_cache(maxsize=1024)
def _forward_plan(
    m, n, x_dtype, w_dtype, has_bias, is_rms, zero_centered_gamma, clamp, training, device, _generation, row_align=1,
    staged=False,
):  # fmt: skip
    """The forward's launch of ``m x n`` (``device``: x's, -1 on the CPU), worked out once: a small call's host time
    is most of its time (benchmarks/README.md, round 16). ``_generation`` is ``config.generation``, which
    ``config.limits`` and ``config.forced`` change, so a plan never outlives the rules it came from. Not
    ``training`` (an inference call, y alone): ``config.infer_config``'s launch. ``row_align``: the kernel's
    ``ALIGN`` (``_row_align``). ``staged``: the split staged forward can run on the device (``_staged_capable``);
    after a plan that takes it, whether it can load x's rows (``_staged_x``), as the backward's ``staged``."""
    acc_tl, stat_dtype = _acc_of(x_dtype)
    has_mask = clamp is not None and training
    w_bytes = w_dtype.itemsize
    rule_inputs = dict(
        w_bytes=w_bytes,
        x_fp16=x_dtype == torch.float16,
        slower_dram=config.slower_dram(device),
        has_bias=has_bias,
        zero_centered=zero_centered_gamma,
    )
    if training:
        cfg = config.fwd_config(
            m, n, is_rms, has_mask=has_mask, staged=staged, x_bytes=x_dtype.itemsize, **rule_inputs
        )  # fmt: skip
    else:
        cfg = config.infer_config(m, n, is_rms, staged=staged, x_bytes=x_dtype.itemsize, **rule_inputs)
    lower, upper = clamp or (0.0, 0.0)
    keep_from, keep_to = (0.0, 0.0)  # float64 kernels compare y itself
    if has_mask and x_dtype != torch.float64:
        keep_from, keep_to = mask_thresholds(float(lower), float(upper), x_dtype)
    thresholds = (float(lower), float(upper), keep_from, keep_to)
    if cfg.staged:
        if not staged:  # only a forced config asks for it here
            raise ValueError(
                "a staged forward config was forced where the split staged forward cannot run: it needs Triton "
                "3.6's Gluon, a Hopper GPU and 16-bit x with contiguous rows"
            )
        stages, ahead = config.split_staged_fwd_form(is_rms)
        values = STAGED_FWD.constexprs(
            n, cfg.block_n, cfg.num_warps, stages, ahead, zero_centered_gamma, is_rms, has_bias, config.GPU_MAX_POLLS,
            training, clamp is not None, config.split_staged_fwd_y_slots(x_dtype == torch.float16) if has_mask else 0,
        )  # fmt: skip
        programs = config.split_staged_groups(device, m, cfg.parts) * cfg.parts
        values = SPLIT_STAGED_FWD.values(**values)
        # its mask's bits compare y as stored against the bounds themselves (``norm_fwd_staged._fwd_masker``)
        return _ForwardPlan(programs, 1, cfg.num_warps, values, thresholds[:2], stat_dtype, m, 0, [], {})
    whole_chunks = _whole_chunks(m, n, cfg)
    unrolled = min(whole_chunks or cfg.num_chunks, 8)
    pass_two_unroll = unrolled if has_mask and _pass_two_unrolled(m, cfg) else None
    row_blocks = cdiv(m, cfg.block_m)
    persistent = cfg.programs_per_sm > 0 and cfg.num_chunks == 1
    programs = config.persistent_programs(device, row_blocks, cfg.programs_per_sm) if persistent else row_blocks
    tiles_3d = _tiles_3d(cfg, x_dtype, w_dtype)
    values = NORM_FWD.values(
        IS_RMS=is_rms, HAS_BIAS=has_bias, ZERO_CENTERED=zero_centered_gamma, CLAMP_MASK=clamp is not None,
        ACC=acc_tl, BLOCK_M=cfg.block_m, BLOCK_N=cfg.block_n, NUM_CHUNKS=cfg.num_chunks, UNROLL=unrolled,
        EVEN_N=_even_n(n, cfg), PASS_TWO_UNROLL=pass_two_unroll, KEEP_BY_BITS=0.0 < keep_from <= keep_to,
        TILE_3D=tiles_3d, TAIL_N=cfg.tail_n, PERSISTENT=persistent, EVEN_M=not persistent and m % cfg.block_m == 0,
        TRAINING=training, W_IN_TILE=not tiles_3d and _weights_in_tile(cfg, x_dtype, w_dtype, is_rms, has_mask),
        X_AHEAD=cfg.ahead and cfg.num_chunks > 1, STATS_AS_HELD=training and _stats_as_held(cfg, has_mask, stat_dtype),
        WHOLE_CHUNKS=whole_chunks, ALIGN=row_align,
        PAIR_NIBBLES=_pair_nibbles(cfg, has_mask, tiles_3d, row_align, x_dtype, device),
        **_params_early(cfg, n, w_bytes, has_bias, is_rms),
    )  # fmt: skip
    per_sm = cfg.programs_per_sm if persistent else 0
    return _ForwardPlan(
        programs, cdiv(row_blocks, programs), cfg.num_warps, values, thresholds, stat_dtype, row_blocks, per_sm, []
    )


def _forward_outputs(x, stat_dtype, is_rms, clamp, training=True):
    """y (contiguous, whatever x's row stride), mean (None for RMSNorm), rstd and the mask (None without the
    clamped ReLU), uninitialized; y alone (the others None) where not ``training``. Allocated after x
    (``empty_like``, ``new_empty``): on the GPU machine's host ``torch.empty(shape, dtype=, device=)`` took 2.9-6.2
    microseconds for y, ``empty_like`` 1.6-3.9 (GPU runs 176-177), in a call whose host time is most of its time at
    4096 x 768."""
    m, n = x.shape
    y = torch.empty_like(x, memory_format=torch.contiguous_format)
    if not training:
        return y, None, None, None
    rstd = x.new_empty(m, dtype=stat_dtype)
    mean = None if is_rms else x.new_empty(m, dtype=stat_dtype)
    mask = x.new_empty((m, packed_width(n)), dtype=torch.uint8) if clamp else None
    return y, mean, rstd, mask


def _forward(x, weight, bias, eps, *, is_rms, zero_centered_gamma, clamp=None, training=True):
    """``(y, mean, rstd, mask)`` (``_forward_outputs``); not ``training`` (an inference call): y alone, the kernel
    without ``TRAINING`` given y in place of the outputs it does not write."""
    m, n = x.shape
    if m == 0:
        return _forward_outputs(x, _acc_of(x.dtype)[1], is_rms, clamp, training)
    stride_x, device = x.stride(0), x.get_device()
    if device >= 0 and device != torch._C._cuda_getDevice():  # x's GPU made current (``backends.on_tensor_device``)
        with torch.cuda.device(device):
            return _forward(x, weight, bias, eps, is_rms=is_rms, zero_centered_gamma=zero_centered_gamma, clamp=clamp,
                            training=training)  # fmt: skip
    row_align = 1 if not (n | stride_x) & 15 else _row_align(x.element_size(), n, stride_x)
    key = (m, n, x.dtype, weight.dtype, bias is not None, is_rms, zero_centered_gamma, clamp, training, device)
    # the split staged forward where the device has it (whether it can load x is asked only of a plan that takes it)
    staged = _staged_capable(device)
    plan = _forward_plan(*key, config.generation, row_align, staged)
    if plan.encoded is not None:
        if _staged_x(x):
            y, mean, rstd, mask = _forward_outputs(x, plan.stat_dtype, is_rms, clamp, training)
            _staged_forward(plan, x, weight, bias, eps, y, mean, rstd, mask)
            return y, mean, rstd, mask
        plan = _forward_plan(*key, config.generation, row_align, False)  # rows it cannot load: without it
    y, mean, rstd, mask = _forward_outputs(x, plan.stat_dtype, is_rms, clamp, training)
    grid = plan.fitted[0] if plan.fitted else plan[:2]
    # the kernel takes a pointer for every argument: RMSNorm passes rstd for the mean, what is not written passes y
    rstd_or_y = rstd if rstd is not None else y
    args = (
        x, y, weight, bias if bias is not None else weight, mean if mean is not None else rstd_or_y, rstd_or_y,
        mask if mask is not None else y,
        m, n // row_align, stride_x // row_align, y.stride(0) // row_align, mask.stride(0) if mask is not None else 0,
        float(eps), *plan.thresholds, *grid,
    )  # fmt: skip
    if plan.programs_per_sm and not plan.fitted and _persistent_grid(plan, args, device) != grid:
        grid = plan.fitted[0]
        args = (*args[:-2], *grid)
    NORM_FWD.launch((grid[0],), args, plan.num_warps, plan.values)
    return y, mean, rstd, mask


def _staged_x(x: torch.Tensor) -> bool:
    """Whether the split staged forward can load x (``norm_fwd_staged.descriptor``): 16-bit, its rows contiguous and
    starting on 16 bytes."""
    return x.element_size() == 2 and x.stride() == (x.shape[1], 1) and not x.data_ptr() & 15


def _staged_forward(plan: _ForwardPlan, x, weight, bias, eps, y, mean, rstd, mask) -> None:
    """The split staged forward's launch (``SPLIT_STAGED_FWD``) of a plan that takes it: x's descriptor kept encoded
    with the plan by x's address (and y's by both addresses, where the TMA stores y: the fused training forward's y
    in slots of its own), as the staged backward's (``_staged_backward``); the row statistics' slots
    (``SUMS``) filled with ``SENTINEL`` first. An inference call (mean and rstd None) passes y for both, a call
    without a mask (None) y for it; the clamp's bounds (its mask's thresholds) are the plan's."""
    m, n = x.shape
    sums = x.new_full((m, plan.values[_FWD_PARTS_AT]), SENTINEL, dtype=torch.int64)
    # RMSNorm passes rstd for the mean, an inference call y for both, and the weights for an absent bias (none read)
    rstd = rstd if rstd is not None else y
    stats = (mean if mean is not None else rstd, rstd, mask if mask is not None else y)
    args = (weight, bias if bias is not None else weight, y, *stats, sums, m, n, eps, *plan.thresholds)
    grid = (plan.programs,)
    # y's descriptor where the TMA stores y (from its slots), else x's in its place, not read
    y_by_tma = plan.values[_FWD_Y_SLOTS_AT] > 0
    rows = (x.data_ptr(), y.data_ptr()) if y_by_tma else x.data_ptr()
    encoded = plan.encoded.get(rows)
    if encoded is None or not SPLIT_STAGED_FWD.launch_encoded(grid, encoded, args, plan.num_warps, plan.values):
        x_rows = STAGED_FWD.descriptor(x, plan.values[_FWD_SR_AT])
        head = (x_rows, STAGED_FWD.descriptor(y, plan.values[_FWD_SR_AT]) if y_by_tma else x_rows)
        kept = SPLIT_STAGED_FWD.launch(grid, (*head, *args), plan.num_warps, plan.values, head=2)
        if kept is not None:
            _keep_encoded(plan, rows, kept)


def _persistent_grid(plan: _ForwardPlan, args: tuple, device: int) -> tuple[int, int]:
    """``(programs, blocks_per_program)`` of a persistent forward, worked out at its plan's first call (``args``: that
    call's, at the plan's grid) and kept: the plan's, but at most as many programs a SM as fit on one at once by the
    compiled kernel's registers, threads and shared memory (``Launcher.programs_that_fit_compiled`` compiles the kernel
    before its first launch, as the backward's ``_backward_grid``); the plan's in the interpreter. A grid that asks
    more runs them in two waves, the second after the first's programs have done all their rows: read on the CPU
    (sm_90), LayerNorm's 1-warp programs of 1536 columns with float32 weights hold 168 registers (12 of 16 fit),
    RMSNorm's 4-warp programs of 3072 with a bias and float32 weights 72 (7 of 8). Forced to what fits on an H100 (GPU
    run 445, in turns against the plan's grid): 3000 x 1536 x1.165 (LayerNorm) and x1.154 (RMSNorm), 4096 x 1536
    x1.010, RMSNorm 3000 / 4096 x 3072 x1.052 / x1.164, 1024 x 12288 (8 warps, 148 registers: 1 of 2) x1.022. The
    forward's rows are independent, so the grid changes no output; worked out before the first launch (round 61), the
    first call launches the grid of the later ones."""
    return _fitted_grid(
        plan.fitted, plan[:2], NORM_FWD, args, plan.num_warps, plan.values, plan.programs_per_sm, plan.row_blocks,
        device,
    )  # fmt: skip


def _fitted_grid(
    fitted: list, grid: tuple, launcher: Launcher, args: tuple, num_warps: int, values: tuple, programs_per_sm: int,
    row_blocks: int, device: int,
) -> tuple[int, int]:  # fmt: skip
    """A persistent plan's ``(programs, blocks_per_program)``, the forward's (``_persistent_grid``) and the
    backward's (``_backward_grid``): ``fitted[0]`` once worked out; else ``grid`` (the plan's, asking
    ``programs_per_sm`` a SM over ``row_blocks``), but with as many programs a SM as fit on one where fewer do, asked
    of the kernel compiled for ``args`` before its first launch (``Launcher.programs_that_fit_compiled``; never on the
    CPU, ``device`` -1), and kept in ``fitted``."""
    if fitted:
        return fitted[0]
    fit = launcher.programs_that_fit_compiled(args, num_warps, values, device) if device >= 0 else None
    if fit is not None and fit < programs_per_sm:
        programs = config.persistent_programs(device, row_blocks, fit)
        grid = (programs, cdiv(row_blocks, programs))
    fitted.append(grid)
    return grid


def _row_align(itemsize: int, *lengths: int) -> int:
    """The pointer kernels' ``ALIGN``: where N or a row stride (``lengths``) is not a multiple of 16 elements, the
    largest power of two (up to 16 bytes of x) that divides them all, else 1. The kernels then take N and the row
    strides in units of it, which tells the compiler that every row starts on a multiple of it. Triton specializes
    an integer argument on its divisibility by 16 alone: at a row stride of 9000 (bf16, 16-byte rows) the sm_90 code
    of the forward loaded x 2 bytes at a time, in units of 8 16 bytes at a time."""
    every = 0
    for length in lengths:
        every |= length
    if not every & 15:
        return 1  # Triton's own specialization says as much
    return min(every & -every, max(1, 16 // itemsize))


def _even_n(n: int, cfg) -> bool:
    """The kernels' ``EVEN_N``: every tile (or chunk) of BLOCK_N columns lies wholly in the row, so they drop its
    column bounds; with a tail tile (``tail_n``), the head does (the tail keeps its bounds)."""
    return n % cfg.block_n == 0 or (cfg.tail_n > 0 and n >= cfg.block_n)


def _whole_chunks(m: int, n: int, cfg) -> int:
    """The forward's ``WHOLE_CHUNKS``: where a chunked row ends in a ragged chunk (not with ``ahead``), in calls of
    more than 4096 rows, or of fewer with at least 7 chunks a row, the chunks before it, which then go without column
    bounds; else 0 (every chunk with its bounds, or none where ``EVEN_N``).

    Measured on an H200 against every chunk with its bounds (``bench.ab``, in turns): at 4096 rows (fp16, GPU runs
    361-362) LayerNorm at 12800 (7 chunks of 2048) x1.087-1.090, 13312 x1.100, 13824 x1.099-1.101, 14848 (8)
    x1.071-1.073 (the inference call x1.022-1.040), the fused forward x1.166-1.187; at 32768 rows (bf16 x, float32
    weights) 6656 (7 chunks of 1024) x1.110-1.114, 12800 x1.083, the fused forward x1.132 / x1.096, RMSNorm
    x1.000-1.014. With fewer chunks (run 364): at 32768 rows LayerNorm at 4608 (5 chunks) x1.065, 5632 (6) x1.104,
    10752 (6 of 2048) x1.020, the fused forward x1.112-1.135, RMSNorm (3 chunks of 2048) x1.000-1.028; at 16384 x 5632
    fp16 x1.088, fused x1.118. But at 4096 rows LayerNorm at 10752 (6 chunks) x0.894 (the inference call x1.031) and
    8704 (5, ``ahead``) x0.979, RMSNorm at 4608 and 12800 (3-4) x1.003-1.005 (run 361)."""
    ragged = n % cfg.block_n != 0 and cdiv(n, cfg.block_n) == cfg.num_chunks
    taken = ragged and not cfg.ahead and (cfg.num_chunks >= 7 or m > 4096)
    return n // cfg.block_n if taken else 0


def _params_early(cfg, n: int, w_bytes: int, has_bias: bool, is_rms: bool) -> dict:
    """The forward's ``BIAS_EARLY`` and ``W_EARLY`` (``norm_fwd``'s docstring): LayerNorm's one-tile rows with a bias
    load it before the statistics at two launches of a persistent grid of 8 programs a SM, a 2048-column head and a
    512-column tail at 2 warps, and (rows of 2048, 16-bit weights) one tile of 2048 at 4 warps; with 16-bit weights
    their weights too. Measured on an H200 in turns (``bench.ab``), 4096 rows:
      - 2560 columns, fp16: the bias early against after the statistics, the training forward x1.049 and the
        inference call x1.042 (GPU run 636); the weights early too against the bias alone, the training forward
        x1.051-1.057, the inference call x1.019, the clamped ReLU's x1.026, zero-centered gamma x1.016 (runs
        639-640). bf16 x with float32 weights: the bias alone against neither x1.050 (run 644; the inference call
        x0.995), both against the bias alone x0.981 (run 643), so float32 weights load early the bias alone.
      - 2048 columns, fp16: both early against neither, the training forward x1.019-1.028, the inference call
        x1.024, the clamped ReLU's x1.029 (runs 643-644); the weights alone x1.007 (run 639), the bias alone x1.000
        (run 636). Rows of 1792 (the same launch, ragged): x0.945 (run 643), so only whole rows.
    Elsewhere the bias early ran x0.903-1.029 (4096 x 1024-1536 fp16, 32768 x 256-2048 bf16 x float32 weights, 4096
    x 768 bf16), both at 4096 x 3072-6656 x0.911-0.972 and at the 2048 + 1024 launch of 2 warps (3072 columns)
    x0.941 (run 641); the weights alone x0.962-1.014 (4096 x 3072, 32768 x 256-1024 bf16 x float32 weights) and
    RMSNorm's at 4096 x 2560 x0.992 (training) / x1.023 (inference), on its launch of round 81. RMSNorm's bias is
    not measured."""
    launch = (cfg.block_m, cfg.block_n, cfg.num_chunks, cfg.num_warps, cfg.programs_per_sm, cfg.tail_n)
    head_and_tail = launch == (1, 2048, 1, 2, 8, 512)
    whole_tile = launch == (1, 2048, 1, 4, 8, 0) and n == 2048 and w_bytes == 2
    bias_early = has_bias and not is_rms and (head_and_tail or whole_tile)
    return {"BIAS_EARLY": bias_early, "W_EARLY": bias_early and w_bytes == 2}


def _pair_nibbles(cfg, has_mask: bool, tiles_3d: bool, row_align: int, x_dtype: torch.dtype, device: int) -> bool:
    """The fused forward's ``PAIR_NIBBLES`` (``norm_fwd._store_mask_by_nibbles``): chunked rows of one row a tile at 4
    elements a thread, whose mask bytes each span two lanes, make them by a shuffle between the two, on a GPU (the
    interpreter has no shuffle; it keeps the reshape). Only where the compiler's layout of the chunk is 4 consecutive
    columns a lane, lane after lane: x of 16 or 32 bits whose rows are 16-element aligned (``row_align`` 1), so that
    its loads are 4 wide, and not the 3-D tiles.

    Read on the CPU (sm_90 code, 1024 x 9216 bf16 in chunks of 1024 at 8 warps; logs/round49_sass_fused.py.txt):
    without it the bytes, held by two lanes each after their OR, went through shared memory to the store's layout, 23
    barriers a row against the plain forward's 5; with it none more than the plain forward's."""
    if device < 0 or not has_mask or tiles_3d or row_align != 1 or x_dtype.itemsize not in (2, 4):
        return False
    return cfg.num_chunks > 1 and cfg.block_m == 1 and cfg.tail_n == 0 and cfg.per_thread == 4


def _tiles_3d(cfg, x_dtype: torch.dtype, w_dtype: torch.dtype) -> bool:
    """The forward holds its tiles as [rows, N / 8, 8] (``TILE_3D``: the weights load in x's layout, not through
    shared memory) where the weights are wider than x (float32 weights, 16-bit x), for one-tile rows of at least
    ``LIMITS["tile_3d_min_n"]`` columns, and in the second pass of chunked rows where a thread holds 8 elements of
    a chunk (one 16-byte load of x, one mask byte). Measured on an H200 against [rows, N] tiles (``bench.ab``, bf16
    x): with float32 weights, LayerNorm 1.06x faster at 2048 and 1.14x at 4096 columns, LayerNorm + clamped ReLU
    1.05-1.07x (32768 and 4096 rows), RMSNorm level (0.998-1.002) (GPU runs 75-77); but at 256-1024 columns
    0.71-1.00x, and with weights in x's dtype 0.87-0.98x (bf16 and fp16; LayerNorm at 4096 0.91x). Chunked rows
    (GPU runs 95-96, 32768 rows, 8 a thread in 3-D tiles against the 2-D ones of 4 a thread): LayerNorm at 65536
    3056 GB/s against 2479, RMSNorm 3408 against 3235, LayerNorm + clamped ReLU at 32768 2981-3015 against 2149
    and at 65536 2922-2941 against 2037. (With weights in x's dtype the sm_90 code of both tiles is the same.)"""
    if w_dtype.itemsize <= x_dtype.itemsize:
        return False
    if cfg.num_chunks == 1:
        return cfg.block_n >= config.LIMITS["tile_3d_min_n"]
    return cfg.block_m == 1 and cfg.per_thread == 8


def _weights_in_tile(cfg, x_dtype: torch.dtype, w_dtype: torch.dtype, is_rms: bool, has_mask: bool) -> bool:
    """The forward's ``W_IN_TILE`` (``norm_fwd._load_columns``): one-tile rows in 2-D tiles (not ``_tiles_3d``) of
    16-bit x load their float32 weights and bias each thread for its own columns, not through shared memory. Only where
    a tile row has at least 4 columns a thread however the compiler lays the tile out (``block_n >= 128 * num_warps``):
    the assembly takes four columns at a time, and a thread holding fewer would hand it undefined addresses for the rest
    (the sm_90 code of one row of 256 at 4 warps, 2 columns a thread, has them). The fused forward at 256 columns only;
    RMSNorm's rows of 256 only on a persistent grid (more than 8192 of them). Measured on an H200 against the loads
    through shared memory, in turns (``bench.ab``, bf16 x, float32 weights, GPU runs 328-330): at 32768 rows LayerNorm
    x1.025 / x1.044 / x1.020 at 256 / 512 / 1024 columns, RMSNorm x1.012 / x1.055 / x1.024; at 8192 rows LayerNorm
    x1.124 / x1.098 at 512 / 1024, RMSNorm x1.077 / x1.105 (RMSNorm's 256 x0.982); at 4096 rows LayerNorm x1.010 /
    x1.012 / x1.170, RMSNorm x1.037 / x1.078 at 512 / 1024 (its 256 x0.970). The fused forward level at 512 and x0.919
    at 1024 (two rows of 1024 at 2 warps: 100 instructions more); at 256 (round 39, runs 331-334) x1.037 / x1.039 at
    4096 / 2048 rows (8 rows at 2 warps), and with more rows in the same tiles (``config._fwd_heuristic``, where tiles
    of 16 rows at 4 warps are under the bound) x1.127 / x1.033 / x1.048 / x1.050 at 32768 / 16384 / 8192 / 6144 against
    round 38. Two columns a load in the 16-row tiles (safe at 2 a thread) lost: x0.953-0.959 at 32768 rows, x0.878 at
    16384, with the same registers and instruction count as 4 a load. Chunked rows' second pass lost (LayerNorm at 16384
    x0.786)."""
    if cfg.num_chunks != 1 or w_dtype != torch.float32 or x_dtype.itemsize != 2:
        return False
    if cfg.block_n < 4 * 32 * cfg.num_warps or (has_mask and cfg.block_n > 256):
        return False
    return not (is_rms and cfg.block_n <= 256) or cfg.programs_per_sm > 0


def _stats_as_held(cfg, has_mask: bool, stat_dtype: torch.dtype) -> bool:
    """The training forward's ``STATS_AS_HELD`` (``norm_fwd._store_stat``): the tiles of 2 rows of 1024 (2 warps;
    RMSNorm's 4 since GPU run 352; at most 4096 rows of 513-1024 columns, ``config._few_short_rows``) store mean and
    rstd as each thread holds them, not through ``tl.store``'s move to one row a thread (there a select and a warp
    shuffle; the sm_90 code as held has 6 instructions more for RMSNorm, 8 fewer for LayerNorm, so why it runs faster is
    not read off the code). Not the fused forward. Round 126's tile of 2 x 1024 at 4 warps on an H100
    (``config._slower_dram_ln_fwd_1024_two_rows``) takes it too, and was timed with it.

    Measured on an H200 in turns (``bench.ab``, GPU runs 343-346): fp16 LayerNorm / RMSNorm at 4096 x 1024
    x1.021-1.031 / x1.018-1.029, at 2048 x 1024 x1.021 / x1.044, at 4096 x 768 x1.004 / x1.033-1.036 (2048 x 768
    x1.004 / x1.029), bf16 at 3000 x 1000 x1.024 / x1.000; bf16 x with float32 weights at 4096 x 1024 x1.007 / x0.996.
    The same stores everywhere were slower elsewhere: rows of 256 (8 rows at 2 warps, where they drop 4 barriers a
    step for LayerNorm) x0.976-0.988 at 16384-32768 rows, 4 rows of 512 at 4096 rows x0.983 / x0.995, the fused
    forward at 4096 x 1024 x0.978-0.981; level at 1024-4096 columns in wider tiles (x0.994-1.013). The fused forward's
    mask bytes stored as held too (one byte a thread a row, no layout conversion) were level or slower at 32768 rows
    (x0.967 at 2048) and swung x0.98-1.06 at 4096 rows."""
    return (
        cfg.num_chunks == 1
        and cfg.block_m == 2
        and cfg.block_n == 1024
        and not has_mask
        and (stat_dtype == torch.float32)
    )


def _float32_key(value: float) -> int:
    """float32 values in order as integers (-0.0 just below +0.0; NaN excluded)."""
    bits = torch.tensor([value], dtype=torch.float32).view(torch.int32).item()
    return bits if bits >= 0 else -(bits & 0x7FFFFFFF) - 1


def _float32_at(key: int) -> float:
    bits = key if key >= 0 else -(key + 1) | -0x80000000
    return torch.tensor([bits], dtype=torch.int32).view(torch.float32).item()


@functools.lru_cache(maxsize=256)
def mask_thresholds(lower: float, upper: float, out_dtype: torch.dtype) -> tuple[float, float]:
    """``(keep_from, keep_to)``: the float32 interval of the clamp's input ``y`` whose bit is 1.

    The bit is 1 where ``lower < out < upper`` for ``out = clamp(y, lower, upper)`` as stored in ``out_dtype``
    (``reference.clamp_and_mask``). Rounding and clamping never reorder values, so those y form one interval
    ``keep_from <= y <= keep_to``; the kernel compares y with its ends instead of rounding y and reading it back
    (two instructions an element fewer). Both ends are found here by bisection over the float32 values, asking
    ``reference.clamp_and_mask`` itself, once per (lower, upper, dtype). NaN where no y qualifies (a NaN end
    makes every comparison false). float64 kernels compare y itself (no rounding): not used there."""

    def keep(key: int) -> tuple[bool, bool]:
        y = torch.tensor([_float32_at(key)], dtype=torch.float32)
        stored = reference.clamp_and_mask(y, lower, upper, out_dtype)[0].float()
        return bool(stored > lower), bool(stored < upper)  # compared as the reference does (in float32)

    lo, hi = _float32_key(-math.inf), _float32_key(math.inf)
    above_lower = _first_key(lambda key: keep(key)[0], lo, hi)  # stored > lower from here on
    not_below_upper = _first_key(lambda key: not keep(key)[1], lo, hi)  # stored < upper up to just before here
    keep_from = math.nan if above_lower is None else _float32_at(above_lower)
    if not_below_upper is None:
        keep_to = _float32_at(hi)
    else:
        keep_to = math.nan if not_below_upper == lo else _float32_at(not_below_upper - 1)
    return keep_from, keep_to


def _first_key(rises, lo: int, hi: int) -> int | None:
    """The first key of ``lo..hi`` where ``rises`` (false, then true from some key on) is true; None if never."""
    if not rises(hi):
        return None
    before, at = lo - 1, hi  # rises(before) false (a virtual key below lo), rises(at) true
    while at - before > 1:
        mid = (before + at) // 2
        before, at = (before, mid) if rises(mid) else (mid, at)
    return at


@functools.cache
def _hopper_or_newer(device: int) -> bool:
    """Whether the GPU ``device`` (an index) is of compute capability 9.0 (Hopper) or newer: the TMA's and
    ``griddepcontrol``'s (``_tma_capable``, ``_pdl``)."""
    return torch.cuda.get_device_capability(device)[0] >= 9


def _pdl(device: int) -> bool:
    """Whether the backward's kernels after its first launch as programmatic dependent launches on ``device`` (an
    index; -1: the CPU, whose interpreter has no ``griddepcontrol``): on a Hopper or newer GPU."""
    return device >= 0 and _hopper_or_newer(device)


@functools.lru_cache(maxsize=16)
def _staged_capable(device: int) -> bool:
    """Whether the staged Gluon kernel (``norm_bwd_staged.py``) can run on ``device`` (an index; -1: the CPU, whose
    interpreter cannot run Gluon): Triton 3.6's Gluon on a Hopper GPU (compute capability 9.x: the one it was
    written and measured on)."""
    return STAGED is not None and device >= 0 and torch.cuda.get_device_capability(device)[0] == 9


def _staged_rows(
    dy: torch.Tensor, x: torch.Tensor, weight: torch.Tensor, split: bool = False, mask: torch.Tensor | None = None
) -> bool:
    """Whether the staged kernel can take these arguments (``norm_bwd_staged.descriptors``): dy and x of one 16-bit
    dtype, their rows contiguous and starting on 16 bytes (viewed as rows of 256), 16-bit weights; the split staged
    kernel's (``split``) 16-bit or float32 weights, and a packed mask (``mask``) whose rows are contiguous and start on
    16 bytes too (``norm_bwd_staged.mask_descriptor``)."""
    n = x.shape[1]
    return (
        dy.dtype == x.dtype and x.element_size() == 2 and weight.element_size() in ((2, 4) if split else (2,))
        and dy.stride() == x.stride() == (n, 1) and not (dy.data_ptr() | x.data_ptr()) & 15
        and (mask is None or (mask.stride() == (n // 8, 1) and not mask.data_ptr() & 15))
    )  # fmt: skip


def _tma_weights(weight: torch.Tensor) -> torch.Tensor:
    """The weights as the TMA loads them: contiguous, starting on 16 bytes (a copy where they are not)."""
    if weight.is_contiguous() and not weight.data_ptr() & 15:
        return weight
    return weight.clone(memory_format=torch.contiguous_format)


@functools.lru_cache(maxsize=1024)
def _sum_plan(which: int, g: int, n: int, acc_dtype: torch.dtype, pdl: bool) -> tuple[tuple, tuple]:
    """``(grid, constexprs)`` of ``sum_partials_kernel`` over ``[which, g, n]`` partials: column blocks of 16-128,
    narrow enough for about 256 programs (two a SM of an H100 or H200), each loading up to 16384 partials at a time
    (all g rows of its block at once where they fit: a persistent grid's up to 1024 rows at columns of 16).

    Round 57 (GPU runs 467-469, H200, torch.profiler and in turns): the backward of 32768 x 1024 (bf16 x, float32
    weights) is its row kernel (56 us for LayerNorm) and this kernel over 528 partial rows (3.3 us without PDL, for
    4.3 MB: each program waits on three loads one after another); without it the call ran x1.06-1.08 faster, at 2048
    columns x1.03-1.04. Loading the 528 rows at once (4096 -> 16384 partials a load) gave x1.000-1.053 at 512-1024
    columns (16384-65536 rows, LayerNorm, RMSNorm and the masked backward), x1.004-1.009 at 32768 x 2048; 8 warps
    x1.001-1.035, 8 or 32 columns a program x0.997-1.029. Against round 56 (``bench.ab``, in turns, GB/s, runs
    470-472): 32768 rows (bf16 x, float32 weights) x1.011-1.065 at 256-2048 columns, x1.002-1.006 at 4096-8192, level
    at 16384-65536 (x0.999-1.002); 4096 rows fp16 x1.094 / x1.058 at 1024 (LayerNorm / RMSNorm), level at 4096 and
    15872 (x0.999-1.019); 4096 x 768 bf16 x1.015-1.142; 1024 x 12288 x0.998-1.032.

    Measured on an H200 (the whole backward call timed in turns with the rule before, GPU runs 132-134,
    ``benchmarks/README.md`` round 17): the rule before (blocks of up to 128 columns, 32-64 rows a load) gave a row
    of 4608 columns 36 programs, each reading its 132 partials in 5 round trips; now 288 programs of one. At 4096
    rows (fp16) the backward ran 1.02-1.08x faster at 2560-8704 columns (LayerNorm's at 3072 and 4096 level),
    1.00-1.02x at 10240-15872; at 32768 rows 0.99-1.07x at 256-4096 columns, level at 16384 (from 32768
    columns the launch is the one before)."""
    per_program = max(n // 256, 1)  # columns a program for 256 programs, rounded down to a power of two below
    block_n = min(128, max(16, 1 << (per_program.bit_length() - 1)))
    block_g = min(max(16, next_power_of_2(g)), max(32, 16384 // block_n))
    values = SUM_PARTIALS.values(BLOCK_G=block_g, BLOCK_N=block_n, ACC=_acc_of(acc_dtype)[0], PDL_WAIT=pdl)
    return (cdiv(n, block_n), which), values


def _sum_partials(partial: torch.Tensor, dtype: torch.dtype, pdl: bool = False, needs_dw: bool = True):
    """dW (and dB) from the ``[1 or 2, G, N]`` float32 partials, one launch, fixed order; ``pdl``: a programmatic
    dependent launch, after a kernel that triggers it (``_backward``). No launch where only dW's partials are there
    and dW is not needed: ``(None, None)``."""
    which, g, n = partial.shape
    if which == 1 and not needs_dw:
        return None, None
    dw = partial.new_empty(n, dtype=dtype)
    db = partial.new_empty(n, dtype=dtype) if which == 2 else dw
    grid, values = _sum_plan(which, g, n, partial.dtype, pdl)
    SUM_PARTIALS.launch(grid, (partial, dw, db, g, n), 4, values)
    return dw, (db if which == 2 else None)


class _BackwardPlan(NamedTuple):
    """What a backward launch of whole rows takes that depends on the shape, dtypes and options only."""

    cfg: config.LaunchConfig
    # 0 for split rows: ``_backward`` launches them from the config alone (long rows, calls of hundreds of
    # microseconds, whose polling switches ``config.max_polls`` / ``stands_in`` it asks on every call)
    programs: int
    blocks_per_program: int
    values: tuple  # the kernel's constexprs (norm_bwd_kernel's, its TMA form's, the staged one's), in its order
    # ``(programs, blocks_per_program)`` as launched from the first call on, fewer programs where fewer fit a SM than
    # the config asks (``_backward_grid``); empty before
    fitted: list
    # the TMA kernels' descriptors as ``Launcher.launch`` returns them encoded, by their rows (``_rows_of``; the
    # staged kernel's by dy's, x's and the weights' addresses): made, bound and encoded at a plan's first calls of
    # those rows only
    encoded: dict
    # norm_bwd_kernel reads the packed mask as 32-bit words where the call's mask rows allow it (``_mask_words``)
    mask_words: bool = False


def _tma_capable(device: int) -> bool:
    """Whether the TMA kernel can run on ``device`` (an index; -1: the CPU, whose interpreter runs it too): a Hopper
    or newer GPU (``_hopper_or_newer``)."""
    return device < 0 or _hopper_or_newer(device)


def _tma_rows(t: torch.Tensor) -> tuple[list, list] | None:
    """``(shape, strides)`` of a matrix whose rows the TMA can load and store, as lists; None if it cannot: its rows
    must be contiguous, each starting on 16 bytes (the start of the tensor and the row stride in bytes multiples of
    16), and distinct (an expanded matrix, one row seen M times at row stride 0, as a gradient may arrive, takes the
    pointer kernel: a tensor map's strides are those of memory laid out row after row)."""
    strides = t.stride()
    if strides[1] != 1 or t.data_ptr() & 15 or strides[0] * t.element_size() & 15 or not strides[0]:
        return None
    return list(t.shape), list(strides)


@functools.lru_cache(maxsize=1024)
def _backward_plan(
    m, n, x_dtype, w_dtype, has_dbias, has_mask, is_rms, zero_centered_gamma, device, tma, _generation, row_align,
    staged,
):  # fmt: skip
    """The backward's launch of ``m x n``, worked out once (as ``_forward_plan``). ``tma``: whether the device and
    the call's rows let the TMA load them (``_tma_capable``; after a plan that takes it, ``_tma_rows`` of dy and
    x); dx's rows (new, contiguous, starting on 512 bytes) need n elements to fill a multiple of 16 bytes. Where
    the TMA cannot, a config that asks for it (a forced one) runs its launch shape on ``norm_bwd_kernel``.
    ``row_align``: the kernels' ``ALIGN`` (``_row_align``; ``split_rows_kernel`` takes it at its launch).
    ``staged``: the staged Gluon kernels can run on the device (``_staged_capable``; the rules take both with the mask
    too, the whole-row one at fewer widths: ``config._staged_masked_bwd``); after a plan that takes one, whether it can
    load the call's rows (``_staged_rows``), as the TMA's."""
    tma = tma and not n * x_dtype.itemsize & 15
    x_bytes, w_bytes = x_dtype.itemsize, w_dtype.itemsize
    x_fp16 = x_dtype == torch.float16
    cfg = config.bwd_config(
        m, n, has_dbias, has_mask, is_rms, tma, x_bytes=x_bytes, w_bytes=w_bytes, staged=staged, x_fp16=x_fp16,
        slower_dram=config.slower_dram(device),
    )  # fmt: skip
    if cfg.staged:
        whole_row_masked = has_mask and cfg.parts == 1
        db_apart = has_dbias and config.staged_db_partition(n)[0]  # dB's warps of their own would read dy unmasked
        if not staged or (whole_row_masked and (db_apart or not STAGED.masked_parts(n, cfg.num_warps))):
            raise ValueError(  # only a forced config asks for these
                "a staged backward config was forced where the staged kernel cannot run: the whole-row one takes a "
                "mask where every part of the row can be seen by its mask bytes (rows of 256, masked_parts) and dB is "
                "summed by the compute warps, and both need Triton 3.6's Gluon, a Hopper GPU, dy and x of one 16-bit "
                "dtype with contiguous rows, and 16-bit weights (float32 too where rows are split)"
            )
        if cfg.parts > 1:  # the split staged kernel: a group of cfg.parts programs a row, one program a SM
            form = config.split_staged_form(n, cfg.block_n, has_dbias, is_rms, has_mask)
            values = STAGED.split_constexprs(
                n, cfg.block_n, cfg.num_warps, form.stages, zero_centered_gamma, is_rms, has_dbias,
                config.GPU_MAX_POLLS, form.weights_shared, form.ahead, form.fetch_first, has_mask, form.warp_sums,
                form.stats_staged,
            )  # fmt: skip
            programs = config.split_staged_groups(device, m, cfg.parts) * cfg.parts
            return _BackwardPlan(cfg, programs, 1, SPLIT_STAGED_BWD.values(**values), [], {})
        db = config.staged_db_partition(n)
        stages = config.staged_stages(n, is_rms, has_dbias)
        values = STAGED.constexprs(
            n, cfg.num_warps, stages, zero_centered_gamma, is_rms, has_dbias, *db, fp16=x_fp16,
            db_shared=config.staged_db_shared(n, is_rms), pair_scratch=config.staged_pair_scratch(n, is_rms, has_dbias),
            has_mask=has_mask,
        )  # fmt: skip
        return _BackwardPlan(cfg, config.persistent_programs(device, m, 1), 1, STAGED_BWD.values(**values), [], {})
    if cfg.parts > 1:
        return _BackwardPlan(cfg, 0, 0, (), [], {})
    if cfg.tma and not (tma and cfg.num_chunks == 1):
        cfg = replace(cfg, tma=False, tma_store=False)
    row_blocks = cdiv(m, cfg.block_m)
    programs = config.persistent_programs(device, row_blocks, cfg.programs_per_sm)
    common = dict(
        HAS_DBIAS=has_dbias, BLOCK_M=cfg.block_m, BLOCK_N=cfg.block_n, EVEN_N=_even_n(n, cfg), TAIL_N=cfg.tail_n,
        IS_RMS=is_rms, ZERO_CENTERED=zero_centered_gamma, ACC=_acc_of(x_dtype)[0], PDL_TRIGGER=_pdl(device),
    )  # fmt: skip
    if cfg.tma:
        mask_tma = has_mask and _mask_tma(n, cfg)
        values = NORM_BWD_TMA.values(
            TMA_STORE=cfg.tma_store, STAGES=TMA_STAGES, HAS_MASK=has_mask, MASK_AHEAD=cfg.ahead and not mask_tma,
            MASK_TMA=mask_tma, WIDEN_W=cfg.widen_w, ALIGN=row_align, **common,
        )  # fmt: skip
    else:
        row_evict, row_x_evict = config.bwd_row_evict(m, n, x_dtype.itemsize)
        values = NORM_BWD.values(
            NUM_CHUNKS=cfg.num_chunks, CHUNKS_P2=next_power_of_2(cfg.num_chunks), HAS_MASK=has_mask, ALIGN=row_align,
            ROW_EVICT=row_evict, ROW_X_EVICT=row_x_evict, **common,
        )  # fmt: skip
    mask_words = has_mask and not cfg.tma and _mask_words(n, cfg)
    return _BackwardPlan(cfg, programs, cdiv(row_blocks, programs), values, [], {}, mask_words)


def _backward_grid(plan: _BackwardPlan, launcher: Launcher, args: tuple, m: int, device: int) -> tuple[int, int]:
    """``(programs, blocks_per_program)`` of a persistent backward, worked out at its plan's first call (``args``:
    that call's, at the plan's grid) and kept: the plan's, but at most as many programs a SM as fit on one at once
    by the compiled kernel's registers, threads and shared memory, as the forward's (``_persistent_grid``). A grid
    that asks more runs its last programs as a second wave, after the first's have done all their rows: round 57's
    ``norm_bwd_kernel`` of two rows of 1024 columns at 4 warps held 154 registers, 3 programs of the 4 asked fit a SM,
    and it ran x0.77. Each program sums its rows' partial dW and dB, so the grid is the order of those sums: it is
    fixed before the first launch (``Launcher.programs_that_fit_compiled`` compiles the kernel first), and every call
    of the plan gets the same bits. Round 58 (H200, GPU runs 477-478): that launch forced, the grid that fits against
    the plan's in turns, LayerNorm bf16 x float32 x1.264 at 32768 x 1024 and x1.270 at 65536 x 1024, fp16 x0.931
    (not read why); RMSNorm's fits. The rules' launches of then fit (rounds 52 and 57; run 478: no persistent grid
    changed at 32768 x 256-16384, 4096 x 128-15872 (fp16, bf16), 1024 x 12288, 65536 x 1024 and 2048 x 512, for
    LayerNorm, RMSNorm and the masked backward). Later rules ask more than fit in places, and were timed at the grid
    that fits: compiled for sm_90 on the CPU (round 139, 4120 plans of the pointer and TMA kernels), 136 ask more,
    among the sweeps' cases the H100's LayerNorm backward of 32768 x 2048 bf16 x float32 with dB (8 asked, 3 fit: 146
    registers), without dB and RMSNorm's there (two rows at 8 warps: 4 asked, 2 fit) and the masked backward's TMA
    launch there on either GPU (4 asked, 3 fit: 132 registers)."""
    cfg = plan.cfg
    grid = (plan.programs, plan.blocks_per_program)
    return _fitted_grid(
        plan.fitted, grid, launcher, args, cfg.num_warps, plan.values, cfg.programs_per_sm, cdiv(m, cfg.block_m), device
    )


def _mask_tma(n: int, cfg: config.LaunchConfig) -> bool:
    """Whether the TMA backward loads the packed mask of rows of n columns by the TMA as well (``MASK_TMA``; as 32-bit
    words or bytes, ``LaunchConfig.mask_bytes``): where a mask as the forward writes it (``ceil(n / 8)`` bytes a row,
    contiguous) has rows of a multiple of 16 bytes (n a multiple of ``config.MASK_TMA_COLUMNS``, 128), and where each
    tile's mask is at least 128 bytes (1024 columns). A tail of 512 columns (boxes of 64 bytes) faulted with "misaligned
    address" (GPU run 300); our reading: a TMA copy into shared memory needs its destination on 128 bytes, and the
    pipeline's second buffer of a 64-byte box starts 64 bytes after its first."""
    tiles_ok = cfg.block_n >= 1024 and (not cfg.tail_n or cfg.tail_n >= 1024)
    return MASK_BY_TMA and n % config.MASK_TMA_COLUMNS == 0 and tiles_ok


MASK_WORDS = True  # norm_bwd_kernel loads the packed mask as 32-bit words where _mask_words allows it


def _mask_words(n: int, cfg: config.LaunchConfig) -> bool:
    """Whether the whole-row backward (``norm_bwd_kernel``) loads the packed mask as 32-bit words, one per 32 columns,
    from an int32 view of it (``norm_bwd._load_mask_bytes``; the plan's ``mask_words``): where a row holds whole words
    (n a multiple of 32), the tile too, and there is no tail; a ragged tile (n not a multiple of the tile's columns)
    in programs of one row only. A call whose mask cannot be viewed so reads its bytes (``_mask_in_words``).

    On sm_90 the words come into dy's layout through shared memory with fewer instructions than the bytes (no
    ``PRMT``: 1072 against 1112 at one row of 4096 in 4 warps), and since round 109 each word's bytes are taken apart
    before their bits are tested (``norm_bwd._masked_dy``), against constants, not registers. Against the bytes in
    turns (H200 runs 791-792, round 108, the bits tested in the word): x1.006-1.009 at 4096 x 1024-8192 fp16 and 2048 x
    4096, x1.005 / x1.011 at 32768 x 256 / 512 bf16 x float32 weights; the ragged tile then lost (x0.990 at 4096 x
    3072 fp16, x0.957 at 3000 x 3072 bf16) and one warp was level (x0.996-0.998 at 32768 x 1024). With the bytes taken
    apart (runs 799-801, round 109, against round 108's rule): ragged tiles of one row x1.008-1.038 (4096 x 1280-7680
    fp16 and bf16, 2048 x 3072, 3000 x 3072 bf16, 32768 x 768-3072 bf16 x float32), one warp x1.007-1.008 (32768 x
    768 / 1024); ragged tiles of several rows a program still lost (x0.985-0.989 at 4096 x 640 / 768 fp16 and bf16,
    8192 x 768 bf16; x0.997 at 4096 x 384 bf16), so they read bytes."""
    ragged = n % cfg.block_n
    return MASK_WORDS and not (cfg.block_n % 32 or n % 32 or cfg.tail_n or (ragged and cfg.block_m > 1))


def _mask_in_words(mask: torch.Tensor) -> bool:
    """Whether a call's packed mask can be read as 32-bit words: its rows start on 4 bytes and its bytes are
    contiguous (so ``Tensor.view`` gives words and no word spans two rows; the plan's rule asks whole words a row)."""
    return mask.stride(1) == 1 and not mask.stride(0) % 4 and not mask.data_ptr() % 4


def _mask_rows(mask: torch.Tensor, as_bytes: bool) -> tuple[torch.Tensor, list, list] | None:
    """``(packed, shape, strides)``: the packed mask in rows the TMA can load (``_tma_rows``), as its bytes or as
    int32 words of 4 bytes each; None where it cannot (a mask whose rows do not start on 16 bytes)."""
    rows = _tma_rows(mask)
    if rows is None:
        return None
    if as_bytes:
        return mask, *rows
    words = mask.view(torch.int32)  # its rows are a multiple of 16 bytes: whole words
    return words, list(words.shape), list(words.stride())


def _descriptor(t: torch.Tensor, shape: list, strides: list, block: list) -> TensorDescriptor:
    """A TMA descriptor of ``t``'s rows in blocks ``block``, built without ``TensorDescriptor``'s checks (rank,
    16-byte alignment, the block's shape), which ``_tma_rows`` and the plan have made: they cost 2 of a
    descriptor's 3.3 microseconds of host time (GPU run 153: six descriptors 7.2 microseconds, 19.6 checked)."""
    descriptor = TensorDescriptor.__new__(TensorDescriptor)
    descriptor.base, descriptor.shape, descriptor.strides, descriptor.block_shape = t, shape, strides, block
    descriptor.padding = "zero"
    return descriptor


def _descriptors(cfg: config.LaunchConfig, dy, x, dx, mask, mask_tma: bool) -> list | None:
    """The TMA descriptors of dy, x and dx: their head tiles', then their tail tiles' (the head's again without a tail);
    then the mask's head and tail where ``mask_tma``, as 32-bit words or as bytes (``cfg.mask_bytes``; ``_mask_rows``;
    dx's head and tail descriptors in their place otherwise, unused). None where dy's, x's or that mask's rows are not
    the TMA's (``_tma_rows``; dx's are, by the plan)."""
    dy_rows, x_rows = _tma_rows(dy), _tma_rows(x)
    if dy_rows is None or x_rows is None:
        return None
    layouts = [(dy, *dy_rows), (x, *x_rows), (dx, list(dx.shape), list(dx.stride()))]
    heads = [_descriptor(*layout, [cfg.block_m, cfg.block_n]) for layout in layouts]
    tails = [_descriptor(*layout, [cfg.block_m, cfg.tail_n]) for layout in layouts] if cfg.tail_n else heads
    if not mask_tma:
        return heads + tails + [heads[2], tails[2]]
    packed = _mask_rows(mask, cfg.mask_bytes)
    if packed is None:
        return None
    columns = 8 * packed[0].element_size()  # an element's: a byte's 8, a word's 32
    mask_head = _descriptor(*packed, [cfg.block_m, cfg.block_n // columns])
    mask_tail = _descriptor(*packed, [cfg.block_m, cfg.tail_n // columns]) if cfg.tail_n else mask_head
    return heads + tails + [mask_head, mask_tail]


def _rows_of(dy, x, dx, mask) -> tuple:
    """What a TMA backward's descriptors are made of beside its plan (the shape, x's dtype, the blocks): dy's dtype,
    dy's, x's, dx's and the mask's (None where the plan loads it otherwise) addresses and strides; the key of
    ``_BackwardPlan.encoded``."""
    return (
        dy.dtype, dy.data_ptr(), *dy.stride(), x.data_ptr(), *x.stride(), dx.data_ptr(),
        *((mask.data_ptr(), *mask.stride()) if mask is not None else ()),
    )  # fmt: skip


def _keep_encoded(plan: _BackwardPlan | _ForwardPlan, rows, encoded: tuple) -> None:
    """Keeps ``Launcher.launch``'s encoded descriptors of these rows with the plan (a backward's, or the split staged
    forward's: ``rows`` its x's address, or x's and y's), at most ``ENCODED_ROWS`` of them (all forgotten when full: a
    new address of dy, x or dx is new rows)."""
    if len(plan.encoded) >= ENCODED_ROWS:
        plan.encoded.clear()
    plan.encoded[rows] = encoded


def _staged_backward(plan: _BackwardPlan, dy, x, weight, mean, rstd, dx, partial, mask) -> None:
    """The staged kernel's launch (``STAGED_BWD``; the split staged kernel's, ``SPLIT_STAGED_BWD`` or
    ``SPLIT_STAGED_SHARED_W_BWD``, where the plan splits rows) of a plan that takes it. Its descriptors (a part's each
    of x, dy and the weights; the split kernel's x's and dy's, and the weights' where it stages them) are kept encoded
    with the plan by the addresses of dy, x and the weights (the plan fixes the rest: their shape, dtypes and rows of n
    contiguous elements), as the TMA backward's are (``_rows_of``). Gluon's own launch path made, bound and encoded
    them on every call: 160-210 us of host time a call at 2048 x 12800-14336, the split rows' 43 (GPU run 551); with
    them kept, 62-88 (run 554). The split kernel's row sums' slots (``SUMS``) are filled with ``SENTINEL`` first, as
    the split rows'. The split kernel stages the packed mask by its descriptor too (``mask``; dy's in its place
    without one, not read), the third of them."""
    split = plan.cfg.parts > 1
    staged_weights = not split or plan.values[_W_SHARED_AT]
    launcher = STAGED_BWD if not split else SPLIT_STAGED_SHARED_W_BWD if staged_weights else SPLIT_STAGED_BWD
    # a row's sums' slots: a slice's each, or a compute warp's each (``WARP_SUMS``)
    slots = plan.cfg.parts * (plan.cfg.num_warps if split and plan.values[_WARP_SUMS_AT] else 1)
    sums = (x.new_full((x.shape[0], slots), SENTINEL, dtype=torch.int64),) if split else ()
    args = (*(() if staged_weights else (weight,)), mean, rstd, dx, partial, *sums, *x.shape)
    grid, num_warps = (plan.programs,), plan.cfg.num_warps
    rows = (dy.data_ptr(), x.data_ptr(), weight.data_ptr(), mask.data_ptr() if mask is not None else 0)
    encoded = plan.encoded.get(rows)
    if encoded is None or not launcher.launch_encoded(grid, encoded, args, num_warps, plan.values):
        # each descriptor's rows of 256: the plan's first constexprs (the split kernel's SR, the other's RA-RC)
        part_rows = list(plan.values[:1] if split else plan.values[:3])
        head = STAGED.descriptor_arguments(x, dy, weight if staged_weights else None, mask, part_rows, split)
        kept = launcher.launch(grid, (*head, *args), num_warps, plan.values, head=len(head))
        if kept is not None:
            _keep_encoded(plan, rows, kept)


def _backward(dy, x, weight, mean, rstd, mask, *, is_rms, zero_centered_gamma, has_dbias, needs_dw=True):
    """``(dx, dw, db)``: db None without ``has_dbias``; dw None where ``needs_dw`` is False and there is no dB (its
    partials written, not summed: ``_sum_partials``), else dW whether needed or not."""
    index = x.get_device()
    if index >= 0 and index != torch._C._cuda_getDevice():  # x's GPU made current (``backends.on_tensor_device``)
        with torch.cuda.device(index):
            return _backward(dy, x, weight, mean, rstd, mask, is_rms=is_rms, zero_centered_gamma=zero_centered_gamma,
                             has_dbias=has_dbias, needs_dw=needs_dw)  # fmt: skip
    m, n = x.shape
    dx = torch.empty_like(x, memory_format=torch.contiguous_format)  # as the forward's y (``_forward_outputs``)
    if m == 0:
        dw = weight.new_zeros(n) if needs_dw or has_dbias else None
        return dx, dw, torch.zeros_like(dw) if has_dbias else None
    has_mask = mask is not None
    key = (m, n, x.dtype, weight.dtype, has_dbias, has_mask, is_rms, zero_centered_gamma, index)
    strides = (dy.stride(0), x.stride(0))
    row_align = 1 if not (n | strides[0] | strides[1]) & 15 else _row_align(x.element_size(), n, *strides)
    tma = _tma_capable(index)
    # whether the staged kernels can load these rows is asked only of a plan that takes one (with the mask too: the
    # split one since round 91, the whole-row one at ``config.STAGED_MASKED_BWD_N`` since round 110)
    plan = _backward_plan(*key, tma, config.generation, row_align, _staged_capable(index))
    if plan.cfg.staged and not _staged_rows(dy, x, weight, split=plan.cfg.parts > 1, mask=mask):
        plan = _backward_plan(*key, tma, config.generation, row_align, False)  # rows it cannot load: without it
    # the kernels take a pointer for every argument: RMSNorm passes rstd for the mean
    mean = mean if mean is not None else rstd
    which = 2 if has_dbias else 1  # the partials' rows: dW's, dB's
    if plan.cfg.staged:  # rows staged in shared memory, one program a SM (``norm_bwd_staged.py``); a partial a
        # program, or a group of programs where rows are split
        partial = x.new_empty((which, plan.programs // plan.cfg.parts, n), dtype=torch.float32)
        _staged_backward(plan, dy, x, _tma_weights(weight), mean, rstd, dx, partial, mask)
        return dx, *_sum_partials(partial, weight.dtype, needs_dw=needs_dw)
    descriptors = encoded = rows = None  # where the plan takes the TMA: made, or kept from a call of the same rows
    if plan.cfg.tma:
        rows = _rows_of(dy, x, dx, mask if plan.values[_MASK_TMA_AT] else None)
        encoded = plan.encoded.get(rows)
        if encoded is None:
            descriptors = _descriptors(plan.cfg, dy, x, dx, mask, plan.values[_MASK_TMA_AT])
            if descriptors is None:  # rows the TMA cannot load: the plan without it
                plan = _backward_plan(*key, False, config.generation, row_align, False)
    acc_tl, acc_torch = _acc_of(x.dtype)
    if plan.mask_words and _mask_in_words(mask):
        mask = mask.view(torch.int32)  # norm_bwd_kernel loads it a word at a time (``norm_bwd._load_mask_bytes``)
    mask, mask_stride = (mask, mask.stride(0)) if mask is not None else (dx, 0)  # no mask passes dx for it
    pdl = _pdl(index)  # the kernels after the first wait for the one before on the device (norm_bwd.py)
    if plan.programs:  # whole rows on a persistent grid
        launcher = NORM_BWD_TMA if plan.cfg.tma else NORM_BWD

        def arguments(programs, blocks_per_program):  # the partials and the kernel's runtime arguments (the TMA
            # kernel's after its descriptors)
            partial = x.new_empty((which, programs, n), dtype=acc_torch)
            if plan.cfg.tma:
                return partial, (
                    weight, mean, rstd, mask, dx, partial,
                    m, n // row_align, mask_stride, dx.stride(0) // row_align, programs, blocks_per_program,
                )  # fmt: skip
            return partial, (
                dy, x, weight, mean, rstd, mask, dx, partial, m, n // row_align, strides[0] // row_align,
                strides[1] // row_align, dx.stride(0) // row_align, mask_stride, programs, blocks_per_program,
            )  # fmt: skip

        grid = plan.fitted[0] if plan.fitted else (plan.programs, plan.blocks_per_program)
        partial, args = arguments(*grid)
        num_warps, values = plan.cfg.num_warps, plan.values
        if encoded is None or not launcher.launch_encoded((grid[0],), encoded, args, num_warps, values):
            if plan.cfg.tma and descriptors is None:  # kept, but not launched from what was kept (a launch hook)
                descriptors = _descriptors(plan.cfg, dy, x, dx, mask, values[_MASK_TMA_AT])
            head = tuple(descriptors or ())
            if not plan.fitted and _backward_grid(plan, launcher, (*head, *args), m, index) != grid:
                grid = plan.fitted[0]
                partial, args = arguments(*grid)
            kept = launcher.launch((grid[0],), (*head, *args), num_warps, values, head=len(head))
            if kept is not None:
                _keep_encoded(plan, rows, kept)
    else:  # long rows, each split over cfg.parts programs that exchange their row sums; RMSNorm's keep their
        # column bounds even where the parts are whole (norm_bwd.py: EVEN_N)
        cfg = plan.cfg
        row_blocks = cdiv(m, cfg.block_m)
        groups = config.row_groups(x, row_blocks, cfg.parts, cfg)
        sums = x.new_full((m, cfg.parts), SENTINEL, dtype=torch.int64)
        partial = x.new_empty((which, groups, n), dtype=acc_torch)
        SPLIT_ROWS[(cfg.parts * groups,)](
            dy, x, weight, mean, rstd, mask, dx, partial, sums,
            m, n // row_align, strides[0] // row_align, strides[1] // row_align, dx.stride(0) // row_align, mask_stride,
            groups, cdiv(row_blocks, groups),
            HAS_DBIAS=has_dbias, BLOCK_M=cfg.block_m, BLOCK_N=cfg.block_n, PARTS=cfg.parts,
            PARTS_P2=next_power_of_2(cfg.parts), MAX_POLLS=config.max_polls(x), STAND_IN=config.stands_in(x),
            EVEN_N=_even_n(n, cfg) and not is_rms, AHEAD=cfg.ahead, IS_RMS=is_rms, ZERO_CENTERED=zero_centered_gamma,
            HAS_MASK=has_mask, ACC=acc_tl, PDL_WAIT=pdl, PDL_TRIGGER=pdl, ALIGN=row_align, num_warps=cfg.num_warps,
        )  # fmt: skip
    dw, db = _sum_partials(partial, weight.dtype, pdl, needs_dw)
    return dx, dw, db


def forward_unchecked(kind, x, weight, bias, eps, zero_centered_gamma, lower=0.0, upper=0.0):
    """The forward of ``kind`` (``"layer_norm"``, ``"rms_norm"`` or ``"layer_norm_clamped_relu"``) on arguments the
    caller has checked (``normkit.functional`` checks them once; the six functions below check their own):
    ``(y, mean, rstd, mask)``, mean None for RMSNorm, mask None without the clamped ReLU."""
    clamp = (lower, upper) if kind == "layer_norm_clamped_relu" else None
    return _forward(
        x, weight, bias, eps, is_rms=kind == "rms_norm", zero_centered_gamma=zero_centered_gamma, clamp=clamp
    )


def infer_unchecked(kind, x, weight, bias, eps, zero_centered_gamma, lower=0.0, upper=0.0):
    """y alone, the forward of an inference call (nothing needs a gradient), on arguments the caller has checked
    (as ``forward_unchecked``): ``norm_fwd_kernel`` (or the split staged forward, where the rule takes it) without
    ``TRAINING`` stores neither the statistics nor the mask, and they are not allocated."""
    clamp = (lower, upper) if kind == "layer_norm_clamped_relu" else None
    return _forward(
        x, weight, bias, eps, is_rms=kind == "rms_norm", zero_centered_gamma=zero_centered_gamma, clamp=clamp,
        training=False,
    )[0]  # fmt: skip


def backward_unchecked(kind, dy, x, weight, mean, rstd, mask, zero_centered_gamma, has_dbias, needs_dw=True):
    """The backward of ``kind`` on arguments the caller has checked (``forward_unchecked``'s outputs): ``(dx, dw,
    db or None)``; dw None where ``needs_dw`` is False and ``has_dbias`` too (``_backward``)."""
    is_rms = kind == "rms_norm"
    return _backward(
        dy, x, weight, None if is_rms else mean, rstd, mask if kind == "layer_norm_clamped_relu" else None,
        is_rms=is_rms, zero_centered_gamma=zero_centered_gamma, has_dbias=has_dbias, needs_dw=needs_dw,
    )  # fmt: skip


def layer_norm_fwd(x, weight, bias, eps, zero_centered_gamma=False):
    """x ``[M, N]``, weight/bias ``[N]`` -> y ``[M, N]`` (x's dtype), mean ``[M]``, rstd ``[M]`` (float32)."""
    checks.check_fwd_args(x, weight, bias, eps, zero_centered_gamma)
    require_triton_device(x)
    y, mean, rstd, _ = _forward(x, weight, bias, eps, is_rms=False, zero_centered_gamma=zero_centered_gamma)
    return y, mean, rstd


def layer_norm_bwd(dy, x, weight, mean, rstd, zero_centered_gamma=False, has_dbias=True):
    """dy, x ``[M, N]``, mean/rstd ``[M]`` -> dx ``[M, N]``, dw ``[N]``, db ``[N]`` or None."""
    checks.check_bwd_args(dy, x, weight, mean, rstd, None, zero_centered_gamma, has_dbias)
    require_triton_device(x)
    return _backward(
        dy, x, weight, mean, rstd, None, is_rms=False, zero_centered_gamma=zero_centered_gamma, has_dbias=has_dbias
    )


def layer_norm_clamped_relu_fwd(x, weight, bias, eps, lower=0.0, upper=6.0, zero_centered_gamma=False):
    """LayerNorm then clamp to ``[lower, upper]``; the packed mask ``uint8 [M, ceil(N/8)]`` is written alongside."""
    checks.check_fwd_args(x, weight, bias, eps, zero_centered_gamma, clamp=(lower, upper))
    require_triton_device(x)
    return _forward(x, weight, bias, eps, is_rms=False, zero_centered_gamma=zero_centered_gamma, clamp=(lower, upper))


def layer_norm_clamped_relu_bwd(dy, mask, x, weight, mean, rstd, zero_centered_gamma=False, has_dbias=True):
    """The LayerNorm backward of ``dy * mask``, the mask bits read inside the kernel."""
    checks.check_bwd_args(dy, x, weight, mean, rstd, mask, zero_centered_gamma, has_dbias)
    require_triton_device(x)
    return _backward(
        dy, x, weight, mean, rstd, mask, is_rms=False, zero_centered_gamma=zero_centered_gamma, has_dbias=has_dbias
    )


def rms_norm_fwd(x, weight, bias, eps, zero_centered_gamma=False):
    """x ``[M, N]``, weight/bias ``[N]`` -> y ``[M, N]`` (x's dtype), rstd ``[M]`` (float32)."""
    checks.check_fwd_args(x, weight, bias, eps, zero_centered_gamma)
    require_triton_device(x)
    y, _, rstd, _ = _forward(x, weight, bias, eps, is_rms=True, zero_centered_gamma=zero_centered_gamma)
    return y, rstd


def rms_norm_bwd(dy, x, weight, rstd, zero_centered_gamma=False, has_dbias=False):
    """dy, x ``[M, N]``, rstd ``[M]`` -> dx ``[M, N]``, dw ``[N]``, db ``[N]`` or None."""
    checks.check_bwd_args(dy, x, weight, None, rstd, None, zero_centered_gamma, has_dbias)
    require_triton_device(x)
    return _backward(
        dy, x, weight, None, rstd, None, is_rms=True, zero_centered_gamma=zero_centered_gamma, has_dbias=has_dbias
    )
