"""The backward kernel of LayerNorm and RMSNorm, with the clamped-ReLU bitmask applied on the fly.

One kernel body; ``tl.constexpr`` switches pick the variant:

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

A row that fits one ``BLOCK_N`` tile (``NUM_CHUNKS == 1``) keeps the partials in registers. A longer row is
processed in chunks: a first pass reduces the two row sums, a second (walking back, so the chunks read last come
first, from L2) writes dx and adds into the program's partial row in global memory (only that program touches it,
so this stays deterministic).

The persistent loop is software-pipelined (``NUM_STAGES``): the next row block's loads are issued while the
current one is computed, so a few programs per SM keep enough bytes in flight.
"""

import triton
import triton.language as tl


@triton.jit
def _load_tile(
    DY, X, W, MASK, MEAN, RSTD, rows, rows64, row_ok, cols, N, stride_dy, stride_x, stride_mask,
    IS_RMS: tl.constexpr, ZERO_CENTERED: tl.constexpr, HAS_MASK: tl.constexpr, ACC: tl.constexpr,
):  # fmt: skip
    """Load one tile and return ``(dy, xhat, g, rstd)`` in the accumulation dtype; dy already masked."""
    col_ok = cols < N
    ok = row_ok[:, None] & col_ok[None, :]
    dy = tl.load(DY + rows64[:, None] * stride_dy + cols[None, :], mask=ok, other=0.0).to(ACC)
    if HAS_MASK:
        byte = tl.load(MASK + rows64[:, None] * stride_mask + (cols // 8)[None, :], mask=ok, other=0).to(tl.int32)
        dy = dy * ((byte >> (cols % 8)[None, :]) & 1).to(ACC)
    x = tl.load(X + rows64[:, None] * stride_x + cols[None, :], mask=ok, other=0.0).to(ACC)
    rstd = tl.load(RSTD + rows, mask=row_ok, other=0.0).to(ACC)
    if IS_RMS:
        xhat = x * rstd[:, None]
    else:
        mean = tl.load(MEAN + rows, mask=row_ok, other=0.0).to(ACC)
        xhat = tl.where(ok, (x - mean[:, None]) * rstd[:, None], 0.0)
    w = tl.load(W + cols, mask=col_ok, other=0.0).to(ACC)
    if ZERO_CENTERED:
        w += 1.0
    return dy, xhat, dy * w[None, :], rstd


@triton.jit(do_not_specialize=["M", "num_programs", "blocks_per_program"])
def norm_bwd_kernel(
    DY, X, W, MEAN, RSTD, MASK, DX, PARTIAL,
    M, N, stride_dy, stride_x, stride_dx, stride_mask, num_programs, blocks_per_program,
    IS_RMS: tl.constexpr, ZERO_CENTERED: tl.constexpr, HAS_MASK: tl.constexpr, HAS_DBIAS: tl.constexpr,
    ACC: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, NUM_CHUNKS: tl.constexpr,
    NUM_STAGES: tl.constexpr,
):  # fmt: skip
    """PARTIAL is float32 ``[1 or 2, num_programs, N]``: dW partials, then dB partials when HAS_DBIAS."""
    pid = tl.program_id(0)
    dw_row = PARTIAL + pid.to(tl.int64) * N
    db_row = dw_row + num_programs.to(tl.int64) * N
    if NUM_CHUNKS == 1:
        cols = tl.arange(0, BLOCK_N)
        # [BLOCK_M, BLOCK_N] accumulators: the sum over rows happens once, after the loop
        dw_acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=ACC)
        db_acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=ACC)
    for i in tl.range(0, blocks_per_program, num_stages=NUM_STAGES):
        rows = (pid + i * num_programs) * BLOCK_M + tl.arange(0, BLOCK_M)
        row_ok = rows < M
        rows64 = rows.to(tl.int64)
        if NUM_CHUNKS == 1:
            dy, xhat, g, rstd = _load_tile(
                DY, X, W, MASK, MEAN, RSTD, rows, rows64, row_ok, cols, N, stride_dy, stride_x, stride_mask,
                IS_RMS, ZERO_CENTERED, HAS_MASK, ACC,
            )  # fmt: skip
            c1 = tl.sum(xhat * g, axis=1) / N
            dx = g - xhat * c1[:, None]
            if not IS_RMS:
                dx -= (tl.sum(g, axis=1) / N)[:, None]
            dx *= rstd[:, None]
            ok = row_ok[:, None] & (cols < N)[None, :]
            tl.store(DX + rows64[:, None] * stride_dx + cols[None, :], dx.to(DX.dtype.element_ty), mask=ok)
            dw_acc += dy * xhat
            if HAS_DBIAS:
                db_acc += dy
        else:
            # per-lane sums, reduced across the row once after the pass
            lane_xhat_g = tl.zeros([BLOCK_M, BLOCK_N], dtype=ACC)
            lane_g = tl.zeros([BLOCK_M, BLOCK_N], dtype=ACC)
            for chunk in range(NUM_CHUNKS):
                cols = chunk * BLOCK_N + tl.arange(0, BLOCK_N)
                dy, xhat, g, rstd = _load_tile(
                    DY, X, W, MASK, MEAN, RSTD, rows, rows64, row_ok, cols, N, stride_dy, stride_x, stride_mask,
                    IS_RMS, ZERO_CENTERED, HAS_MASK, ACC,
                )  # fmt: skip
                lane_xhat_g += xhat * g
                if not IS_RMS:
                    lane_g += g
            sum_xhat_g = tl.sum(lane_xhat_g, axis=1)
            sum_g = tl.sum(lane_g, axis=1)
            c1 = sum_xhat_g / N
            c2 = sum_g / N
            # the second pass walks the row backwards: its first chunks are the ones the first pass read last,
            # the likeliest still in L2
            for back in range(NUM_CHUNKS):
                chunk = NUM_CHUNKS - 1 - back
                cols = chunk * BLOCK_N + tl.arange(0, BLOCK_N)
                col_ok = cols < N
                dy, xhat, g, rstd = _load_tile(
                    DY, X, W, MASK, MEAN, RSTD, rows, rows64, row_ok, cols, N, stride_dy, stride_x, stride_mask,
                    IS_RMS, ZERO_CENTERED, HAS_MASK, ACC,
                )  # fmt: skip
                dx = g - xhat * c1[:, None]
                if not IS_RMS:
                    dx -= c2[:, None]
                dx *= rstd[:, None]
                ok = row_ok[:, None] & col_ok[None, :]
                tl.store(DX + rows64[:, None] * stride_dx + cols[None, :], dx.to(DX.dtype.element_ty), mask=ok)
                dw_old = tl.load(dw_row + cols, mask=col_ok, other=0.0)
                tl.store(dw_row + cols, dw_old + tl.sum(dy * xhat, axis=0), mask=col_ok)
                if HAS_DBIAS:
                    db_old = tl.load(db_row + cols, mask=col_ok, other=0.0)
                    tl.store(db_row + cols, db_old + tl.sum(dy, axis=0), mask=col_ok)
    if NUM_CHUNKS == 1:
        col_ok = cols < N
        tl.store(dw_row + cols, tl.sum(dw_acc, axis=0), mask=col_ok)
        if HAS_DBIAS:
            tl.store(db_row + cols, tl.sum(db_acc, axis=0), mask=col_ok)


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
