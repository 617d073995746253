"""RMSNorm's and LayerNorm's backward by the staged Gluon kernel (``normkit/triton/norm_bwd_staged.py``): where the
rules take it,
how it cuts a row, that it compiles for a Hopper GPU on a machine without one, and its answers on the GPU, at the
rules' shapes and, forced, at odd ones."""

import contextlib
import itertools
import types
from pathlib import Path

import pytest
import torch
from test_kernels import backward_call, check_backward, compiled_on_the_cpu, dram_rules, make_inputs

from normkit import reference
from normkit.testing import compare
from normkit.triton import config
from normkit.triton.config import LaunchConfig

KERNEL_FILE = Path(__file__).resolve().parents[1] / "normkit" / "triton" / "norm_bwd_staged.py"
HOPPER_SHARED_MEMORY = 232448  # bytes of shared memory a program may have on an H100 or H200 (227 KB)


def _staged(m, n, **flags):
    args = dict(has_dbias=False, is_rms=True, tma=True, staged=True) | flags
    return config.bwd_config(m, n, args.pop("has_dbias"), **args).staged


def _rules_that_stage(n, has_dbias):
    """The DRAM rules under which RMSNorm's backward at n columns takes the staged kernel on any GPU: slower DRAM's at
    ``config.STAGED_RMS_SLOWER_DRAM_N``'s widths (``test_kernels.dram_rules``), an H200's at
    ``config.STAGED_RMS_LONG_CALL_DB_BWD_N``'s with dB, elsewhere the GPU's own."""
    if n in config.STAGED_RMS_SLOWER_DRAM_N[has_dbias]:
        return dram_rules(slower=True)
    if has_dbias and n in config.STAGED_RMS_LONG_CALL_DB_BWD_N:
        return dram_rules(slower=False)
    return contextlib.nullcontext()


def test_staged_rule():
    """RMSNorm's backward, 16-bit x and weights, at 10240 and 12288-15872 columns (``STAGED_BWD_N``) from 2048 rows,
    where the staged kernel can run (``staged``), with dB (a bias) too since round 114, and at 10752-11776
    (``STAGED_RMS_MID_BWD_N``, round 117); nowhere else (LayerNorm's: the test below). Without dB at 10240 bf16 x only:
    fp16 x takes the pointer kernel's head and tail tiles, not the TMA either (round 84); with dB fp16 x there too. At
    12288 fp16 x keeps the staged kernel (round 85: both head-and-tail launches slower there)."""
    for n in config.STAGED_BWD_N:
        for m in (2048, 4096, 32768):
            assert _staged(m, n), (m, n)
        assert not _staged(2047, n), n
        assert not _staged(4096, n, staged=False), n
        assert _staged(4096, n, has_dbias=True) and not _staged(2047, n, has_dbias=True), n
        assert not _staged(4096, n, has_mask=True), n
        assert not _staged(4096, n, w_bytes=4) and not _staged(4096, n, w_bytes=4, has_dbias=True), n
        assert not _staged(4096, n, x_bytes=4), n
    for n in (4608, 5120, 8192, 8704, 9728, 12032, 13056, 15616, 16128):
        assert not _staged(4096, n) and not _staged(4096, n, slower_dram=True), n
        db_only = n in config.STAGED_RMS_DB_ONLY_BWD_N
        assert _staged(4096, n, has_dbias=True, slower_dram=True) == db_only, n
        assert _staged(4096, n, has_dbias=True) == (db_only and n != 9728), n  # 9728 on slower DRAM only
    assert config.STAGED_RMS_SLOWER_DRAM_N[True] == (5632, 9728)
    for n in config.STAGED_RMS_DB_ONLY_BWD_N:  # with dB only (round 118), 8 compute warps and 3 stages
        slower = n == 9728  # not on an H200 (x0.978 there, GPU run 842)
        db = dict(has_dbias=True, slower_dram=True)
        assert _staged(2048, n, **db) and _staged(32768, n, **db, x_fp16=False), n
        assert _staged(2048, n, has_dbias=True) == _staged(32768, n, has_dbias=True) == (not slower), n
        assert not _staged(2047, n, **db) and not _staged(4096, n, **db, w_bytes=4), n
        assert not _staged(4096, n, slower_dram=True) and not _staged(32768, n, x_fp16=False, slower_dram=True), n
        assert config.bwd_config(4096, n, True, is_rms=True, tma=True, staged=True, slower_dram=True).num_warps == 8
        assert config.staged_stages(n, True, True) == 3 and config.staged_stages(n, True, False) == 2, n
    for n in config.STAGED_RMS_MID_BWD_N:  # round 117; without dB at 10752 on slower DRAM only (x0.942 on an H200)
        for has_dbias in (False, True):
            flags = dict(has_dbias=has_dbias, slower_dram=True)
            assert _staged(2048, n, **flags) and _staged(32768, n, **flags, x_fp16=False), n
            assert not _staged(2047, n, **flags) and not _staged(4096, n, **flags, w_bytes=4)
            on_h200 = has_dbias or n != 10752
            assert _staged(2048, n, has_dbias=has_dbias) == _staged(32768, n, has_dbias=has_dbias) == on_h200, n
        assert config.bwd_config(4096, n, True, is_rms=True, tma=True, staged=True).num_warps == 8, n
    assert config.STAGED_RMS_SLOWER_DRAM_N[False] == (10752,)
    h200 = config.bwd_config(4096, 10752, False, is_rms=True, tma=True, staged=True, x_fp16=True)
    assert not h200.staged and h200.tma and h200.tail_n == 4096  # the TMA's head and tail tiles, as before round 117
    # 16384-65536: the split staged kernel, each row in slices (``test_split_staged_rule``)
    assert config.bwd_config(4096, 16384, False, is_rms=True, tma=True, staged=True).parts == 2
    head_tail = LaunchConfig(1, 8192, 1, 8, 1, tail_n=2048)
    for m in (2048, 4096, 32768):
        assert config.bwd_config(m, 10240, False, is_rms=True, tma=True, staged=True, x_fp16=True) == head_tail, m
        assert _staged(m, 12288, x_fp16=True) and _staged(m, 10240, x_fp16=False), m
    fp32_weights = config.bwd_config(32768, 10240, False, is_rms=True, tma=True, staged=True, x_fp16=True, w_bytes=4)
    assert fp32_weights.tma  # float32 weights keep the TMA there, dB the staged kernel (the pointer rule is without's)
    assert _staged(32768, 10240, has_dbias=True, x_fp16=True)
    with config.limits(rms_bwd_staged_min_m=4097):
        assert not _staged(4096, 13312) and _staged(4097, 13312)
        assert _staged(4096, 5632)  # the short rows' own limit


def test_staged_rule_at_short_rows():
    """RMSNorm's backward at its short rows, 5632-7680 (``STAGED_RMS_SHORT_BWD_N``), from 2560 rows at 5632-6656 and
    from 4096 at 7168-7680: 4 compute warps and 3 stages where the long rows take 8 and 2; with the same conditions as
    the long rows otherwise. With dB (a bias) at 5632 and 6144 only, at 8 warps (round 118), from 4096 rows (round
    119), 5632 on slower DRAM only (x0.93-0.95 on an H200, GPU runs 843-844); at 7168 / 7680 too from 24576 rows on an
    H200's DRAM only (round 120: x1.015-1.043 there, the H100 x0.94-0.99 at 4096 rows)."""
    assert config.STAGED_RMS_SHORT_BWD_N == tuple(range(5632, 7681, 512))
    for n in config.STAGED_RMS_SHORT_BWD_N:
        fewest = 2560 if n <= 6656 else 4096
        for m in (fewest, 4096, 16384, 32768):
            got = config.bwd_config(m, n, False, is_rms=True, tma=True, staged=True)
            assert got.staged and got.num_warps == 4 and got.block_n == n, (m, n)
        assert config.staged_stages(n, True, False) == 3, n
        assert not _staged(fewest - 1, n) and not _staged(2048, n), n
        assert not _staged(4096, n, staged=False) and not _staged(2048, n, has_dbias=True), n  # dB: x0.75 (round 114)
        slower = dict(slower_dram=True)
        with_db = config.bwd_config(4096, n, True, is_rms=True, tma=True, staged=True, x_fp16=n == 6144, **slower)
        assert with_db.staged == (n in config.STAGED_RMS_SHORT_DB_BWD_N), n  # x0.94-0.99 at 6656-7680 (round 118)
        on_h200 = config.bwd_config(32768, n, True, is_rms=True, tma=True, staged=True, x_fp16=False)
        assert on_h200.staged == (n in (6144, 7168, 7680)), n  # 5632 on slower DRAM only (round 119)
        if n in config.STAGED_RMS_LONG_CALL_DB_BWD_N:  # round 120: from 24576 rows, not on slower DRAM
            assert _staged(24576, n, has_dbias=True) and not _staged(24575, n, has_dbias=True), n
            assert not _staged(65536, n, has_dbias=True, **slower), n
            assert on_h200.num_warps == 8 and config.staged_stages(n, True, True) == 3, n
        elif n == 6656:
            assert not _staged(65536, n, has_dbias=True) and not _staged(65536, n, has_dbias=True, **slower)
        if with_db.staged:
            assert with_db.num_warps == 8 and config.staged_stages(n, True, True) == 3, n
            assert _staged(32768, n, has_dbias=True, **slower) and not _staged(4095, n, has_dbias=True, **slower), n
            assert not _staged(4096, n, has_dbias=True, w_bytes=4, **slower), n
            assert not _staged(4096, n, has_dbias=True, staged=False, **slower), n
        assert not _staged(4096, n, has_mask=True) and not _staged(4096, n, w_bytes=4), n
    for n in config.STAGED_BWD_N:
        assert config.bwd_config(4096, n, False, is_rms=True, tma=True, staged=True).num_warps == 8, n
        assert config.staged_stages(n, True, False) == 2, n
    with config.limits(rms_bwd_staged_short_min_m=8192):
        assert not _staged(4096, 6144) and _staged(8192, 6144)
        assert _staged(2048, 13312)  # the long rows' own limit
        assert _staged(4096, 7168) and not _staged(4095, 7680)  # 7168-7680's own limit
    with config.limits(rms_bwd_staged_7168_min_m=3072):
        assert _staged(3072, 7168) and _staged(3072, 7680) and not _staged(3071, 7680)
        assert _staged(2560, 6656) and not _staged(2559, 5632)
    with config.limits(rms_bias_bwd_staged_short_min_m=8192):
        assert _staged(8192, 6144, has_dbias=True) and not _staged(8191, 6144, has_dbias=True)
        assert _staged(2560, 5632) and not _staged(2559, 5632)  # without dB: its own limit
        assert not _staged(8192, 7168, has_dbias=True)  # 7168 / 7680's own limit
    with config.limits(rms_bias_bwd_staged_7168_min_m=4096):
        assert _staged(4096, 7168, has_dbias=True) and _staged(4096, 7680, has_dbias=True)
        assert not _staged(4095, 7680, has_dbias=True) and not _staged(4096, 6656, has_dbias=True)


def test_staged_rule_for_layer_norm():
    """LayerNorm's backward with dB, 16-bit x and weights, at 10752-15872 columns (``STAGED_LN_BWD_N``; 14848-15872
    since round 105) from 2048 rows, where the staged kernel can run; not with a mask, at RMSNorm's other widths or
    below the fewest rows. Its dB is summed by 4 warps of their own at 10752-11776, by the compute warps at 12288-15872
    (round 94: 12800-13824), the last part's (two parts') in shared memory at 14848-15872 (13824-14336:
    ``STAGED_DB_SHARED``); its row sums cross the warps through a scratch of its own at 14848-15872 only
    (``staged_pair_scratch``: with dB, LayerNorm's). Without dB, at every multiple of 512 from 10240 to 15872
    (``STAGED_LN_NO_DB_BWD_N``)."""
    ln = dict(is_rms=False, has_dbias=True)
    for n in config.STAGED_LN_BWD_N:
        for m in (2048, 4096, 32768):
            assert _staged(m, n, **ln), (m, n)
        assert not _staged(2047, n, **ln), n
        assert not _staged(4096, n, **ln, staged=False), n
        assert _staged(4096, n, **ln, has_mask=True) == (n in config.STAGED_MASKED_BWD_N), n  # 10240: round 110
        assert not _staged(4096, n, **ln, w_bytes=4), n
        assert not _staged(4096, n, **ln, x_bytes=4), n
    for n in (4352, 10496, 16384):
        assert not _staged(4096, n, **ln), n
    assert config.STAGED_LN_BWD_N[-3:] == (14848, 15360, 15872)
    widths = (12800, 13312, 13824, 14336, 14848, 15360, 15872)
    assert [config.staged_db_shared(n) for n in widths] == [0, 0, 2, 2, 1, 1, 1]
    assert [config.staged_pair_scratch(n, False, True) for n in widths] == [False] * 4 + [True] * 3
    assert not any(config.staged_pair_scratch(n, is_rms, has_dbias) for n in widths[4:] for is_rms, has_dbias in
                   ((False, False), (True, False), (True, True)))  # fmt: skip
    no_db = dict(is_rms=False, has_dbias=False)
    assert config.STAGED_LN_NO_DB_BWD_N == tuple(range(10240, 15873, 512))
    for n in config.STAGED_LN_NO_DB_BWD_N:
        assert _staged(2048, n, **no_db) and _staged(32768, n, **no_db) and not _staged(2047, n, **no_db), n
        assert _staged(4096, n, **no_db, has_mask=True) == (n in config.STAGED_MASKED_BWD_N), n
        assert not _staged(4096, n, **no_db, w_bytes=4), n
    for n in (4352, 10496):
        assert not _staged(4096, n, **no_db), n
    assert config.bwd_config(4096, 16384, False, tma=True, staged=True).parts == 2  # the split staged kernel's
    partitions = [config.staged_db_partition(n) for n in config.STAGED_LN_BWD_N]
    assert partitions == [(4, 104), (4, 104), (4, 112)] + [(0, 0)] * 8
    with config.limits(ln_bwd_staged_min_m=4097):
        assert not _staged(4096, 11776, **ln) and _staged(4097, 11776, **ln)
        assert _staged(4096, 12288)  # RMSNorm's own limit


def test_staged_rule_for_layer_norm_at_short_rows():
    """LayerNorm's backward at its short rows, every multiple of 512 from 4608 to 10240 (``STAGED_LN_SHORT_BWD_N``),
    with dB and without, from 2048 rows (round 101; 4608 and 5120 since round 102, with dB in calls too small for the
    TMA's head and tail tiles since round 103, ``STAGED_LN_FEW_ROWS_BWD_N``): 8 compute warps (RMSNorm's short rows
    4) and 3 stages, dB summed by the compute warps; without dB 10240 keeps its long-row form (2 stages). Not with a
    mask, float32 weights or x, nor where the staged kernel cannot run: those keep the rules before (head and tail
    tiles, the TMA, split rows)."""
    assert config.STAGED_LN_SHORT_BWD_N == tuple(range(4608, 10241, 512))
    for n in config.STAGED_LN_SHORT_BWD_N:
        for has_dbias in (True, False):
            ln = dict(is_rms=False, has_dbias=has_dbias)
            for m in (2048, 3000, 4096, 6144, 8192, 32768):
                got = config.bwd_config(m, n, has_dbias, is_rms=False, tma=True, staged=True)
                if has_dbias and n in config.STAGED_LN_FEW_ROWS_BWD_N and m > 6144:
                    assert not got.staged and got.tma and got.tail_n == 1024, (m, n)  # the TMA's head and tail
                    continue
                assert got.staged and got.num_warps == 8 and got.block_n == n and got.parts == 1, (m, n, has_dbias)
            assert config.staged_stages(n, False, has_dbias) == (2 if n == 10240 and not has_dbias else 3), n
            assert not _staged(2047, n, **ln) and not _staged(4096, n, **ln, staged=False), n
            assert _staged(4096, n, **ln, has_mask=True) == (n in config.STAGED_MASKED_BWD_N), n
            assert not _staged(4096, n, **ln, w_bytes=4), n
            assert not _staged(4096, n, **ln, x_bytes=4), n
        assert config.staged_db_partition(n) == (0, 0), n
        assert config.staged_warps(n, False, False) == config.staged_warps(n, False, True) == 8, n
    # RMSNorm's short rows; with dB in LayerNorm's short-row form (round 118)
    assert config.staged_warps(5632, True, False) == 4 and config.staged_stages(5632, True, False) == 3
    assert config.staged_warps(5632, True, True) == 8
    assert config.staged_stages(10240, True, False) == 2 and config.staged_stages(10752, False, True) == 2  # long rows
    assert config.staged_stages(3328, False, True) == 3  # a forced config's narrower rows: as before round 101
    with config.limits(ln_bwd_staged_min_m=4097):
        assert not _staged(4096, 6144, is_rms=False, has_dbias=True) and _staged(4097, 6144, is_rms=False)
    assert config.STAGED_LN_FEW_ROWS_BWD_N == (4608, 5120)
    # with dB in calls of fewer elements than the TMA's head and tail tiles take (7281 / 6553 rows); without dB in any
    for n, most in ((4608, 7281), (5120, 6553)):
        assert most * n < config.TMA_MIN_ELEMENTS_LAYER_NORM <= (most + 1) * n
        assert _staged(most, n, is_rms=False, has_dbias=True) and not _staged(most + 1, n, is_rms=False, has_dbias=True)
        assert config.bwd_config(most + 1, n, True, is_rms=False, tma=True, staged=True).tail_n == 1024, n
        assert _staged(4097, n, is_rms=False) and _staged(32768, n, is_rms=False), n


def test_staged_arguments():
    """What the staged kernel takes (``ops._staged_rows``): dy and x of one 16-bit dtype, rows contiguous and on 16
    bytes, 16-bit weights; weights not contiguous or not on 16 bytes are copied (``ops._tma_weights``)."""
    from normkit.triton import ops

    x = torch.randn(8, 512, dtype=torch.float16)
    w = torch.randn(512, dtype=torch.float16)
    assert ops._staged_rows(x.clone(), x, w)
    assert not ops._staged_rows(x.bfloat16(), x, w)  # dy of another dtype
    assert not ops._staged_rows(x.float(), x.float(), w.float())  # float32 rows
    assert not ops._staged_rows(x, x, w.float())  # float32 weights
    wide = torch.randn(8, 768, dtype=torch.float16)
    assert not ops._staged_rows(wide[:, :512], wide[:, :512], w)  # rows not contiguous
    shifted = torch.randn(8 * 512 + 1, dtype=torch.float16)[1:].view(8, 512)  # rows 2 bytes past 16
    assert not ops._staged_rows(x, shifted, w)
    assert ops._tma_weights(w) is w
    for weight in (torch.randn(1030, dtype=torch.float16)[1:1025], torch.randn(2048, dtype=torch.float16)[::2]):
        copy = ops._tma_weights(weight)
        assert copy.is_contiguous() and not copy.data_ptr() & 15 and torch.equal(copy, weight)


def _plan(m, n, zero_centered_gamma=False, staged=True, is_rms=True, has_dbias=None, dtype=torch.float16,
          has_mask=False):  # fmt: skip
    """The backward's plan of a call on the CPU (``ops._backward_plan``; x and weights fp16 unless ``dtype`` says
    otherwise; dB with LayerNorm unless ``has_dbias`` says otherwise; the clamped ReLU's mask where ``has_mask``)."""
    from normkit.triton import ops

    has_dbias = not is_rms if has_dbias is None else has_dbias
    key = (m, n, dtype, dtype, has_dbias, has_mask, is_rms, zero_centered_gamma, -1, True)
    return ops._backward_plan(*key, config.generation, 1, staged)


def test_staged_plan_by_the_gpus_dram():
    """RMSNorm's backward at 10752 without dB and at 5632 and 9728 with dB takes the staged kernel where the GPU's DRAM
    is slower than the H200's only (``config.STAGED_RMS_SLOWER_DRAM_N``, rounds 118-119): the plan asks
    ``config.slower_dram`` of x's device, and a plan worked out under one answer is not kept under the other."""
    pytest.importorskip("normkit.triton.norm_bwd_staged", reason="the staged kernel needs Triton 3.6")
    for n, has_dbias in ((10752, False), (5632, True), (9728, True)):
        assert not _plan(4096, n, has_dbias=has_dbias).cfg.staged, n
        with dram_rules(slower=True):
            assert config.slower_dram(-1)
            assert _plan(4096, n, has_dbias=has_dbias).cfg.staged, n
            other_form = _plan(4096, n, has_dbias=not has_dbias).cfg.staged
            assert other_form == (n != 9728), n  # 10752 with dB, 5632 without: on any GPU; 9728 without: on none
        assert not config.slower_dram(-1) and not _plan(4096, n, has_dbias=has_dbias).cfg.staged, n
    assert _plan(4096, 11264).cfg.staged and _plan(4096, 9216, has_dbias=True).cfg.staged  # on any GPU


def test_staged_plan():
    """The plan a staged launch gets (``ops._backward_plan``, worked out on the CPU too): one program a SM at most one
    a row, the row's parts and rows of 256, zero-centered gamma passed on."""
    pytest.importorskip("normkit.triton.norm_bwd_staged", reason="the staged kernel needs Triton 3.6")
    from normkit.triton import ops

    def values(got):
        return dict(zip(ops.STAGED_BWD.constexpr_names, got.values))

    assert not _plan(4096, 10240).cfg.staged and not _plan(4096, 10240).cfg.tma  # fp16 x (round 84)
    for n in config.STAGED_BWD_N + config.STAGED_RMS_SHORT_BWD_N:
        dtype = torch.bfloat16 if n == 10240 else torch.float16
        got = _plan(4096, n, dtype=dtype)
        assert got.cfg.staged, n
        assert [values(got)[k] for k in ("RA", "RB", "RC")] == ops.STAGED.parts(n)
        assert values(got)["VALID"] == n // 256
        assert values(got)["STAGES"] == config.staged_stages(n, True, False) == (3 if n <= 7680 else 2), n
        assert values(got)["LA"] == ops.STAGED.layout(ops.STAGED.parts(n)[0], got.cfg.num_warps), n
        assert values(_plan(4096, n, zero_centered_gamma=True, dtype=dtype))["ZERO_CENTERED"]
        assert not _plan(4096, n, staged=False, dtype=dtype).cfg.staged
        no_db = {"IS_RMS": True, "HAS_DBIAS": False, "DB_WARPS": 0, "DB_REGISTERS": 0, "DB_SHARED": 0,
                 "PAIR_SCRATCH": False}  # fmt: skip
        assert values(got) | no_db == values(got)
        if n not in config.STAGED_BWD_N:  # with dB at the short rows 5632 and 6144 from 4096 rows (rounds 118-119)
            assert not _plan(4095, n, has_dbias=True, dtype=dtype).cfg.staged, n
            with dram_rules(slower=True):  # 5632 on slower DRAM only (round 119)
                short_db = _plan(4096, n, has_dbias=True, dtype=dtype)
            assert _plan(4096, n, has_dbias=True, dtype=dtype).cfg.staged == (n == 6144), n
            assert short_db.cfg.staged == (n in config.STAGED_RMS_SHORT_DB_BWD_N), n
            if short_db.cfg.staged:  # LayerNorm's short-row form: 8 warps, 3 stages, dB in the compute warps
                assert short_db.cfg.num_warps == 8 and values(short_db)["LA"] == ops.STAGED.layout(16, 8), n
                assert values(short_db) | no_db | {"HAS_DBIAS": True} == values(short_db), n
                assert values(short_db)["STAGES"] == 3, n
            continue
        with_db = values(_plan(4096, n, has_dbias=True, dtype=dtype))  # RMSNorm's with dB (a bias, round 114)
        assert (with_db["IS_RMS"], with_db["HAS_DBIAS"], with_db["DB_WARPS"], with_db["PAIR_SCRATCH"]) == (
            True, True, 0, False), n  # fmt: skip
        assert with_db["DB_SHARED"] == config.STAGED_RMS_DB_SHARED.get(n, 0), n
    assert _plan(2048, 13312).programs == config.persistent_programs(-1, 2048, 1)
    db_forms = [(4, 104, 0), (4, 104, 0), (4, 112, 0), (0, 0, 0), (0, 0, 0), (0, 0, 0), (0, 0, 2), (0, 0, 2)]
    for n, (db_warps, db_registers, db_shared) in zip(config.STAGED_LN_BWD_N, db_forms + [(0, 0, 1)] * 3, strict=True):
        got = values(_plan(2048, n, is_rms=False))  # LayerNorm's, with dB, from its fewest rows
        assert (got["IS_RMS"], got["HAS_DBIAS"], got["DB_WARPS"], got["DB_REGISTERS"]) == (False, True, db_warps,
                                                                                           db_registers), n  # fmt: skip
        assert got["DB_SHARED"] == db_shared, n
        assert got["PAIR_SCRATCH"] == (n >= 14848), n
        assert [got[k] for k in ("RA", "RB", "RC")] == ops.STAGED.parts(n)
        assert [got[k] for k in ("DLA", "DLB", "DLC")] == [ops.STAGED.layout(r, max(db_warps, 1)) for r in
                                                           ops.STAGED.parts(n)]  # fmt: skip
    for n in config.STAGED_LN_NO_DB_BWD_N:  # LayerNorm's without dB: its own parts at 12288 (fp16) and 12800-14336
        got = values(_plan(4096, n, is_rms=False, has_dbias=False))
        assert (got["IS_RMS"], got["HAS_DBIAS"]) == (False, False), n
        assert [got[k] for k in ("RA", "RB", "RC")] == ops.STAGED.parts(n, second_of_8=True, fp16=True), n
        got = values(_plan(4096, n, is_rms=False, has_dbias=False, dtype=torch.bfloat16))
        assert [got[k] for k in ("RA", "RB", "RC")] == ops.STAGED.parts(n, second_of_8=True), n
    for n in config.STAGED_LN_SHORT_BWD_N:  # LayerNorm's short rows: 8 compute warps, 3 stages, no dB warps
        for has_dbias in (True, False):
            plan = _plan(4096, n, is_rms=False, has_dbias=has_dbias)
            got = values(plan)
            assert plan.cfg.staged and plan.cfg.num_warps == 8, n
            assert got["STAGES"] == (2 if n == 10240 and not has_dbias else 3), (n, has_dbias)
            assert (got["IS_RMS"], got["HAS_DBIAS"], got["DB_WARPS"]) == (False, has_dbias, 0), n
            assert [got[k] for k in ("RA", "RB", "RC")] == ops.STAGED.parts(n), n
            assert got["LA"] == ops.STAGED.layout(ops.STAGED.parts(n)[0], 8), n
    assert [values(_plan(4096, 12288, is_rms=False, has_dbias=False, dtype=d))[k] for d in (torch.float16,
            torch.bfloat16) for k in ("RA", "RB", "RC")] == [32, 8, 8, 32, 16, 0]  # fmt: skip


def _covered(layout):
    """A blocked layout's tile: the shape its threads cover once."""
    return [s * t * w for s, t, w in zip(layout.size_per_thread, layout.threads_per_warp, layout.warps_per_cta)]


def test_db_shared_constexprs():
    """The last parts' dB in shared memory (``DB_SHARED``) where the compute warps sum LayerNorm's dB: as asked with
    dB, 0 without dB or with dB warps of its own; a value other than 0-2, or above 0 where the row has no third part,
    raises, naming the argument."""
    staged = pytest.importorskip("normkit.triton.norm_bwd_staged", reason="the staged kernel needs Triton 3.6")
    for n, db_shared in ((14848, 1), (13824, 2), (14336, 2), (13312, 1)):
        assert staged.constexprs(n, 8, 2, False, False, True, db_shared=db_shared)["DB_SHARED"] == db_shared, n
        assert staged.constexprs(n, 8, 2, False, False, False, db_shared=db_shared)["DB_SHARED"] == 0, n
        assert staged.constexprs(n, 8, 2, False, False, True, 4, 104, db_shared=db_shared)["DB_SHARED"] == 0, n
    for n, bad in ((12288, 1), (12288, 2), (13824, 3), (13824, -1)):  # 12288 = 32 + 16: no third part
        with pytest.raises(ValueError, match="db_shared"):
            staged.constexprs(n, 8, 2, False, False, True, db_shared=bad)


def test_parts_and_layouts():
    """A row as parts of N / 256's binary digits, largest first, where it has at most three; else its two largest and
    the rest rounded up to a power of 2 (the row padded). Each part's layout covers it exactly, 8 halves a thread
    where 8 warps go down its rows; its dW partial is stored from 4 float32 a thread in the same warps."""
    staged = pytest.importorskip("normkit.triton.norm_bwd_staged", reason="the staged kernel needs Triton 3.6")
    assert staged.parts(13312) == [32, 16, 4]
    assert staged.parts(12288) == [32, 16, 0]
    assert staged.parts(12800) == [32, 16, 2]
    assert staged.parts(14336) == [32, 16, 8]
    assert staged.parts(768) == [2, 1, 0]
    assert staged.parts(256) == [1, 0, 0]
    assert staged.parts(13824) == [32, 16, 8]  # 54 = 32 + 16 + 4 + 2: 2 rows of 256 padded
    assert staged.parts(14848) == [32, 16, 16]  # 58 = 32 + 16 + 8 + 2
    assert staged.parts(15360) == [32, 16, 16]  # 60 = 32 + 16 + 8 + 4
    assert staged.parts(15872) == [32, 16, 16]  # 62 = 32 + 16 + 8 + 4 + 2
    assert staged.parts(31 * 256) == [16, 8, 8]
    for rows in range(1, 129):
        got = staged.parts(rows * 256)
        assert got == sorted(got, reverse=True) and all(r & (r - 1) == 0 for r in got), rows
        assert rows <= sum(got) and sum(got) - rows < max(got[2], 1), (rows, got)  # padded by less than a part
    for bad in (13000, 0, -256):
        with pytest.raises(ValueError, match="positive multiple of 256"):
            staged.parts(bad)
    # LayerNorm's without dB: 32 + 8 + 16 where the digits begin 32 + 16, from 49 to 56 rows
    assert [staged.parts(n, second_of_8=True) for n in (12800, 13312, 13824, 14336)] == [[32, 8, 16]] * 4
    for rows in range(1, 129):
        got = staged.parts(rows * 256, second_of_8=True)
        if 49 <= rows <= 56:
            assert got == [32, 8, 16], rows
            assert staged.parts(rows * 256, second_of_8=True, fp16=True) == got, rows
        else:
            assert got == staged.parts(rows * 256), rows  # 12288 (48) too, where x is not fp16: [32, 16, 0]
            if rows != 48:
                assert staged.parts(rows * 256, second_of_8=True, fp16=True) == got, rows
    assert staged.parts(12288, second_of_8=True, fp16=True) == [32, 8, 8]
    assert staged.parts(12288, fp16=True) == [32, 16, 0]  # RMSNorm's and LayerNorm's with dB
    for rows in (1, 2, 4, 8, 16, 32):
        layout = staged.layout(rows, 8)
        assert _covered(layout) == [rows, 256], rows
    assert staged.layout(32, 8).size_per_thread == [4, 8]
    for rows in (1, 2, 4, 8, 16, 32):  # the dW partial's store: 16 bytes a thread, a warp's 32 threads along a row
        part = staged.layout(rows, 8)
        wide = staged._partial_layout(part)
        assert (wide.size_per_thread, wide.threads_per_warp, wide.order) == ([1, 4], [1, 32], [1, 0]), rows
        assert wide.warps_per_cta == part.warps_per_cta, rows


def test_warp_sums_layouts():
    """LayerNorm's pass one sums a part a warp each (``_warp_sums``): a part of R rows of 256 seen as a row a warp,
    ``[warps, R * 256 / warps]``, a warp's threads along it with their runs of columns as in the part, whether the
    warps go only down its rows or across too (R below the warps); every part's sums land in one layout, a warp's sum
    in all its lanes. The split staged forward's slice seen as ``[warps, SR / warps, 32, 8]`` (``_thread_layout``): a
    thread's 64 elements along the second and last axes. (That these are the same registers, no data moved, is
    asserted where the kernels compile: ``gl.convert_layout(..., assert_trivial=True)``.)"""
    staged = pytest.importorskip("normkit.triton.norm_bwd_staged", reason="the staged kernel needs Triton 3.6")
    forward = pytest.importorskip("normkit.triton.norm_fwd_staged", reason="the staged kernel needs Triton 3.6")
    for warps in (4, 8):
        for rows in (1, 2, 4, 8, 16, 32, 64):
            part = staged.layout(rows, warps)
            flat = staged._warp_rows_layout(part)
            tile = _covered(flat)  # the layout's tile, repeated along the row a warp where a warp holds several rows
            assert tile[0] == warps and (rows * 256 // warps) % tile[1] == 0, (warps, rows)
            assert tile[1] == 256 // part.warps_per_cta[1], (warps, rows)  # where the warps go across, part of a row
            assert flat.warps_per_cta == [warps, 1] and flat.threads_per_warp == [1, 32], (warps, rows)
            # a thread's run of columns is the part's: the row a warp's registers in the part's order
            assert flat.size_per_thread == [1, part.size_per_thread[1]], (warps, rows)
        sums = staged._warp_sums_layout(warps)
        assert sums.dim == 1 and sums.parent.warps_per_cta == [warps, 1] and sums.parent.threads_per_warp == [1, 32]
    slice_layout = staged.layout(64, 8)
    thread = forward._thread_layout(slice_layout)
    assert _covered(thread) == [8, 8, 32, 8]
    assert thread.size_per_thread == [1, 8, 1, 8] and thread.order == [3, 2, 1, 0]


COMPILE = """
import importlib.util, json, os, re, subprocess, sys, tempfile
import torch, triton
from triton.backends.compiler import GPUTarget
from triton.experimental.gluon._runtime import GluonASTSource
from triton.runtime.jit import mangle_type

spec = importlib.util.spec_from_file_location("norm_bwd_staged", sys.argv[1])
staged = importlib.util.module_from_spec(spec)
spec.loader.exec_module(staged)
kernel = staged.norm_bwd_staged_kernel
for case in json.loads(sys.argv[2]):
    n, dtype, zero_centered, is_rms, has_dbias, db_warps, db_registers, db_shared, warps, stages = case[:10]
    pair_scratch = case[10]
    dtype = getattr(torch, dtype)
    fp16 = dtype == torch.float16
    has_mask = len(case) > 11 and case[11]  # a twelfth value: LayerNorm + clamped ReLU's backward
    values = staged.constexprs(
        n, warps, stages, zero_centered, is_rms, has_dbias, db_warps, db_registers, fp16=fp16, db_shared=db_shared,
        pair_scratch=pair_scratch, has_mask=has_mask,
    )
    x, w = torch.empty(64, n, dtype=dtype), torch.empty(n, dtype=dtype)
    part_rows = [values[k] for k in ("RA", "RB", "RC")]
    packed = torch.empty(64, n // 8, dtype=torch.uint8) if has_mask else None
    descriptors = staged.descriptor_arguments(x, x, w, packed, part_rows, split=False)
    signature = {name: mangle_type(d) for name, d in zip(kernel.arg_names, descriptors)}
    pointer = "*fp16" if dtype == torch.float16 else "*bf16"
    signature |= {"MEAN": "*fp32", "RSTD": "*fp32", "DX": pointer, "PARTIAL": "*fp32", "M": "i32", "N": "i32"}
    signature |= {name: "constexpr" for name in values}
    aligned = [kernel.arg_names.index(name) for name in ("MEAN", "RSTD", "DX", "PARTIAL", "N")]
    source = GluonASTSource(kernel, signature, values, {(i,): [["tt.divisibility", 16]] for i in aligned})
    compiled = triton.compile(source, target=GPUTarget("cuda", 90, 32), options={"num_warps": warps})
    threads = int(re.search(r"reqntid (\\d+)", compiled.asm["ptx"]).group(1))
    cubin = len(compiled.asm["cubin"])
    parts = [values[k] for k in ("RA", "RB", "RC")]
    spilled = -1  # ptxas' spill stores, read where the row sums cross the warps through the scratch, with a mask, or
    # RMSNorm's with dB
    if values["PAIR_SCRATCH"] or has_mask or (values["IS_RMS"] and values["HAS_DBIAS"]):
        with tempfile.NamedTemporaryFile("w", suffix=".ptx") as ptx:
            ptx.write(compiled.asm["ptx"])
            ptx.flush()
            ptxas = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "ptxas")
            log = subprocess.run([ptxas, "-arch=sm_90a", "-v", ptx.name, "-o", os.devnull], capture_output=True,
                                 text=True).stderr
        spilled = sum(int(v) for v in re.findall(r"(\\d+) bytes spill stores", log))
    print(json.dumps({"n": n, "shared": compiled.metadata.shared, "cubin": cubin, "threads": threads, "parts": parts,
                      "spilled": spilled}))
"""


def test_staged_rule_for_the_masked_backward():
    """LayerNorm + clamped ReLU's backward takes the whole-row staged kernel at LayerNorm's short rows
    (``STAGED_MASKED_BWD_N``: 4608-10240; round 110 at 6144, 7680, 8192, 10240, round 111 at the widths with parts of
    fewer rows of 256 than warps) with dB and without, from 3072 rows (2048 x 8192 ran x0.985), at 4608, 5120 and 8192
    only in calls too small for the TMA kernel (at 32768 rows x1.002 / 0.985 / 0.986); 8 compute warps, 3 stages, dB in
    the compute warps. Not with float32 weights or x, nor where the kernel cannot run; the other widths (3072 and 4096
    ran x0.92-0.94) keep their launches."""
    assert config.STAGED_MASKED_BWD_N == tuple(range(4608, 10241, 512)) == config.STAGED_LN_SHORT_BWD_N
    assert config.STAGED_MASKED_BELOW_TMA_N == (4608, 5120, 8192)
    assert config.LIMITS["ln_masked_bwd_staged_min_m"] == 3072
    for n in config.STAGED_MASKED_BWD_N:
        for has_dbias in (True, False):
            for m in (3072, 4096, 32768):
                got = config.bwd_config(m, n, has_dbias, has_mask=True, is_rms=False, tma=True, staged=True)
                if n in config.STAGED_MASKED_BELOW_TMA_N and m * n >= config.TMA_MIN_ELEMENTS:  # the TMA's calls
                    assert not got.staged, (m, n, has_dbias)
                    continue
                assert got == LaunchConfig(1, n, 1, 8, 1, staged=True), (m, n, has_dbias)
            masked = dict(is_rms=False, has_dbias=has_dbias, has_mask=True)
            assert not _staged(3071, n, **masked) and not _staged(4096, n, **masked, staged=False), n
            assert not _staged(4096, n, **masked, w_bytes=4) and not _staged(4096, n, **masked, x_bytes=4), n
        assert config.staged_db_partition(n) == (0, 0) and config.staged_stages(n, False, True) == 3, n
    assert not config.bwd_config(32768, 8192, True, has_mask=True, is_rms=False, tma=True, staged=True).staged
    assert config.bwd_config(32768, 8192, True, has_mask=True, is_rms=False, tma=True, staged=True).tma
    assert _staged(4096, 4608, is_rms=False, has_dbias=True, has_mask=True)  # below the TMA's calls
    # 2**25 elements, LayerNorm's minimum for the TMA (round 113), but its masked launch takes more than 4096 rows
    assert _staged(4096, 8192, is_rms=False, has_dbias=True, has_mask=True)
    assert not _staged(8192, 4096, is_rms=False, has_dbias=True, has_mask=True)
    for n in (3072, 4096, 4352, 10752):
        assert not _staged(4096, n, is_rms=False, has_dbias=True, has_mask=True), n
    with config.limits(ln_masked_bwd_staged_min_m=4097):
        assert not _staged(4096, 6144, is_rms=False, has_dbias=True, has_mask=True)


def test_staged_kernel_compiles_for_hopper():
    """The kernel compiled for sm_90 (ptxas included) on any machine, Triton's interpreter off (it cannot compile
    Gluon): RMSNorm's at the rules' widths (13824, 14848, 15360 and 15872 padded), fp16 and bf16, zero-centered gamma,
    and one part of 64 rows of 256 (16384); at its short rows (5632-7680: 4 compute warps, the load warp's group of 4,
    3 stages; 7680 padded); LayerNorm's at its widths with dB (in 4 warps of their own: 512 threads, 8 compute warps,
    the load warp's group of 4 and the dB warps; in the compute warps: 384), without dB (12288 in fp16 as 32 + 8 + 8,
    in bf16 as 32 + 16), and RMSNorm's with dB; LayerNorm's with dB at 14848-15872 and RMSNorm's with dB at
    12800-15872, the last parts' dB in shared memory (``DB_SHARED``: 1 and 2), RMSNorm's spilling at most 4 bytes a
    thread; LayerNorm's short rows (4608-10240: 8 compute warps, 3 stages). The shared memory each asks fits a Hopper
    SM."""
    pytest.importorskip("normkit.triton.norm_bwd_staged", reason="the staged kernel needs Triton 3.6")
    cases = [(n, "float16", False, True, False, 0, 0) for n in config.STAGED_BWD_N]
    cases += [(13312, "bfloat16", True, True, False, 0, 0), (15360, "bfloat16", True, True, False, 0, 0)]
    cases += [(16384, "float16", False, True, False, 0, 0)]
    cases += [(n, "float16", False, False, True, *config.staged_db_partition(n)) for n in config.STAGED_LN_BWD_N]
    cases += [(11264, "bfloat16", True, False, True, 4, 104), (13312, "float16", False, False, False, 0, 0)]
    cases += [(15872, "bfloat16", True, False, False, 0, 0), (10752, "float16", False, False, False, 0, 0)]
    cases += [(12288, "bfloat16", False, True, True, 0, 0)]
    cases += [(12800, "float16", False, False, False, 0, 0), (14336, "bfloat16", True, False, False, 0, 0)]
    cases += [(12288, "float16", False, False, False, 0, 0), (12288, "bfloat16", True, False, False, 0, 0)]
    cases += [(15360, "bfloat16", True, False, True, 0, 0), (13824, "bfloat16", True, True, True, 0, 0)]
    cases += [(13312, "bfloat16", False, True, True, 0, 0), (15872, "float16", False, True, True, 0, 0)]
    cases += [(12800, "bfloat16", True, True, True, 0, 0)]  # RMSNorm's with dB (round 114)
    cases = [(*case, config.staged_db_shared(case[0], case[3]) if case[4] and not case[5] else 0) for case in cases]
    cases = [(*case, config.STAGED_WARPS, config.staged_stages(case[0], case[3], case[4])) for case in cases]
    # LayerNorm's short rows (8 compute warps, 3 stages): the narrowest, 7680 padded, 8192 one part, the widest
    ln_short = [(4608, "float16", False, True), (5120, "bfloat16", True, False), (5632, "float16", False, True)]
    ln_short += [(7680, "bfloat16", True, True), (8192, "float16", False, False)]
    ln_short += [(9728, "bfloat16", False, False), (10240, "float16", True, True)]
    cases += [(n, d, zc, False, db, 0, 0, 0, 8, config.staged_stages(n, False, db)) for n, d, zc, db in ln_short]
    short = (config.STAGED_SHORT_WARPS, config.STAGED_SHORT_STAGES)  # 4 and 3 (``test_staged_rule_at_short_rows``)
    cases += [(n, "float16", False, True, False, 0, 0, 0, *short) for n in config.STAGED_RMS_SHORT_BWD_N]
    cases += [(7680, "bfloat16", True, True, False, 0, 0, 0, *short)]
    cases += [(5632, "float16", False, True, True, 0, 0, 0, 8, 3), (6144, "bfloat16", True, True, True, 0, 0, 0, 8, 3)]
    cases += [(9216, "float16", False, True, True, 0, 0, 0, 8, 3), (9728, "bfloat16", True, True, True, 0, 0, 0, 8, 3)]
    cases = [(*case, config.staged_pair_scratch(case[0], case[3], case[4])) for case in cases]
    assert {case[7] for case in cases} == {0, 1, 2}
    assert sum(case[10] for case in cases) == 4  # 14848-15872 fp16, 15360 bf16 zero-centered
    compiled = compiled_on_the_cpu(COMPILE, KERNEL_FILE, cases, timeout=600)
    assert [c["n"] for c in compiled] == [case[0] for case in cases]
    for c, case in zip(compiled, cases):
        assert c["cubin"] > 0 and 0 < c["shared"] <= HOPPER_SHARED_MEMORY, c
        assert c["threads"] == 32 * (case[8] + 4 + case[5]), (case, c)
    ln_12288 = [c["parts"] for c, case in zip(compiled, cases) if case[0] == 12288 and not case[3] and not case[4]]
    assert ln_12288 == [[32, 8, 8], [32, 16, 0]]  # LayerNorm's 12288 without dB: fp16, bf16
    # with the scratch, nothing spilled (``gl.reduce``'s exchange left 4-8 bytes a thread there: round 105)
    assert [c["spilled"] for c, case in zip(compiled, cases) if case[10]] == [0] * 4
    # RMSNorm's with dB, its last parts' dB in shared memory (``STAGED_RMS_DB_SHARED``): 0-4 bytes spilled, 20-52 with
    # all of it in registers (round 114); at its short rows in 8 compute warps none (round 118)
    long_db = [case[3] and case[4] and case[0] in config.STAGED_BWD_N for case in cases]
    rms_db = [c["spilled"] for c, long in zip(compiled, long_db) if long]
    assert len(rms_db) == 5 and 0 <= min(rms_db) and max(rms_db) <= 4, rms_db
    # in the short-row form (5632, 6144; 9216, 9728 at 3 stages, round 118)
    short_db = [c["spilled"] for c, case in zip(compiled, cases) if case[3] and case[4] and case[0] < 10240]
    assert short_db == [0] * 4, short_db


MASKED_STAGED_COMPILE = [  # (n, dtype, zero-centered, with dB): the masked whole-row kernel's parts, whole bytes a
    # thread (6144, 7680, 8192, 10240) and shared by 2-8 lanes (round 111: 4608's part of 2 rows, 5632's of 4 and 2,
    # 8704's of 2)
    (6144, "float16", False, True), (7680, "bfloat16", True, True), (8192, "float16", False, False),
    (10240, "bfloat16", False, True), (4608, "float16", False, True), (5632, "bfloat16", True, False),
    (8704, "float16", False, True),
]  # fmt: skip


def test_staged_masked_backward_compiles_for_hopper():
    """LayerNorm + clamped ReLU's backward in the whole-row kernel (its mask's bytes staged a part each with x and dy,
    ``HAS_MASK``), compiled for sm_90 on any machine (``MASKED_STAGED_COMPILE``), with dB in the compute warps and
    without: nothing spilled (ptxas), the shared memory a Hopper SM has, 8 compute warps and the load warp's group of
    4. ``masked_parts`` takes every multiple of 256 at 8 warps (a part of fewer rows than warps shares a byte among
    lanes, ``mask_layout``), no other width; ``mask_layout`` refuses a part it cannot cut."""
    staged = pytest.importorskip("normkit.triton.norm_bwd_staged", reason="the staged kernel needs Triton 3.6")
    widths = range(256, 16385, 128)
    assert [n for n in widths if staged.masked_parts(n, config.STAGED_WARPS)] == list(range(256, 16385, 256))
    layout = staged.mask_layout(2, 8)  # 2 rows down, 4 warps across: 2 columns a thread, 4 lanes a byte
    assert (layout.size_per_thread, layout.threads_per_warp, layout.warps_per_cta) == ([1, 1, 2], [1, 8, 4], [2, 4, 1])
    assert staged.mask_layout(16, 8).size_per_thread == [2, 1, 8]  # the warps all down: a byte a thread
    for rows, warps in ((1, 16), (3, 8), (0, 8), (6, 4)):
        with pytest.raises(ValueError, match="the mask's bytes need the slice's rows cut over the warps"):
            staged.mask_layout(rows, warps)
    cases = [(n, d, zc, False, db, 0, 0, 0, 8, config.staged_stages(n, False, db), False, True)
             for n, d, zc, db in MASKED_STAGED_COMPILE]  # fmt: skip
    compiled = compiled_on_the_cpu(COMPILE, KERNEL_FILE, cases, timeout=600)
    assert [c["n"] for c in compiled] == [case[0] for case in cases]
    for c in compiled:
        assert c["spilled"] == 0 and 0 < c["shared"] <= HOPPER_SHARED_MEMORY and c["threads"] == 32 * 12, c
    with pytest.raises(ValueError, match="has_mask"):
        staged.constexprs(10752, 8, 3, False, False, True, 4, 104, has_mask=True)  # dB in warps of its own


def staged_launches(launcher="_staged_backward"):
    """A spy on a staged kernel's launches (``ops._staged_backward``, or the forward's ``ops._staged_forward``):
    ``call_count`` says whether it ran."""
    from unittest import mock

    from normkit.triton import ops

    spy = types.SimpleNamespace(call_count=0)
    launch = getattr(ops, launcher)

    def counted(*args, **keywords):
        spy.call_count += 1
        return launch(*args, **keywords)

    return spy, mock.patch.object(ops, launcher, counted)


def recorded_launches(monkeypatch, *launchers) -> list:
    """``(args, head)`` of every launch of these launchers (``Launcher.launch`` patched to record instead: the staged
    kernels' launch paths run only on a GPU, their arguments can be read anywhere)."""
    launched = []

    def record(grid, args, num_warps, values, head=0):
        launched.append((args, head))

    for launcher in launchers:
        monkeypatch.setattr(launcher, "launch", record)
    return launched


def _check(m, n, x_dtype, w_dtype, taken, zero_centered_gamma=False, row_pad=0, weight_offset=0, op="rms_norm",
           has_dbias=False):  # fmt: skip
    x, w, _ = make_inputs(m, n, x_dtype, w_dtype, bias=False, row_pad=row_pad)
    if weight_offset:  # weights whose start is not on 16 bytes: the staged kernel loads a copy
        w = torch.cat([w.new_zeros(weight_offset), w])[weight_offset:]
    spy, patch = staged_launches()
    with patch:
        check_backward("triton", op, x, w, None, zero_centered_gamma, has_dbias=has_dbias)
    assert spy.call_count == taken, (m, n, x_dtype, w_dtype, row_pad, op, has_dbias)


@pytest.mark.gpu
@pytest.mark.parametrize(
    "m, n",
    [(2048, 12800), (4097, 13312), (2049, 14336), (33000, 13312), (4097, 13824), (2048, 14848), (4097, 15360),
     (2049, 15872), (4097, 12288), (2049, 10240), (4096, 5632), (2561, 6144), (4097, 6656), (8193, 7680),
     (4097, 10752), (2048, 11264), (2049, 11776)],
)  # fmt: skip
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
@pytest.mark.parametrize("zero_centered_gamma", [False, True])
def test_staged_backward_on_the_gpu(m, n, dtype, zero_centered_gamma):
    """The rules' shapes, taken by the staged kernel, against the reference: rows that do not divide over the SMs
    (4097, 2049), many rows a program (33000), two parts (12288 as 32 + 16 rows of 256, 10240 as 32 + 8), padded rows
    (13824 as 32 + 16 + 8, 14848, 15360 and 15872 as 32 + 16 + 16; at 4097 and 2049 rows the last row's padding is past
    the tensor); the short rows at 4 compute warps and 3 stages (5632 as 16 + 4 + 2, 6144 one row past its fewest,
    6656, 7680 padded as 16 + 8 + 8); 10752-11776 (round 117: 32 + 8 + 2 / 4 / 8, padded at 11776; 10752 by the rules
    of slower DRAM, which alone take it there, round 118). At 10240 fp16 x takes the pointer kernel (round 84): no
    staged launch."""
    pytest.importorskip("normkit.triton.norm_bwd_staged", reason="the staged kernel needs Triton 3.6")
    with _rules_that_stage(n, has_dbias=False):
        _check(m, n, dtype, dtype, int(not (n == 10240 and dtype == torch.float16)), zero_centered_gamma)


@pytest.mark.gpu
@pytest.mark.parametrize(
    "m, n",
    [(2048, 10752), (4097, 11264), (33000, 11776), (2049, 12288), (4097, 10752), (4097, 12800), (2048, 13312),
     (33000, 13824), (2048, 5632), (4097, 6144), (2049, 7680), (33000, 8192), (4097, 8704), (2049, 9728),
     (4097, 10240), (4096, 4608), (2049, 5120), (6144, 5120), (2049, 14336), (4097, 14848), (2049, 15360),
     (2048, 15872), (33000, 15360)],
)  # fmt: skip
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
@pytest.mark.parametrize("zero_centered_gamma", [False, True])
def test_staged_layer_norm_backward_on_the_gpu(m, n, dtype, zero_centered_gamma):
    """LayerNorm's backward with dB at the rules' shapes, taken by the staged kernel, against the reference: dB in 4
    warps of their own (10752-11776: 32 + 8 + 2, 32 + 8 + 4, 32 + 8 + 8 padded) and in the compute warps (12288), rows
    that do not divide over the SMs, many rows a program (33000); the short rows (5632-10240, round 101: 16 + 4 + 2,
    16 + 8, 16 + 8 + 8 padded, 32, 32 + 2, 32 + 4 + 2, 32 + 8 rows of 256; 4608 and 5120, round 102: 16 + 2, 16 + 4,
    with dB in calls too small for the TMA's head and tail tiles since round 103: 6144 x 5120) at 8 compute warps and
    3 stages; round 104's dB of the last parts in shared memory: two (13824 at 33000 rows, 14336) and one (14848-15872,
    padded as 32 + 16 + 16, the last row's padding past the tensor), there with the row sums across the warps through
    the kernel's scratch (round 105: from 2048 rows, and many rows a program)."""
    pytest.importorskip("normkit.triton.norm_bwd_staged", reason="the staged kernel needs Triton 3.6")
    _check(m, n, dtype, dtype, 1, zero_centered_gamma, op="layer_norm", has_dbias=True)


def _check_masked_staged(m, n, dtype, zero_centered_gamma, has_dbias):
    """LayerNorm + clamped ReLU's backward of m x n with the whole-row staged kernel forced, against the reference, and
    that kernel launched once."""
    pytest.importorskip("normkit.triton.norm_bwd_staged", reason="the staged kernel needs Triton 3.6")
    x, w, b = make_inputs(m, n, dtype, dtype)
    spy, patch = staged_launches()
    with patch, config.forced(bwd=LaunchConfig(1, n, 1, config.STAGED_WARPS, 1, staged=True)):
        check_backward("triton", "layer_norm_clamped_relu", x, w, b, zero_centered_gamma, has_dbias=has_dbias)
    assert spy.call_count == 1


@pytest.mark.gpu
@pytest.mark.parametrize(
    "m, n, dtype, zero_centered_gamma, has_dbias",
    [(4097, 3072, torch.float16, False, True), (2049, 4096, torch.bfloat16, True, False),
     (4097, 4608, torch.float16, False, True), (2049, 4608, torch.bfloat16, False, False),
     (2049, 5120, torch.bfloat16, True, True), (4097, 5120, torch.float16, False, False),
     (33000, 5632, torch.bfloat16, False, True), (4097, 6656, torch.float16, True, True),
     (2049, 6656, torch.bfloat16, False, False), (4097, 7168, torch.bfloat16, False, True),
     (2049, 8704, torch.float16, False, True), (4097, 9216, torch.bfloat16, True, False),
     (2049, 9728, torch.float16, False, True), (4097, 9728, torch.bfloat16, False, False)],
)  # fmt: skip
def test_staged_masked_backward_of_narrow_parts_on_the_gpu(m, n, dtype, zero_centered_gamma, has_dbias):
    """The masked whole-row kernel where a part has fewer rows of 256 than warps (round 111: a thread holds 4, 2 or 1
    columns of a mask byte, ``mask_layout``), forced, against the reference: 3072 (8 + 4), 4096 (16), 4608 (16 + 2),
    5120 (16 + 4), 5632 (16 + 4 + 2), 6656 (16 + 8 + 2), 7168 (16 + 8 + 4), 8704 (32 + 2), 9216 (32 + 4), 9728
    (32 + 4 + 2); fp16 and bf16, zero-centered gamma, with dB and without, rows that do not divide over the SMs."""
    _check_masked_staged(m, n, dtype, zero_centered_gamma, has_dbias)


@pytest.mark.gpu
@pytest.mark.parametrize("m, n", [(4097, 6144), (2049, 7680), (4097, 8192), (2048, 10240)])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
@pytest.mark.parametrize("zero_centered_gamma, has_dbias", [(False, True), (True, True), (False, False)])
def test_staged_masked_backward_on_the_gpu(m, n, dtype, zero_centered_gamma, has_dbias):
    """LayerNorm + clamped ReLU's backward in the whole-row staged kernel (its mask's bytes staged with x and dy),
    forced, against the reference: 6144 (16 + 8 rows of 256), 7680 (16 + 8 + 8, padded: the next row's mask bytes in
    the padding, the last row's past the tensor), 8192 (one part), 10240 (32 + 8), rows that do not divide over the
    SMs; zero-centered gamma, with dB (in the compute warps) and without."""
    _check_masked_staged(m, n, dtype, zero_centered_gamma, has_dbias)


@pytest.mark.gpu
@pytest.mark.parametrize(
    "m, n",
    [(2048, 10240), (4097, 11264), (4097, 12288), (2048, 12800), (33000, 13312), (2049, 13824), (4097, 15872),
     (2048, 5632), (4097, 7680), (33000, 9216), (2049, 9728), (2049, 4608), (33000, 5120)],
)  # fmt: skip
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
@pytest.mark.parametrize("zero_centered_gamma", [False, True])
def test_staged_layer_norm_backward_without_db_on_the_gpu(m, n, dtype, zero_centered_gamma):
    """LayerNorm's backward without dB (a LayerNorm without a bias) at the rules' shapes, taken by the staged kernel,
    against the reference: two parts (10240; 12288 in bf16), three (11264 as 32 + 8 + 4, 12288 in fp16 as 32 + 8 + 8),
    padded (12800-13824 as 32 + 8 + 16, 15872 as 32 + 16 + 16), rows that do not divide over the SMs, many rows a
    program; the short rows (round 101: 5632, 7680 padded, 9216, 9728; round 102: 4608, 5120) at 3 stages."""
    pytest.importorskip("normkit.triton.norm_bwd_staged", reason="the staged kernel needs Triton 3.6")
    _check(m, n, dtype, dtype, 1, zero_centered_gamma, op="layer_norm", has_dbias=False)


@pytest.mark.gpu
@pytest.mark.parametrize(
    "op, n, has_dbias",
    [
        ("layer_norm", 11776, True),
        ("rms_norm", 13824, False),
        ("layer_norm", 12800, False),
        ("layer_norm", 13824, True),
        ("layer_norm", 7680, True),
    ],
)
def test_staged_padded_part_keeps_the_next_rows_values_out(op, n, has_dbias):
    """A padded part reads the next row's first columns (11776 = 46 rows of 256 as 32 + 8 + 8, 13824 = 54 as 32 + 16 +
    8: 512 columns of the next row; LayerNorm's 12800 without dB = 50 as 32 + 8 + 16: 1536; its short row 7680 = 30 as
    16 + 8 + 8: 512). Values there that are not finite (an inf in x, a NaN in dy) stay in their own rows: the rows
    before them get the reference's dx, finite, and dB is NaN in those columns alone."""
    pytest.importorskip("normkit.triton.norm_bwd_staged", reason="the staged kernel needs Triton 3.6")
    from normkit.testing import compare
    from normkit.triton import ops

    x, w, _ = make_inputs(4096, n, torch.float16, torch.float16, bias=False)
    x[1, :4] = float("inf")  # in row 0's padded part
    fn, args = backward_call(op, x, w, None)  # the statistics of this x
    args[0][3, :4] = float("nan")  # dy, in row 2's padded part
    spy, patch = staged_launches()
    with patch:
        got = getattr(ops, fn)(*args, False, has_dbias)
    want = getattr(reference, fn)(*args, False, has_dbias)
    assert spy.call_count == 1
    clean = [r for r in range(4096) if r not in (1, 3)]
    assert got[0][[0, 2]].isfinite().all()
    compare(got[0][clean], want[0][clean], f"{op} dx of the other rows")
    if has_dbias:
        assert got[2][:4].isnan().all()
        compare(got[2][4:], want[2][4:], "db past the NaN columns")


@pytest.mark.gpu
def test_staged_backward_launches_from_its_kept_descriptors(monkeypatch):
    """From its second call of the same dy, x and weights (their addresses), the staged launch takes its descriptors
    kept encoded with the plan (``ops._staged_backward``), and each call is right and the same bit for bit; tensors
    at new addresses (the first ones still alive) get their own."""
    pytest.importorskip("normkit.triton.norm_bwd_staged", reason="the staged kernel needs Triton 3.6")
    from normkit.testing import compare
    from normkit.triton import ops

    taken = []
    launch_encoded = ops.STAGED_BWD.launch_encoded
    monkeypatch.setattr(
        ops.STAGED_BWD, "launch_encoded", lambda *args: taken.append(launch_encoded(*args)) or taken[-1]
    )
    alive = []
    for _ in range(2):
        x, w, _ = make_inputs(2048, 13312, torch.float16, torch.float16, bias=False)
        _, (dy, _, _, rstd) = backward_call("rms_norm", x, w, None)
        alive.append((x, w, dy, rstd))
        want = reference.rms_norm_bwd(dy, x, w, rstd)
        taken.clear()
        first = None
        for _ in range(4):  # the first compiles or finds the kernel, the second keeps, the others take them
            got = ops.rms_norm_bwd(dy, x, w, rstd)
            compare(got[0], want[0], "dx")
            compare(got[1], want[1], "dw")
            assert first is None or all(torch.equal(a, b) for a, b in zip(got[:2], first[:2]))
            first = got
        assert taken[-2:] == [True, True], taken


@pytest.mark.gpu
def test_staged_backward_falls_back_on_the_gpu():
    """Calls the staged kernel cannot or should not take run the other kernels, and right: rows not contiguous,
    float32 weights, too few rows (at the long rows and the short, LayerNorm's with dB at 14848 / 15360 one row below
    their fewest, 2048 since round 105); weights not on 16 bytes take it from a copy."""
    pytest.importorskip("normkit.triton.norm_bwd_staged", reason="the staged kernel needs Triton 3.6")
    _check(4096, 13312, torch.float16, torch.float16, 0, row_pad=256)
    _check(4096, 13312, torch.bfloat16, torch.float32, 0)
    _check(2047, 13312, torch.float16, torch.float16, 0)
    _check(2559, 6144, torch.float16, torch.float16, 0)
    _check(4095, 7680, torch.float16, torch.float16, 0)
    _check(2047, 14848, torch.float16, torch.float16, 0, op="layer_norm", has_dbias=True)  # split rows
    _check(2047, 15360, torch.bfloat16, torch.bfloat16, 0, op="layer_norm", has_dbias=True)
    _check(4096, 13312, torch.float16, torch.float16, 1, weight_offset=1)


@pytest.mark.gpu
@pytest.mark.parametrize("m, n", [(1, 768), (7, 3328), (100, 1280), (300, 13824), (129, 3840), (64, 16384)])
def test_staged_kernel_forced_on_the_gpu(m, n):
    """The kernel forced at rows the rules do not give it: 1, 7 and 100 rows (fewer programs than SMs), parts of one
    row of 256 (768 = 2 + 1, 3328 = 8 + 4 + 1, 1280 = 4 + 1), padded rows (13824 at 300 rows; 3840 = 8 + 4 + 2 + 1 as
    8 + 4 + 4), one part of 64 rows of 256 (16384)."""
    pytest.importorskip("normkit.triton.norm_bwd_staged", reason="the staged kernel needs Triton 3.6")
    with config.forced(bwd=LaunchConfig(1, n, 1, config.STAGED_WARPS, 1, staged=True)):
        for dtype in (torch.float16, torch.bfloat16):
            _check(m, n, dtype, dtype, 1, zero_centered_gamma=dtype == torch.bfloat16)


@pytest.mark.gpu
@pytest.mark.parametrize("m, n", [(1, 768), (7, 3328), (100, 13824), (300, 11776), (129, 10752), (64, 16384)])
@pytest.mark.parametrize("op, has_dbias", [("layer_norm", True), ("layer_norm", False), ("rms_norm", True)])
def test_staged_kernel_forced_with_the_mean_or_db_on_the_gpu(m, n, op, has_dbias):
    """The kernel forced for what the rules do not give it: LayerNorm without dB, RMSNorm with dB, and LayerNorm with
    dB at odd rows and widths (fewer programs than SMs, parts of one row of 256, padded rows; dB in 4 warps of their own
    at 10752 and 11776, in the compute warps elsewhere)."""
    pytest.importorskip("normkit.triton.norm_bwd_staged", reason="the staged kernel needs Triton 3.6")
    with config.forced(bwd=LaunchConfig(1, n, 1, config.STAGED_WARPS, 1, staged=True)):
        for dtype in (torch.float16, torch.bfloat16):
            _check(m, n, dtype, dtype, 1, dtype == torch.bfloat16, op=op, has_dbias=has_dbias)


def test_forced_staged_config_where_it_cannot_run():
    """A forced staged config where the kernel cannot run (here: the CPU, or float32 rows) raises, naming why."""
    x, w, _ = make_inputs(4, 768, torch.float32, torch.float32, bias=False)
    dy = torch.randn_like(x)
    rstd = torch.ones(4, device=x.device)
    from normkit.triton import ops

    with config.forced(bwd=LaunchConfig(1, 768, 1, 8, 1, staged=True)), pytest.raises(ValueError, match="staged"):
        ops.rms_norm_bwd(dy, x, w, rstd)


def test_forced_staged_config_for_the_masked_backward():
    """The whole-row staged kernel takes the mask only where every part of the row can be seen by its mask bytes
    (``norm_bwd_staged.masked_parts``: rows of 256) and dB is summed by the compute warps: a forced whole-row staged
    config for the masked backward elsewhere (640 columns, not rows of 256; 10752 with dB, summed by warps of its own
    there) raises before any launch, even where the kernel could run (capability patched in here), rather than run the
    plain backward's math on it."""
    from unittest import mock

    from normkit.triton import ops

    for n, has_dbias in ((640, False), (10752, True)):
        x, w, _ = make_inputs(4, n, torch.float16, torch.float16, bias=False)
        dy = torch.randn_like(x)
        mean, rstd = torch.zeros(4, device=x.device), torch.ones(4, device=x.device)
        mask = torch.zeros(4, n // 8, dtype=torch.uint8, device=x.device)
        forced = config.forced(bwd=LaunchConfig(1, n, 1, 8, 1, staged=True))
        with mock.patch.object(ops, "_staged_capable", lambda device: True), forced:
            assert ops._staged_rows(dy, x, w)  # the arguments themselves would do
            with pytest.raises(ValueError, match="takes a mask where every part"):
                ops.layer_norm_clamped_relu_bwd(dy, mask, x, w, mean, rstd, has_dbias=has_dbias)


def test_staged_launch_passes_the_kernels_descriptors_in_its_order(monkeypatch):
    """``ops._staged_backward`` (a GPU's path; here its launchers' ``launch`` records what it is given) passes the
    kernel's descriptors first, in the kernel's order (``norm_bwd_staged.descriptor_arguments``), then mean, rstd, dx,
    the partials (the split kernel's row sums' slots) and the shape. The whole-row kernel (the rules' plans at 4096 x
    4608 and 13312 fp16): x's, dy's and the weights' a part each (rows of 256 as the plan cuts them), then the mask's
    a part each where masked, dy's again where not. The split kernel (16384 and 65536): x's, dy's, the mask's (dy's
    without one), the weights' where it stages them. Distinct tensors, so a swap fails; the rules' plans (of 4096 or
    8192 rows) launched on 64 (the plan fixes the launch, the tensors the descriptors)."""
    from normkit.triton import ops

    launched = recorded_launches(monkeypatch, ops.STAGED_BWD, ops.SPLIT_STAGED_BWD, ops.SPLIT_STAGED_SHARED_W_BWD)
    m = 64
    for plan_m, n, is_rms, has_dbias, has_mask in (
        (4096, 4608, False, True, True), (4096, 13312, True, False, False), (8192, 16384, False, True, True),
        (4096, 65536, True, False, False),
    ):  # fmt: skip
        plan = ops._backward_plan(plan_m, n, torch.float16, torch.float16, has_dbias, has_mask, is_rms, False, -1,
                                  True, config.generation, 1, True)  # fmt: skip
        assert plan.cfg.staged, n
        split = plan.cfg.parts > 1
        dy, x, dx = (torch.randn(m, n, dtype=torch.float16) for _ in range(3))
        w, mean, rstd = torch.randn(n, dtype=torch.float16), torch.zeros(m), torch.ones(m)
        mask = torch.zeros(m, n // 8, dtype=torch.uint8) if has_mask else None
        partial = torch.empty(1 + has_dbias, plan.programs // plan.cfg.parts, n)
        ops._staged_backward(plan, dy, x, w, mean, rstd, dx, partial, mask)
        args, head = launched.pop()
        descriptors, rest = args[:head], args[head:]
        assert all(d.base.shape[1] == 256 for d in descriptors if d.base.dtype != torch.uint8), n
        if split:
            sr = plan.values[0]
            weights_staged = plan.values[ops._W_SHARED_AT]
            expected = [(x, sr), (dy, sr), (mask if has_mask else dy, sr)] + ([(w, sr)] if weights_staged else [])
            if not weights_staged:  # read from global memory: a pointer, first after the descriptors
                assert rest[0] is w, n
                rest = rest[1:]
            slots = plan.cfg.parts * (plan.cfg.num_warps if plan.values[ops._WARP_SUMS_AT] else 1)
            assert rest[4].shape == (m, slots), n  # the row sums' slots, after the partials
            rest = rest[:4] + rest[5:]
        else:
            parts = [r or plan.values[0] for r in plan.values[:3]]
            expected = [(t, r) for t in (x, dy, w) for r in parts]
            expected += [(mask if has_mask else dy, r) for r in parts]
        assert [(d.base.data_ptr(), d.block_shape[0]) for d in descriptors] == [
            (t.data_ptr(), r) for t, r in expected
        ], n
        for d, (t, _) in zip(descriptors, expected):  # the mask's bytes as rows of 256 columns' 32, the rest as 256
            assert d.block_shape[1] == (32 if t is mask else 256) and d.base.numel() == t.numel(), n
        assert all(a is b for a, b in zip(rest, (mean, rstd, dx, partial))) and rest[4:] == (m, n), n


def test_staged_rows_asked_only_of_a_plan_that_takes_the_kernel():
    """``ops._staged_rows`` (dtypes, strides and addresses: host time on every call) is asked only where the plan takes
    the staged kernel; where it says no, the call is planned again without the kernel (a forced staged config then
    raises). Capability patched in, so that the CPU runs the order a Hopper GPU does."""
    from unittest import mock

    from normkit.triton import ops

    asked = []
    rows = ops._staged_rows
    with (
        mock.patch.object(ops, "_staged_capable", lambda device: True),
        mock.patch.object(ops, "_staged_rows", lambda *args, **kw: asked.append(rows(*args, **kw)) or asked[-1]),
    ):
        for op, has_dbias in (("layer_norm", True), ("rms_norm", False)):
            x, w, b = make_inputs(7, 100, torch.float16, torch.float16, bias=has_dbias)
            check_backward("triton", op, x, w, b, has_dbias=has_dbias)
        assert asked == []
        x, w, _ = make_inputs(4, 768, torch.float32, torch.float32, bias=False)
        forced = config.forced(bwd=LaunchConfig(1, 768, 1, 8, 1, staged=True))
        with forced, pytest.raises(ValueError, match="16-bit dtype"):
            ops.rms_norm_bwd(torch.randn_like(x), x, w, torch.ones(4, device=x.device))
        assert asked == [False]


def test_staged_launch_takes_its_descriptors_parts_from_the_plan(monkeypatch):
    """The staged launch's descriptors (``ops._staged_backward``, run on the CPU with its launch recorded) have the
    boxes of the plan's parts: LayerNorm's without dB at 12800 cut as 32 + 8 + 16 rows of 256, not as the digits; the
    mask's three, a call without one, are dy's."""
    pytest.importorskip("normkit.triton.norm_bwd_staged", reason="the staged kernel needs Triton 3.6")
    from normkit.triton import ops

    launched = []
    monkeypatch.setattr(ops.STAGED_BWD, "launch", lambda grid, args, *rest, head=0: launched.append(args[:head]))
    for is_rms, n, want in ((False, 12800, [32, 8, 16]), (True, 12800, [32, 16, 2])):
        plan = _plan(4096, n, is_rms=is_rms, has_dbias=False)  # the plan of 4096 rows, launched on 64
        assert plan.cfg.staged
        x, w, _ = make_inputs(64, n, torch.float16, torch.float16, bias=False)
        stats = torch.ones(64)
        ops._staged_backward(plan, x, x, w, stats, stats, torch.empty_like(x), x.new_empty((1, 1, n)), None)
        boxes = [d.block_shape[0] for d in launched[-1]]  # x's three parts, dy's, the weights', the mask's (dy's)
        assert boxes == want * 4, (is_rms, boxes)


# the split staged kernel (``norm_bwd_staged.split_staged_kernel``): rows of 16384-65536 columns in slices of 8192
# or 16384


def test_split_staged_rule():
    """Where the rules take the split staged kernel (``config._split_staged_bwd``): calls of at least 4096 rows of
    16-bit x, RMSNorm's at 16384 / 32768 / 65536 without dB, LayerNorm's (with the clamped ReLU's mask or without) at
    16384 (with dB from 8192 rows), 32768 and 65536 with dB or without; each row in slices of 16384
    at 16 compute warps at 32768 and 65536 without dB, else of 8192 at 8, with 16-bit or float32 weights; only where
    the kernel can run (``staged``). RMSNorm's with dB (a bias) since round 114, from 4096 rows, in LayerNorm's
    launches with dB."""
    m = config.LIMITS["split_staged_min_m"]
    assert m == 4096 and config.LIMITS["ln_dbias_split_staged_16384_min_m"] == 8192
    expected = LaunchConfig(1, 16384, 1, 16, 1, parts=4, staged=True)
    for w_bytes in (2, 4):
        assert config.bwd_config(m, 65536, False, is_rms=True, tma=True, staged=True, w_bytes=w_bytes) == expected
    for n, slice_n, warps in ((16384, 8192, 8), (32768, 16384, 16), (65536, 16384, 16)):
        got = config.bwd_config(m, n, False, is_rms=True, tma=True, staged=True, w_bytes=4)
        assert (got.staged, got.parts, got.block_n, got.num_warps) == (True, n // slice_n, slice_n, warps), n
        assert got == config.bwd_config(32768, n, False, is_rms=True, tma=True, staged=True, x_fp16=True), n
        assert not config.bwd_config(m - 1, n, False, is_rms=True, tma=True, staged=True).staged, n  # fewer rows
        assert not config.bwd_config(32768, n, False, is_rms=True, tma=True, staged=False).staged, n  # cannot run
        with_dbias = config.bwd_config(32768, n, True, is_rms=True, tma=True, staged=True)  # a bias: round 114
        assert with_dbias == config.bwd_config(32768, n, True, tma=True, staged=True) and with_dbias.block_n == 8192, n
        assert config.bwd_config(m, n, True, is_rms=True, tma=True, staged=True) == with_dbias, n  # from 4096 rows
        assert not config.bwd_config(m - 1, n, True, is_rms=True, tma=True, staged=True).staged, n
        assert not config.bwd_config(32768, n, False, is_rms=True, tma=True, staged=True, x_bytes=4).staged, n
        assert not config.bwd_config(32768, n, False, has_mask=True, is_rms=True, tma=True, staged=True).staged, n
    for has_dbias, has_mask in itertools.product((True, False), (False, True)):
        ln = dict(has_mask=has_mask, tma=True, staged=True, w_bytes=4)
        got = config.bwd_config(m, 32768, has_dbias, **ln)
        assert (got.parts, got.num_warps) == ((4, 8) if has_dbias else (2, 16)), has_dbias
        assert not config.bwd_config(m - 1, 32768, has_dbias, **ln).staged
        fewest = 8192 if has_dbias else m  # LayerNorm's at 16384 with dB from 8192 rows
        assert config.bwd_config(fewest, 16384, has_dbias, **ln).parts == 2
        assert not config.bwd_config(fewest - 1, 16384, has_dbias, **ln).staged
        assert not config.bwd_config(32768, 16384, has_dbias, has_mask=has_mask, tma=True, staged=True,
                                     x_bytes=4).staged  # fmt: skip
        got = config.bwd_config(m, 65536, has_dbias, **ln)  # with dB in 8 slices of 8192 (since round 97)
        assert got.staged and (got.parts, got.block_n) == ((8, 8192) if has_dbias else (4, 16384)), has_dbias
    assert config.bwd_config(m, 65536, False, tma=True, staged=True, w_bytes=4) == expected
    assert [config.split_staged_stages(32768, s, False, False, True) for s in (8192, 16384)] == [4, 3]
    # LayerNorm's backward with dB: 5 rows in flight (round 99), the masked one's at 16384 and 65536 (round 100)
    for n in (16384, 32768, 65536):
        assert [config.split_staged_stages(n, 8192, True, has_mask, False) for has_mask in (False, True)] == [
            5, 4 if n == 32768 else 5
        ], n  # fmt: skip
        assert config.split_staged_stages(n, 8192, False, True, False) == 4, n
        # LayerNorm's without dB at 16384 in 5 too (round 103); RMSNorm's in 4
        assert config.split_staged_stages(n, 8192, False, False, False) == (5 if n == 16384 else 4), n
        assert config.split_staged_stages(n, 8192, False, False, True) == 4, n
    assert config.split_staged_stages(32768, 16384, True, False, False) == 3
    assert config.split_staged_stages(32768, 16384, False, False, False) == 3
    # the row statistics staged by the load warp with dB (masked or not; round 100), else loaded by the compute warps
    assert [config.split_staged_stats_staged(has_dbias) for has_dbias in (True, False)] == [True, False]
    for n, has_dbias, is_rms, has_mask in itertools.product((16384, 32768, 65536), *[(False, True)] * 3):
        if has_mask and is_rms:
            continue
        slice_n = config.split_staged_slice(n, has_dbias)
        form = config.split_staged_form(n, slice_n, has_dbias, is_rms, has_mask)  # each field its rule's
        assert form == (
            config.split_staged_stages(n, slice_n, has_dbias, has_mask, is_rms),
            config.split_staged_weights_shared(has_dbias),
            config.split_staged_ahead(n, has_dbias, is_rms, has_mask),
            config.split_staged_fetch_first(n, has_dbias, is_rms, has_mask),
            config.split_staged_warp_sums(n, has_dbias, is_rms, has_mask), config.split_staged_stats_staged(has_dbias),
        ), (n, has_dbias, is_rms, has_mask)  # fmt: skip
    for n in (8192, 24576, 49152, 131072, 16640):  # other widths: not taken (LayerNorm's 8192 the whole-row kernel's)
        assert not config.bwd_config(32768, n, False, is_rms=True, tma=True, staged=True).staged, n
        cfg = config.bwd_config(32768, n, False, tma=True, staged=True)
        assert cfg.staged and cfg.parts == 1 if n == 8192 else not cfg.staged, n


def test_split_staged_rows():
    """What the split staged kernel takes (``ops._staged_rows(..., split=True)``): as the staged kernel, but float32
    weights too, and a packed mask whose rows are contiguous and start on 16 bytes (the TMA stages it)."""
    from normkit.triton import ops

    x = torch.randn(4, 16384, dtype=torch.bfloat16)
    for w in (torch.randn(16384, dtype=torch.bfloat16), torch.randn(16384)):
        assert ops._staged_rows(x.clone(), x, w, split=True)
    assert not ops._staged_rows(x, x, torch.randn(16384))  # the whole-row staged kernel: 16-bit weights only
    assert not ops._staged_rows(x.float(), x.float(), torch.randn(16384), split=True)  # float32 rows
    assert not ops._staged_rows(x.half(), x, torch.randn(16384), split=True)  # dy of another dtype
    wide = torch.randn(4, 16640, dtype=torch.bfloat16)
    assert not ops._staged_rows(wide[:, :16384], wide[:, :16384], torch.randn(16384), split=True)  # strided rows
    w, mask = torch.randn(16384), torch.zeros(4, 2048, dtype=torch.uint8)
    assert ops._staged_rows(x, x, w, split=True, mask=mask)
    assert not ops._staged_rows(x, x, w, split=True, mask=torch.zeros(4, 2064, dtype=torch.uint8)[:, :2048])
    assert not ops._staged_rows(x, x, w, split=True, mask=torch.zeros(4 * 2048 + 1, dtype=torch.uint8)[1:].view(4, -1))


def test_split_staged_plan():
    """The plan of a split staged launch (worked out on the CPU too): slices of 32 rows of 256 at 4 stages and 8 warps
    (16384 columns), of 64 at 3 stages and 16 warps (32768, 65536), the row's slices and their slots rounded to a power
    of two, zero-centered gamma, LayerNorm's dB; the rows ahead and the order of the sums; the sums a warp each
    (``WARP_SUMS``: LayerNorm's at 16384 and 32768, and with dB at 65536; not RMSNorm's); one group on the CPU. The
    masked backward's is LayerNorm's but for ``HAS_MASK``, the mask's layout (``L3``), its sums a slice each at 32768
    without dB, and with dB at 32768 one row ahead, this row's sums fetched first, a warp's sums each, in 4 rows in
    flight (5 with dB at 16384 and 65536, as LayerNorm's plain backward's: ``config.split_staged_stages``; LayerNorm's
    plain backward without dB at 16384 in 5 too since round 103, the masked one's in 4); with dB the row statistics
    staged (``STATS_STAGED``), masked or not."""
    pytest.importorskip("normkit.triton.norm_bwd_staged", reason="the staged kernel needs Triton 3.6")
    from normkit.triton import ops

    def values(got):
        return dict(zip(ops.SPLIT_STAGED_BWD.constexpr_names, got.values))

    for n, slices, sr, stages, warps in ((16384, 2, 32, 4, 8), (32768, 2, 64, 3, 16), (65536, 4, 64, 3, 16)):
        got = _plan(32768, n, dtype=torch.bfloat16)
        assert got.cfg.staged and got.cfg.parts == slices and got.programs == slices, n  # one group on the CPU
        v = values(got)
        assert (v["SR"], v["PARTS"], v["PARTS_P2"], v["VALID"], v["STAGES"]) == (sr, slices, slices, n // 256, stages)
        assert v["L"] == ops.STAGED.layout(sr, warps) and v["MAX_POLLS"] == config.GPU_MAX_POLLS, n
        assert (v["IS_RMS"], v["HAS_DBIAS"], v["ZERO_CENTERED"], v["W_SHARED"], v["AHEAD"]) == (
            True, False, False, False, 1
        ), n  # fmt: skip
        assert v["FETCH_FIRST"] == (n != 32768), n  # this row's sums fetched before the publish at 16384 and 65536
        assert not v["WARP_SUMS"] and not v["STATS_STAGED"], n
        assert values(_plan(32768, n, zero_centered_gamma=True, dtype=torch.bfloat16))["ZERO_CENTERED"], n
    for n in (16384, 32768):
        for has_dbias in (True, False):
            ln = values(_plan(32768, n, is_rms=False, has_dbias=has_dbias, dtype=torch.bfloat16))
            slices = n // (8192 if has_dbias or n == 16384 else 16384)
            assert (ln["IS_RMS"], ln["HAS_DBIAS"], ln["PARTS"], ln["W_SHARED"]) == (False, has_dbias, slices, has_dbias)
            ahead = 2 if has_dbias or n == 16384 else 1  # in slices of 8192 two rows ahead
            assert ln["AHEAD"] == ahead < ln["STAGES"] and ln["FETCH_FIRST"] == (ahead == 1), (n, has_dbias)
            # 5 with dB (round 99) and without it at 16384 (round 103); without dB at 32768 slices of 16384 in 3
            assert ln["STAGES"] == (5 if has_dbias or n == 16384 else 3), (n, has_dbias)
            assert not ln["HAS_MASK"] and ln["L3"] == ln["L"] and ln["WARP_SUMS"], (n, has_dbias)  # (a placeholder)
            assert ln["STATS_STAGED"] == has_dbias, (n, has_dbias)  # the row statistics staged with dB (round 100)
            plan = _plan(32768, n, is_rms=False, has_dbias=has_dbias, dtype=torch.bfloat16, has_mask=True)
            masked, layout = values(plan), ops.STAGED.mask_layout(plan.cfg.block_n // 256, plan.cfg.num_warps)
            one_ahead = has_dbias and n == 32768  # config.SPLIT_STAGED_MASKED_ONE_AHEAD_N
            assert masked["HAS_MASK"] and masked["L3"] == layout, n
            assert masked["WARP_SUMS"] == (n == 16384 or one_ahead), (n, has_dbias)
            # with dB 5 stages at 16384 (round 100), else 4; without dB 4 at 16384 (not round 103's 5), 3 at 32768
            assert masked["STAGES"] == (4 + (n == 16384) if has_dbias else 4 if n == 16384 else 3), (n, has_dbias)
            order = (ln["AHEAD"], ln["FETCH_FIRST"])
            assert (masked["AHEAD"], masked["FETCH_FIRST"]) == ((1, True) if one_ahead else order), (n, has_dbias)
            # the rest is LayerNorm's
            rest = dict(HAS_MASK=False, L3=masked["L"], WARP_SUMS=True, AHEAD=order[0], FETCH_FIRST=order[1])
            rest["STAGES"] = ln["STAGES"]
            assert masked | rest == ln, (n, has_dbias)
    assert not values(_plan(32768, 65536, is_rms=False, has_dbias=False, dtype=torch.bfloat16))["WARP_SUMS"]
    for has_mask in (False, True):  # with dB at 65536: 8 slices of 8192 a row, sums a warp each; two rows ahead in 5
        # stages, masked or not (the masked one one row ahead, this row's sums fetched first, in 4 in rounds 98-99)
        v = values(_plan(32768, 65536, is_rms=False, has_dbias=True, dtype=torch.bfloat16, has_mask=has_mask))
        assert (v["PARTS"], v["W_SHARED"], v["HAS_MASK"], v["WARP_SUMS"]) == (8, True, has_mask, True)
        assert (v["AHEAD"], v["FETCH_FIRST"], v["STAGES"]) == (2, False, 5)
        assert v["STATS_STAGED"]
    assert config.split_staged_groups(-1, 32768, 8) == 1
    assert ops.STAGED.SENTINEL == ops.SENTINEL  # the kernel's empty slot is the one ops fills the slots with


def test_split_staged_constexprs():
    """A row's slices: slice_n must be a multiple of 256 that divides the row; the slots' count is a power of two of
    at least 2 (one slice a row still has a partner's slot, masked); the rows ahead 1 (by default) or 2, fewer than the
    stages; this row's sums fetched first only one row ahead."""
    staged = pytest.importorskip("normkit.triton.norm_bwd_staged", reason="the staged kernel needs Triton 3.6")
    got = staged.split_constexprs(24576, 8192, 8, 4, False, True, False, 1, False)
    assert (got["SR"], got["PARTS"], got["PARTS_P2"], got["VALID"], got["W_SHARED"]) == (32, 3, 4, 96, False)
    assert staged.split_constexprs(8192, 8192, 8, 4, False, True, False, 1, True)["PARTS_P2"] == 2
    assert staged.split_constexprs(16384, 4096, 4, 4, False, True, False, 1, False)["L"] == staged.layout(16, 4)
    for bad in (1000, 0, 12288):
        with pytest.raises(ValueError, match="slice_n must be a multiple of 256 that divides n"):
            staged.split_constexprs(16384, bad, 8, 4, False, True, False, 1, False)
    assert got["AHEAD"] == 1
    assert staged.split_constexprs(16384, 8192, 8, 3, False, False, True, 1, True, 2)["AHEAD"] == 2
    for stages, ahead in ((2, 2), (4, 3), (4, 0)):
        with pytest.raises(ValueError, match="ahead must be 1 or 2 and fewer than stages"):
            staged.split_constexprs(16384, 8192, 8, stages, False, False, True, 1, True, ahead)
    assert not got["FETCH_FIRST"]
    assert staged.split_constexprs(16384, 8192, 8, 4, False, True, False, 1, False, 1, True)["FETCH_FIRST"]
    with pytest.raises(ValueError, match="fetch_first orders the steps of one row ahead, got ahead = 2"):
        staged.split_constexprs(16384, 8192, 8, 4, False, False, True, 1, True, 2, True)


COMPILE_SPLIT = """
import importlib.util, json, re, sys
import torch, triton
from triton.backends.compiler import GPUTarget
from triton.experimental.gluon._runtime import GluonASTSource
from triton.runtime.jit import mangle_type

spec = importlib.util.spec_from_file_location("norm_bwd_staged", sys.argv[1])
staged = importlib.util.module_from_spec(spec)
spec.loader.exec_module(staged)
kernel = staged.split_staged_kernel
POINTER = {"float16": "*fp16", "bfloat16": "*bf16", "float32": "*fp32"}
for (n, slice_n, warps, stages, shared, ahead, first, dtype, w_dtype, zero_centered, is_rms, has_dbias,
     has_mask, warp_sums, stats_staged) in json.loads(sys.argv[2]):  # fmt: skip
    values = staged.split_constexprs(n, slice_n, warps, stages, zero_centered, is_rms, has_dbias, 1 << 22, shared,
                                     ahead, first, has_mask, warp_sums, stats_staged)
    x, w = torch.empty(64, n, dtype=getattr(torch, dtype)), torch.empty(n, dtype=getattr(torch, w_dtype))
    mask = torch.empty(64, n // 8, dtype=torch.uint8) if has_mask else None
    descriptors = staged.descriptor_arguments(x, x, w if shared else None, mask, [values["SR"]], split=True)
    signature = {name: mangle_type(d) for name, d in zip(kernel.arg_names, descriptors)}
    signature |= {"MEAN": "*fp32", "RSTD": "*fp32", "DX": POINTER[dtype], "PARTIAL": "*fp32", "SUMS": "*i64",
                  "M": "i32", "N": "i32"}
    signature.setdefault("W", POINTER[w_dtype])  # read from global memory
    signature |= {name: "constexpr" for name in values}
    aligned = [kernel.arg_names.index(name) for name in ("MEAN", "RSTD", "DX", "PARTIAL", "SUMS", "N")]
    aligned += [] if shared else [kernel.arg_names.index("W")]
    source = GluonASTSource(kernel, signature, values, {(i,): [["tt.divisibility", 16]] for i in aligned})
    compiled = triton.compile(source, target=GPUTarget("cuda", 90, 32), options={"num_warps": warps})
    threads = int(re.search(r"reqntid (\\d+)", compiled.asm["ptx"]).group(1))
    print(json.dumps({"n": n, "shared": compiled.metadata.shared, "cubin": len(compiled.asm["cubin"]),
                      "threads": threads}))
"""


def test_split_staged_kernel_compiles_for_hopper():
    """The split staged kernel compiled for sm_90 on any machine, at the rules' slices: RMSNorm's and LayerNorm's (with
    dB and without) at 16384-65536 columns, bf16 x with float32 weights and fp16 with fp16, zero-centered gamma, the
    weights staged (with dB) or read from global memory, pass one a row ahead (this row's sums fetched before the next
    row's publish or after) or two (LayerNorm's in slices of 8192); its compute warps (8 or 16) and the load warp's
    group of 4; its shared memory (the stages of a slice of x and dy, the staged weights) fits a Hopper SM; the row
    sums a slice each or a warp each (``config.split_staged_warp_sums``: LayerNorm's). With the clamped ReLU's mask
    (LayerNorm's, with dB and without, in slices of 8192 and 16384; its bytes staged too), and where the mask's layout
    cannot hold a thread's 8 columns of its slice, a ValueError before any compile."""
    staged = pytest.importorskip("normkit.triton.norm_bwd_staged", reason="the staged kernel needs Triton 3.6")
    cases = [(65536, "bfloat16", "float32", False, True, False), (16384, "float16", "float16", True, True, False)]
    cases += [(32768, "bfloat16", "float32", True, False, True), (16384, "float16", "float16", False, False, True)]
    cases += [(65536, "bfloat16", "float32", False, False, False), (32768, "float16", "float16", True, False, False)]
    cases += [(16384, "bfloat16", "float32", True, False, False), (32768, "bfloat16", "float32", False, True, False)]
    cases = [(*c, False) for c in cases]
    cases += [(32768, "bfloat16", "float32", False, False, True, True), (65536, "float16", "float16", True, False,
                                                                         False, True)]  # fmt: skip
    cases += [(16384, "bfloat16", "float32", False, False, False, True), (16384, "bfloat16", "float32", False, False,
                                                                          True, True)]  # fmt: skip
    slices = [config.split_staged_slice(c[0], c[5]) for c in cases]
    forms = [config.split_staged_form(c[0], s, c[5], c[4], c[6]) for s, c in zip(slices, cases)]
    cases = [
        (c[0], s, config.SPLIT_STAGED_SLICES[s][0], f.stages, f.weights_shared, f.ahead, f.fetch_first, *c[1:],
         f.warp_sums, f.stats_staged)
        for s, f, c in zip(slices, forms, cases)
    ]  # fmt: skip
    assert {f.warp_sums for f in forms} == {True, False}  # both forms of the sums
    assert {f.stats_staged for f in forms} == {True, False}  # the row statistics staged (with dB) or loaded
    assert {f.stages for f in forms} == {3, 4, 5}  # the rows in flight (5: LayerNorm's plain backward with dB)
    assert {(s, f.weights_shared, f.ahead, f.fetch_first) for s, f in zip(slices, forms)} == {
        (8192, False, 1, True), (8192, False, 2, False), (8192, True, 2, False), (8192, True, 1, True),
        (16384, False, 1, True), (16384, False, 1, False),
    }  # fmt: skip
    compiled = compiled_on_the_cpu(COMPILE_SPLIT, KERNEL_FILE, cases, timeout=600)
    assert [c["n"] for c in compiled] == [case[0] for case in cases]
    for c, (n, slice_n, warps, stages, shared, _, _, _, w_dtype, *_, has_mask, _, stats_staged) in zip(compiled, cases):
        assert c["cubin"] > 0 and 0 < c["shared"] <= HOPPER_SHARED_MEMORY, (n, slice_n, c)
        weights = slice_n * (4 if w_dtype == "float32" else 2) if shared else 0
        mask = stages * slice_n // 8 if has_mask else 0
        stats = stages * 8 if stats_staged else 0
        assert c["shared"] >= stages * 2 * slice_n * 2 + weights + mask + stats, (n, slice_n, c)  # stages, weights
        assert c["threads"] == 32 * (warps + 4), (n, slice_n, c)
    with pytest.raises(ValueError, match="has_mask is LayerNorm's"):
        staged.split_constexprs(16384, 8192, 8, 4, False, True, False, 1, False, 1, False, True)
    with pytest.raises(ValueError, match="the mask's bytes need the warps down the slice's rows: 4 rows at 8 warps"):
        staged.split_constexprs(8192, 1024, 8, 4, False, False, False, 1, False, 1, False, True)


@pytest.mark.gpu
@pytest.mark.parametrize(
    "m, n",
    [(4097, 13312), (2049, 15872), (4097, 12800), (2049, 14336), (4097, 10240), (2048, 12288), (4097, 10752),
     (2048, 11264), (4097, 11776), (4097, 5632), (4096, 6144), (2049, 8704), (4097, 9216), (2048, 9728),
     (24577, 7168), (24576, 7680)],
)  # fmt: skip
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
def test_staged_rms_backward_with_db_on_the_gpu(m, n, dtype):
    """RMSNorm's backward with dB (a bias) by the rules' staged launch (round 114; 10752-11776 since round 117, dB in
    warps of their own), against the reference: padded rows (15872, 14336, 11776), the last parts' dB in shared memory
    (13312, 12800, 14336, 15872), two parts (10240 fp16 x too: with dB the staged kernel; 12288 from its fewest rows);
    zero-centered gamma at bf16; the short rows 5632 / 6144 from their fewest rows, 4096 (round 119), and 8704-9728
    (9728 padded) with dB only (round 118: 8 compute warps, 3 stages, dB in the compute warps; 5632 and 9728 by the
    rules of slower DRAM, which alone take them there; not 6656, x0.746 at 4096 x 7680 fp16 in 4 warps, GPU run
    832); 7168 / 7680 from 24576 rows by an H200's rules, which alone take them (round 120)."""
    pytest.importorskip("normkit.triton.norm_bwd_staged", reason="the staged kernel needs Triton 3.6")
    with _rules_that_stage(n, has_dbias=True):
        _check(m, n, dtype, dtype, 1, dtype == torch.bfloat16, has_dbias=True)


@pytest.mark.gpu
@pytest.mark.parametrize(
    "op, m, n, has_dbias",
    [("rms_norm", 1, 65536, False), ("rms_norm", 7, 16384, False), ("rms_norm", 100, 32768, False),
     ("rms_norm", 100, 65536, True), ("rms_norm", 4097, 16384, True),
     ("rms_norm", 4097, 65536, False), ("layer_norm", 1, 32768, True), ("layer_norm", 100, 16384, True),
     ("layer_norm", 4097, 32768, True), ("layer_norm", 7, 32768, False), ("layer_norm", 4097, 16384, False),
     ("layer_norm", 100, 65536, False), ("layer_norm", 100, 65536, True)],
)  # fmt: skip
@pytest.mark.parametrize("dtypes", [(torch.bfloat16, torch.float32), (torch.float16, torch.float16)],
                         ids=["bf16-fp32", "fp16"])  # fmt: skip
@pytest.mark.parametrize("zero_centered_gamma", [False, True])
def test_split_staged_backward_on_the_gpu(op, m, n, has_dbias, dtypes, zero_centered_gamma):
    """The split staged kernel at its widths, taken from one row on (its fewest rows lowered), against the
    reference: a row a group (1), fewer rows than groups (7, 100), rows that do not divide over the groups (4097),
    RMSNorm's and LayerNorm's with dB and without, slices of 8192 and 16384, bf16 x with float32 weights and fp16 with
    fp16."""
    pytest.importorskip("normkit.triton.norm_bwd_staged", reason="the staged kernel needs Triton 3.6")
    with config.limits(split_staged_min_m=1, ln_dbias_split_staged_16384_min_m=1):
        _check(m, n, *dtypes, 1, zero_centered_gamma, op=op, has_dbias=has_dbias)


@pytest.mark.gpu
def test_split_staged_backward_at_the_rules_rows():
    """The rule's own launch, many rows a program: 32768 x 16384 (fp16 x, fp16 weights: dW's tolerance is fp16's),
    RMSNorm's and LayerNorm's with dB; strided rows and weights not on 16 bytes; 4096 x 32768 in slices of 16384."""
    pytest.importorskip("normkit.triton.norm_bwd_staged", reason="the staged kernel needs Triton 3.6")
    _check(32768, 16384, torch.float16, torch.float16, 1)
    _check(32768, 16384, torch.float16, torch.float16, 1, op="layer_norm", has_dbias=True)
    _check(32768, 16384, torch.float16, torch.float16, 1, weight_offset=2)  # the kernel loads a copy
    _check(32768, 16384, torch.float16, torch.float16, 0, row_pad=64)  # rows it cannot view: the split rows
    _check(4096, 32768, torch.float16, torch.float16, 1, weight_offset=2)
    _check(4096, 32768, torch.bfloat16, torch.float32, 1, op="layer_norm")
    _check(32768, 16384, torch.float16, torch.float16, 1, has_dbias=True)  # RMSNorm's with dB (round 114)


@pytest.mark.gpu
@pytest.mark.parametrize(
    "m, n, has_dbias",
    [(1, 32768, True), (7, 16384, True), (100, 32768, False), (4097, 16384, False), (4097, 65536, False),
     (100, 65536, True)],
)  # fmt: skip
@pytest.mark.parametrize("dtypes", [(torch.bfloat16, torch.float32), (torch.float16, torch.float16)],
                         ids=["bf16-fp32", "fp16"])  # fmt: skip
@pytest.mark.parametrize("zero_centered_gamma", [False, True])
def test_masked_split_staged_backward_on_the_gpu(m, n, has_dbias, dtypes, zero_centered_gamma):
    """LayerNorm + clamped ReLU's backward by the split staged kernel, taken from one row on (its fewest rows lowered),
    against the reference: dy masked in both passes, slices of 8192 (with dB: two rows ahead in 5 stages at 16384 and
    65536, their partials stored as they lie, one row ahead with this row's sums fetched first at 32768; without dB at
    16384) and of 16384 (without dB at 32768 and 65536)."""
    pytest.importorskip("normkit.triton.norm_bwd_staged", reason="the staged kernel needs Triton 3.6")
    with config.limits(split_staged_min_m=1, ln_dbias_split_staged_16384_min_m=1):
        _check(m, n, *dtypes, 1, zero_centered_gamma, op="layer_norm_clamped_relu", has_dbias=has_dbias)


@pytest.mark.gpu
def test_masked_split_staged_backward_at_the_rules_rows():
    """The masked backward's rule launch, many rows a program (32768 x 16384 and 4096 x 32768, with dB and without);
    a mask of all ones (dx, dW and dB then the plain backward's, bit for bit: at 4096 x 32768 with dB both publish
    their sums a warp each, the masked one a row ahead, this row's sums fetched first, 4 rows in flight, the plain one
    two rows ahead, 5 in flight, which orders the same arithmetic differently in time only) and of all zeros (then
    zero); 65536 with dB takes the kernel too (a warp's sums); fewer rows than the rule's keep the split rows, and so do
    masks the TMA cannot stage (rows apart by more than their bytes, a start not on 16 bytes), read there as they
    lie."""
    pytest.importorskip("normkit.triton.norm_bwd_staged", reason="the staged kernel needs Triton 3.6")
    from normkit.triton import ops

    for m, n, dtypes, has_dbias in ((32768, 16384, (torch.float16, torch.float16), True),
                                    (4096, 32768, (torch.bfloat16, torch.float32), False),
                                    (4096, 32768, (torch.bfloat16, torch.float32), True)):  # fmt: skip
        _check(m, n, *dtypes, 1, op="layer_norm_clamped_relu", has_dbias=has_dbias)
    _check(4096, 65536, torch.bfloat16, torch.float32, 1, op="layer_norm_clamped_relu", has_dbias=True)
    _check(4095, 32768, torch.bfloat16, torch.float32, 0, op="layer_norm_clamped_relu", has_dbias=True)
    x, w, _ = make_inputs(4096, 32768, torch.bfloat16, torch.float32, bias=False)
    _, (dy, mask, x, w, mean, rstd) = backward_call("layer_norm_clamped_relu", x, w, None)
    wide = torch.full((4096, 4096 + 48), 0xFF, dtype=torch.uint8, device=x.device)  # bytes past the view's all set
    wide[:, 16:4112] = mask
    shifted = torch.full((4096 * 4096 + 1,), 0xFF, dtype=torch.uint8, device=x.device)[1:].view(4096, 4096)
    shifted.copy_(mask)
    ones, zeros = torch.full_like(mask, 0xFF), torch.zeros_like(mask)
    spy, patch = staged_launches()
    with patch:
        for packed, taken in ((wide[:, 16:4112], 0), (shifted, 0), (zeros, 1), (ones, 1)):
            before = spy.call_count
            got = ops.layer_norm_clamped_relu_bwd(dy, packed, x, w, mean, rstd)
            assert spy.call_count - before == taken, (packed.stride(), packed.data_ptr() % 16)
            want = reference.layer_norm_clamped_relu_bwd(dy, packed, x, w, mean, rstd)
            for name, g, e in zip(("dx", "dw", "db"), got, want):
                compare(g, e, f"masked backward {name}, mask stride {packed.stride(0)}")
            if packed is zeros:
                assert not any(g.any() for g in got)  # every bit clear: dy as zeros
        plain = ops.layer_norm_bwd(dy, x, w, mean, rstd)
    assert spy.call_count == 3
    for name, g, e in zip(("dx", "dw", "db"), got, plain):  # every bit set: the plain backward's bits
        assert torch.equal(g, e), name


@pytest.mark.gpu
def test_layer_norm_split_staged_backward_at_16384_from_fewer_rows():
    """LayerNorm's backward at 16384 columns takes the split staged kernel (two rows ahead) from 4096 rows without dB
    and from 8192 with dB (``LIMITS["ln_dbias_split_staged_16384_min_m"]``); with dB at 4096 rows it does not."""
    pytest.importorskip("normkit.triton.norm_bwd_staged", reason="the staged kernel needs Triton 3.6")
    _check(4096, 16384, torch.bfloat16, torch.float32, 1, op="layer_norm")
    _check(4096, 16384, torch.float16, torch.float16, 1, True, op="layer_norm")
    _check(8192, 16384, torch.bfloat16, torch.float32, 1, op="layer_norm", has_dbias=True)
    _check(8191, 16384, torch.float16, torch.float16, 0, op="layer_norm", has_dbias=True)
