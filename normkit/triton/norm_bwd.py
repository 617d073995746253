"""The backward kernels of LayerNorm and RMSNorm, with the clamped-ReLU bitmask applied on the fly.

One kernel body (and the two kernels of long rows, below); ``tl.constexpr`` switches pick the variant:

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

A row that fits one ``BLOCK_N`` tile (``NUM_CHUNKS == 1``) keeps the partials in registers. A row of up to 16384
columns is processed in chunks: a first pass reduces the two row sums (its loads marked ``evict_last``, so the
chunks stay in L2), a second (walking back, so the chunks read last come first) writes dx and adds the chunk's
dW/dB terms into a ``[chunks, BLOCK_N]`` register tile.

Longer rows (and LayerNorm's above 8192 columns when there are many rows: ``config.chunked_max_n``) take two
kernels. ``row_sums_kernel`` reads dy and x once and writes the two row sums; then ``columns_kernel`` gives each
program a strip of columns over a group of rows: it writes dx and keeps the strip's dW/dB partials in registers.
That reads dy and x twice from memory (10 bytes a column of a bf16 row where one pass would move 6), where the
one-kernel chunked path, whose partials of a 65536-column row no longer fit in registers, added them into memory row
by row (16 bytes a column more) and ran at 0.9-1.3 TB/s.

The clamped-ReLU mask is read as bytes (one a row per 8 columns) and its bits spread over the tile with a reshape;
reading it with one byte load per column cost the masked backward up to 2x the plain one's time. Each bit is tested
where it lies (``_masked_dy``), which leaves the masked backward the registers of the plain one's launch: within
2-6% of its time at 2048-8192 columns (GPU runs 50-53; 1.2-1.9x before).

``EVEN_N`` (N a multiple of BLOCK_N) drops the column bounds of the one-kernel paths: a thread's mask bytes load as
one vector, and LayerNorm's xhat needs no select past the row's end. The two-kernel path keeps the bounds: without
them its strips took 70 registers instead of 64, 4 programs no longer fit an SM, and LayerNorm ran 10-13% slower
(GPU run 54).

A whole-row program loads the weights once and issues the next row block's loads (``_load_raw``: the tiles as
stored, nothing computed from them) before it works on the current one, so two row blocks are in flight a program
and the loads wait only at first use. This replaced ``tl.range(..., num_stages=2)``, whose sm_90 code waited for
all of its copies at the top of every iteration and then issued the next ones after the compute: one row block in
flight, the weights re-read from L2 for every row. LayerNorm's backward at 32768 x 4096 went from 2.96 to 3.65
TB/s, RMSNorm's from 3.05 to 3.88 (GPU runs 40-42).
"""

import triton
import triton.language as tl


@triton.jit
def _add_pairs(a1, a2, b1, b2):
    """The combine of a reduction of two sums at once (``tl.reduce`` over a pair of tensors)."""
    return a1 + b1, a2 + b2


@triton.jit
def _load_data(
    DY, X, MASK, rows64, row_ok, col0, N, stride_dy, stride_x, stride_mask,
    HAS_MASK: tl.constexpr, BLOCK_N: tl.constexpr, EVICT: tl.constexpr, EVEN_N: tl.constexpr,
):  # fmt: skip
    """Issue the loads of one tile's row data (columns ``col0 ...``): ``(dy, x, packed mask bytes)`` as stored.
    EVEN_N: every column of the tile is in the row (no column bounds, so the mask bytes load as one vector)."""
    cols = col0 + tl.arange(0, BLOCK_N)
    ok = row_ok[:, None] if EVEN_N else row_ok[:, None] & (cols < N)[None, :]
    dy = tl.load(DY + rows64[:, None] * stride_dy + cols[None, :], mask=ok, other=0.0, eviction_policy=EVICT)
    x = tl.load(X + rows64[:, None] * stride_x + cols[None, :], mask=ok, other=0.0, eviction_policy=EVICT)
    packed = dy  # unused without a mask
    if HAS_MASK:  # one byte a row per 8 columns, loaded once (not once per column)
        byte_cols = col0 // 8 + tl.arange(0, BLOCK_N // 8)
        byte_ok = row_ok[:, None] if EVEN_N else row_ok[:, None] & (byte_cols < (N + 7) // 8)[None, :]
        packed = tl.load(
            MASK + rows64[:, None] * stride_mask + byte_cols[None, :], mask=byte_ok, other=0, eviction_policy=EVICT
        )
    return dy, x, packed


@triton.jit
def _load_raw(
    DY, X, MASK, MEAN, RSTD, rows, rows64, row_ok, col0, N, stride_dy, stride_x, stride_mask,
    IS_RMS: tl.constexpr, HAS_MASK: tl.constexpr, BLOCK_N: tl.constexpr, EVICT: tl.constexpr, EVEN_N: tl.constexpr,
):  # fmt: skip
    """Issue the loads of one tile (columns ``col0 ...``): ``(dy, x, packed mask bytes, mean, rstd)`` as stored.
    Nothing is computed from them here, so a caller can issue the next tile's loads before it works on this one."""
    dy, x, packed = _load_data(
        DY, X, MASK, rows64, row_ok, col0, N, stride_dy, stride_x, stride_mask, HAS_MASK, BLOCK_N, EVICT, EVEN_N
    )
    rstd = tl.load(RSTD + rows, mask=row_ok, other=0.0)
    mean = rstd  # unused by RMSNorm
    if not IS_RMS:
        mean = tl.load(MEAN + rows, mask=row_ok, other=0.0)
    return dy, x, packed, mean, rstd


@triton.jit
def _load_weight(W, col0, N, ZERO_CENTERED: tl.constexpr, ACC: tl.constexpr, BLOCK_N: tl.constexpr):
    """The scale of columns ``col0 ...`` in the accumulation dtype: w, or 1 + w for zero-centered gamma."""
    cols = col0 + tl.arange(0, BLOCK_N)
    w = tl.load(W + cols, mask=cols < N, other=0.0).to(ACC)
    if ZERO_CENTERED:
        w += 1.0
    return w


@triton.jit
def _masked_dy(dy, packed, HAS_MASK: tl.constexpr, ACC: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """dy in the accumulation dtype, times the clamped-ReLU mask bits (each byte's bits spread over its 8 columns
    with a reshape).

    A bit is tested where it lies (``byte & (1 << k)``, one instruction that sets a predicate) and picks dy or
    ``dy * 0``: the product's value (NaN for an infinite dy, as the reference's ``dy * mask`` gives) without
    turning each bit into a float to multiply by (shift, and, convert: 30 registers more a thread at 16 columns
    a thread, and at 32 the registers ran out)."""
    dy = dy.to(ACC)
    if HAS_MASK:
        keep = (packed.to(tl.int32)[:, :, None] & (1 << tl.arange(0, 8))[None, None, :]) != 0
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
        IS_RMS, HAS_MASK, BLOCK_N, EVICT, EVEN_N,
    )  # fmt: skip
    w = _load_weight(W, col0, N, ZERO_CENTERED, ACC, BLOCK_N)
    return _terms(dy, x, packed, mean, rstd, w, row_ok, col0, N, IS_RMS, HAS_MASK, ACC, BLOCK_M, BLOCK_N, EVEN_N)


@triton.jit
def _write_dx(
    DX, g, xhat, c1, c2, rstd, rows64, row_ok, col0, N, stride_dx, IS_RMS: tl.constexpr, BLOCK_N: tl.constexpr
):
    """Store ``dx = rstd * (g - xhat * c1 - c2)`` of the tile of columns ``col0 ...``, where c1 and c2 are the row
    means of ``xhat * g`` and of g (RMSNorm has no c2 term)."""
    dx = g - xhat * c1[:, None]
    if not IS_RMS:
        dx -= c2[:, None]
    dx *= rstd[:, None]
    cols = col0 + tl.arange(0, BLOCK_N)
    ok = row_ok[:, None] & (cols < N)[None, :]
    tl.store(DX + rows64[:, None] * stride_dx + cols[None, :], dx.to(DX.dtype.element_ty), mask=ok)


@triton.jit(do_not_specialize=["M", "num_programs", "blocks_per_program"])
def norm_bwd_kernel(
    DY, X, W, MEAN, RSTD, MASK, DX, PARTIAL,
    M, N, stride_dy, stride_x, stride_dx, stride_mask, num_programs, blocks_per_program,
    IS_RMS: tl.constexpr, ZERO_CENTERED: tl.constexpr, HAS_MASK: tl.constexpr, HAS_DBIAS: tl.constexpr,
    ACC: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, NUM_CHUNKS: tl.constexpr,
    CHUNKS_P2: tl.constexpr, EVEN_N: tl.constexpr,
):  # fmt: skip
    """PARTIAL is float32 ``[1 or 2, num_programs, N]``: dW partials, then dB partials when HAS_DBIAS.
    CHUNKS_P2 is NUM_CHUNKS rounded up to a power of two (the rows of a chunked row's partial tiles)."""
    pid = tl.program_id(0)
    dw_row = PARTIAL + pid.to(tl.int64) * N
    db_row = dw_row + num_programs.to(tl.int64) * N
    if NUM_CHUNKS == 1:
        cols = tl.arange(0, BLOCK_N)
        col_ok = cols < N
        w = _load_weight(W, 0, N, ZERO_CENTERED, ACC, BLOCK_N)  # the same for every row: loaded once
        # [BLOCK_M, BLOCK_N] accumulators: the sum over rows happens once, after the loop
        dw_acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=ACC)
        db_acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=ACC)
        rows = pid * BLOCK_M + tl.arange(0, BLOCK_M)
        tile = _load_raw(
            DY, X, MASK, MEAN, RSTD, rows, rows.to(tl.int64), rows < M, 0, N, stride_dy, stride_x, stride_mask,
            IS_RMS, HAS_MASK, BLOCK_N, "", EVEN_N,
        )  # fmt: skip
        for _ in tl.range(0, blocks_per_program):
            # the next row block's loads go out before this one is worked on: two row blocks in flight a program
            next_rows = rows + num_programs * BLOCK_M
            next_tile = _load_raw(
                DY, X, MASK, MEAN, RSTD, next_rows, next_rows.to(tl.int64), next_rows < M, 0, N, stride_dy,
                stride_x, stride_mask, IS_RMS, HAS_MASK, BLOCK_N, "", EVEN_N,
            )  # fmt: skip
            row_ok = rows < M
            dy_raw, x_raw, packed, mean, rstd = tile
            dy, xhat, g, rstd = _terms(
                dy_raw, x_raw, packed, mean, rstd, w, row_ok, 0, N, IS_RMS, HAS_MASK, ACC, BLOCK_M, BLOCK_N, EVEN_N
            )
            if IS_RMS:
                c1 = tl.sum(xhat * g, axis=1) / N
                c2 = c1  # unused
            else:  # both row sums in one reduction: one exchange across the warps, not two (+1-5% at 1024-4096)
                s1, s2 = tl.reduce((xhat * g, g), 1, _add_pairs)
                c1 = s1 / N
                c2 = s2 / N
            _write_dx(DX, g, xhat, c1, c2, rstd, rows.to(tl.int64), row_ok, 0, N, stride_dx, IS_RMS, BLOCK_N)
            dw_acc += dy * xhat
            if HAS_DBIAS:
                db_acc += dy
            rows = next_rows
            tile = next_tile
        tl.store(dw_row + cols, tl.sum(dw_acc, axis=0), mask=col_ok)
        if HAS_DBIAS:
            tl.store(db_row + cols, tl.sum(db_acc, axis=0), mask=col_ok)
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
                _write_dx(DX, g, xhat, c1, c2, rstd, rows64, row_ok, chunk * BLOCK_N, N, stride_dx, IS_RMS, BLOCK_N)
                here = chunk_ids == chunk
                dw_acc = tl.where(here, dw_acc + tl.sum(dy * xhat, axis=0)[None, :], dw_acc)
                if HAS_DBIAS:
                    db_acc = tl.where(here, db_acc + tl.sum(dy, axis=0)[None, :], db_acc)
        cols = chunk_ids * BLOCK_N + tl.arange(0, BLOCK_N)[None, :]
        tl.store(dw_row + cols, dw_acc, mask=cols < N)
        if HAS_DBIAS:
            tl.store(db_row + cols, db_acc, mask=cols < N)


@triton.jit(do_not_specialize=["M"])
def row_sums_kernel(
    DY, X, W, MEAN, RSTD, MASK, SUMS, M, N, stride_dy, stride_x, stride_mask,
    IS_RMS: tl.constexpr, ZERO_CENTERED: tl.constexpr, HAS_MASK: tl.constexpr, ACC: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, NUM_CHUNKS: tl.constexpr, UNROLL: tl.constexpr,
):  # fmt: skip
    """Long rows, step one: ``SUMS[0, row] = mean(xhat * g)`` and (LayerNorm) ``SUMS[1, row] = mean(g)``.

    A read-only pass over dy and x in chunks, with per-lane sums merged once a row, so nothing in the loop waits on
    the other threads and ``UNROLL`` chunks' loads are in flight together. ``(x - mean) * g`` is summed and
    multiplied by rstd once; columns past N have dy = 0 (hence g = 0) and add nothing.
    """
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    row_ok = rows < M
    rows64 = rows.to(tl.int64)
    rstd = tl.load(RSTD + rows, mask=row_ok, other=0.0).to(ACC)
    mean = rstd  # unused by RMSNorm
    if not IS_RMS:
        mean = tl.load(MEAN + rows, mask=row_ok, other=0.0).to(ACC)
    lane_xg = tl.zeros([BLOCK_M, BLOCK_N], dtype=ACC)  # sum of x * g (LayerNorm: (x - mean) * g)
    lane_g = tl.zeros([BLOCK_M, BLOCK_N], dtype=ACC)
    for chunk in tl.range(0, NUM_CHUNKS, loop_unroll_factor=UNROLL):
        col0 = chunk * BLOCK_N
        # column bounds kept for whole chunks too: the two-kernel path does not take EVEN_N (module docstring)
        dy, x, packed = _load_data(
            DY, X, MASK, rows64, row_ok, col0, N, stride_dy, stride_x, stride_mask, HAS_MASK, BLOCK_N, "evict_first",
            False,
        )  # fmt: skip
        g = (
            _masked_dy(dy, packed, HAS_MASK, ACC, BLOCK_M, BLOCK_N)
            * _load_weight(W, col0, N, ZERO_CENTERED, ACC, BLOCK_N)[None, :]
        )
        if IS_RMS:
            lane_xg += x.to(ACC) * g
        else:
            lane_xg += (x.to(ACC) - mean[:, None]) * g
            lane_g += g
    tl.store(SUMS + rows, rstd * tl.sum(lane_xg, axis=1) / N, mask=row_ok)
    if not IS_RMS:
        tl.store(SUMS + M + rows, tl.sum(lane_g, axis=1) / N, mask=row_ok)


@triton.jit
def _load_row_sums(SUMS, M, rows, row_ok, IS_RMS: tl.constexpr):
    """``(c1, c2)`` of these rows as ``row_sums_kernel`` wrote them (RMSNorm has no c2: c1 is returned twice)."""
    c1 = tl.load(SUMS + rows, mask=row_ok, other=0.0)
    c2 = c1
    if not IS_RMS:
        c2 = tl.load(SUMS + M + rows, mask=row_ok, other=0.0)
    return c1, c2


@triton.jit(do_not_specialize=["M", "blocks_per_group"])
def columns_kernel(
    DY, X, W, MEAN, RSTD, SUMS, MASK, DX, PARTIAL,
    M, N, stride_dy, stride_x, stride_dx, stride_mask, blocks_per_group,
    IS_RMS: tl.constexpr, ZERO_CENTERED: tl.constexpr, HAS_MASK: tl.constexpr, HAS_DBIAS: tl.constexpr,
    ACC: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
):  # fmt: skip
    """Long rows, step two: program ``(s, r)`` owns the columns of strip s in the rows of group r
    (``blocks_per_group`` blocks of BLOCK_M rows). It writes dx from the row sums of step one and keeps the strip's
    dW/dB partials in registers, stored once as row r of PARTIAL (float32 ``[1 or 2, groups, N]``).

    Like the whole-row program, it loads its weights once and issues the next row block's loads before it works on
    the current one.
    """
    col0 = tl.program_id(0) * BLOCK_N
    group = tl.program_id(1)
    cols = col0 + tl.arange(0, BLOCK_N)
    w = _load_weight(W, col0, N, ZERO_CENTERED, ACC, BLOCK_N)
    dw_acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=ACC)
    db_acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=ACC)
    first = group * blocks_per_group * BLOCK_M
    # the group's rows; the loop's trip count keeps to them, `end` also masks off the loads issued after the last block
    end = tl.minimum(first + blocks_per_group * BLOCK_M, M)
    rows = first + tl.arange(0, BLOCK_M)
    tile = _load_raw(
        DY, X, MASK, MEAN, RSTD, rows, rows.to(tl.int64), rows < end, col0, N, stride_dy, stride_x, stride_mask,
        IS_RMS, HAS_MASK, BLOCK_N, "evict_first", False,
    )  # fmt: skip
    c1, c2 = _load_row_sums(SUMS, M, rows, rows < end, IS_RMS)
    for _ in tl.range(0, blocks_per_group):
        next_rows = rows + BLOCK_M
        next_ok = next_rows < end
        next_tile = _load_raw(
            DY, X, MASK, MEAN, RSTD, next_rows, next_rows.to(tl.int64), next_ok, col0, N, stride_dy, stride_x,
            stride_mask, IS_RMS, HAS_MASK, BLOCK_N, "evict_first", False,
        )  # fmt: skip
        next_c1, next_c2 = _load_row_sums(SUMS, M, next_rows, next_ok, IS_RMS)
        row_ok = rows < end
        dy_raw, x_raw, packed, mean, rstd = tile
        dy, xhat, g, rstd = _terms(
            dy_raw, x_raw, packed, mean, rstd, w, row_ok, col0, N, IS_RMS, HAS_MASK, ACC, BLOCK_M, BLOCK_N, False
        )
        _write_dx(DX, g, xhat, c1, c2, rstd, rows.to(tl.int64), row_ok, col0, N, stride_dx, IS_RMS, BLOCK_N)
        dw_acc += dy * xhat
        if HAS_DBIAS:
            db_acc += dy
        rows, tile, c1, c2 = next_rows, next_tile, next_c1, next_c2
    partial = PARTIAL + group.to(tl.int64) * N + cols
    col_ok = cols < N
    tl.store(partial, tl.sum(dw_acc, axis=0), mask=col_ok)
    if HAS_DBIAS:
        tl.store(partial + tl.num_programs(1).to(tl.int64) * N, tl.sum(db_acc, axis=0), mask=col_ok)


@triton.jit
def sum_partials_kernel(
    PARTIAL, DW, DB, G, N, BLOCK_G: tl.constexpr, BLOCK_N: tl.constexpr, ACC: tl.constexpr,
):  # fmt: skip
    """dW (program_id(1) == 0) or dB (== 1): ``OUT[n] = sum_g PARTIAL[which, g, n]`` in a fixed order."""
    which = tl.program_id(1)
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    col_ok = cols < N
    base = PARTIAL + which.to(tl.int64) * G * N
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
