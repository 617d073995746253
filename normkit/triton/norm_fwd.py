"""The forward kernel of LayerNorm, RMSNorm and LayerNorm + clamped ReLU (with its packed bitmask).

One kernel body; ``tl.constexpr`` switches pick the variant:

- ``IS_RMS``: RMSNorm statistics (no mean) instead of LayerNorm's.
- ``HAS_BIAS``, ``ZERO_CENTERED``: ``y = xhat * (w or 1 + w) [+ b]``, the latter as ``xhat * w + xhat``.
- ``CLAMP_MASK``: ``y = clamp(y, lower, upper)`` and write bit 1 where ``lower < y < upper`` for y as stored in
  its dtype (cuDNN's rule), 8 columns a byte.
- ``TRAINING``: store what the backward reads, the statistics (and with ``CLAMP_MASK`` the mask); without it, y
  alone (an inference call: ``normkit.functional`` where nothing needs a gradient).
- ``TILE_3D``: the tile as ``[BLOCK_M, BLOCK_N // 8, 8]`` instead of ``[BLOCK_M, BLOCK_N]`` (one-tile rows, and
  the second pass of chunked rows). In the 2-D tile the compiler loads float32 weights as a vector and passes them
  through shared memory to meet x's 16-bit layout (14 stores and loads, 13 barriers a program at 2 x 4096 on
  sm_90); in the 3-D tile they load in x's layout (4 and 5), and the mask's bytes need no reshape. A thread that
  holds 8 elements of a chunk holds a whole mask byte, which it makes by itself. ``ops._tiles_3d`` says where it
  is faster.
- ``W_IN_TILE``: one-tile rows in the 2-D tile load float32 weights and bias in the tile's layout, by inline
  assembly, not through shared memory (``_load_columns``; ``ops._weights_in_tile`` says where: rows of 256-1024
  columns, 1.02-1.17x faster).
- ``X_AHEAD``: chunked rows' second pass loads the next chunk's x before it stores the current chunk's y
  (``config._second_pass_ahead`` says where: 1.01-1.06x faster there, slower elsewhere).
- ``STATS_AS_HELD``: one-tile rows store mean and rstd as each thread holds them, in inline PTX (``_store_stat``;
  ``ops._stats_as_held`` says where: tiles of 2 rows of 1024, 1.02-1.04x faster).
- ``BIAS_EARLY``, ``W_EARLY``: one-tile rows load their bias, and their weights, before their statistics, not after
  them. Where the row is a head tile of 2048 and a tail of 512 at 2 warps (4096 x 2560 fp16), ptxas issued the head's
  weight and bias loads after the statistics a pair of 16-byte loads at a time, each pair waited for before the next
  was issued (96 registers a thread, sm_90 code read on the CPU); the weights alone it issues four at once. With the
  bias loaded first it is in flight during the reductions, and the weights go four at once again (128 registers, still
  8 programs of 2 warps a SM): in turns on an H200 (``bench.ab``, GPU run 636) LayerNorm's forward at 4096 x 2560 fp16
  x1.049, its inference call x1.042. With the weights loaded first too (the same 128 registers) a further x1.051-1.057
  (runs 639-640; the inference call x1.019), but with float32 weights x0.981 (run 643). Both at the launch of one tile
  of 2048 at 4 warps, rows of 2048: x1.019-1.029 (runs 643-644). Elsewhere slower or level (4096 x 1024 x0.903, 1536
  x0.981, 1792 x0.945, 3072 x0.911-0.94, 32768 x 512 bf16 x fp32 x0.964): ``ops._params_early`` says where.
- ``PAIR_NIBBLES``: chunked rows at 4 elements a thread make each mask byte from two lanes' nibbles, swapped by a
  shuffle in inline PTX (``_store_mask_by_nibbles``), not through shared memory (``ops._pair_nibbles`` says where).

A program normalizes ``BLOCK_M`` rows. A row that fits in one ``BLOCK_N`` tile (``NUM_CHUNKS == 1``) is
read once and kept in registers; with ``TAIL_N`` in two, a head tile of ``BLOCK_N`` columns and a tail tile of
``TAIL_N`` after it (a row of 5120 as 4096 + 1024, where one tile of 8192 would be 37% padding: idle threads).
``PERSISTENT`` (one-tile rows): a grid of a few programs a SM, each normalizing row blocks p, p + G, ... with the
next block's loads issued before it works on the current one, so that its reads overlap its writes; a call of
2049-4096 rows of 1153-3072 columns ran 1.04-1.16x faster so (GPU run 119, ``config._few_waves_persistent_fwd``).
A longer row is read in ``NUM_CHUNKS`` chunks twice: the first pass keeps
per-lane statistics (lane j sees columns j, j + BLOCK_N, ...: RMSNorm a sum of squares; LayerNorm the sums of
d = x - shift and d * d, where shift is the lane's own value in chunk 0) and merges the lanes once at the end of
the row; the second normalizes and writes, its reads mostly served by L2 (the first pass marks its loads
``evict_last``, the second ``evict_first``). Nothing in the first pass's loop waits on the other threads, so it is
unrolled (``UNROLL`` chunks a step) and the loads of several chunks are in flight at once: on an H200 this took
LayerNorm at 32768 x 16384 from 2.5 to 3.8 TB/s (a per-chunk merge with two block-wide sums a chunk, and the same
loop not unrolled, both ran at 2.5-2.9).

Why shifted sums: at 4+ TB/s an SM has about 32 instructions an element of a bf16 forward to spend (4 bytes an
element, about 16 bytes a cycle an SM), and a Welford update costs 8 (a subtract, a multiply and an add for the
mean, the same for M2, and two selects for a ragged row) against 3 for the shifted sums (subtract, add,
multiply-add). The shift is a value of the row itself, so the sum of squares does not cancel the way a plain
``E[x^2] - E[x]^2`` does at a large mean (a test puts the mean 10**4 standard deviations away, and the shifts
themselves 10**4 away from the rest). The sm_90 code of a row of 8192 in chunks of 2048 went from 520 to 456
instructions, and LayerNorm at 32768 x 8192 from 3.29 to 3.73 TB/s (GPU run 41). ``EVEN_N`` (N a multiple of
BLOCK_N) drops the selects of a ragged last chunk.

Bounds: where ``EVEN_N`` says every column of a tile is in the row, and ``EVEN_M`` every row of a program's tile is
in x (M a multiple of BLOCK_M, one program a row block), the loads and stores go without those bounds
(``bounds.in_bounds``): no compares, no predicates, no zeroed registers for the masked-off lanes. With it the statistics
take the GPU's reciprocal square root (``_rsqrt``) instead of a square root and a division. The sm_90 code of a
LayerNorm of two rows of 512 a program (one warp) went from 520 to 461 instructions, RMSNorm's from 356 to 306;
against the kernel before, in turns on an H200 (``bench.ab``, GPU run 190, 32768 rows, bf16 x, fp32 weights):
LayerNorm + clamped ReLU 1.02-1.09x faster at 256-65536 columns, LayerNorm 1.00-1.06x, RMSNorm 0.995-1.04x; at 4096
rows (fp16, run 192) 0.96-1.03x.
"""

import triton
import triton.language as tl

from .bounds import INTERPRETED, in_bounds


@triton.jit
def _bit_or(a, b):
    return a | b


@triton.jit
def _store_stat(P, v, ok, AS_HELD: tl.constexpr):
    """``tl.store(P, v, mask=ok)`` of a float32 row statistic; ``AS_HELD``: each thread stores the values it holds, in
    inline PTX (``ops._stats_as_held`` says where). The interpreter, which has no inline assembly, uses ``tl.store``.

    A row's statistic comes out of its reduction in a layout where every lane of a warp holds it; ``tl.store`` moves it
    to one row a thread first (sm_90, read on the CPU: in tiles of 2 rows of 1024 at 2 warps a select, a warp shuffle
    and a store by two lanes; in tiles of 8 rows of 256 through shared memory, two barriers a statistic). Stored as
    held, each thread stores its rows' values, and a warp's lanes write one address at once."""
    if AS_HELD and not INTERPRETED:
        tl.static_assert(v.dtype == tl.float32, "AS_HELD stores float32 statistics")
        tl.inline_asm_elementwise(
            "{ .reg .pred p; setp.ne.b32 p, $3, 0; @p st.global.f32 [$1], $2; mov.u32 $0, 0; }",
            "=r,l,f,r", [P.to(tl.int64), v, ok.to(tl.int32)], dtype=tl.int32, is_pure=False, pack=1,
        )  # fmt: skip
    else:
        tl.store(P, v, mask=ok)


@triton.jit
def _tile_cols(col0, BLOCK_N: tl.constexpr, TILE_3D: tl.constexpr):
    """A tile's column offsets: ``[1, BLOCK_N]``, or with ``TILE_3D`` ``[1, BLOCK_N // 8, 8]`` (the 8 columns of a
    mask byte along the last axis)."""
    if TILE_3D:
        return col0 + (tl.arange(0, BLOCK_N // 8)[:, None] * 8 + tl.arange(0, 8)[None, :])[None, :, :]
    else:
        return col0 + tl.arange(0, BLOCK_N)[None, :]


@triton.jit
def _per_row(v, TILE_3D: tl.constexpr):
    """A ``[BLOCK_M]`` vector shaped to broadcast over a tile of ``_tile_cols``."""
    if TILE_3D:
        return v[:, None, None]
    else:
        return v[:, None]


@triton.jit
def _row_sum(v, TILE_3D: tl.constexpr):
    if TILE_3D:
        return tl.sum(tl.sum(v, axis=2), axis=1)
    else:
        return tl.sum(v, axis=1)


@triton.jit
def _rsqrt(v):
    """1 / sqrt(v): the GPU's reciprocal square root (one instruction, relative error below 2**-22) in float32,
    a correctly rounded square root and division in float64."""
    if v.dtype == tl.float64:
        return 1.0 / tl.sqrt(v)
    else:
        return tl.math.rsqrt(v)


@triton.jit
def _load_columns(P, cols, col_ok, IN_TILE: tl.constexpr):
    """The weights (or bias) of columns ``cols`` (a ``[BLOCK_N]`` vector, to be broadcast over a 2-D tile's rows).

    ``tl.load`` loads them in a layout of its own (float32: 4 columns a thread, the CTA's threads along the row) and
    passes them through shared memory into the tile's (bf16 x: 8 columns a thread, warps along rows and columns): a
    layout conversion with its barriers in every program. ``IN_TILE`` (float32 weights, every column in the row): each
    thread loads its own columns of the tile, in inline assembly (which the compiler leaves in the layout of its
    operands), four a time: one 16-byte load where the four are adjacent and the address is a multiple of 16 (as the
    tiles of 16-bit x lay them out, 8 columns a thread, with rows of an odd stride too in the sm_90 code read on the
    CPU), else four 4-byte loads (weights off a multiple of 16 bytes, or a layout that holds the four apart). ptxas
    keeps those checks (sm_90: 33 instructions a program more than a bare 16-byte load in RMSNorm's 8 x 512, 72 in
    LayerNorm's with its bias), yet the bare load (which assumes the layout) ran no faster (GPU run 328: 0.87-1.00x).
    The interpreter, which has no inline assembly, loads with ``tl.load``."""
    if IN_TILE and not INTERPRETED:
        tl.static_assert(P.dtype.element_ty == tl.float32, "IN_TILE loads float32 columns")
        aligned = ((P.to(tl.int64) & 15) == 0).to(tl.int32)
        return tl.inline_asm_elementwise(
            """{ .reg .pred v; .reg .b64 t;
            setp.ne.b32 v, $8, 0; add.s64 t, $4, 4; setp.eq.and.s64 v, t, $5, v; add.s64 t, $4, 8;
            setp.eq.and.s64 v, t, $6, v; add.s64 t, $4, 12; setp.eq.and.s64 v, t, $7, v;
            @v ld.global.nc.v4.f32 {$0, $1, $2, $3}, [$4];
            @!v ld.global.nc.f32 $0, [$4]; @!v ld.global.nc.f32 $1, [$5];
            @!v ld.global.nc.f32 $2, [$6]; @!v ld.global.nc.f32 $3, [$7]; }""",
            "=f,=f,=f,=f,l,l,l,l,r,r,r,r", [(P + cols).to(tl.int64), aligned], dtype=tl.float32, is_pure=True, pack=4,
        )  # fmt: skip
    else:
        return tl.load(P + cols, mask=col_ok, other=0.0)


@triton.jit
def _load_param(P, col0, N, BLOCK_N: tl.constexpr, EVEN_N: tl.constexpr, TILE_3D: tl.constexpr, IN_TILE: tl.constexpr):
    """The weights or the bias (``P``) of the tile of columns ``col0 ...``: loaded by ``_scale_shift_store``, or
    first by one-tile rows that load them before their statistics (``W_EARLY``, ``BIAS_EARLY``)."""
    if TILE_3D:
        cols = _tile_cols(col0, BLOCK_N, True)
        return tl.load(P + cols, mask=in_bounds(cols, N, EVEN_N), other=0.0)
    else:
        cols = col0 + tl.arange(0, BLOCK_N)
        return _load_columns(P, cols, in_bounds(cols, N, EVEN_N), IN_TILE and EVEN_N)


@triton.jit
def _load_param_tiles(
    P, N, placeholder, BLOCK_N: tl.constexpr, TAIL_N: tl.constexpr, EVEN_N: tl.constexpr, TILE_3D: tl.constexpr,
    IN_TILE: tl.constexpr,
):  # fmt: skip
    """``_load_param`` of one-tile rows' head tile and, with ``TAIL_N``, their tail tile (``placeholder`` without),
    as ``_scale_shift_store`` would load them."""
    head = _load_param(P, 0, N, BLOCK_N, EVEN_N, TILE_3D, IN_TILE)
    tail = placeholder
    if TAIL_N:
        tail = _load_param(P, BLOCK_N, N, TAIL_N, False, TILE_3D, False)
    return head, tail


@triton.jit
def _clamp_16(v, lower, upper):
    """``clamp(v, lower, upper)`` of a float16 or bfloat16 tile ``v`` (y as stored), NaN kept, with the bounds rounded
    to v's dtype: two elements an instruction (``max.NaN`` / ``min.NaN`` on ``.bf16x2`` or ``.f16x2``).

    The same values as clamping the float32 y and rounding after: rounding to nearest is monotonic, so a y below lower
    rounds to at most round(lower), one above upper to at least round(upper), and one between them to a value between
    the rounded bounds; NaN stays NaN. ``tl.maximum`` on 16-bit tensors widens them to float32 and back (sm_90 code
    read on the CPU), so the pairs go through inline assembly, which the interpreter has not: there
    ``_scale_shift_store`` clamps the float32 y (the same values, by the argument above). The fused forward at 32768 x
    6656 (bf16 x, float32 weights, pass two unrolled): 1216 -> 1160 instructions a program."""
    lo = tl.full(v.shape, lower, tl.float32).to(v.dtype)
    hi = tl.full(v.shape, upper, tl.float32).to(v.dtype)
    if v.dtype == tl.bfloat16:
        asm: tl.constexpr = "max.NaN.bf16x2 $0, $1, $2; min.NaN.bf16x2 $0, $0, $3;"
    else:
        asm: tl.constexpr = "max.NaN.f16x2 $0, $1, $2; min.NaN.f16x2 $0, $0, $3;"
    return tl.inline_asm_elementwise(asm, "=r,r,r,r", [v, lo, hi], dtype=v.dtype, is_pure=True, pack=2)


@triton.jit
def _store_mask_by_nibbles(
    keep, rows64, row_ok, col0, MASK, N, stride_mask, BLOCK_N: tl.constexpr, EVEN_N: tl.constexpr
):
    """The mask bytes of one row of ``BLOCK_N`` columns held 4 a lane, column j in lane j / 4 (``ops._pair_nibbles``
    says where that holds): each lane ORs its 4 bits into a nibble, takes its neighbour's (lane ^ 1, the other half
    of the byte) by a shuffle, and the lane of the byte's low nibble stores it. The reshape of the 8 bits of a byte
    and their OR across the two lanes cost no barrier, but the bytes would come out held by two lanes each, and the
    store's layout (one a lane) then goes through shared memory, two barriers a chunk (sm_90 code, round 49)."""
    nib = tl.reduce(
        tl.where(tl.reshape(keep, (1, BLOCK_N // 4, 4)), 1 << tl.arange(0, 4)[None, None, :], 0), 2, _bit_or
    )
    other = tl.inline_asm_elementwise(
        "shfl.sync.bfly.b32 $0, $1, 1, 0x1f, 0xffffffff;", "=r,r", [nib], dtype=tl.int32, is_pure=True, pack=1
    )
    quad = tl.arange(0, BLOCK_N // 4)[None, :]
    high = (quad & 1) == 1  # this lane holds the byte's high nibble
    packed = tl.where(high, other | (nib << 4), nib | (other << 4))
    byte_cols = col0 // 8 + quad // 2
    byte_ok = row_ok[:, None] & ~high & in_bounds(byte_cols, (N + 7) // 8, EVEN_N)
    tl.store(MASK + rows64[:, None] * stride_mask + byte_cols, packed.to(tl.uint8), mask=byte_ok)


@triton.jit
def _scale_shift_store(
    xhat, rows64, row_ok, col0, W, B, Y, MASK, N, stride_y, stride_mask, lower, upper, keep_from, keep_to,
    HAS_BIAS: tl.constexpr, ZERO_CENTERED: tl.constexpr, CLAMP_MASK: tl.constexpr, KEEP_BY_BITS: tl.constexpr,
    TILE_3D: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, EVEN_N: tl.constexpr, TRAINING: tl.constexpr,
    W_IN_TILE: tl.constexpr, PAIR_NIBBLES: tl.constexpr, w=None, W_GIVEN: tl.constexpr = False, bias=None,
    BIAS_GIVEN: tl.constexpr = False,
):  # fmt: skip
    """Apply weight/bias (and the clamp + mask) to one tile starting at column col0: ``[BLOCK_M, BLOCK_N]``, or
    with ``TILE_3D`` ``[BLOCK_M, BLOCK_N // 8, 8]`` (``_tile_cols``), whose weights load straight into the tile's
    layout and whose mask bytes gather along the last axis with no reshape. Not ``TRAINING``: the clamp without
    the mask. ``PAIR_NIBBLES`` (``ops._pair_nibbles``: one row of 4 elements a thread, lane by lane): each lane
    makes the 4 bits of its own columns, and the two lanes of a byte swap them by a shuffle. ``W_GIVEN`` /
    ``BIAS_GIVEN``: the tile's weights / bias are ``w`` / ``bias``, loaded by the caller, not here (both by
    ``_load_param``)."""
    # Each tile form keeps its own product. One product after the two forms (the bias loaded before it) compiled to
    # other code at 31 of 52 launches read on the CPU (round 85): 4096 x 8704's head and tail at 167 registers, not 128
    if TILE_3D:
        cols = _tile_cols(col0, BLOCK_N, True)
        col_ok = in_bounds(cols, N, EVEN_N)
        ok = row_ok[:, None, None] & col_ok
        if not W_GIVEN:
            w = _load_param(W, col0, N, BLOCK_N, EVEN_N, True, False)
        w = w.to(xhat.dtype)
        if ZERO_CENTERED:  # xhat * (1 + w) as one multiply-add, not 1 + w held for the tile
            y = xhat * w + xhat
        else:
            y = xhat * w
        if HAS_BIAS:
            if not BIAS_GIVEN:
                bias = _load_param(B, col0, N, BLOCK_N, EVEN_N, True, False)
            y += bias.to(xhat.dtype)
        y_ptrs = Y + rows64[:, None, None] * stride_y + cols
    else:  # the weights loaded as a vector: as [1, BLOCK_N] the plain forward ran slower
        cols = col0 + tl.arange(0, BLOCK_N)
        col_ok = in_bounds(cols, N, EVEN_N)
        ok = row_ok[:, None] & col_ok[None, :]
        if not W_GIVEN:
            w = _load_param(W, col0, N, BLOCK_N, EVEN_N, False, W_IN_TILE)
        w = w.to(xhat.dtype)
        if ZERO_CENTERED:  # xhat * (1 + w) as one multiply-add, not 1 + w held for the tile
            y = xhat * w[None, :] + xhat
        else:
            y = xhat * w[None, :]
        if HAS_BIAS:
            if not BIAS_GIVEN:
                bias = _load_param(B, col0, N, BLOCK_N, EVEN_N, False, W_IN_TILE)
            y += bias.to(xhat.dtype)[None, :]
        y_ptrs = Y + rows64[:, None] * stride_y + cols[None, :]
    if CLAMP_MASK and TRAINING:
        # the bit describes out as stored (cuDNN's rule): lower < out < upper, which for float32 y is one interval
        # [keep_from, keep_to] found on the host (ops.mask_thresholds), so y is neither rounded nor read back here
        if xhat.dtype == tl.float64:  # no rounding to describe
            keep = (y > lower) & (y < upper)
        elif KEEP_BY_BITS:
            # 0 < keep_from <= keep_to: positive floats are ordered as their bits, and a negative y or a NaN lands
            # outside the span after the unsigned subtract (one compare and one select a bit instead of two each)
            first = tl.cast(keep_from, tl.float32).to(tl.uint32, bitcast=True)  # (a Python float when interpreted)
            span = tl.cast(keep_to, tl.float32).to(tl.uint32, bitcast=True) - first
            keep = (y.to(tl.uint32, bitcast=True) - first) <= span
        else:
            keep = (y >= keep_from) & (y <= keep_to)
    out_ty: tl.constexpr = Y.dtype.element_ty
    if CLAMP_MASK and out_ty.primitive_bitwidth == 16 and not INTERPRETED:  # as stored, two an instruction
        y_out = _clamp_16(y.to(out_ty), lower, upper)
    else:
        if CLAMP_MASK:
            y = tl.maximum(y, lower, propagate_nan=tl.PropagateNan.ALL)
            y = tl.minimum(y, upper, propagate_nan=tl.PropagateNan.ALL)
        y_out = y.to(out_ty)
    if CLAMP_MASK and TRAINING:
        if PAIR_NIBBLES:
            if not EVEN_N:  # padding bits are 0
                keep &= ok
            _store_mask_by_nibbles(keep, rows64, row_ok, col0, MASK, N, stride_mask, BLOCK_N, EVEN_N)
        else:
            if not TILE_3D:
                keep = tl.reshape(keep, (BLOCK_M, BLOCK_N // 8, 8))
            packed = tl.reduce(tl.where(keep, 1 << tl.arange(0, 8)[None, None, :], 0), 2, _bit_or)  # 3-input ORs
            byte_cols = col0 // 8 + tl.arange(0, BLOCK_N // 8)
            if not EVEN_N:
                # padding bits are 0. Of the bytes stored, only the one of column N - 1 can hold any (N % 8 columns
                # of it in the row), so its bits are cleared by the byte, not by a select a column: the sm_90 code of
                # ragged one-tile rows 2-3% shorter (4096 x 768, 2 rows of 1024 at 2 warps: 716 -> 702 instructions),
                # x1.008-1.026 in turns on an H200 (``bench.ab``, GPU run 501: 4096 rows of 768-5632, 32768 rows of
                # 768 and 3072 with float32 weights; fp16 4096 x 768 x1.000)
                packed = tl.where(byte_cols[None, :] * 8 + 8 <= N, packed, packed & ((1 << (N % 8)) - 1))
            byte_ok = row_ok[:, None] & in_bounds(byte_cols, (N + 7) // 8, EVEN_N)[None, :]
            tl.store(MASK + rows64[:, None] * stride_mask + byte_cols[None, :], packed.to(tl.uint8), mask=byte_ok)
    tl.store(y_ptrs, y_out, mask=ok)


@triton.jit
def _load_rows(
    X, rows, M, col0, N, stride_x, TILE_3D: tl.constexpr, BLOCK_N: tl.constexpr, EVEN_M: tl.constexpr,
    EVEN_N: tl.constexpr, EVICT: tl.constexpr,
):  # fmt: skip
    """The tile of columns ``col0 ...`` of rows ``rows`` (bounded by M and N, unless ``EVEN_M`` / ``EVEN_N`` say
    they are in bounds) as stored: nothing is computed from it here, so a persistent program can issue the next row
    block's loads before it works on this one (and chunked rows' second pass its next chunk's). ``EVICT``: the L2
    eviction policy ("evict_first" for a chunk's last read, "" the default)."""
    cols = _tile_cols(col0, BLOCK_N, TILE_3D)
    ok = _per_row(in_bounds(rows, M, EVEN_M), TILE_3D) & in_bounds(cols, N, EVEN_N)
    row_starts = X + rows.to(tl.int64) * stride_x
    return tl.load(_per_row(row_starts, TILE_3D) + cols, mask=ok, other=0.0, eviction_policy=EVICT)


@triton.jit
def _sum_chunk(
    x_rows, row_ok, col0, N, shift, lane_sum, lane_sq, IS_RMS: tl.constexpr, ACC: tl.constexpr,
    BLOCK_N: tl.constexpr, EVEN: tl.constexpr,
):  # fmt: skip
    """Pass one of chunked rows: add the chunk of columns ``col0 ...`` to the lanes' sums (RMSNorm: of x * x;
    LayerNorm: of d = x - shift and d * d). ``EVEN``: the chunk lies wholly in the row (no column bounds)."""
    cols = col0 + tl.arange(0, BLOCK_N)
    ok = row_ok[:, None] & in_bounds(cols, N, EVEN)[None, :]
    x = tl.load(x_rows + cols[None, :], mask=ok, other=0.0, eviction_policy="evict_last").to(ACC)
    if IS_RMS:
        lane_sq += x * x
    else:
        d = x - shift
        if not EVEN:  # a lane past the row's end in this chunk
            d = tl.where(ok, d, 0.0)
        lane_sum += d
        lane_sq += d * d
    return lane_sum, lane_sq


@triton.jit
def _normalize_chunk(
    x_tile, rows64, row_ok, col0, N, mean, rstd, W, B, Y, MASK, stride_y, stride_mask, lower, upper, keep_from,
    keep_to, IS_RMS: tl.constexpr, HAS_BIAS: tl.constexpr, ZERO_CENTERED: tl.constexpr, CLAMP_MASK: tl.constexpr,
    ACC: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, EVEN: tl.constexpr, KEEP_BY_BITS: tl.constexpr,
    TILE_3D: tl.constexpr, TRAINING: tl.constexpr, PAIR_NIBBLES: tl.constexpr,
):  # fmt: skip
    """Pass two of chunked rows: normalize the chunk x_tile of columns ``col0 ...`` (loaded again, ``_load_rows``)
    and store it. ``EVEN``: the chunk lies wholly in the row (no column bounds)."""
    if IS_RMS:
        xhat = x_tile.to(ACC) * _per_row(rstd, TILE_3D)
    else:
        xhat = (x_tile.to(ACC) - _per_row(mean, TILE_3D)) * _per_row(rstd, TILE_3D)
    _scale_shift_store(
        xhat, rows64, row_ok, col0, W, B, Y, MASK, N, stride_y, stride_mask, lower, upper, keep_from, keep_to,
        HAS_BIAS, ZERO_CENTERED, CLAMP_MASK, KEEP_BY_BITS, TILE_3D, BLOCK_M, BLOCK_N, EVEN, TRAINING, False,
        PAIR_NIBBLES,
    )  # fmt: skip


@triton.jit
def _normalize_one_tile(
    x, x_tail, rows, W, B, Y, MEAN, RSTD, MASK, M, N, stride_y, stride_mask, eps, lower, upper, keep_from, keep_to,
    IS_RMS: tl.constexpr, HAS_BIAS: tl.constexpr, ZERO_CENTERED: tl.constexpr, CLAMP_MASK: tl.constexpr,
    ACC: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, EVEN_N: tl.constexpr, KEEP_BY_BITS: tl.constexpr,
    TILE_3D: tl.constexpr, TAIL_N: tl.constexpr, EVEN_M: tl.constexpr, TRAINING: tl.constexpr, W_IN_TILE: tl.constexpr,
    STATS_AS_HELD: tl.constexpr, W_EARLY: tl.constexpr, BIAS_EARLY: tl.constexpr,
):  # fmt: skip
    """Normalize rows held whole in registers (``_load_rows``) and store y, and with ``TRAINING`` the statistics
    and the mask: the head tile x of BLOCK_N columns and, with ``TAIL_N``, the tail tile x_tail after it (not read
    without). ``W_EARLY`` / ``BIAS_EARLY``: the weights / the bias are loaded first, before the statistics (the
    module docstring; the bias before the weights)."""
    w_head, w_tail, b_head, b_tail = rows, rows, rows, rows  # not read without W_EARLY / BIAS_EARLY
    if BIAS_EARLY:
        b_head, b_tail = _load_param_tiles(B, N, rows, BLOCK_N, TAIL_N, EVEN_N, TILE_3D, W_IN_TILE)
    if W_EARLY:
        w_head, w_tail = _load_param_tiles(W, N, rows, BLOCK_N, TAIL_N, EVEN_N, TILE_3D, W_IN_TILE)
    x = x.to(ACC)
    if TAIL_N:
        x_tail = x_tail.to(ACC)
    row_ok = in_bounds(rows, M, EVEN_M)
    rows64 = rows.to(tl.int64)  # 64-bit offsets: M * N may pass 2**31
    ok = _per_row(row_ok, TILE_3D) & in_bounds(_tile_cols(0, BLOCK_N, TILE_3D), N, EVEN_N)
    if TAIL_N:
        tail_ok = _per_row(row_ok, TILE_3D) & (_tile_cols(BLOCK_N, TAIL_N, TILE_3D) < N)
    if IS_RMS:
        sq = _row_sum(x * x, TILE_3D)
        if TAIL_N:
            sq += _row_sum(x_tail * x_tail, TILE_3D)
        rstd = _rsqrt(sq / N + eps)
        xhat = x * _per_row(rstd, TILE_3D)
        if TAIL_N:
            xhat_tail = x_tail * _per_row(rstd, TILE_3D)
    else:
        total = _row_sum(x, TILE_3D)
        if TAIL_N:
            total += _row_sum(x_tail, TILE_3D)
        mean = total / N
        centered = x - _per_row(mean, TILE_3D)
        if not EVEN_N:
            centered = tl.where(ok, centered, 0.0)
        sq = _row_sum(centered * centered, TILE_3D)
        if TAIL_N:
            centered_tail = tl.where(tail_ok, x_tail - _per_row(mean, TILE_3D), 0.0)
            sq += _row_sum(centered_tail * centered_tail, TILE_3D)
        rstd = _rsqrt(sq / N + eps)
        xhat = centered * _per_row(rstd, TILE_3D)
        if TAIL_N:
            xhat_tail = centered_tail * _per_row(rstd, TILE_3D)
        if TRAINING:
            _store_stat(MEAN + rows, mean, row_ok, STATS_AS_HELD)
    if TRAINING:
        _store_stat(RSTD + rows, rstd, row_ok, STATS_AS_HELD)
    _scale_shift_store(
        xhat, rows64, row_ok, 0, W, B, Y, MASK, N, stride_y, stride_mask, lower, upper, keep_from, keep_to,
        HAS_BIAS, ZERO_CENTERED, CLAMP_MASK, KEEP_BY_BITS, TILE_3D, BLOCK_M, BLOCK_N, EVEN_N, TRAINING, W_IN_TILE,
        False, w_head, W_EARLY, b_head, BIAS_EARLY,
    )  # fmt: skip
    if TAIL_N:
        _scale_shift_store(
            xhat_tail, rows64, row_ok, BLOCK_N, W, B, Y, MASK, N, stride_y, stride_mask, lower, upper, keep_from,
            keep_to, HAS_BIAS, ZERO_CENTERED, CLAMP_MASK, KEEP_BY_BITS, TILE_3D, BLOCK_M, TAIL_N, False, TRAINING,
            False, False, w_tail, W_EARLY, b_tail, BIAS_EARLY,
        )  # fmt: skip


@triton.jit(do_not_specialize=["M", "num_programs", "blocks_per_program"])
def norm_fwd_kernel(
    X, Y, W, B, MEAN, RSTD, MASK,
    M, N, stride_x, stride_y, stride_mask, eps, lower, upper, keep_from, keep_to, num_programs, blocks_per_program,
    IS_RMS: tl.constexpr, HAS_BIAS: tl.constexpr, ZERO_CENTERED: tl.constexpr, CLAMP_MASK: tl.constexpr,
    ACC: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, NUM_CHUNKS: tl.constexpr, UNROLL: tl.constexpr,
    EVEN_N: tl.constexpr, PASS_TWO_UNROLL: tl.constexpr, KEEP_BY_BITS: tl.constexpr, TILE_3D: tl.constexpr,
    TAIL_N: tl.constexpr, PERSISTENT: tl.constexpr, EVEN_M: tl.constexpr, TRAINING: tl.constexpr,
    W_IN_TILE: tl.constexpr, X_AHEAD: tl.constexpr, STATS_AS_HELD: tl.constexpr, WHOLE_CHUNKS: tl.constexpr,
    ALIGN: tl.constexpr, PAIR_NIBBLES: tl.constexpr, W_EARLY: tl.constexpr,
    BIAS_EARLY: tl.constexpr,
):  # fmt: skip
    """TRAINING: store the statistics (and with CLAMP_MASK the mask) for the backward; otherwise y alone (an
    inference call: MEAN, RSTD and MASK are not touched). PERSISTENT (one-tile rows): ``num_programs`` programs,
    program p normalizes row blocks p, p + num_programs, ... (``blocks_per_program`` steps), the next block's loads
    issued before the current one is worked on. Chunked rows with ``WHOLE_CHUNKS`` (not 0): the first so many chunks
    lie wholly in the row and go without column bounds (``UNROLL`` of them a step in pass one), the ragged last chunk
    after them with its bounds; with 0, every chunk with them (none where ``EVEN_N``). ``ALIGN`` (not 1): N,
    ``stride_x`` and ``stride_y`` come in units of ALIGN elements (``ops._row_align``)."""
    tl.static_assert(not (PERSISTENT and EVEN_M), "a persistent grid's last steps pass the last row")
    if ALIGN > 1:  # N and the row strides in units of ALIGN elements: the compiler then knows them multiples of it
        N = N * ALIGN
        stride_x = stride_x * ALIGN
        stride_y = stride_y * ALIGN
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    row_ok = in_bounds(rows, M, EVEN_M)
    rows64 = rows.to(tl.int64)  # 64-bit offsets: M * N may pass 2**31
    row_starts = X + rows64 * stride_x
    if NUM_CHUNKS == 1:  # tiles of _tile_cols: [BLOCK_M, BLOCK_N], or with TILE_3D [BLOCK_M, BLOCK_N // 8, 8]
        # TAIL_N: the row is a head tile of BLOCK_N columns, all in the row, and a tail tile of TAIL_N from column
        # BLOCK_N on, both held in registers (5120 = 4096 + 1024 instead of one tile of 8192 that is 37% padding)
        x = _load_rows(X, rows, M, 0, N, stride_x, TILE_3D, BLOCK_N, EVEN_M, EVEN_N, "")
        x_tail = x  # not read without a tail
        if TAIL_N:
            x_tail = _load_rows(X, rows, M, BLOCK_N, N, stride_x, TILE_3D, TAIL_N, EVEN_M, False, "")
        if PERSISTENT:
            for _ in tl.range(0, blocks_per_program):
                next_rows = rows + num_programs * BLOCK_M
                next_x = _load_rows(X, next_rows, M, 0, N, stride_x, TILE_3D, BLOCK_N, False, EVEN_N, "")
                next_tail = next_x
                if TAIL_N:
                    next_tail = _load_rows(X, next_rows, M, BLOCK_N, N, stride_x, TILE_3D, TAIL_N, False, False, "")
                _normalize_one_tile(
                    x, x_tail, rows, W, B, Y, MEAN, RSTD, MASK, M, N, stride_y, stride_mask, eps, lower, upper,
                    keep_from, keep_to, IS_RMS, HAS_BIAS, ZERO_CENTERED, CLAMP_MASK, ACC, BLOCK_M, BLOCK_N, EVEN_N,
                    KEEP_BY_BITS, TILE_3D, TAIL_N, False, TRAINING, W_IN_TILE, STATS_AS_HELD, W_EARLY,
                    BIAS_EARLY and HAS_BIAS,
                )  # fmt: skip
                rows = next_rows
                x = next_x
                x_tail = next_tail
        else:
            _normalize_one_tile(
                x, x_tail, rows, W, B, Y, MEAN, RSTD, MASK, M, N, stride_y, stride_mask, eps, lower, upper, keep_from,
                keep_to, IS_RMS, HAS_BIAS, ZERO_CENTERED, CLAMP_MASK, ACC, BLOCK_M, BLOCK_N, EVEN_N, KEEP_BY_BITS,
                TILE_3D, TAIL_N, EVEN_M, TRAINING, W_IN_TILE, STATS_AS_HELD, W_EARLY, BIAS_EARLY and HAS_BIAS,
            )  # fmt: skip
    else:
        x_rows = row_starts[:, None]
        HEAD_CHUNKS: tl.constexpr = WHOLE_CHUNKS if WHOLE_CHUNKS > 0 else NUM_CHUNKS  # the chunks of the loops
        HEAD_EVEN: tl.constexpr = EVEN_N or WHOLE_CHUNKS > 0
        # Pass one: per-lane statistics, merged across the lanes once, after the loop. LayerNorm's lanes sum
        # d = x - shift and d * d, shifted by the lane's value in chunk 0 (a value of the row itself, so the sum of
        # squares does not cancel); chunk 0 is loaded once more for it, which keeps the loop's trip count.
        lane_sum = tl.zeros([BLOCK_M, BLOCK_N], dtype=ACC)  # LN: sum of d
        lane_sq = tl.zeros([BLOCK_M, BLOCK_N], dtype=ACC)  # RMS: sum of x * x; LN: sum of d * d
        shift = lane_sq
        if not IS_RMS:
            cols = tl.arange(0, BLOCK_N)
            ok = row_ok[:, None] & in_bounds(cols, N, HEAD_EVEN)[None, :]
            shift = tl.load(x_rows + cols[None, :], mask=ok, other=0.0, eviction_policy="evict_last").to(ACC)
        # WHOLE_CHUNKS (``ops._whole_chunks``, not 0): the whole chunks without column bounds (HEAD_EVEN), then the
        # ragged last chunk with them; 0: every chunk in the loop, with its bounds (none where EVEN_N). Bounds in
        # every chunk of the unrolled loop took registers that the loads in flight needed (sm_90, read on the CPU:
        # LayerNorm at 4096 x 12800, 7 chunks of 2048 at 16 warps, 32 registers a thread, issued 3 of its 7 loads
        # before the first add; peeled, 6 of 7, and 528 instructions instead of 649)
        for chunk in tl.range(0, HEAD_CHUNKS, loop_unroll_factor=UNROLL):
            lane_sum, lane_sq = _sum_chunk(
                x_rows, row_ok, chunk * BLOCK_N, N, shift, lane_sum, lane_sq, IS_RMS, ACC, BLOCK_N, HEAD_EVEN
            )  # fmt: skip
        if HEAD_CHUNKS < NUM_CHUNKS:  # with WHOLE_CHUNKS, the ragged last chunk
            last = (NUM_CHUNKS - 1) * BLOCK_N
            lane_sum, lane_sq = _sum_chunk(
                x_rows, row_ok, last, N, shift, lane_sum, lane_sq, IS_RMS, ACC, BLOCK_N, False
            )
        if IS_RMS:
            sq = tl.sum(lane_sq, axis=1)
        else:  # lane j, n_j values: sum (x - mean)^2 = sum_j [Q_j + e_j (2 S_j + n_j e_j)], e_j = shift_j - mean
            lane_n = (N - tl.arange(0, BLOCK_N) + BLOCK_N - 1) // BLOCK_N
            lane_n = tl.minimum(tl.maximum(lane_n, 0), NUM_CHUNKS).to(ACC)[None, :]
            mean = tl.sum(lane_n * shift + lane_sum, axis=1) / N
            e = shift - mean[:, None]
            sq = tl.sum(lane_sq + e * (2.0 * lane_sum + lane_n * e), axis=1)
        rstd = _rsqrt(sq / N + eps)
        if IS_RMS:
            mean = rstd  # not read (RMSNorm has no mean)
        if TRAINING:
            tl.store(RSTD + rows, rstd, mask=row_ok)
            if not IS_RMS:
                tl.store(MEAN + rows, mean, mask=row_ok)
        # Pass two. PASS_TWO_UNROLL, the clamped ReLU's chunks of at most 8 elements a thread (None: the compiler's
        # choice; ops._pass_two_unrolled says where): the compiler left that loop rolled (at 4 a thread the barrier
        # of the mask's bytes assembled through shared memory, at 8 the size of its body), and unrolled the fused
        # forward ran 8-20% faster at 4 a thread (GPU runs 55-56) and 1.5-8.6% at 8 (run 390), but 6.5% slower at
        # 1024 x 12288 (chunks of 32 elements a thread). The plain forward, which the compiler unrolls anyway, ran
        # 19% slower at 8192 and 16384 with the hint.
        # X_AHEAD: each step loads the next chunk's x before it stores the current chunk's y (the last step loads
        # its own again, never read), which the compiler would not do by itself: y might alias x.
        # Not X_AHEAD, with WHOLE_CHUNKS: the whole chunks without column bounds, then the last one with them.
        if X_AHEAD:
            x_next = _load_rows(X, rows, M, 0, N, stride_x, TILE_3D, BLOCK_N, EVEN_M, EVEN_N, "evict_first")
            for chunk in tl.range(0, NUM_CHUNKS, loop_unroll_factor=PASS_TWO_UNROLL):
                x_tile = x_next
                ahead = tl.minimum(chunk + 1, NUM_CHUNKS - 1)
                x_next = _load_rows(
                    X, rows, M, ahead * BLOCK_N, N, stride_x, TILE_3D, BLOCK_N, EVEN_M, EVEN_N, "evict_first"
                )
                _normalize_chunk(
                    x_tile, rows64, row_ok, chunk * BLOCK_N, N, mean, rstd, W, B, Y, MASK, stride_y, stride_mask,
                    lower, upper, keep_from, keep_to, IS_RMS, HAS_BIAS, ZERO_CENTERED, CLAMP_MASK, ACC, BLOCK_M,
                    BLOCK_N, EVEN_N, KEEP_BY_BITS, TILE_3D, TRAINING, PAIR_NIBBLES,
                )  # fmt: skip
        else:
            for chunk in tl.range(0, HEAD_CHUNKS, loop_unroll_factor=PASS_TWO_UNROLL):
                col0 = chunk * BLOCK_N
                x_tile = _load_rows(X, rows, M, col0, N, stride_x, TILE_3D, BLOCK_N, EVEN_M, HEAD_EVEN, "evict_first")
                _normalize_chunk(
                    x_tile, rows64, row_ok, col0, N, mean, rstd, W, B, Y, MASK, stride_y, stride_mask, lower, upper,
                    keep_from, keep_to, IS_RMS, HAS_BIAS, ZERO_CENTERED, CLAMP_MASK, ACC, BLOCK_M, BLOCK_N,
                    HEAD_EVEN, KEEP_BY_BITS, TILE_3D, TRAINING, PAIR_NIBBLES,
                )  # fmt: skip
            if HEAD_CHUNKS < NUM_CHUNKS:  # with WHOLE_CHUNKS, the ragged last chunk
                last = (NUM_CHUNKS - 1) * BLOCK_N
                x_tile = _load_rows(X, rows, M, last, N, stride_x, TILE_3D, BLOCK_N, EVEN_M, False, "evict_first")
                _normalize_chunk(
                    x_tile, rows64, row_ok, last, N, mean, rstd, W, B, Y, MASK, stride_y, stride_mask, lower, upper,
                    keep_from, keep_to, IS_RMS, HAS_BIAS, ZERO_CENTERED, CLAMP_MASK, ACC, BLOCK_M, BLOCK_N, False,
                    KEEP_BY_BITS, TILE_3D, TRAINING, PAIR_NIBBLES,
                )  # fmt: skip
