"""LayerNorm's and RMSNorm's forward of long rows split in slices over several programs, each slice staged in shared
memory by the TMA, written in Gluon: the split staged backward's scheme (``norm_bwd_staged.split_staged_kernel``)
applied to y.

The chunked forward (``norm_fwd_kernel``, one program of 32 warps a SM at these widths) reads each row twice, the
second time from L2, and reads its weights (and bias) again from L2 for every row: at 32768 x 65536 (bf16 x, float32
weights and bias) 768 KB a row of L2 reads for 128 KB of x, and 75% of the copy's speed (benchmarks/README.md, round
67). Here a row of N columns is cut in ``PARTS`` slices of ``SR`` rows of 256; program ``p`` takes slice ``p % PARTS``
of the rows ``g, g + groups, ...`` of its group ``g = p // PARTS``, one program a SM. Its load warp stages the slice
of x (``STAGES`` rows in flight); its compute warps read the slice's weights and bias once into registers (float32),
and for each row publish the slice's statistics, packed in one int64 (``norm_bwd_staged._pack_sums``): LayerNorm's
sum and the sum of squares about the slice's own mean (each thread's mean and squares from its registers, combined over
the threads in one reduction and over the slices in ``_row_stats`` as Chan et al.'s parallel variance, so that a mean
far from zero does not cancel), RMSNorm's sum of squares. They read the group's others, work out the row's mean and
rstd, store y from registers, and part 0 stores the statistics (a training call's; an inference call stores y alone).

A program publishes ``AHEAD`` rows before it reads a row's statistics. With ``AHEAD`` 1 it fetches the group's sums of
this row first (published a step ago by the others), then publishes the next row's, then waits for the fetch; with 2
it publishes the row two ahead and fetches the next row's a whole step before it needs them, so the fetch's trip to
L2 is not on the row's path (LayerNorm's statistics, three values a thread, make it longer than RMSNorm's sum). A
program then holds ``AHEAD + 1`` rows staged, so ``STAGES`` must exceed ``AHEAD``.

Round 88 (H200, bf16 x, float32 weights and bias). In the probe (GPU runs 681-682, 32768 rows, us a call in turns with
the rule before, cuDNN and a copy of the same bytes): LayerNorm at 65536 columns 2268 against 2742 (x1.21, 89.0% of
the copy; cuDNN 11849), at 32768 1135 against 1189 (x1.05); RMSNorm at 65536 2170 against 2276 (x1.05, 93.5%).
Slices of 16384 at 8 compute warps; 16 warps ran x0.97-0.99 of 8 (LayerNorm's two rows ahead x0.88-0.93), slices of
8192 x0.69-0.83 of 16384 (a step's fixed cost, the row's reductions and the sums' trip, paid on half the bytes);
statistics published one row ahead and fetched after the publish (round 86's backward's order) x0.95 at LayerNorm's
65536. As landed (``bench.ab``, run 683)
at 65536 only: LayerNorm x1.17 at 4096-32768 rows (x1.01-1.03 without a bias, whose chunked forward reads no bias
again), RMSNorm x1.05-1.09; at 32768 the chunked forward is as fast or faster (LayerNorm x0.96-1.02). Where the
chunked forward runs at the copy's speed (RMSNorm at 32768, both at 16384) it stays. ``config._split_staged_fwd``
says where it is taken.

Round 93 (H200, GPU runs 707-709, in turns against round 91's kernel, ``bench.ab``). LayerNorm's slice statistics were
two reductions one after the other (the sum, then the squares about the slice's mean), each an exchange between the
warps through shared memory behind three CTA barriers; as one reduction of the threads' counts, means and squares
(``_publish_stats``, ``_chan``) the step has three barriers fewer, and at 32768 x 65536 (bf16 x, float32 weights and
bias) LayerNorm + clamped ReLU's forward ran x1.086-1.088, LayerNorm's x1.033; at 4096 x 65536 fp16 LayerNorm's
x1.043. One reduction of the sums of x - K and of its squares (K the slice's first element), the squares summed
again about the mean where those cancel by more than 64x, ran x0.821 in the fused forward (x1.040 without that
fallback, which a far-out first element needs: the sums then cancel by up to the slice's count).

Round 94 (H200, GPU runs 710-714, ``bench.ab`` in turns against round 93's). LayerNorm + clamped ReLU's training
forward made its mask in the compute warps' step (the bits' compares and packing, and a byte store a thread); now the
compute warps write the clamped y over the row's stage and a partition of 4 warps of its own (``_fwd_masker``) stores
y and the mask's bytes from it and releases the stage: x1.036 at 32768 x 65536 (bf16 x, float32 weights and bias;
its time 1.075x the plain forward's, 1.114x before), x1.037 at 4096 rows, x1.024 at 8192 rows of bf16 weights,
x1.017 at 8192 of fp16 x with float32 weights. The compute warps wait at a CTA barrier before they write y over the
stage (its x read by all of them first): Nsight Compute's warp sampling (run 714, 8192 x 65536) put 10.6% of the
kernel's samples there. The same partition for the masked backward's dy (``norm_bwd_staged``) ran x0.970-0.976.
LayerNorm's split staged forward at 32768 columns with a bias and float32 weights, two slices a row (round 88 had it
x0.96-1.02 before round 93's statistics): x1.063 / x1.145 / x1.063 / x1.045 (the training forward, the fused one,
the inference calls of both) at 32768 rows, x1.026-1.091 at 4096, x1.039 / x1.119 at 8192 of fp16 x with float32
weights; without a bias x0.970 / x0.992 (32768 / 8192 rows) and with 16-bit weights x0.989-1.009, which keep the
chunked forward.

Round 95 (H200, GPU runs 718-725, ``bench.ab`` in turns against round 94's). Of bf16 x, the fused training forward's
clamped y goes into 2 slots of shared memory of its own (``Y_SLOTS``; ``config.split_staged_fwd_y_slots``) rather
than over x's stage, and the compute warps store y from their registers and release x's stage themselves; the mask
partition reads y from its slot, stores the mask and frees the slot. No CTA barrier then stands between the compute
warps' reads of x and their writes of y (the kernel's barriers 36 -> 33). Float32 weights: x1.015-1.016 / x1.014 /
x1.013 at 32768 / 8192 / 4096 rows of 65536 (runs 722-723; its time 1.060x the plain forward's at 32768 rows), the
slots with the mask partition still storing y x1.011 / x1.008 / x1.006 and x1.043 at 32768 x 32768 (runs 718, 720);
bf16 weights x1.011 / x1.006 at 32768 / 8192 rows (those slots). Of fp16 x: x0.988-0.994 with fp16 weights,
x0.999-1.001 with float32 weights (x0.995-1.000 with y stored by the compute warps, run 724): y stays over x's stage
there. Releasing x's stage right after its reads (before y is worked out and stored) ran x0.93-0.97 in the plain
forward; the split staged backward's stage released after its reads of x and dy, x0.91-0.96 (``norm_bwd_staged``);
the mask partition releasing x's stage too, so that the compute warps' step ends on one arrive and its barrier
rather than two, level (x0.997-1.001, run 725).

Round 96 (H200, GPU runs 726-728, in turns against round 95's). Where y has slots of its own, the mask partition has
the TMA store y from the slot (one thread issues it as the partition starts the row's mask; the slot is freed once the
TMA has read it), so the compute warps store no y from their registers: x1.008-1.011 at 4096-32768 rows of 65536
(bf16 x, float32 weights; the fused forward's time 1.051x the plain forward's at 32768 rows), x1.001 at 32768 x 32768.
The same of fp16 x, from x's stage (y over it): x0.982-0.983, not taken. The forward's statistics published a warp
each (the split staged backward's ``WARP_SUMS``): x0.966-0.998 (bf16 x), x1.022 fused fp16 x: not taken.

Round 97 (H200, GPU runs 729-730, in turns against round 96's). Where the TMA stores y, the mask partition gives x's
stage back to the load warp as soon as ``ydone`` says the compute warps are done with it; their step ends on one fence
and one arrive: x1.004 / x1.006 at 32768 / 8192 rows of 65536 (x1.006 as landed), the fused forward's time 1.042x /
1.043x the plain forward's at 32768 x 65536 (runs 729 / 730).
"""

from __future__ import annotations

from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import fence_async_shared, mbarrier, tma
from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

from .norm_bwd_staged import (
    COLUMNS,
    LOADER_REGISTERS,
    _fetch_sums,
    _global_weights,
    _offsets,
    _pack_sums,
    _slices_sums,
    _split_program,
    _stage_barriers,
    box_descriptor,
    layout,
    mask_layout,
    slices_constexprs,
)

MASKER_WARPS = gl.constexpr(4)  # the fused forward's mask partition (``_fwd_masker``)
MASKER_REGISTERS = gl.constexpr(40)  # its registers a thread
MASK_CHUNK = gl.constexpr(8)  # its rows of 256 a load, seen as a part (``layout``) and as mask bytes (``mask_layout``)
MASK_CHUNK_LAYOUT = gl.constexpr(layout(MASK_CHUNK.value, MASKER_WARPS.value))
MASK_BYTES_LAYOUT = gl.constexpr(mask_layout(MASK_CHUNK.value, MASKER_WARPS.value))


@gluon.jit
def _fwd_loader(xd, xs, ready, empty, group, groups, part, my_rows, SR: gl.constexpr, VALID: gl.constexpr,
                STAGES: gl.constexpr, AHEAD: gl.constexpr):  # fmt: skip
    """The load warp: the program's slice of its i-th row into stage ``i % STAGES``, and its last row ``AHEAD`` times
    more (the compute warps publish ``AHEAD`` rows ahead)."""
    for i in range(my_rows + AHEAD):
        stage = i % STAGES
        mbarrier.wait(empty.index(stage), ((i // STAGES) & 1) ^ 1)
        first = (group + gl.minimum(i, my_rows - 1) * groups) * VALID + part * SR
        bar = ready.index(stage)
        mbarrier.expect(bar, SR * 256 * xd.dtype.primitive_bitwidth // 8)
        tma.async_copy_global_to_shared(xd, [first, 0], bar, xs.index(stage))


@gluon.jit
def _fwd_masker(ys, ydone, yfree, empty, yd, Y, MASK, N, lower, upper, group, groups, part, my_rows, SR: gl.constexpr,
                VALID: gl.constexpr, SLOTS: gl.constexpr, Y_SLOTS: gl.constexpr, STAGES: gl.constexpr):  # fmt: skip
    """LayerNorm + clamped ReLU's training forward, its mask partition (4 warps): each row's clamped y, which the
    compute warps wrote into its slot of ``ys`` (``ydone``; ``SLOTS`` slots), read ``MASK_CHUNK`` rows of 256 at a
    time and its mask's bytes stored to ``MASK`` (8 columns a thread: one byte; bit ``j`` set where ``lower < y <
    upper`` for y as stored, compared in float32 as ``ops.mask_thresholds`` defines it); then the slot released
    (``yfree``). Where y has ``Y_SLOTS`` slots of its own, this partition has the TMA store y from its slot (``yd``,
    y's descriptor) as it makes the mask, and the slot goes back to the compute warps once the TMA has read it; x's
    stage (``empty``, ``STAGES`` of them) goes back to the load warp as soon as ``ydone`` says the compute warps are
    done with it (round 97); else (``ys`` x's stages, y written over x's, ``yfree`` their ``empty``) it stores y to
    ``Y`` from its registers and the stage goes back to the load warp."""
    L: gl.constexpr = MASK_CHUNK_LAYOUT
    L3: gl.constexpr = MASK_BYTES_LAYOUT
    SN: gl.constexpr = SR * 256
    bit = 1 << gl.arange(0, 8, layout=gl.SliceLayout(0, gl.SliceLayout(1, L3)))
    offsets = _offsets(0, MASK_CHUNK, L)
    rows3 = gl.arange(0, MASK_CHUNK, layout=gl.SliceLayout(1, gl.SliceLayout(2, L3)))
    cols3 = gl.arange(0, 32, layout=gl.SliceLayout(0, gl.SliceLayout(2, L3)))
    bytes_at = rows3[:, None] * 32 + cols3[None, :]
    for i in range(my_rows):
        slot = i % SLOTS
        row = group + i * groups
        mbarrier.wait(ydone.index(slot), (i // SLOTS) & 1)
        if Y_SLOTS == 0:  # y stored from the registers
            y_row = Y + row.to(gl.int64) * N + part * SN
        mask_row = MASK + row.to(gl.int64) * (N // 8) + part * (SN // 8)
        if Y_SLOTS > 0:  # y from its slot by the TMA (y's rows of 256 as x's: the load warp's coordinates)
            mbarrier.arrive(empty.index(i % STAGES), count=1)  # x's stage: the compute warps read it before ydone
            tma.async_copy_shared_to_global(yd, [row * VALID + part * SR, 0], ys.index(slot))
        for r in gl.static_range(0, SR, MASK_CHUNK):
            y = ys.index(slot).slice(r, MASK_CHUNK, dim=0).load(L)
            if Y_SLOTS == 0:
                gl.store(y_row + r * 256 + offsets, y)
            yf = gl.convert_layout(gl.reshape(y.to(gl.float32), [MASK_CHUNK, 32, 8]), L3, assert_trivial=True)
            keep = (yf > lower) & (yf < upper)
            packed = gl.sum(gl.where(keep, bit[None, None, :], 0), axis=2)
            gl.store(mask_row + r * 32 + bytes_at, packed.to(gl.uint8))
        if Y_SLOTS == 0:
            fence_async_shared()  # the reads above (the generic proxy) before the TMA's next writes into the stage
        else:
            tma.store_wait(0)  # the TMA done reading the slot
        mbarrier.arrive(yfree.index(slot), count=1)


@gluon.constexpr_function
def _thread_layout(L):
    """A slice's ``[SR, 256]`` in ``L`` (the warps down its rows, 8 columns a thread: ``norm_bwd_staged.layout``)
    seen as ``[warps, SR / warps, 32, 8]``: the same registers, a thread's elements along the second and last axes."""
    warps = L.warps_per_cta[0]
    return gl.BlockedLayout([1, L.size_per_thread[0], 1, 8], [1, 1, 32, 1], [warps, 1, 1, 1], [3, 2, 1, 0])


@gluon.jit
def _chan(na, ma, qa, nb, mb, qb):
    """Two sets' counts, means and sums of squares about their means as those of their union (Chan, Golub and LeVeque:
    the squares about the union's mean are both sets' plus ``(mb - ma)^2 na nb / n``)."""
    n = na + nb
    delta = mb - ma
    share = nb / n
    return n, ma + delta * share, qa + qb + delta * delta * (na * share)


@gluon.jit
def _publish_stats(xs, slot, L: gl.constexpr, IS_RMS: gl.constexpr):
    """A row's slice statistics (RMSNorm: its sum of squares; LayerNorm: its sum and its sum of squares about its own
    mean), packed, published to ``slot`` and returned."""
    x = xs.load(L).to(gl.float32)
    if IS_RMS:
        s1 = gl.sum(gl.sum(x * x, axis=1), axis=0)
        s2 = s1 * 0.0
    else:
        # each thread's mean of its elements and their squares about it, from its registers; then the threads' as one
        # reduction of counts, means and squares (``_chan``): one exchange between the warps, where the sum and then
        # the squares about the slice's mean took two, one after the other
        SR: gl.constexpr = x.shape[0]
        L4: gl.constexpr = _thread_layout(L)
        x4 = gl.convert_layout(gl.reshape(x, [L4.warps_per_cta[0], L4.size_per_thread[1], 32, 8]), L4,
                               assert_trivial=True)  # fmt: skip
        EACH: gl.constexpr = L4.size_per_thread[1] * 8
        m = gl.sum(gl.sum(x4, axis=3), axis=1) * (1.0 / EACH)
        d = x4 - gl.expand_dims(gl.expand_dims(m, 1), 3)
        q = gl.sum(gl.sum(d * d, axis=3), axis=1)
        n = gl.full(m.shape, EACH, gl.float32, m.type.layout)
        n, m, q = gl.reduce((n, m, q), 1, _chan)
        n, m, q = gl.reduce((n, m, q), 0, _chan)
        s1 = m * (SR * 256)
        s2 = q
    own = _pack_sums(s1, s2)
    gl.atomic_xchg(slot, own, sem="relaxed")
    return own


@gluon.jit
def _row_stats(fetched, slots, own, parts, part, others, N, eps, SN: gl.constexpr, PARTS: gl.constexpr,
               MAX_POLLS: gl.constexpr, IS_RMS: gl.constexpr):  # fmt: skip
    """A row's mean (0.0 for RMSNorm) and rstd from its slices' statistics (``norm_bwd_staged._slices_sums``: the
    program's own, ``own``, and the others', ``fetched`` and polled for where missing). LayerNorm's variance: the
    slices' sums of squares about their means plus ``SN`` times the squares of their means' distances from the
    row's."""
    s1, s2 = _slices_sums(fetched, slots, own, parts, part, others, PARTS, MAX_POLLS)
    if IS_RMS:
        mean = 0.0
        var = gl.sum(s1, axis=0) / N
    else:
        mean = gl.sum(s1, axis=0) / N
        apart = gl.where(parts < PARTS, s1 / SN - mean, 0.0)
        var = (gl.sum(s2, axis=0) + SN * gl.sum(apart * apart, axis=0)) / N
    return mean, gl.rsqrt(var + eps)


@gluon.jit
def _clamp_16(v, lower, upper, L: gl.constexpr):
    """``clamp(v, lower, upper)`` of a float16 or bfloat16 slice (y as stored), NaN kept, two elements an instruction
    (``norm_fwd._clamp_16``'s: the same values as clamping the float32 y and rounding after)."""
    lo = gl.full(v.shape, lower, gl.float32, L).to(v.dtype)
    hi = gl.full(v.shape, upper, gl.float32, L).to(v.dtype)
    if v.dtype == gl.bfloat16:
        asm: gl.constexpr = "max.NaN.bf16x2 $0, $1, $2; min.NaN.bf16x2 $0, $0, $3;"
    else:
        asm: gl.constexpr = "max.NaN.f16x2 $0, $1, $2; min.NaN.f16x2 $0, $0, $3;"
    return gl.inline_asm_elementwise(asm, "=r,r,r,r", [v, lo, hi], dtype=v.dtype, is_pure=True, pack=2)


@gluon.jit
def _round_and_clamp(y, out_dtype: gl.constexpr, lower, upper, L: gl.constexpr):
    """The clamped ReLU of a slice's float32 y, stored as ``out_dtype``: y rounded, then ``clamp(y, lower, upper)`` on
    16-bit pairs, NaN kept (``_clamp_16``)."""
    return _clamp_16(y.to(out_dtype), lower, upper, L)


@gluon.jit
def _fwd_compute(xs, ready, empty, ys, ydone, yfree, W, B, Y, MEAN, RSTD, SUMS, N, eps, lower, upper, group,
                 groups, part, my_rows, SR: gl.constexpr, L: gl.constexpr, PL: gl.constexpr, PARTS: gl.constexpr,
                 PARTS_P2: gl.constexpr, STAGES: gl.constexpr, AHEAD: gl.constexpr, ZERO_CENTERED: gl.constexpr,
                 IS_RMS: gl.constexpr, HAS_BIAS: gl.constexpr, MAX_POLLS: gl.constexpr, TRAINING: gl.constexpr,
                 CLAMP_MASK: gl.constexpr, MASK_APART: gl.constexpr, SLOTS: gl.constexpr,
                 Y_SLOTS: gl.constexpr):  # fmt: skip
    """The compute warps: the slice's weights (and bias) read once; each step publishes the statistics of the row
    ``AHEAD`` ahead, works out this row's from the group's, stores its y (part 0 its mean and rstd where
    ``TRAINING``; with ``CLAMP_MASK`` y clamped) and releases its stage. With ``MASK_APART`` (the clamped ReLU's
    training forward) it writes the clamped y into slot ``i % SLOTS`` of ``ys`` instead and signals ``ydone``: the
    mask partition makes the mask from it, stores y and releases x's stage. Where y has ``Y_SLOTS`` slots of its own,
    the compute warps wait for their slot (``yfree``): no CTA barrier then stands between their reads of x and their
    writes of y, and the mask partition stores y from the slot by the TMA. Without (``Y_SLOTS`` 0) ``ys`` is x's
    stages: y is written over x's."""
    SN: gl.constexpr = SR * 256
    # these warps store y to global memory (the clamped ReLU's training forward: its mask partition does)
    STORES_Y: gl.constexpr = not MASK_APART
    parts = gl.arange(0, PARTS_P2, layout=PL)
    others = (parts < PARTS) & (parts != part)
    offsets = _offsets(0, SR, L)
    col0 = part * SN
    w = _global_weights(W + col0, offsets, ZERO_CENTERED)
    b = w  # a placeholder where there is no bias, not read
    if HAS_BIAS:
        b = gl.load(B + col0 + offsets).to(gl.float32)
    mbarrier.wait(ready.index(0), 0)
    own = _publish_stats(xs.index(0), SUMS + group.to(gl.int64) * PARTS + part, L, IS_RMS)
    own_next = own
    if AHEAD == 2:
        second = group + gl.minimum(1, my_rows - 1) * groups
        mbarrier.wait(ready.index(1), 0)
        own_next = _publish_stats(xs.index(1), SUMS + second.to(gl.int64) * PARTS + part, L, IS_RMS)
    fetched = _fetch_sums(SUMS + group.to(gl.int64) * PARTS, parts, others)
    for i in range(my_rows):
        row = group + i * groups
        stage = i % STAGES
        slots = SUMS + row.to(gl.int64) * PARTS
        # the row AHEAD ahead (the last row again at the last steps: the same bits)
        ahead = group + gl.minimum(i + AHEAD, my_rows - 1) * groups
        ahead_stage = (i + AHEAD) % STAGES
        if AHEAD == 2:  # the next row's sums fetched now, used a step later
            following = group + gl.minimum(i + 1, my_rows - 1) * groups
            fetched_next = _fetch_sums(SUMS + following.to(gl.int64) * PARTS, parts, others)
        else:  # this row's fetched before the next row's publish
            fetched = _fetch_sums(slots, parts, others)
            fetched_next = fetched
        mbarrier.wait(ready.index(ahead_stage), ((i + AHEAD) // STAGES) & 1)
        own_ahead = _publish_stats(xs.index(ahead_stage), SUMS + ahead.to(gl.int64) * PARTS + part, L, IS_RMS)
        mean, rstd = _row_stats(fetched, slots, own, parts, part, others, N, eps, SN, PARTS, MAX_POLLS, IS_RMS)
        x = xs.index(stage).load(L)
        if IS_RMS:
            xhat = x.to(gl.float32) * rstd
        else:
            xhat = (x.to(gl.float32) - mean) * rstd
        y = xhat * w
        if HAS_BIAS:
            y += b
        if MASK_APART and Y_SLOTS > 0:  # y's slot free (the mask partition done with its row before)
            mbarrier.wait(yfree.index(i % SLOTS), ((i // SLOTS) & 1) ^ 1)
        if CLAMP_MASK:
            y = _round_and_clamp(y, x.dtype, lower, upper, L)
        if MASK_APART:  # y clamped into its slot: the mask partition makes its mask (``_fwd_masker``; stores y too
            # where y has no slots of its own)
            ys.index(i % SLOTS).store(y)
        if STORES_Y:
            gl.store(Y + row.to(gl.int64) * N + col0 + offsets, y.to(x.dtype))
        if TRAINING and part == 0:
            gl.store(RSTD + row, rstd)
            if not IS_RMS:
                gl.store(MEAN + row, mean)
        if MASK_APART:  # the mask partition releases x's stage (``_fwd_masker``)
            if Y_SLOTS > 0:
                fence_async_shared()  # y's writes and x's reads (the generic proxy) before the TMA's read and writes
            mbarrier.arrive(ydone.index(i % SLOTS), count=1)
        else:
            fence_async_shared()  # the reads above (the generic proxy) before the TMA's writes into the stage
            mbarrier.arrive(empty.index(stage), count=1)
        if AHEAD == 2:
            own, own_next = own_next, own_ahead
        else:
            own = own_ahead
        fetched = fetched_next


@gluon.jit
def split_staged_fwd_kernel(
    xd, yd, W, B, Y, MEAN, RSTD, MASK, SUMS, M, N, eps, lower, upper,
    SR: gl.constexpr, L: gl.constexpr, PL: gl.constexpr, PARTS: gl.constexpr, PARTS_P2: gl.constexpr,
    VALID: gl.constexpr, STAGES: gl.constexpr, AHEAD: gl.constexpr, ZERO_CENTERED: gl.constexpr, IS_RMS: gl.constexpr,
    HAS_BIAS: gl.constexpr, MAX_POLLS: gl.constexpr, TRAINING: gl.constexpr, CLAMP_MASK: gl.constexpr,
    Y_SLOTS: gl.constexpr,
):  # fmt: skip
    """RMSNorm's or LayerNorm's y ``[M, N]`` (rows contiguous), rstd and mean ``[M]`` (float32) of rows split in
    ``PARTS`` slices of ``SR`` rows of 256, ``groups`` = programs / PARTS groups of programs (every program of the grid
    runs at once: one a SM). ``xd``: x's descriptor (``descriptor``); ``yd``: y's (the fused training forward's where
    y has slots of its own; else a placeholder, x's). ``W``, ``B``: the weights and bias (contiguous;
    ``B`` is ``W`` without a bias, not read). ``MEAN``: RMSNorm passes ``RSTD``, not written. Not ``TRAINING`` (an
    inference call, y alone): neither statistic is stored, ``MEAN`` and ``RSTD`` placeholders (y). ``CLAMP_MASK``
    (LayerNorm + clamped ReLU): y clamped to ``[lower, upper]`` and, where ``TRAINING``, the packed mask stored in
    ``MASK`` (uint8 ``[M, N / 8]``, rows contiguous; else a placeholder, y) by a partition of 4 warps of their own
    (``_fwd_masker``: its bits from y as stored), the compute warps writing the clamped y into ``Y_SLOTS`` slots of
    shared memory of its own, or over x's stage where ``Y_SLOTS`` is 0. ``SUMS``: int64 ``[M, PARTS]``, filled with
    ``SENTINEL`` before the launch."""
    groups, part, group, my_rows = _split_program(M, PARTS)
    xs = gl.allocate_shared_memory(xd.dtype, [STAGES, SR, 256], xd.layout)
    ready, empty = _stage_barriers(STAGES)
    MASK_APART: gl.constexpr = CLAMP_MASK and TRAINING  # the fused training forward's mask partition
    # its slots of y and their barriers (y over x's stages, ``yfree`` their ``empty``, without slots of its own);
    # placeholders without it
    ys, ydone, yfree = xs, ready, empty
    SLOTS: gl.constexpr = Y_SLOTS if Y_SLOTS > 0 else STAGES
    if MASK_APART:
        if Y_SLOTS > 0:
            ys = gl.allocate_shared_memory(xd.dtype, [Y_SLOTS, SR, 256], xd.layout)
            ydone, yfree = _stage_barriers(Y_SLOTS)
        else:  # (as round 94's kernel allocates them: its machine code unchanged)
            ydone = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
            for st in gl.static_range(STAGES):
                mbarrier.init(ydone.index(st), count=1)
    # each partition's arguments written out in both calls: a tuple held in a variable cannot carry the layouts
    if MASK_APART:
        gl.warp_specialize(
            [
                (_fwd_compute, (xs, ready, empty, ys, ydone, yfree, W, B, Y, MEAN, RSTD, SUMS, N, eps, lower, upper,
                                group, groups, part, my_rows, SR, L, PL, PARTS, PARTS_P2, STAGES, AHEAD,
                                ZERO_CENTERED, IS_RMS, HAS_BIAS, MAX_POLLS, TRAINING, CLAMP_MASK, MASK_APART,
                                SLOTS, Y_SLOTS)),
                (_fwd_loader, (xd, xs, ready, empty, group, groups, part, my_rows, SR, VALID, STAGES, AHEAD)),
                (_fwd_masker, (ys, ydone, yfree, empty, yd, Y, MASK, N, lower, upper, group, groups, part, my_rows,
                               SR, VALID, SLOTS, Y_SLOTS, STAGES)),
            ],
            [1, MASKER_WARPS], [LOADER_REGISTERS, MASKER_REGISTERS],
        )  # fmt: skip
    else:
        gl.warp_specialize(
            [
                (_fwd_compute, (xs, ready, empty, ys, ydone, yfree, W, B, Y, MEAN, RSTD, SUMS, N, eps, lower, upper,
                                group, groups, part, my_rows, SR, L, PL, PARTS, PARTS_P2, STAGES, AHEAD,
                                ZERO_CENTERED, IS_RMS, HAS_BIAS, MAX_POLLS, TRAINING, CLAMP_MASK, MASK_APART,
                                SLOTS, Y_SLOTS)),
                (_fwd_loader, (xd, xs, ready, empty, group, groups, part, my_rows, SR, VALID, STAGES, AHEAD)),
            ],
            [1], [LOADER_REGISTERS],
        )  # fmt: skip


def constexprs(n: int, slice_n: int, num_warps: int, stages: int, ahead: int, zero_centered: bool, is_rms: bool,
               has_bias: bool, max_polls: int, training: bool = True, clamp_mask: bool = False,
               y_slots: int = 0) -> dict:  # fmt: skip
    """``split_staged_fwd_kernel``'s constexpr arguments for rows of n columns in slices of ``slice_n``, ``stages``
    rows in flight, the statistics published ``ahead`` rows ahead (``norm_bwd_staged.slices_constexprs``); not
    ``training``: y alone (an inference call); ``clamp_mask``: LayerNorm + clamped ReLU (and its mask where
    ``training``); ``y_slots``: the clamped ReLU's training forward's y in that many slices of shared memory of its
    own (0: over x's stage)."""
    if clamp_mask and is_rms:
        raise ValueError("clamp_mask is LayerNorm's (LayerNorm + clamped ReLU), not RMSNorm's")
    if y_slots < 0 or (y_slots and not (clamp_mask and training)):
        raise ValueError(f"y_slots ({y_slots}) are the clamped ReLU's training forward's: 0 or more, with its mask")
    values = slices_constexprs(n, slice_n, num_warps, stages, ahead)
    flags = dict(ZERO_CENTERED=zero_centered, IS_RMS=is_rms, HAS_BIAS=has_bias, MAX_POLLS=max_polls)
    return values | flags | dict(TRAINING=training, CLAMP_MASK=clamp_mask, Y_SLOTS=y_slots)


def descriptor(x, slice_rows: int) -> TensorDescriptor:
    """x's descriptor (rows contiguous, viewed as ``[M * N / 256, 256]``), its box a slice (``[slice_rows, 256]``):
    the kernel's first argument."""
    m, n = x.shape
    return box_descriptor(x.view(m * n // COLUMNS, COLUMNS), slice_rows)
