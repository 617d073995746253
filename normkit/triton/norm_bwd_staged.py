"""RMSNorm's backward with its rows staged in shared memory, written in Gluon (Triton's explicit dialect).

cuDNN's RMSNorm backward is fastest at 4096 x 13312 fp16 (0.85 of its time for normkit's split rows in round 65) with
one persistent program a SM that stages each row of x and dy in shared memory by the TMA, two rows in flight, and
keeps the weights and float32 dW there too (GPU run 541). Triton cannot place a tensor in shared memory, and its
tiles are powers of two: a row of 13312 columns is 16384's tile, a fifth of it masked. Gluon can: here a row of N
columns is viewed as N / 256 rows of 256 (the call's rows contiguous) and cut into parts of its binary digits
(13312 = 52 x 256 = (32 + 16 + 4) x 256), each part its own buffer, TMA descriptor and register layout, so no lane is
past the row and every thread loads 16 bytes at a time where the part allows.

One program a SM takes rows ``pid, pid + programs, ...``. Per row: wait for its stage; pass one reads x, dy and the
weights from shared memory for ``sum(w dy x)``; pass two reads them again, stores dx from registers and adds
``dy x rstd`` to dW (in registers across the loop, ``DW_REGS``, or float32 in shared memory); then every thread is
done with the stage and the row two ahead is loaded into it. rstd is loaded a row ahead. Each program writes its dW
partial, and ``ops._sum_partials`` adds them in a fixed order, as for the other backwards.

Round 69 (H200, GPU runs 546-550, 4096 x N fp16, in turns against the rule before): one TMA copy a part rather
than one a box of the smallest part made it fast (13312, the same variant: 126.9 -> 99.5 us; with dW in registers
93.7, the rule 106.9); 8 warps beat 16 (128 registers a thread: x0.89-1.07 of the rule); holding x and dy in
registers between the passes, or the weights across the loop, ran slower at 12800-13312 and 2.5% faster at 14336
(not taken). The same kernel with LayerNorm's mean and second row sum and dB's sums ran x0.80-0.95 of LayerNorm's
split rows, and is not here. ``config._staged_bwd`` says where it is taken. Written against Triton 3.6's Gluon:
importing this module raises ``ImportError`` elsewhere, and the rules then never take it (``ops.STAGED``).
"""

from __future__ import annotations

import triton

if not triton.__version__.startswith("3.6"):
    raise ImportError(f"normkit's Gluon kernel is written for Triton 3.6, not {triton.__version__}")

from triton.experimental import gluon  # noqa: E402
from triton.experimental.gluon import language as gl  # noqa: E402
from triton.experimental.gluon.language.nvidia.hopper import fence_async_shared, mbarrier, tma  # noqa: E402
from triton.experimental.gluon.nvidia.hopper import TensorDescriptor  # noqa: E402

COLUMNS = 256  # a row is viewed as rows of this many columns (a TMA box's widest)
MAX_PARTS = 4
STAGES = 2  # rows in flight a program: 3 ran level or slower with dW in registers (x0.98-1.01, run 547)


@gluon.jit
def _load_row(xda, dyda, xdb, dydb, xdc, dydc, xdd, dydd, bar, xa, dya, xb, dyb, xc, dyc, xd, dyd, row, ok,
              RA: gl.constexpr, RB: gl.constexpr, RC: gl.constexpr, RD: gl.constexpr):  # fmt: skip
    """Row ``row``'s x and dy into one stage's buffers, one TMA copy a part and tensor (its descriptor's box is the
    part), counted on ``bar``; nothing where not ``ok``."""
    ROWS: gl.constexpr = RA + RB + RC + RD
    mbarrier.expect(bar, 2 * ROWS * 256 * xda.dtype.primitive_bitwidth // 8, pred=ok)
    first = row * ROWS
    tma.async_copy_global_to_shared(xda, [first, 0], bar, xa, pred=ok)
    tma.async_copy_global_to_shared(dyda, [first, 0], bar, dya, pred=ok)
    if RB > 0:
        tma.async_copy_global_to_shared(xdb, [first + RA, 0], bar, xb, pred=ok)
        tma.async_copy_global_to_shared(dydb, [first + RA, 0], bar, dyb, pred=ok)
    if RC > 0:
        tma.async_copy_global_to_shared(xdc, [first + RA + RB, 0], bar, xc, pred=ok)
        tma.async_copy_global_to_shared(dydc, [first + RA + RB, 0], bar, dyc, pred=ok)
    if RD > 0:
        tma.async_copy_global_to_shared(xdd, [first + RA + RB + RC, 0], bar, xd, pred=ok)
        tma.async_copy_global_to_shared(dydd, [first + RA + RB + RC, 0], bar, dyd, pred=ok)


@gluon.jit
def _weights(ws, L: gl.constexpr, ZERO_CENTERED: gl.constexpr):
    w = ws.load(L).to(gl.float32)
    if ZERO_CENTERED:
        w += 1.0
    return w


@gluon.jit
def _part_sum(xs, dys, ws, L: gl.constexpr, ZERO_CENTERED: gl.constexpr):
    """Pass one over a part: sum(w dy x)."""
    x = xs.load(L).to(gl.float32)
    dy = dys.load(L).to(gl.float32)
    return gl.sum(gl.sum(_weights(ws, L, ZERO_CENTERED) * dy * x, axis=1), axis=0)


@gluon.jit
def _offsets(START: gl.constexpr, R: gl.constexpr, L: gl.constexpr):
    """A part's elements' offsets in its row (``START``: the part's first row of 256)."""
    rows = gl.arange(0, R, layout=gl.SliceLayout(1, L))
    columns = gl.arange(0, 256, layout=gl.SliceLayout(0, L))
    return (START + rows)[:, None] * 256 + columns[None, :]


@gluon.jit
def _part_dx(xs, dys, ws, dx_row, rstd, k, START: gl.constexpr, R: gl.constexpr, L: gl.constexpr,
             ZERO_CENTERED: gl.constexpr):  # fmt: skip
    """Pass two over a part: dx = rstd w dy - k x stored; returns the part's dW term, dy x rstd."""
    x = xs.load(L)
    dy = dys.load(L).to(gl.float32)
    xf = x.to(gl.float32)
    dx = rstd * (_weights(ws, L, ZERO_CENTERED) * dy) - k * xf
    gl.store(dx_row + _offsets(START, R, L), dx.to(x.dtype))
    return dy * (xf * rstd)


@gluon.jit
def rms_norm_bwd_staged_kernel(
    xda, xdb, xdc, xdd, dyda, dydb, dydc, dydd, wda, wdb, wdc, wdd, RSTD, DX, PARTIAL, M, N,
    RA: gl.constexpr, RB: gl.constexpr, RC: gl.constexpr, RD: gl.constexpr,
    LA: gl.constexpr, LB: gl.constexpr, LC: gl.constexpr, LD: gl.constexpr,
    STAGES: gl.constexpr, DW_REGS: gl.constexpr, ZERO_CENTERED: gl.constexpr,
):  # fmt: skip
    """RMSNorm's dx ``[M, N]`` and each program's float32 dW partial (``PARTIAL``: ``[programs, N]``) from dy, x (their
    descriptors: ``[M * N / 256, 256]``, one a part, the box the part's ``[R, 256]``), the weights' (``[N / 256,
    256]``) and rstd. ``RA``-``RD``: the parts' rows of 256, N / 256's binary digits, largest first, 0 where absent
    (whose descriptors, buffers and code are left out); ``LA``-``LD`` their register layouts."""
    pid = gl.program_id(0)
    programs = gl.num_programs(0)
    my_rows = (M - pid + programs - 1) // programs
    dtype: gl.constexpr = xda.dtype
    staged: gl.constexpr = xda.layout
    plain: gl.constexpr = gl.SwizzledSharedLayout(1, 1, 1, [1, 0])
    # a part's buffers: STAGES rows of x and dy, the weights (placeholders where a part is absent)
    xa = gl.allocate_shared_memory(dtype, [STAGES, RA, 256], staged)
    dya = gl.allocate_shared_memory(dtype, [STAGES, RA, 256], staged)
    wsa = gl.allocate_shared_memory(wda.dtype, [RA, 256], staged)
    xb, dyb, xc, dyc, xd, dyd = xa, dya, xa, dya, xa, dya
    if RB > 0:
        xb = gl.allocate_shared_memory(dtype, [STAGES, RB, 256], staged)
        dyb = gl.allocate_shared_memory(dtype, [STAGES, RB, 256], staged)
        wsb = gl.allocate_shared_memory(wda.dtype, [RB, 256], staged)
    if RC > 0:
        xc = gl.allocate_shared_memory(dtype, [STAGES, RC, 256], staged)
        dyc = gl.allocate_shared_memory(dtype, [STAGES, RC, 256], staged)
        wsc = gl.allocate_shared_memory(wda.dtype, [RC, 256], staged)
    if RD > 0:
        xd = gl.allocate_shared_memory(dtype, [STAGES, RD, 256], staged)
        dyd = gl.allocate_shared_memory(dtype, [STAGES, RD, 256], staged)
        wsd = gl.allocate_shared_memory(wda.dtype, [RD, 256], staged)
    bars = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    wbar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    for s in gl.static_range(STAGES):
        mbarrier.init(bars.index(s), count=1)
    mbarrier.init(wbar, count=1)

    # the weights, once; then the first STAGES rows
    mbarrier.expect(wbar, (RA + RB + RC + RD) * 256 * wda.dtype.primitive_bitwidth // 8)
    tma.async_copy_global_to_shared(wda, [0, 0], wbar, wsa)
    if RB > 0:
        tma.async_copy_global_to_shared(wdb, [RA, 0], wbar, wsb)
    if RC > 0:
        tma.async_copy_global_to_shared(wdc, [RA + RB, 0], wbar, wsc)
    if RD > 0:
        tma.async_copy_global_to_shared(wdd, [RA + RB + RC, 0], wbar, wsd)
    for s in gl.static_range(STAGES):
        _load_row(xda, dyda, xdb, dydb, xdc, dydc, xdd, dydd, bars.index(s), xa.index(s), dya.index(s),
                  xb.index(s), dyb.index(s), xc.index(s), dyc.index(s), xd.index(s), dyd.index(s),
                  pid + s * programs, s < my_rows, RA, RB, RC, RD)  # fmt: skip
    # dW: in registers across the loop, or float32 in shared memory
    if DW_REGS:
        dwa = gl.zeros([RA, 256], gl.float32, LA)
        if RB > 0:
            dwb = gl.zeros([RB, 256], gl.float32, LB)
        if RC > 0:
            dwc = gl.zeros([RC, 256], gl.float32, LC)
        if RD > 0:
            dwd = gl.zeros([RD, 256], gl.float32, LD)
    else:
        dwsa = gl.allocate_shared_memory(gl.float32, [RA, 256], plain)
        dwsa.store(gl.zeros([RA, 256], gl.float32, LA))
        if RB > 0:
            dwsb = gl.allocate_shared_memory(gl.float32, [RB, 256], plain)
            dwsb.store(gl.zeros([RB, 256], gl.float32, LB))
        if RC > 0:
            dwsc = gl.allocate_shared_memory(gl.float32, [RC, 256], plain)
            dwsc.store(gl.zeros([RC, 256], gl.float32, LC))
        if RD > 0:
            dwsd = gl.allocate_shared_memory(gl.float32, [RD, 256], plain)
            dwsd.store(gl.zeros([RD, 256], gl.float32, LD))
    mbarrier.wait(wbar, 0)
    rstd_next = gl.load(RSTD + pid)

    for i in range(my_rows):
        row = pid + i * programs
        stage = i % STAGES
        rstd = rstd_next
        rstd_next = gl.load(RSTD + gl.minimum(row + programs, M - 1))
        mbarrier.wait(bars.index(stage), (i // STAGES) & 1)
        xsa, dysa = xa.index(stage), dya.index(stage)
        total = _part_sum(xsa, dysa, wsa, LA, ZERO_CENTERED)
        if RB > 0:
            xsb, dysb = xb.index(stage), dyb.index(stage)
            total += _part_sum(xsb, dysb, wsb, LB, ZERO_CENTERED)
        if RC > 0:
            xsc, dysc = xc.index(stage), dyc.index(stage)
            total += _part_sum(xsc, dysc, wsc, LC, ZERO_CENTERED)
        if RD > 0:
            xsd, dysd = xd.index(stage), dyd.index(stage)
            total += _part_sum(xsd, dysd, wsd, LD, ZERO_CENTERED)
        k = rstd * rstd * rstd * total / N
        dx_row = DX + row.to(gl.int64) * N
        term = _part_dx(xsa, dysa, wsa, dx_row, rstd, k, 0, RA, LA, ZERO_CENTERED)
        if DW_REGS:
            dwa += term
        else:
            dwsa.store(dwsa.load(LA) + term)
        if RB > 0:
            term = _part_dx(xsb, dysb, wsb, dx_row, rstd, k, RA, RB, LB, ZERO_CENTERED)
            if DW_REGS:
                dwb += term
            else:
                dwsb.store(dwsb.load(LB) + term)
        if RC > 0:
            term = _part_dx(xsc, dysc, wsc, dx_row, rstd, k, RA + RB, RC, LC, ZERO_CENTERED)
            if DW_REGS:
                dwc += term
            else:
                dwsc.store(dwsc.load(LC) + term)
        if RD > 0:
            term = _part_dx(xsd, dysd, wsd, dx_row, rstd, k, RA + RB + RC, RD, LD, ZERO_CENTERED)
            if DW_REGS:
                dwd += term
            else:
                dwsd.store(dwsd.load(LD) + term)
        # every thread is done with the stage (its reads in the generic proxy before the TMA's writes): it takes the
        # row STAGES ahead
        fence_async_shared()
        gl.thread_barrier()
        ahead = i + STAGES
        _load_row(xda, dyda, xdb, dydb, xdc, dydc, xdd, dydd, bars.index(stage), xa.index(stage), dya.index(stage),
                  xb.index(stage), dyb.index(stage), xc.index(stage), dyc.index(stage), xd.index(stage),
                  dyd.index(stage), pid + ahead * programs, ahead < my_rows, RA, RB, RC, RD)  # fmt: skip
    for s in gl.static_range(STAGES):
        mbarrier.invalidate(bars.index(s))
    mbarrier.invalidate(wbar)
    if not DW_REGS:
        dwa = dwsa.load(LA)
        if RB > 0:
            dwb = dwsb.load(LB)
        if RC > 0:
            dwc = dwsc.load(LC)
        if RD > 0:
            dwd = dwsd.load(LD)
    out = PARTIAL + pid.to(gl.int64) * N
    gl.store(out + _offsets(0, RA, LA), dwa)
    if RB > 0:
        gl.store(out + _offsets(RA, RB, LB), dwb)
    if RC > 0:
        gl.store(out + _offsets(RA + RB, RC, LC), dwc)
    if RD > 0:
        gl.store(out + _offsets(RA + RB + RC, RD, LD), dwd)


def parts(n: int) -> list[int]:
    """A row of n columns (a multiple of 256) as its parts' rows of 256: n / 256's binary digits, largest first, then
    0s up to ``MAX_PARTS``; 13312 -> [32, 16, 4, 0]."""
    if n % COLUMNS:
        raise ValueError(f"n must be a multiple of {COLUMNS}, got {n}")
    rows = n // COLUMNS
    digits = [1 << b for b in range(rows.bit_length() - 1, -1, -1) if rows >> b & 1]
    if len(digits) > MAX_PARTS:
        raise ValueError(f"n / {COLUMNS} = {rows} has more than {MAX_PARTS} binary digits")
    return digits + [0] * (MAX_PARTS - len(digits))


def layout(rows: int, num_warps: int) -> gl.BlockedLayout:
    """A part's ``[rows, 256]`` over num_warps warps: the warps down its rows as far as they go, the rest across, and
    each thread's columns contiguous (8 halves, 16 bytes, where the warps are all down)."""
    rows = max(rows, 1)
    down = min(num_warps, rows)
    across = num_warps // down
    return gl.BlockedLayout([rows // down, COLUMNS // (32 * across)], [1, 32], [down, across], [1, 0])


def constexprs(n: int, num_warps: int, stages: int, dw_in_registers: bool, zero_centered: bool) -> dict:
    """The kernel's constexpr arguments for rows of n columns."""
    ra, rb, rc, rd = parts(n)
    la, lb, lc, ld = (layout(r, num_warps) for r in (ra, rb, rc, rd))
    return dict(
        RA=ra, RB=rb, RC=rc, RD=rd, LA=la, LB=lb, LC=lc, LD=ld, STAGES=stages, DW_REGS=dw_in_registers,
        ZERO_CENTERED=zero_centered,
    )  # fmt: skip


def descriptors(x, dy, weight, part_rows: list[int]) -> list[TensorDescriptor]:
    """x's, dy's and the weights' descriptors, a part's each (the first part's where one is absent): x and dy (rows
    contiguous) viewed as ``[M * N / 256, 256]``, the weights as ``[N / 256, 256]``."""
    m, n = x.shape
    shared = gl.NVMMASharedLayout(swizzle_byte_width=0, element_bitwidth=8 * x.element_size(), rank=2)
    out = []
    for t in (x.view(m * n // COLUMNS, COLUMNS), dy.view(m * n // COLUMNS, COLUMNS), weight.view(-1, COLUMNS)):
        shape, strides = list(t.shape), list(t.stride())
        out += [TensorDescriptor(t, shape, strides, [r or part_rows[0], COLUMNS], shared) for r in part_rows]
    return out


def launch(dy, x, weight, rstd, dx, partial, values: dict, num_warps: int) -> None:
    """dx and each program's dW partial (``partial``: ``[1, programs, N]`` float32, one program a row of it) of
    RMSNorm's backward; x and dy contiguous, their rows and the weights 16-bit."""
    m, n = x.shape
    programs = partial.shape[1]
    part_rows = [values[k] for k in ("RA", "RB", "RC", "RD")]
    rms_norm_bwd_staged_kernel[(programs,)](
        *descriptors(x, dy, weight, part_rows), rstd, dx, partial, m, n, **values, num_warps=num_warps
    )
