"""The backward kernels of LayerNorm and RMSNorm, with the clamped-ReLU bitmask applied on the fly.

One kernel body (and the split-row kernel of long rows, and ``norm_bwd_tma_kernel``, which loads whole rows by the
TMA: below); ``tl.constexpr`` switches pick the variant:

- ``IS_RMS``: no mean term; ``dx = rstd * (g - xhat * mean(xhat * g))`` with ``g = dy * scale``.
  LayerNorm adds ``- mean(g)``.
- ``ZERO_CENTERED``: ``scale = 1 + w``; the gradient of w is the same as that of the scale.
- ``HAS_MASK``: ``dy <- dy * bit`` where ``bit`` is read from the packed mask (no separate masking pass).
- ``HAS_DBIAS``: also reduce ``db = sum_rows(dy)``.

dW/dB are reduced deterministically: the grid is persistent, program ``p`` owns row blocks ``p, p + G, ...`` and
accumulates its own float32 partial sums (a ``[BLOCK_M, BLOCK_N]`` tile, summed over rows once at the end), written
to row ``p`` of a ``[G, N]`` buffer; a second, fixed-order reduction over the G partials gives dW/dB (one launch for
both). No atomics and no locks, so the same inputs give bit-identical
gradients on every run (the Triton tutorial's lock-based reduction depends on which program takes the lock first).
On a Hopper GPU that second launch is a programmatic dependent one (``ops._pdl``): its programs are scheduled while
the first kernel runs and wait for it in the kernel (``_wait_for_prior``), which took 1-2 microseconds off a call
(x1.00-1.10 at 4096 rows of 1024-15360 columns and 32768 rows of 256-1024, GPU run 234).

A row that fits one ``BLOCK_N`` tile (``NUM_CHUNKS == 1``) keeps the partials in registers (with ``TAIL_N``, as a
head tile of ``BLOCK_N`` columns and a tail tile after it: LayerNorm's rows of 5632 and 6144 = 4096 + 2048 at
2049-4096 rows ran 1.12-1.13x faster so than in a tile of 8192, GPU run 119; elsewhere slower,
``config._few_waves_bwd``). A row of up to 16384
columns is processed in chunks: a first pass reduces the two row sums (its loads marked ``evict_last``, so the
chunks stay in L2), a second (walking back, so the chunks read last come first) writes dx and adds the chunk's
dW/dB terms into a ``[chunks, BLOCK_N]`` register tile.

Longer rows (LayerNorm's from 8193 columns, RMSNorm's from 16385 and those between that are not a power of two:
``config.chunked_max_n``) are split over
several programs, one a part of at most 8192 columns, which exchange their parts' row sums through memory
(``split_rows_kernel``): dy and x are read once, and each program keeps its part's dW/dB partials in registers. The
two kernels that came before (the row sums first, then dx by strips of columns) read dy and x twice (10 bytes a
column of a bf16 row where one pass moves 6); the split rows ran 1.2-1.8x faster (GPU runs 80-82). Adding a long
row's partials into memory row by row instead cost 16 bytes a column more (0.9-1.3 TB/s at 65536 columns).

The clamped-ReLU mask is read as bytes (one a row per 8 columns), or as 32-bit words where ``ops._mask_words``
says, and its bits spread over the tile with a reshape; reading it with one byte load per column cost the masked
backward up to 2x the plain one's time. Each bit is tested where it lies, against a constant (``_masked_dy``), which
leaves the masked backward the registers of the plain one's launch: within 2-6% of its time at 2048-8192 columns
(GPU runs 50-53; 1.2-1.9x before).

``EVEN_N`` (N a multiple of BLOCK_N; with a tail tile, the head tile wholly in the row) drops column bounds
(``bounds.in_bounds``): LayerNorm's xhat needs no select past the row's end, and dy, x and the mask bytes (one
vector a thread) load without bounds. Where that was measured faster, the weights, dx and the partials go without
them too: chunked rows (RMSNorm at 32768 x 16384 1.04x) and LayerNorm's split rows (at 32768 rows of 32768 and
65536 1.07x and 1.11x, from 13-16% fewer instructions). Not one-tile rows (LayerNorm 0.93-0.95x at 256-1024
columns) nor RMSNorm's split rows (0.96x at 32768), which keep them (GPU run 196, the variants in turns). The rows
keep their bounds: a persistent grid's last row blocks run past M.

A whole-row program loads the weights once and issues the next row block's loads (``_load_raw``: the tiles as
stored, nothing computed from them) before it works on the current one, so two row blocks are in flight a program
and the loads wait only at first use. This replaced ``tl.range(..., num_stages=2)``, whose sm_90 code waited for
all of its copies at the top of every iteration and then issued the next ones after the compute: one row block in
flight, the weights re-read from L2 for every row. LayerNorm's backward at 32768 x 4096 went from 2.96 to 3.65
TB/s, RMSNorm's from 3.05 to 3.88 (GPU runs 40-42). One exception (``reload_w``): the masked backward's one-row
programs of 2048-8192 columns (32 elements a thread, 255 registers) spilled where the weights are float16 or
float32 in x's dtype (16 and 144-168 bytes of stack); loading the weights again at every row block (from L1) instead
of holding them in float32 took the spills out (fp32 to 40-64 bytes) and ran x1.01-1.11 (fp16) and x1.08-1.14
(fp32) at 4096 rows (GPU runs 256-257). Where the program fits (bfloat16, fp16 x with float32 weights, the plain
backwards) holding them stays faster: loaded again there 0.74-1.00x (GPU runs 255-256). Since round 109 the fp16
programs that read the mask as 32-bit words fit too (no stack, its bits tested against constants) and hold them:
x1.016 / x1.022 / x1.033 at 4096 x 8192 / 4096 / 2048 (GPU run 804).

Whole rows read their dy and x (and the mask's bytes) once; in calls of at most 36 MiB of x those loads carry the L2
policy ``evict_first`` (``ROW_EVICT``, ``config.bwd_row_evict``), so that the lines dx's stores allocate replace them
(clean) before the lines the call found in L2, which may be dirty and each cost a write to DRAM: x1.02-1.05 at 4096
rows of 1024-4608 and 32768 rows of 256-512 after the benchmark's 256 MB flush, but x0.90-1.00 in larger calls, which
keep the default (round 106, GPU runs 780-782); the masked backward x1.01-1.06 (round 107, run 783). From 36 to 64
MiB of x, dy's loads (and the mask's) alone carry it (``ROW_X_EVICT`` "", x's the default): x1.007-1.011 at 4096 x
5120 / 8192 and 32768 x 1024 (RMSNorm) and 4096 x 8192 (the masked backward), where both marked ran x0.99-1.00; dy's
alone below 36 MiB ran x0.97-1.00 of both (round 108, runs 793-795).
"""

import triton
import triton.language as tl
from triton.language.extra.cuda import gdc_launch_dependents, gdc_wait

from .bounds import INTERPRETED, in_bounds


@triton.jit
def _wait_for_prior(PDL_WAIT: tl.constexpr):
    """A kernel launched as a programmatic dependent launch (``Launcher(kernel, pdl="PDL_WAIT")``) may start before
    the kernel before it in the stream ends: it waits here until that kernel has ended and its writes are visible
    (``griddepcontrol.wait``). Not in the interpreter, which has no inline assembly (nor launches of this kind)."""
    if PDL_WAIT:
        gdc_wait()


@triton.jit
def _trigger_dependents(PDL_TRIGGER: tl.constexpr):
    """Lets the programmatic dependent launch after this kernel (``sum_partials_kernel``) launch once every program
    of this one has started (``griddepcontrol.launch_dependents``): its programs are scheduled, and work out their
    addresses, while this kernel still runs, and wait (``_wait_for_prior``) for it to end."""
    if PDL_TRIGGER:
        gdc_launch_dependents()


@triton.jit
def _in_elements(N, stride_dy, stride_x, stride_dx, ALIGN: tl.constexpr):
    """N and the row strides in elements, from units of ALIGN elements (``ops._row_align``): so passed, the compiler
    knows them multiples of ALIGN where Triton's specialization (multiples of 16) does not."""
    if ALIGN > 1:
        return N * ALIGN, stride_dy * ALIGN, stride_x * ALIGN, stride_dx * ALIGN
    return N, stride_dy, stride_x, stride_dx


@triton.jit
def _add_pairs(a1, a2, b1, b2):
    """The combine of a reduction of two sums at once (``tl.reduce`` over a pair of tensors)."""
    return a1 + b1, a2 + b2


@triton.jit
def _row_sums(xhat, g, IS_RMS: tl.constexpr):
    """``(sum(xhat * g), sum(g))`` over each row of a tile; RMSNorm has no second sum (0). LayerNorm's two in one
    reduction: one exchange across the warps, not two (+1-5% at 1024-4096 columns)."""
    if IS_RMS:
        s1 = tl.sum(xhat * g, axis=1)
        s2 = s1 * 0.0
    else:
        s1, s2 = tl.reduce((xhat * g, g), 1, _add_pairs)
    return s1, s2


@triton.jit
def _load_data(
    DY, X, MASK, rows64, row_ok, col0, N, stride_dy, stride_x, stride_mask,
    HAS_MASK: tl.constexpr, BLOCK_N: tl.constexpr, EVICT: tl.constexpr, EVEN_N: tl.constexpr, X_EVICT: tl.constexpr,
):  # fmt: skip
    """Issue the loads of one tile's row data (columns ``col0 ...``): ``(dy, x, packed mask bytes)`` as stored, dy's
    and the mask's with the L2 policy EVICT, x's with X_EVICT. EVEN_N: every column of the tile is in the row (no
    column bounds, so the mask bytes load as one vector)."""
    cols = col0 + tl.arange(0, BLOCK_N)
    ok = row_ok[:, None] & in_bounds(cols, N, EVEN_N)[None, :]
    dy = tl.load(DY + rows64[:, None] * stride_dy + cols[None, :], mask=ok, other=0.0, eviction_policy=EVICT)
    x = tl.load(X + rows64[:, None] * stride_x + cols[None, :], mask=ok, other=0.0, eviction_policy=X_EVICT)
    packed = dy  # unused without a mask
    if HAS_MASK:
        packed = _load_mask_bytes(MASK, rows64, row_ok, col0, N, stride_mask, BLOCK_N, EVICT, EVEN_N)
    return dy, x, packed


@triton.jit
def _load_mask_bytes(
    MASK, rows64, row_ok, col0, N, stride_mask, BLOCK_N: tl.constexpr, EVICT: tl.constexpr, EVEN_N: tl.constexpr
):
    """The packed clamped-ReLU mask of a tile's columns ``col0 ...``, loaded once (not once per column): one byte a
    row per 8 columns, or, where the caller passes the mask as 32-bit words (``MASK`` an int32 pointer, the row
    stride in words: ``ops._mask_words``), one word per 32 columns. Where the mask's row stride is a multiple of 16
    bytes (Triton's specialization, as in every call of whole 16-byte mask rows), the compiler loads the bytes as
    vectors and moves them into dy's layout through shared memory (``STS.U8`` and a barrier a tile on sm_90); loaded
    in dy's layout a byte at a time instead (``stride_mask`` not specialized), the masked backward ran x0.95-1.00
    (round 107, H200 run 787), so the conversion stays."""
    if MASK.dtype.element_ty == tl.int32:
        cols = col0 // 32 + tl.arange(0, BLOCK_N // 32)
        ok = row_ok[:, None] & in_bounds(cols, (N + 31) // 32, EVEN_N)[None, :]
    else:
        cols = col0 // 8 + tl.arange(0, BLOCK_N // 8)
        ok = row_ok[:, None] & in_bounds(cols, (N + 7) // 8, EVEN_N)[None, :]
    return tl.load(MASK + rows64[:, None] * stride_mask + cols[None, :], mask=ok, other=0, eviction_policy=EVICT)


@triton.jit
def _load_raw(
    DY, X, MASK, MEAN, RSTD, rows, rows64, row_ok, col0, N, stride_dy, stride_x, stride_mask,
    IS_RMS: tl.constexpr, HAS_MASK: tl.constexpr, BLOCK_N: tl.constexpr, EVICT: tl.constexpr, EVEN_N: tl.constexpr,
    X_EVICT: tl.constexpr,
):  # fmt: skip
    """Issue the loads of one tile (columns ``col0 ...``): ``(dy, x, packed mask bytes, mean, rstd)`` as stored (L2
    policies as ``_load_data``'s). Nothing is computed from them here, so a caller can issue the next tile's loads
    before it works on this one."""
    dy, x, packed = _load_data(
        DY, X, MASK, rows64, row_ok, col0, N, stride_dy, stride_x, stride_mask, HAS_MASK, BLOCK_N, EVICT, EVEN_N,
        X_EVICT,
    )  # fmt: skip
    mean, rstd = _load_stats(MEAN, RSTD, rows, row_ok, IS_RMS)
    return dy, x, packed, mean, rstd


@triton.jit
def _load_stats(MEAN, RSTD, rows, row_ok, IS_RMS: tl.constexpr):
    """``(mean, rstd)`` of the rows ``rows`` (mean a stand-in for RMSNorm, which has none)."""
    rstd = tl.load(RSTD + rows, mask=row_ok, other=0.0)
    mean = rstd  # unused by RMSNorm
    if not IS_RMS:
        mean = tl.load(MEAN + rows, mask=row_ok, other=0.0)
    return mean, rstd


@triton.jit
def _load_row_block(
    DY, X, MASK, MEAN, RSTD, rows, M, col0, N, stride_dy, stride_x, stride_mask,
    IS_RMS: tl.constexpr, HAS_MASK: tl.constexpr, BLOCK_N: tl.constexpr, EVEN_N: tl.constexpr,
    EVICT: tl.constexpr, X_EVICT: tl.constexpr,
):  # fmt: skip
    """``_load_raw`` of the tile of columns ``col0 ...`` of the row block ``rows``, bounded by M: how the persistent
    loops (whole rows, a split row's part) issue every row block's loads, dy's and the mask's with the L2 policy
    ``EVICT``, x's with ``X_EVICT`` (``config.bwd_row_evict``)."""
    return _load_raw(
        DY, X, MASK, MEAN, RSTD, rows, rows.to(tl.int64), rows < M, col0, N, stride_dy, stride_x, stride_mask,
        IS_RMS, HAS_MASK, BLOCK_N, EVICT, EVEN_N, X_EVICT,
    )  # fmt: skip


@triton.jit
def _load_tail(
    DY, X, MASK, rows, M, col0, N, stride_dy, stride_x, stride_mask, HAS_MASK: tl.constexpr, TAIL_N: tl.constexpr,
    EVICT: tl.constexpr, X_EVICT: tl.constexpr,
):  # fmt: skip
    """``_load_data`` of the tail tile (columns ``col0 ...``, with their bounds) of the row block ``rows``, dy's and
    the mask's with the L2 policy ``EVICT``, x's with ``X_EVICT``."""
    return _load_data(
        DY, X, MASK, rows.to(tl.int64), rows < M, col0, N, stride_dy, stride_x, stride_mask, HAS_MASK, TAIL_N, EVICT,
        False, X_EVICT,
    )  # fmt: skip


@triton.jit
def _load_weight(
    W, col0, N, ZERO_CENTERED: tl.constexpr, ACC: tl.constexpr, BLOCK_N: tl.constexpr, EVEN_N: tl.constexpr
):
    """The scale of columns ``col0 ...`` in the accumulation dtype: w, or 1 + w for zero-centered gamma (EVEN_N:
    every column in the row)."""
    cols = col0 + tl.arange(0, BLOCK_N)
    w = tl.load(W + cols, mask=in_bounds(cols, N, EVEN_N), other=0.0).to(ACC)
    if ZERO_CENTERED:
        w += 1.0
    return w


@triton.jit
def _widen(w, ZERO_CENTERED: tl.constexpr):
    """Float16 weights held as loaded, in float32 (``1 + w`` for zero-centered gamma): called at every row block,
    where they are used, so only their 16-bit form is held across the loop (half the registers of float32 weights,
    and nothing loaded again). On a GPU the widening is inline assembly that the compiler must not move
    (``is_pure=False``): a plain ``.to(tl.float32)`` of held weights is hoisted out of the loop, and the float32
    weights are held again (ptxas: the same registers and stack as float32 weights, round 35). Each ``cvt`` takes one
    half of a register that packs two weights. Float16 only (bfloat16's programs spilled so: round 36); the
    interpreter, which has no inline assembly, converts plainly."""
    tl.static_assert(w.dtype == tl.float16, "_widen takes float16 weights")
    if INTERPRETED:
        wide = w.to(tl.float32)
    else:
        wide = tl.inline_asm_elementwise(
            "{ .reg .b16 lo, hi; mov.b32 {lo, hi}, $2; cvt.f32.f16 $0, lo; cvt.f32.f16 $1, hi; }", "=r,=r,r", [w],
            dtype=tl.float32, is_pure=False, pack=2,
        )  # fmt: skip
    if ZERO_CENTERED:
        wide += 1.0
    return wide


@triton.jit
def _masked_dy(dy, packed, HAS_MASK: tl.constexpr, ACC: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """dy in the accumulation dtype, times the clamped-ReLU mask bits (each byte's bits spread over its 8 columns
    with a reshape).

    A bit is tested where it lies (``byte & (1 << k)``, one instruction that sets a predicate) and picks dy or
    ``dy * 0``: the product's value (NaN for an infinite dy, as the reference's ``dy * mask`` gives) without
    turning each bit into a float to multiply by (shift, and, convert: 30 registers more a thread at 16 columns
    a thread, and at 32 the registers ran out).

    Packed as 32-bit words (``norm_bwd_kernel`` where ``ops._mask_words`` says, the TMA kernel's MASK_TMA), a word's
    bytes are taken apart first (a shift a byte, by the byte's place in its word), so that each bit is tested against
    a constant too: tested in the word, the bits of a thread's byte are ``1 << (8 * place + k)``, which vary by thread
    and took 8 registers a thread (sm_90: no ``and`` of two registers left in the PTX, 8 instructions fewer at a row
    of 4096 in 4 warps). Against the words tested in place (H200 runs 799-801, round 109): x1.012-1.013 at 32768 x
    256 / 512 bf16 x float32 weights, x1.002 / x1.007 at 32768 x 4096 / 8192 (the TMA kernel), x0.996-1.004 at 4096 x
    1024-8192 fp16; and the words where a tile is ragged (``ops._mask_words``), where in place they lost to the
    bytes, now x1.010-1.038 at one row a program (4096 x 1280-7680)."""
    dy = dy.to(ACC)
    if HAS_MASK:  # packed: bytes, or 32-bit words of 4 bytes each
        packed = packed.to(tl.int32)
        if BLOCK_N // packed.shape[1] == 32:  # words: each byte on its own, so that its bits test against constants
            packed = (packed[:, :, None] >> (8 * tl.arange(0, 4))[None, None, :]) & 0xFF
            packed = tl.reshape(packed, (BLOCK_M, BLOCK_N // 8))
        keep = (packed[:, :, None] & (1 << tl.arange(0, 8))[None, None, :]) != 0
        dy = tl.where(tl.reshape(keep, (BLOCK_M, BLOCK_N)), dy, dy * 0.0)
    return dy


@triton.jit
def _terms(
    dy, x, packed, mean, rstd, w, row_ok, col0, N,
    IS_RMS: tl.constexpr, HAS_MASK: tl.constexpr, ACC: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
    EVEN_N: tl.constexpr,
):  # fmt: skip
    """``(dy, xhat, g, rstd)`` of a loaded tile in the accumulation dtype; dy masked by the spread mask bits."""
    dy = _masked_dy(dy, packed, HAS_MASK, ACC, BLOCK_M, BLOCK_N)
    x = x.to(ACC)
    rstd = rstd.to(ACC)
    if IS_RMS:
        xhat = x * rstd[:, None]
    elif EVEN_N:  # no column past the row's end; in rows past M x, mean and rstd load as 0, so xhat is 0
        xhat = (x - mean.to(ACC)[:, None]) * rstd[:, None]
    else:
        cols = col0 + tl.arange(0, BLOCK_N)
        ok = row_ok[:, None] & (cols < N)[None, :]
        xhat = tl.where(ok, (x - mean.to(ACC)[:, None]) * rstd[:, None], 0.0)
    return dy, xhat, dy * w[None, :], rstd


@triton.jit
def _tail_terms(
    dy, x, packed, mean, rstd, w, row_ok, s1, s2, col0, N,
    IS_RMS: tl.constexpr, HAS_MASK: tl.constexpr, ACC: tl.constexpr, BLOCK_M: tl.constexpr, TAIL_N: tl.constexpr,
):  # fmt: skip
    """A tail tile's ``(dy, xhat, g)`` (``_terms``, with its column bounds) and the head's row sums s1, s2 with the
    tail's added."""
    dy, xhat, g, _ = _terms(
        dy, x, packed, mean, rstd, w, row_ok, col0, N, IS_RMS, HAS_MASK, ACC, BLOCK_M, TAIL_N, False
    )
    t1, t2 = _row_sums(xhat, g, IS_RMS)
    return dy, xhat, g, s1 + t1, s2 + t2


@triton.jit
def _load_tile(
    DY, X, W, MASK, MEAN, RSTD, rows, rows64, row_ok, col0, N, stride_dy, stride_x, stride_mask,
    IS_RMS: tl.constexpr, ZERO_CENTERED: tl.constexpr, HAS_MASK: tl.constexpr, ACC: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, EVICT: tl.constexpr, EVEN_N: tl.constexpr,
):  # fmt: skip
    """Load the tile of columns ``col0 ...`` and return ``(dy, xhat, g, rstd)`` in the accumulation dtype; dy already
    masked. EVICT is the L2 eviction policy of the row data: "evict_last" for a chunk the kernel reads again,
    "evict_first" for the last read."""
    dy, x, packed, mean, rstd = _load_raw(
        DY, X, MASK, MEAN, RSTD, rows, rows64, row_ok, col0, N, stride_dy, stride_x, stride_mask,
        IS_RMS, HAS_MASK, BLOCK_N, EVICT, EVEN_N, EVICT,
    )  # fmt: skip
    w = _load_weight(W, col0, N, ZERO_CENTERED, ACC, BLOCK_N, EVEN_N)
    return _terms(dy, x, packed, mean, rstd, w, row_ok, col0, N, IS_RMS, HAS_MASK, ACC, BLOCK_M, BLOCK_N, EVEN_N)


@triton.jit
def _dx(g, xhat, c1, c2, rstd, IS_RMS: tl.constexpr, FUSED: tl.constexpr = False):
    """``dx = rstd * (g - xhat * c1 - c2)`` of a tile, where c1 and c2 are the row means of ``xhat * g`` and of g
    (RMSNorm has no c2 term). FUSED (the masked backward's TMA kernel): as ``g * rstd - (xhat * (c1 * rstd) + c2 *
    rstd)``, the row's factors scaled once, so an element costs two fused multiply-adds where the plain form takes a
    multiply-add, a subtraction and a multiply. Measured on an H200 (round 36, GPU runs 315-316, ``bench.ab`` in turns):
    the masked backward x1.016-1.018 at 32768 x 8704 / 9216 fp16, level elsewhere; LayerNorm's own 0.983-0.991 at 32768
    x 6144 / 7168 fp16 and 0.936 at 32768 x 1024 bf16 x float32 (``norm_bwd_kernel``), RMSNorm's 0.973 at 32768 x
    12288: not there."""
    if FUSED:
        rstd = rstd[:, None]
        shift = xhat * (c1[:, None] * rstd)
        if not IS_RMS:
            shift += c2[:, None] * rstd
        return g * rstd - shift
    else:
        dx = g - xhat * c1[:, None]
        if not IS_RMS:
            dx -= c2[:, None]
        return dx * rstd[:, None]


@triton.jit
def _write_dx(
    DX, g, xhat, c1, c2, rstd, rows64, row_ok, col0, N, stride_dx,
    IS_RMS: tl.constexpr, BLOCK_N: tl.constexpr, EVEN_N: tl.constexpr, DX_FUSED: tl.constexpr = False,
):  # fmt: skip
    """Store ``_dx`` of the tile of columns ``col0 ...`` (EVEN_N: every column in the row, no column bounds; DX_FUSED:
    ``_dx``'s FUSED)."""
    dx = _dx(g, xhat, c1, c2, rstd, IS_RMS, DX_FUSED)
    cols = col0 + tl.arange(0, BLOCK_N)
    ok = row_ok[:, None] & in_bounds(cols, N, EVEN_N)[None, :]
    tl.store(DX + rows64[:, None] * stride_dx + cols[None, :], dx.to(DX.dtype.element_ty), mask=ok)


@triton.jit
def _add_terms(dw_acc, db_acc, dy, xhat, HAS_DBIAS: tl.constexpr):
    """A tile's dW (and dB) terms added into a program's accumulators."""
    dw_acc += dy * xhat
    if HAS_DBIAS:
        db_acc += dy
    return dw_acc, db_acc


@triton.jit
def _store_partials(
    DW_ROW, DB_ROW, dw_acc, db_acc, col0, N, HAS_DBIAS: tl.constexpr, BLOCK_N: tl.constexpr, EVEN_N: tl.constexpr,
):  # fmt: skip
    """Store a program's dW (and dB) partials of the columns ``col0 ...``: its ``[rows, BLOCK_N]`` accumulators
    summed over their rows, to ``DW_ROW`` (and ``DB_ROW``), float32 rows of N."""
    cols = col0 + tl.arange(0, BLOCK_N)
    col_ok = in_bounds(cols, N, EVEN_N)
    tl.store(DW_ROW + cols, tl.sum(dw_acc, axis=0), mask=col_ok)
    if HAS_DBIAS:
        tl.store(DB_ROW + cols, tl.sum(db_acc, axis=0), mask=col_ok)


@triton.jit
def _store_dx(
    DX_DESC, DX, g, xhat, c1, c2, rstd, row0, rows, row_ok, col0, N, stride_dx,
    IS_RMS: tl.constexpr, BLOCK_N: tl.constexpr, TMA_STORE: tl.constexpr, DX_FUSED: tl.constexpr,
):  # fmt: skip
    """Store ``_dx`` of a tile (columns ``col0 ...`` of the row block ``rows``, which starts at row0): through its
    descriptor (the TMA clips rows and columns past the tensor) or by each thread (``_write_dx``). DX_FUSED:
    ``_dx``'s FUSED."""
    if TMA_STORE:
        DX_DESC.store([row0, col0], _dx(g, xhat, c1, c2, rstd, IS_RMS, DX_FUSED).to(DX.dtype.element_ty))
    else:  # with its column bounds
        _write_dx(
            DX, g, xhat, c1, c2, rstd, rows.to(tl.int64), row_ok, col0, N, stride_dx, IS_RMS, BLOCK_N, False, DX_FUSED
        )


@triton.jit
def _row_block_step(
    head, tail, w, w_tail, dw_acc, db_acc, dw_tail, db_tail, DX_HEAD, DX_TAIL, DX, row0, rows, row_ok, N, stride_dx,
    IS_RMS: tl.constexpr, HAS_MASK: tl.constexpr, HAS_DBIAS: tl.constexpr, ACC: tl.constexpr, BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr, EVEN_N: tl.constexpr, TAIL_N: tl.constexpr, TMA_STORE: tl.constexpr, DX_FUSED: tl.constexpr,
):  # fmt: skip
    """One row block of whole rows, loaded (``head``: its head tile's ``(dy, x, packed mask, mean, rstd)``, ``tail``:
    the tail tile's ``(dy, x, packed mask)``, either as loaded; without a tail, ``tail``, ``w_tail`` and the tail's
    accumulators are stand-ins, untouched): the row sums over both tiles, dx stored (``_store_dx``), and the dW (and
    dB) accumulators of both tiles returned with the block's terms added. The step of both whole-row loops, the
    pointer kernel's and the TMA kernel's, which differ in how their rows arrive (DX_FUSED: the masked TMA kernel's,
    ``_dx``'s FUSED)."""
    dy_raw, x_raw, packed, mean, rstd = head
    dy, xhat, g, rstd = _terms(
        dy_raw, x_raw, packed, mean, rstd, w, row_ok, 0, N, IS_RMS, HAS_MASK, ACC, BLOCK_M, BLOCK_N, EVEN_N
    )
    s1, s2 = _row_sums(xhat, g, IS_RMS)
    if TAIL_N:
        dy_raw, x_raw, packed = tail
        dy_t, xhat_t, g_t, s1, s2 = _tail_terms(
            dy_raw, x_raw, packed, mean, rstd, w_tail, row_ok, s1, s2, BLOCK_N, N, IS_RMS, HAS_MASK, ACC, BLOCK_M,
            TAIL_N,
        )  # fmt: skip
    c1 = s1 / N
    c2 = s2 / N  # unused by RMSNorm
    _store_dx(
        DX_HEAD, DX, g, xhat, c1, c2, rstd, row0, rows, row_ok, 0, N, stride_dx, IS_RMS, BLOCK_N, TMA_STORE, DX_FUSED
    )
    dw_acc, db_acc = _add_terms(dw_acc, db_acc, dy, xhat, HAS_DBIAS)
    if TAIL_N:
        _store_dx(
            DX_TAIL, DX, g_t, xhat_t, c1, c2, rstd, row0, rows, row_ok, BLOCK_N, N, stride_dx, IS_RMS, TAIL_N,
            TMA_STORE, DX_FUSED,
        )  # fmt: skip
        dw_tail, db_tail = _add_terms(dw_tail, db_tail, dy_t, xhat_t, HAS_DBIAS)
    return dw_acc, db_acc, dw_tail, db_tail


@triton.jit(do_not_specialize=["M", "num_programs", "blocks_per_program"])
def norm_bwd_kernel(
    DY, X, W, MEAN, RSTD, MASK, DX, PARTIAL,
    M, N, stride_dy, stride_x, stride_dx, stride_mask, num_programs, blocks_per_program,
    IS_RMS: tl.constexpr, ZERO_CENTERED: tl.constexpr, HAS_MASK: tl.constexpr, HAS_DBIAS: tl.constexpr,
    ACC: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, NUM_CHUNKS: tl.constexpr,
    CHUNKS_P2: tl.constexpr, EVEN_N: tl.constexpr, TAIL_N: tl.constexpr, PDL_TRIGGER: tl.constexpr,
    ALIGN: tl.constexpr, ROW_EVICT: tl.constexpr, ROW_X_EVICT: tl.constexpr,
):  # fmt: skip
    """PARTIAL is float32 ``[1 or 2, num_programs, N]``: dW partials, then dB partials when HAS_DBIAS.
    CHUNKS_P2 is NUM_CHUNKS rounded up to a power of two (the rows of a chunked row's partial tiles). TAIL_N: a
    one-tile row is a head tile of BLOCK_N columns and a tail tile of TAIL_N after it (EVEN_N: the head wholly in
    the row), each with its own weights, loads in flight and partials. PDL_TRIGGER: ``sum_partials_kernel`` after
    it may launch (``_trigger_dependents``). ALIGN (not 1): N and the row strides come in units of ALIGN elements
    (``ops._row_align``). ROW_EVICT: the L2 policy of a whole row's dy and mask bytes, ROW_X_EVICT its x's,
    "evict_first" in calls small enough (``config.bwd_row_evict``), else "" (the default; chunked rows choose their
    own)."""
    _trigger_dependents(PDL_TRIGGER)
    N, stride_dy, stride_x, stride_dx = _in_elements(N, stride_dy, stride_x, stride_dx, ALIGN)
    pid = tl.program_id(0)
    dw_row = PARTIAL + pid.to(tl.int64) * N
    db_row = dw_row + num_programs.to(tl.int64) * N
    if NUM_CHUNKS == 1:
        # one-tile rows keep the column bounds of their weights, dx (``_store_dx``) and partials: without them
        # LayerNorm's backward ran 0.93-0.95x at 256-1024 columns (GPU run 196), with fewer instructions
        # the weights, the same for every row: loaded once and held in float32; or loaded again at every row block
        # (from L1, so not held across the loop) where the masked backward's one-row programs of 2048-8192 columns
        # spilled holding them: weights in x's dtype, float16 or float32 (bfloat16's, and fp16 x with float32
        # weights, fit; held ran faster there). Float16's with the mask as words fit since its bits test against
        # constants (round 109: no stack, and held x1.016-1.033 at 4096 x 2048-8192, GPU run 804); with its bytes
        # they still spill (16 bytes at 4096 columns)
        x_ty: tl.constexpr = DY.dtype.element_ty
        reload_w: tl.constexpr = (
            HAS_MASK
            and EVEN_N
            and BLOCK_M == 1
            and BLOCK_N >= 2048
            and W.dtype.element_ty == x_ty
            and x_ty != tl.bfloat16
            and not (x_ty == tl.float16 and MASK.dtype.element_ty == tl.int32)
        )
        w = _load_weight(W, 0, N, ZERO_CENTERED, ACC, BLOCK_N, False)
        # the masked one-row programs of 8192 columns (8 warps, one a SM) that read the mask as words mask this row
        # block's dy and widen its x before the next block's loads go out, so those loads can take the registers the
        # raw dy and x held: issued ahead of that work, they took others, and 32 moves a row at the loop's end put
        # them back (sm_90: 3 register moves left of 36; round 110, H200 runs 807-808: x1.014-1.048 at 1024-4096 rows
        # of 6656-8192 columns). Narrower programs lost so (x0.976-0.983 at 4096 x 2048 / 3072 fp16 in 2 / 4 warps,
        # x0.984 at 32768 x 512 bf16, level at 4096 x 4096): there the loads issued early hide more than the moves
        # cost. With the mask's bytes the code grew instead (1112 -> 1168 instructions at one row of 4096)
        mask_first: tl.constexpr = HAS_MASK and not TAIL_N and BLOCK_N >= 8192 and MASK.dtype.element_ty == tl.int32
        # [BLOCK_M, BLOCK_N] accumulators: the sum over rows happens once, after the loop
        dw_acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=ACC)
        db_acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=ACC)
        rows = pid * BLOCK_M + tl.arange(0, BLOCK_M)
        step = num_programs * BLOCK_M
        tile = _load_row_block(
            DY, X, MASK, MEAN, RSTD, rows, M, 0, N, stride_dy, stride_x, stride_mask, IS_RMS, HAS_MASK, BLOCK_N, EVEN_N,
            ROW_EVICT, ROW_X_EVICT,
        )  # fmt: skip
        if TAIL_N:  # the tail tile's own weights, partials and loads (its mean and rstd are the head's)
            w_tail = _load_weight(W, BLOCK_N, N, ZERO_CENTERED, ACC, TAIL_N, False)
            dw_tail = tl.zeros([BLOCK_M, TAIL_N], dtype=ACC)
            db_tail = tl.zeros([BLOCK_M, TAIL_N], dtype=ACC)
            tail = _load_tail(
                DY, X, MASK, rows, M, BLOCK_N, N, stride_dy, stride_x, stride_mask, HAS_MASK, TAIL_N, ROW_EVICT,
                ROW_X_EVICT,
            )  # fmt: skip
        else:  # stand-ins for _row_block_step, which leaves them untouched
            w_tail, dw_tail, db_tail, tail = w, dw_acc, db_acc, tile
        for _ in tl.range(0, blocks_per_program):
            # the next row block's loads go out before this one is worked on: two row blocks in flight a program
            # (loads two blocks ahead, three blocks in registers, ran slower: benchmarks/README.md, round 17)
            if reload_w:
                w = _load_weight(W, 0, N, ZERO_CENTERED, ACC, BLOCK_N, False)
            head = tile
            if mask_first:
                dy_raw, x_raw, packed, mean, rstd = tile
                head = (_masked_dy(dy_raw, packed, HAS_MASK, ACC, BLOCK_M, BLOCK_N), x_raw.to(ACC), packed, mean, rstd)
            next_rows = rows + step
            next_tile = _load_row_block(
                DY, X, MASK, MEAN, RSTD, next_rows, M, 0, N, stride_dy, stride_x, stride_mask, IS_RMS, HAS_MASK,
                BLOCK_N, EVEN_N, ROW_EVICT, ROW_X_EVICT,
            )  # fmt: skip
            if TAIL_N:
                next_tail = _load_tail(
                    DY, X, MASK, next_rows, M, BLOCK_N, N, stride_dy, stride_x, stride_mask, HAS_MASK, TAIL_N,
                    ROW_EVICT, ROW_X_EVICT,
                )  # fmt: skip
            dw_acc, db_acc, dw_tail, db_tail = _row_block_step(
                head, tail, w, w_tail, dw_acc, db_acc, dw_tail, db_tail, DX, DX, DX, 0, rows, rows < M, N, stride_dx,
                IS_RMS, HAS_MASK and not mask_first, HAS_DBIAS, ACC, BLOCK_M, BLOCK_N, EVEN_N, TAIL_N, False, False,
            )  # fmt: skip
            if TAIL_N:
                tail = next_tail
            rows = next_rows
            tile = next_tile
        _store_partials(dw_row, db_row, dw_acc, db_acc, 0, N, HAS_DBIAS, BLOCK_N, False)
        if TAIL_N:
            _store_partials(dw_row, db_row, dw_tail, db_tail, BLOCK_N, N, HAS_DBIAS, TAIL_N, False)
    else:  # the whole row's dW/dB partials as [CHUNKS_P2, BLOCK_N] tiles, chunk c in row c
        chunk_ids = tl.arange(0, CHUNKS_P2)[:, None]
        dw_acc = tl.zeros([CHUNKS_P2, BLOCK_N], dtype=ACC)
        db_acc = tl.zeros([CHUNKS_P2, BLOCK_N], dtype=ACC)
        for i in tl.range(0, blocks_per_program):
            rows = (pid + i * num_programs) * BLOCK_M + tl.arange(0, BLOCK_M)
            row_ok = rows < M
            rows64 = rows.to(tl.int64)
            # pass one: per-lane sums, reduced across the row once after the pass; the chunks stay in L2
            lane_xhat_g = tl.zeros([BLOCK_M, BLOCK_N], dtype=ACC)
            lane_g = tl.zeros([BLOCK_M, BLOCK_N], dtype=ACC)
            for chunk in range(NUM_CHUNKS):
                dy, xhat, g, rstd = _load_tile(
                    DY, X, W, MASK, MEAN, RSTD, rows, rows64, row_ok, chunk * BLOCK_N, N, stride_dy, stride_x,
                    stride_mask, IS_RMS, ZERO_CENTERED, HAS_MASK, ACC, BLOCK_M, BLOCK_N, "evict_last", EVEN_N,
                )  # fmt: skip
                lane_xhat_g += xhat * g
                if not IS_RMS:
                    lane_g += g
            c1 = tl.sum(lane_xhat_g, axis=1) / N  # two sums here: one joint reduction measured 5% slower at 16384
            c2 = tl.sum(lane_g, axis=1) / N
            # pass two walks the row backwards: its first chunks are the ones pass one read last, the likeliest
            # still in L2
            for back in tl.static_range(NUM_CHUNKS):  # unrolled: `chunk` is a constant in each copy
                chunk = NUM_CHUNKS - 1 - back
                dy, xhat, g, rstd = _load_tile(
                    DY, X, W, MASK, MEAN, RSTD, rows, rows64, row_ok, chunk * BLOCK_N, N, stride_dy, stride_x,
                    stride_mask, IS_RMS, ZERO_CENTERED, HAS_MASK, ACC, BLOCK_M, BLOCK_N, "evict_first", EVEN_N,
                )  # fmt: skip
                _write_dx(
                    DX, g, xhat, c1, c2, rstd, rows64, row_ok, chunk * BLOCK_N, N, stride_dx, IS_RMS, BLOCK_N, EVEN_N
                )
                here = chunk_ids == chunk
                dw_acc = tl.where(here, dw_acc + tl.sum(dy * xhat, axis=0)[None, :], dw_acc)
                if HAS_DBIAS:
                    db_acc = tl.where(here, db_acc + tl.sum(dy, axis=0)[None, :], db_acc)
        cols = chunk_ids * BLOCK_N + tl.arange(0, BLOCK_N)[None, :]
        tl.store(dw_row + cols, dw_acc, mask=cols < N)
        if HAS_DBIAS:
            tl.store(db_row + cols, db_acc, mask=cols < N)


@triton.jit
def _block_mask_bytes(
    MASK, rows, M, N, stride_mask, BLOCK_N: tl.constexpr, EVEN_N: tl.constexpr, TAIL_N: tl.constexpr
):  # fmt: skip
    """The mask bytes of the row block ``rows`` (bounded by M): its head tile's and its tail tile's (the head's again
    without a tail)."""
    rows64, row_ok = rows.to(tl.int64), rows < M
    head = _load_mask_bytes(MASK, rows64, row_ok, 0, N, stride_mask, BLOCK_N, "", EVEN_N)
    tail = head
    if TAIL_N:
        tail = _load_mask_bytes(MASK, rows64, row_ok, BLOCK_N, N, stride_mask, TAIL_N, "", False)
    return head, tail


@triton.jit(do_not_specialize=["M", "num_programs", "blocks_per_program"])
def norm_bwd_tma_kernel(
    DY_HEAD, X_HEAD, DX_HEAD, DY_TAIL, X_TAIL, DX_TAIL, MASK_HEAD, MASK_TAIL, W, MEAN, RSTD, MASK, DX, PARTIAL,
    M, N, stride_mask, stride_dx, num_programs, blocks_per_program,
    IS_RMS: tl.constexpr, ZERO_CENTERED: tl.constexpr, HAS_MASK: tl.constexpr, HAS_DBIAS: tl.constexpr,
    ACC: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, EVEN_N: tl.constexpr, TAIL_N: tl.constexpr,
    TMA_STORE: tl.constexpr, STAGES: tl.constexpr, MASK_AHEAD: tl.constexpr, MASK_TMA: tl.constexpr,
    WIDEN_W: tl.constexpr, PDL_TRIGGER: tl.constexpr, ALIGN: tl.constexpr,
):  # fmt: skip
    """``norm_bwd_kernel``'s whole rows (one tile, or a head tile and a tail tile) with dy and x loaded by the
    Tensor Memory Accelerator: ``*_HEAD`` and ``*_TAIL`` are tensor descriptors of blocks ``[BLOCK_M, BLOCK_N]`` and
    ``[BLOCK_M, TAIL_N]`` (the head's again where there is no tail). The copies land in shared memory and the loop
    is pipelined by Triton (``tl.range(num_stages=STAGES)``: STAGES - 1 row blocks in flight, each waited for on its
    own barrier), so the loads in flight hold no registers and issue one instruction per 256 columns, not one per
    thread and vector. Rows and columns past the tensor load as zeros. TMA_STORE: dx is stored through ``DX_HEAD`` /
    ``DX_TAIL`` as well. PARTIAL as ``norm_bwd_kernel``'s.

    HAS_MASK: the clamped-ReLU mask's bytes are loaded by each thread, as ``norm_bwd_kernel`` loads them; a thread's
    bytes are too few for an asynchronous copy, so the pipeliner leaves their loads in the loop, where each row block
    waits for them. MASK_AHEAD: they are loaded a row block ahead instead. MASK_TMA (``ops._mask_tma``: rows of a
    multiple of 128 columns): the packed mask's rows are loaded by the TMA too, as 32-bit words or as bytes
    (``MASK_HEAD`` and ``MASK_TAIL``, descriptors of blocks ``[BLOCK_M, BLOCK_N / 32]`` and ``[BLOCK_M, TAIL_N / 32]``
    over the mask viewed as int32, or of ``BLOCK_N / 8`` and ``TAIL_N / 8`` over its bytes, ``ops._descriptors``; word w
    holds the bits of columns 32w ... 32w + 31, its byte k those of 32w + 8k ...), so the pipeliner keeps them in flight
    with dy and x, and ``_masked_dy`` spreads each word's 32 bits or each byte's 8 over their columns (a word's bytes
    taken apart first, so that every bit tests against a constant). Without it MASK_HEAD and MASK_TAIL are dx's
    descriptors, unused. WIDEN_W (LayerNorm's and the masked backward's head + tail launches with 16-bit weights:
    ``config._tma_bwd``): fp16 weights are not held in float32 across the loop but as loaded, and widened at every row
    block (``_widen``), which frees 20 registers a thread at 40 columns a thread.
    bfloat16's are loaded again there in the masked launches (Triton's pipeliner makes that load an asynchronous copy
    into shared memory, a third stream beside dy and x) and held in float32 elsewhere, as float32 weights are. The
    masked launches store dx in ``_dx``'s FUSED form (two fused multiply-adds an element).

    Round 37 (GPU runs 320-323, H200): LayerNorm's own head + tail launch with fp16 weights widened, against round
    36's (held in float32), ``bench.ab`` in turns, GB/s: 32768 rows x1.014 / x1.006 / x0.998 at 8704 / 9216 / 10240,
    8192 rows x1.019 / x1.007 / x0.999, 4096 rows x1.017 / x1.017 / x0.995 (bfloat16's widened there level, forced in
    turns 0.998 / 1.001: held in float32). Tried and dropped: the masked launches' weights loaded from L1
    at every row block by inline asm (``ld.global.nc.v4``, which the pipeliner leaves alone: no copy into shared
    memory; ptxas 240 registers and no stack for bf16 x float32, 1073 instructions in the loop where the held
    weights' took 1079 and 8 bytes of stack): x0.67-0.93 at 32768 x 4608-10240 against round 36 (run 320), each row
    block waiting for its weights' loads; RMSNorm's 8192 + 4096 at 8 warps with fp16 weights widened (no stack,
    where held they spilled 24 bytes) against the rule's 16 warps: 4096 x 10752 x1.023, 11264 / 12288 0.98, 32768
    rows 0.98-0.99; RMSNorm's 8192 + 2048 widened 0.976-0.982.

    Round 36 (GPU runs 314-316, H200, ``bench.ab`` against round 35 in turns, GB/s): fp16 weights held in 16 bits and
    widened in the loop against loaded again: 32768 rows x1.077 / x0.996 / x1.198 / x1.202 / x1.149 at 4608 / 5120 /
    8704 / 9216 / 10240 (with the fused dx; x1.072 / x0.997 / x1.181 / x1.181 / x1.145 without), 8192 rows x1.064 /
    x1.185 / x1.136 (4608 / 9216 / 10240). ptxas: 255 registers and no stack, where the loaded-again weights took
    247-249; 1161 -> 1093 instructions in the 8192 + 2048 loop (no copy, no shared-memory load of the weights). Not
    for bfloat16 (x0.91-0.99: 8-16 bytes of stack) nor for ``norm_bwd_kernel``'s and ``split_rows_kernel``'s loaded
    again weights, which come from L1 without a copy (ptxas: 16 bytes of stack, or 247 registers where 229, and more
    instructions).

    Round 34 (GPU runs 297-302, H200, 32768 rows, launches forced in turns, us a call): the mask by the TMA against
    its bytes by each thread, the same launch: 4608 / 5120 x1.106 / x1.115 (bf16 x, float32 weights) and x1.295 /
    x1.287 (fp16), 4096 x1.055 / x1.083, 2048 x1.009 / x1.018 (against its bytes a row block ahead), 8192 0.987 /
    x1.003; in 8192's tile at 6144 / 7168 x1.085-1.132 against ``norm_bwd_kernel`` (the bytes by each thread there
    0.84-0.87). Registers (sm_90, ptxas): the head + tail launches spilled 32-56 bytes with the mask in either form
    (255 registers; LayerNorm's none), none with RELOAD_W (245-253): x1.022-1.070 with fp16 weights (x1.123 at
    10240), 0.95-0.99 with float32 weights (their reload is 4 bytes a column), slower where nothing spilled (whole
    tiles 0.86-0.99; LayerNorm 0.80-0.98).

    Measured on an H200 (GPU runs 142-143, ``benchmarks/README.md`` round 18): 1.05-1.14x ``norm_bwd_kernel``'s
    time where its registers leave room for two 8-warp programs a SM (``config._tma_bwd``); with more registers
    than that (LayerNorm's rows with a tail, rows of 7168 and 8192 at 4096 rows) slower. PDL_TRIGGER and ALIGN (N
    and dx's row stride) as ``norm_bwd_kernel``'s."""
    _trigger_dependents(PDL_TRIGGER)
    if ALIGN > 1:  # N and dx's row stride in units of ALIGN elements (dy and x come by their descriptors)
        N = N * ALIGN
        stride_dx = stride_dx * ALIGN
    pid = tl.program_id(0)
    dw_row = PARTIAL + pid.to(tl.int64) * N
    db_row = dw_row + num_programs.to(tl.int64) * N
    # the weights held across the loop (column bounds kept, as norm_bwd_kernel's): in float32, or (WIDEN_W) fp16's in
    # their 16 bits as loaded, widened at every row block (the masked launches' bfloat16's are loaded again there:
    # docstring)
    hold_16: tl.constexpr = WIDEN_W and W.dtype.element_ty == tl.float16
    load_again: tl.constexpr = WIDEN_W and HAS_MASK and W.dtype.element_ty == tl.bfloat16
    held_ty: tl.constexpr = W.dtype.element_ty if hold_16 else ACC
    held_zero_centered: tl.constexpr = ZERO_CENTERED and not hold_16
    w = _load_weight(W, 0, N, held_zero_centered, held_ty, BLOCK_N, False)
    dw_acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=ACC)
    db_acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=ACC)
    if TAIL_N:
        w_tail = _load_weight(W, BLOCK_N, N, held_zero_centered, held_ty, TAIL_N, False)
        dw_tail = tl.zeros([BLOCK_M, TAIL_N], dtype=ACC)
        db_tail = tl.zeros([BLOCK_M, TAIL_N], dtype=ACC)
    else:  # stand-ins for _row_block_step, which leaves them untouched
        w_tail, dw_tail, db_tail = w, dw_acc, db_acc
    if HAS_MASK and MASK_AHEAD:  # the first row block's mask bytes; each iteration then loads the next block's
        mask_next, mask_tail_next = _block_mask_bytes(
            MASK, pid * BLOCK_M + tl.arange(0, BLOCK_M), M, N, stride_mask, BLOCK_N, EVEN_N, TAIL_N
        )
    for i in tl.range(0, blocks_per_program, num_stages=STAGES):
        row0 = (pid + i * num_programs) * BLOCK_M
        rows = row0 + tl.arange(0, BLOCK_M)
        row_ok = rows < M
        mean, rstd = _load_stats(MEAN, RSTD, rows, row_ok, IS_RMS)
        w_step, w_tail_step = w, w_tail
        if hold_16:
            w_step = _widen(w, ZERO_CENTERED)
            if TAIL_N:
                w_tail_step = _widen(w_tail, ZERO_CENTERED)
        elif load_again:
            w_step = _load_weight(W, 0, N, ZERO_CENTERED, ACC, BLOCK_N, False)
            if TAIL_N:
                w_tail_step = _load_weight(W, BLOCK_N, N, ZERO_CENTERED, ACC, TAIL_N, False)
        dy = DY_HEAD.load([row0, 0])
        packed, packed_t = dy, dy  # unused without a mask
        if HAS_MASK and MASK_AHEAD:
            packed, packed_t = mask_next, mask_tail_next
            mask_next, mask_tail_next = _block_mask_bytes(
                MASK, rows + num_programs * BLOCK_M, M, N, stride_mask, BLOCK_N, EVEN_N, TAIL_N
            )
        elif HAS_MASK and MASK_TMA:  # the mask's rows as 32-bit words or bytes, by the TMA as dy's and x's
            packed = MASK_HEAD.load([row0, 0])
            if TAIL_N:
                packed_t = MASK_TAIL.load([row0, MASK_HEAD.block_shape[1]])
        elif HAS_MASK:
            packed, packed_t = _block_mask_bytes(MASK, rows, M, N, stride_mask, BLOCK_N, EVEN_N, TAIL_N)
        head = (dy, X_HEAD.load([row0, 0]), packed, mean, rstd)
        tail = dy  # a stand-in without a tail
        if TAIL_N:
            tail = (DY_TAIL.load([row0, BLOCK_N]), X_TAIL.load([row0, BLOCK_N]), packed_t)
        dw_acc, db_acc, dw_tail, db_tail = _row_block_step(
            head, tail, w_step, w_tail_step, dw_acc, db_acc, dw_tail, db_tail, DX_HEAD, DX_TAIL, DX, row0, rows, row_ok,
            N, stride_dx, IS_RMS, HAS_MASK, HAS_DBIAS, ACC, BLOCK_M, BLOCK_N, EVEN_N, TAIL_N, TMA_STORE, HAS_MASK,
        )  # fmt: skip
    _store_partials(dw_row, db_row, dw_acc, db_acc, 0, N, HAS_DBIAS, BLOCK_N, False)
    if TAIL_N:
        _store_partials(dw_row, db_row, dw_tail, db_tail, BLOCK_N, N, HAS_DBIAS, TAIL_N, False)


SENTINEL = -1  # a SUMS slot nobody has published to yet (its two halves: a NaN no arithmetic gives)
_SENTINEL = tl.constexpr(SENTINEL)  # the kernels' view of it (a global must be a constexpr there)


@triton.jit
def _pack_sums(s1, s2):
    """Two float32 row sums as one int64 (s1's bits high, s2's low): published with one 64-bit write, so a reader
    sees both or neither."""
    hi = s1.to(tl.uint32, bitcast=True).to(tl.int64)
    lo = s2.to(tl.uint32, bitcast=True).to(tl.int64)
    return (hi << 32) | lo


@triton.jit
def _unpack_sums(packed):
    hi = (packed >> 32).to(tl.uint32).to(tl.float32, bitcast=True)
    lo = (packed & 0xFFFFFFFF).to(tl.uint32).to(tl.float32, bitcast=True)
    return hi, lo


@triton.jit
def _part_sums(dy, xhat, g, IS_RMS: tl.constexpr):
    """One part's row sums (``_row_sums``), packed (``_pack_sums``). The program that owns the part and a program
    that stands in for it (``split_rows_kernel``) both call this on the same tile, so they get the same bits."""
    s1, s2 = _row_sums(xhat, g, IS_RMS)
    return _pack_sums(s1, s2)


@triton.jit
def _stand_in(
    DY, X, W, MEAN, RSTD, MASK, SUMS, rows, rows64, row_ok, N, stride_dy, stride_x, stride_mask,
    IS_RMS: tl.constexpr, ZERO_CENTERED: tl.constexpr, HAS_MASK: tl.constexpr, ACC: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, PARTS: tl.constexpr, EVEN_N: tl.constexpr,
):  # fmt: skip
    """Publish the row sums of every part of these rows that is still missing, reduced here from the part's tile in
    memory by ``_part_sums``, as its own program would (the same bits, so it does not matter which of the two writes
    last). For the CPU interpreter, which runs one program after another: there a partner that has not published
    yet will not until this program ends."""
    for q in tl.static_range(PARTS):
        slot = SUMS + rows64 * PARTS + q
        q_ok = row_ok & (tl.load(slot, mask=row_ok, other=0, volatile=True) == _SENTINEL)
        if tl.max(q_ok.to(tl.int32)) > 0:
            dy, xhat, g, rstd = _load_tile(
                DY, X, W, MASK, MEAN, RSTD, rows, rows64, q_ok, q * BLOCK_N, N, stride_dy, stride_x, stride_mask,
                IS_RMS, ZERO_CENTERED, HAS_MASK, ACC, BLOCK_M, BLOCK_N, "", EVEN_N,
            )  # fmt: skip
            tl.atomic_xchg(slot, _part_sums(dy, xhat, g, IS_RMS), mask=q_ok, sem="relaxed")


@triton.jit
def _publish_part(
    tile, w, SUMS, rows, M, part, col0, N,
    IS_RMS: tl.constexpr, HAS_MASK: tl.constexpr, ACC: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
    PARTS: tl.constexpr, EVEN_N: tl.constexpr,
):  # fmt: skip
    """Reduce this part's row sums over a loaded tile and publish them to ``SUMS[row, part]`` (one 64-bit write a
    row): ``(own packed sums, dy, xhat, g, rstd)``."""
    row_ok = rows < M
    dy_raw, x_raw, packed, mean, rstd = tile
    dy, xhat, g, rstd = _terms(
        dy_raw, x_raw, packed, mean, rstd, w, row_ok, col0, N, IS_RMS, HAS_MASK, ACC, BLOCK_M, BLOCK_N, EVEN_N
    )
    own = _part_sums(dy, xhat, g, IS_RMS)
    tl.atomic_xchg(SUMS + rows.to(tl.int64) * PARTS + part, own, mask=row_ok, sem="relaxed")
    return own, dy, xhat, g, rstd


@triton.jit
def _row_means(
    DY, X, W, MEAN, RSTD, MASK, SUMS, own, rows, M, part, N, stride_dy, stride_x, stride_mask,
    IS_RMS: tl.constexpr, ZERO_CENTERED: tl.constexpr, HAS_MASK: tl.constexpr, ACC: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, PARTS: tl.constexpr, PARTS_P2: tl.constexpr,
    MAX_POLLS: tl.constexpr, STAND_IN: tl.constexpr, EVEN_N: tl.constexpr,
):  # fmt: skip
    """``(c1, c2)``, the row means of ``xhat * g`` and g over the whole rows: this program's own part sums (``own``)
    and the other parts' as published (polled until all are there), added in part order 0, 1, ..., whichever program
    adds them up."""
    row_ok = rows < M
    rows64 = rows.to(tl.int64)
    parts = tl.arange(0, PARTS_P2)[None, :]
    slots = SUMS + rows64[:, None] * PARTS + parts
    others = row_ok[:, None] & (parts < PARTS) & (parts != part)
    sums = tl.load(slots, mask=others, other=_SENTINEL, volatile=True)
    missing = others & (sums == _SENTINEL)
    polls = 0
    while (tl.max(missing.to(tl.int32)) > 0) & (polls < MAX_POLLS):
        sums = tl.where(missing, tl.load(slots, mask=missing, other=_SENTINEL, volatile=True), sums)
        missing = others & (sums == _SENTINEL)
        polls += 1
    if BLOCK_M > 1:
        # The loop's test is the tile's max, and Triton takes a max over one copy of a tile that warps hold copies of
        # (a tile of several rows, [2, 32] at 4 warps: warps 2-3 hold rows 0-1 again, and only warps 0-1's values
        # enter the max). A copy whose own load came just before a partner published still held SENTINEL there when
        # the loop ended: NaN in that warp's columns (GPU run 381: 2 rows a block at 4 warps, parts of 1024). So each
        # thread reads the slots it still misses once more, after the loop: it ended once some copy saw them all
        # published (or after MAX_POLLS, where a part never published is meant to leave NaN).
        # Not at one row a block (the rules' launches): there every warp holds the whole [1, PARTS_P2] tile and takes
        # its max within itself (sm_90 PTX, read on the CPU), so each warp's loop ends on its own loads; and this read
        # made those launches slower (GPU run 382: RMSNorm at 32768 x 65536 x0.950, the masked backward at 4096 x
        # 16384 fp16 x0.760).
        sums = tl.where(missing, tl.load(slots, mask=missing, other=_SENTINEL, volatile=True), sums)
        missing = others & (sums == _SENTINEL)
    if STAND_IN:
        if tl.max(missing.to(tl.int32)) > 0:  # a part still missing: reduce it here, from memory
            _stand_in(
                DY, X, W, MEAN, RSTD, MASK, SUMS, rows, rows64, row_ok, N, stride_dy, stride_x, stride_mask,
                IS_RMS, ZERO_CENTERED, HAS_MASK, ACC, BLOCK_M, BLOCK_N, PARTS, EVEN_N,
            )  # fmt: skip
            sums = tl.where(missing, tl.load(slots, mask=missing, other=_SENTINEL, volatile=True), sums)
    sums = tl.where(parts == part, own[:, None], tl.where(parts < PARTS, sums, 0))
    s1, s2 = _unpack_sums(sums)
    return tl.sum(s1, axis=1) / N, tl.sum(s2, axis=1) / N


@triton.jit(do_not_specialize=["M", "num_groups", "blocks_per_group"])
def split_rows_kernel(
    DY, X, W, MEAN, RSTD, MASK, DX, PARTIAL, SUMS,
    M, N, stride_dy, stride_x, stride_dx, stride_mask, num_groups, blocks_per_group,
    IS_RMS: tl.constexpr, ZERO_CENTERED: tl.constexpr, HAS_MASK: tl.constexpr, HAS_DBIAS: tl.constexpr,
    ACC: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, PARTS: tl.constexpr, PARTS_P2: tl.constexpr,
    MAX_POLLS: tl.constexpr, STAND_IN: tl.constexpr, EVEN_N: tl.constexpr, AHEAD: tl.constexpr,
    PDL_WAIT: tl.constexpr, PDL_TRIGGER: tl.constexpr, ALIGN: tl.constexpr,
):  # fmt: skip
    """Long rows in one pass: each row is split into ``PARTS`` parts of BLOCK_N columns, and program ``p`` holds part
    ``p % PARTS`` of the row blocks of group ``p // PARTS`` (blocks ``group, group + num_groups, ...``), so the
    programs of a group (adjacent ids, running side by side) share their rows. A program loads its part of a row
    block once, reduces its two row sums over it and publishes them to ``SUMS[row, part]`` (int64 ``[M, PARTS]``,
    filled with ``SENTINEL`` before the launch), reads the other parts' sums from there and, with the row's totals,
    writes its part of dx and adds its part's dW/dB terms into registers (stored once, as row ``group`` of
    PARTIAL, float32 ``[1 or 2, num_groups, N]``). dy and x are read once, as by a whole-row program. The row
    totals add the parts in order 0, 1, ..., so every program of a row gets the same c1, c2, bit for bit.

    Waiting on another program needs that program to run: on a GPU the grid is at most what fits at once, and
    were it not, the groups that fit would end and make room for the rest (their ids are adjacent, so the first
    ones fit whole). A program reads a missing part's slot up to ``MAX_POLLS`` times; a part missing after that
    (only if the GPU ran fewer programs at once than PARTS) leaves NaN sums, so the rows' dx are NaN, not wrong
    numbers. ``STAND_IN`` (the CPU interpreter, which runs one program after another) reduces a missing part here
    instead (``_stand_in``); compiled for a GPU it would take registers from every row block (the kernel spilled).

    Like the whole-row program, each program loads its weights once and issues the next row block's loads before it
    works on the current one (its wait for the other parts overlaps them). ``AHEAD`` publishes a row block's sums a
    step before the step that writes its dx: each step issues the loads of the block after next, publishes the next
    block's sums and then reads the current block's, which its partners published a step ago (three row blocks in
    registers, and the terms of a block computed twice).

    A block's dW/dB terms are added into the accumulators before the wait for the other parts' sums, not after dx:
    across the wait a program then holds dy's product with the weights and xhat, not dy as well. At 32 elements a thread
    (parts of 1024 at one warp) the masked backward took all 255 registers and spilled 24-32 bytes: for fp16 14 16-bit
    values of the next block's loads, stored and reloaded every row block (bf16: 3 words), so its fp16 calls ran
    1.13-1.25x bf16's time on the same shape (GPU run 248); with the terms first, 0-8 bytes. Measured on an H200 against
    the order before (GPU run 249, ``bench.ab``): the masked backward x1.18-1.27 at 4096 rows of 8704-16384 (fp16),
    x1.02-1.06 (bf16 x, float32 weights), x1.12 at 32768 x 16384 and x1.06 at 32768 x 65536; LayerNorm's and RMSNorm's
    x1.00-1.04, but LayerNorm's in-step parts of 4096 and 8192 (32768 and 16384 columns) x0.98 and x0.99, so those keep
    the order before (the in-step loop adds first where ``HAS_MASK or BLOCK_N <= 1024``; ``AHEAD`` always does). The
    whole-row kernels were slower with their terms first (x0.95-0.96 at 4096 x 2048 and 32768 x 4096, GPU run 250): not
    there.

    The masked backward's whole parts of 1024 in fp16 with fp16 weights (``reload_w``) held the weights across the loop
    in float32 and spilled 8 bytes at 9-16 parts (sm_90, the round-29 spill map); there they are loaded again at every
    row block (from L1), as the whole-row program's since round 29: 225-229 registers, no stack. Measured on an H200
    against holding them (GPU runs 261-262, ``bench.ab``, 4096 rows): x1.032-1.039 at 9216-16384 columns (3000 rows:
    x1.033-1.043), level at 5120-7168 (x0.995-1.007, no spill there). Not taken for parts with column bounds (x0.90 at
    4608, 5632, 8704, 9728, 13824; x0.96 at 15872) nor for LayerNorm's parts of 1024 (x0.93-0.98 at 8704-15872, spilled
    or not).

    ``EVEN_N``: every part lies wholly in the row (N a multiple of BLOCK_N), so no load or store of a part has column
    bounds (``ops._backward`` sets it for LayerNorm only: module docstring).

    PDL_WAIT: launched as a programmatic dependent launch after the fill of SUMS, so it waits for that first
    (``_wait_for_prior``); PDL_TRIGGER and ALIGN as ``norm_bwd_kernel``'s.
    """
    _wait_for_prior(PDL_WAIT)
    _trigger_dependents(PDL_TRIGGER)
    N, stride_dy, stride_x, stride_dx = _in_elements(N, stride_dy, stride_x, stride_dx, ALIGN)
    pid = tl.program_id(0)
    part = pid % PARTS
    group = pid // PARTS
    col0 = part * BLOCK_N
    w = _load_weight(W, col0, N, ZERO_CENTERED, ACC, BLOCK_N, EVEN_N)
    dw_acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=ACC)
    db_acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=ACC)
    step = num_groups * BLOCK_M
    rows = group * BLOCK_M + tl.arange(0, BLOCK_M)
    tile = _load_row_block(
        DY, X, MASK, MEAN, RSTD, rows, M, col0, N, stride_dy, stride_x, stride_mask, IS_RMS, HAS_MASK, BLOCK_N, EVEN_N,
        "", "",
    )  # fmt: skip
    # where the in-step loop adds a block's dW/dB terms: before the wait, but after dx in LayerNorm's parts of 4096
    # and 8192 (docstring)
    terms_first: tl.constexpr = HAS_MASK or BLOCK_N <= 1024
    # the masked backward's whole parts of 1024 in fp16 (the weights too) load their weights again at every row block
    # (docstring; as norm_bwd_kernel's reload_w)
    x_ty: tl.constexpr = DY.dtype.element_ty
    reload_w: tl.constexpr = (
        HAS_MASK and EVEN_N and BLOCK_N <= 1024 and W.dtype.element_ty == x_ty and x_ty == tl.float16
    )
    if not AHEAD:
        for _ in tl.range(0, blocks_per_group):
            if reload_w:
                w = _load_weight(W, col0, N, ZERO_CENTERED, ACC, BLOCK_N, EVEN_N)
            next_rows = rows + step
            next_tile = _load_row_block(
                DY, X, MASK, MEAN, RSTD, next_rows, M, col0, N, stride_dy, stride_x, stride_mask, IS_RMS, HAS_MASK,
                BLOCK_N, EVEN_N, "", "",
            )  # fmt: skip
            own, dy, xhat, g, rstd = _publish_part(
                tile, w, SUMS, rows, M, part, col0, N, IS_RMS, HAS_MASK, ACC, BLOCK_M, BLOCK_N, PARTS, EVEN_N
            )
            if terms_first:
                dw_acc, db_acc = _add_terms(dw_acc, db_acc, dy, xhat, HAS_DBIAS)
            c1, c2 = _row_means(
                DY, X, W, MEAN, RSTD, MASK, SUMS, own, rows, M, part, N, stride_dy, stride_x, stride_mask, IS_RMS,
                ZERO_CENTERED, HAS_MASK, ACC, BLOCK_M, BLOCK_N, PARTS, PARTS_P2, MAX_POLLS, STAND_IN, EVEN_N,
            )  # fmt: skip
            _write_dx(
                DX, g, xhat, c1, c2, rstd, rows.to(tl.int64), rows < M, col0, N, stride_dx, IS_RMS, BLOCK_N, EVEN_N
            )
            if not terms_first:
                dw_acc, db_acc = _add_terms(dw_acc, db_acc, dy, xhat, HAS_DBIAS)
            rows = next_rows
            tile = next_tile
    else:
        own = _publish_part(
            tile, w, SUMS, rows, M, part, col0, N, IS_RMS, HAS_MASK, ACC, BLOCK_M, BLOCK_N, PARTS, EVEN_N
        )[0]
        next_rows = rows + step
        next_tile = _load_row_block(
            DY, X, MASK, MEAN, RSTD, next_rows, M, col0, N, stride_dy, stride_x, stride_mask, IS_RMS, HAS_MASK,
            BLOCK_N, EVEN_N, "", "",
        )  # fmt: skip
        for _ in tl.range(0, blocks_per_group):
            # three row blocks in registers: this one (its sums published a step ago), the next (published now)
            # and the one after it (its loads issued first)
            far_rows = next_rows + step
            far_tile = _load_row_block(
                DY, X, MASK, MEAN, RSTD, far_rows, M, col0, N, stride_dy, stride_x, stride_mask, IS_RMS, HAS_MASK,
                BLOCK_N, EVEN_N, "", "",
            )  # fmt: skip
            next_own = _publish_part(
                next_tile, w, SUMS, next_rows, M, part, col0, N, IS_RMS, HAS_MASK, ACC, BLOCK_M, BLOCK_N, PARTS,
                EVEN_N,
            )[0]  # fmt: skip
            row_ok = rows < M
            dy_raw, x_raw, packed, mean, rstd = tile
            dy, xhat, g, rstd = _terms(
                dy_raw, x_raw, packed, mean, rstd, w, row_ok, col0, N, IS_RMS, HAS_MASK, ACC, BLOCK_M, BLOCK_N, EVEN_N
            )
            dw_acc, db_acc = _add_terms(dw_acc, db_acc, dy, xhat, HAS_DBIAS)
            c1, c2 = _row_means(
                DY, X, W, MEAN, RSTD, MASK, SUMS, own, rows, M, part, N, stride_dy, stride_x, stride_mask, IS_RMS,
                ZERO_CENTERED, HAS_MASK, ACC, BLOCK_M, BLOCK_N, PARTS, PARTS_P2, MAX_POLLS, STAND_IN, EVEN_N,
            )  # fmt: skip
            _write_dx(DX, g, xhat, c1, c2, rstd, rows.to(tl.int64), row_ok, col0, N, stride_dx, IS_RMS, BLOCK_N, EVEN_N)
            rows = next_rows
            tile = next_tile
            own = next_own
            next_rows = far_rows
            next_tile = far_tile
    dw_row = PARTIAL + group.to(tl.int64) * N
    _store_partials(dw_row, dw_row + num_groups.to(tl.int64) * N, dw_acc, db_acc, col0, N, HAS_DBIAS, BLOCK_N, EVEN_N)


@triton.jit
def sum_partials_kernel(
    PARTIAL, DW, DB, G, N, BLOCK_G: tl.constexpr, BLOCK_N: tl.constexpr, ACC: tl.constexpr, PDL_WAIT: tl.constexpr,
):  # fmt: skip
    """dW (program_id(1) == 0) or dB (== 1): ``OUT[n] = sum_g PARTIAL[which, g, n]`` in a fixed order. PDL_WAIT:
    launched as a programmatic dependent launch, it waits for the backward kernel that writes PARTIAL
    (``_wait_for_prior``) after working out its addresses."""
    which = tl.program_id(1)
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    col_ok = cols < N
    base = PARTIAL + which.to(tl.int64) * G * N
    _wait_for_prior(PDL_WAIT)
    acc = tl.zeros([BLOCK_G, BLOCK_N], dtype=ACC)
    for g0 in range(0, G, BLOCK_G):
        g = g0 + tl.arange(0, BLOCK_G)
        ok = (g < G)[:, None] & col_ok[None, :]
        acc += tl.load(base + g.to(tl.int64)[:, None] * N + cols[None, :], mask=ok, other=0.0)
    total = tl.sum(acc, axis=0)
    if which == 0:
        tl.store(DW + cols, total.to(DW.dtype.element_ty), mask=col_ok)
    else:
        tl.store(DB + cols, total.to(DB.dtype.element_ty), mask=col_ok)
