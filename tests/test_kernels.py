"""Every kernel backend available here (Triton, and cuDNN on a GPU) against normkit.reference."""

import contextlib
import dataclasses
import importlib
import itertools
import math
import types

import pytest
import torch
from conftest import DEVICE, HAS_GPU, kernel_backends

from normkit import bitmask, reference
from normkit.testing import compare, compare_masks

BACKENDS = kernel_backends()
# (x dtype, weight dtype): plain, and PyTorch genai's mixed bf16 activations with fp32 weights
DTYPES = [
    (torch.float32, torch.float32),
    (torch.float16, torch.float16),
    (torch.bfloat16, torch.bfloat16),
    (torch.bfloat16, torch.float32),
]
DTYPE_IDS = ["fp32", "fp16", "bf16", "bf16-fp32w"]
N_VALUES = [1, 7, 100, 1024, 4097]  # 1024: whole tiles, no masked columns (EVEN_N)
FORWARDS = {
    "layer_norm": "layer_norm_fwd",
    "rms_norm": "rms_norm_fwd",
    "layer_norm_clamped_relu": "layer_norm_clamped_relu_fwd",
}
LOWER, UPPER = -0.25, 1.0

pytestmark = pytest.mark.skipif(not BACKENDS, reason="no kernel backend can run here")


def backend_ops(name):
    return importlib.import_module(f"normkit.{name}")


def tile_layout(layout):
    """The forward's tiles (one-tile rows, and chunked rows' second pass) held as ``[rows, N]`` ("2d") or ``[rows,
    N / 8, 8]`` ("3d", ``TILE_3D``), whatever their width and dtypes (the heuristic's choice: ``ops._tiles_3d``)."""
    from unittest import mock

    from normkit.triton import ops

    return mock.patch.object(ops, "_tiles_3d", lambda cfg, x, weight: layout == "3d")


def forward_constexprs(op, x, w):
    """The constexprs by name of the training forward launch that ``op`` makes of x (with bias but for RMSNorm,
    zero-centered gamma), under the rules, limits and forced configs in effect."""
    from normkit.triton import config, ops

    clamp = (LOWER, UPPER) if op == "layer_norm_clamped_relu" else None
    m, n = x.shape
    plan = ops._forward_plan(m, n, x.dtype, w.dtype, True, op == "rms_norm", True, clamp, True, -1, config.generation)
    return dict(zip(ops.NORM_FWD.constexpr_names, plan.values))


def make_inputs(m, n, x_dtype, w_dtype, *, bias=True, row_pad=0, device=DEVICE):
    """x [m, n] with row stride n + row_pad (a strided view, not a copy), weight and bias [n]."""
    storage = torch.randn(m, n + row_pad, device=device) * 2 + 0.5
    x = storage.to(x_dtype)[:, :n]
    w = (torch.randn(n, device=device) * 0.5 + 1).to(w_dtype)
    b = torch.randn(n, device=device).to(w_dtype) if bias else None
    return x, w, b


def skip_unsupported(backend, op, n, x_dtype, w_dtype=None):
    if backend == "cudnn" and op == "layer_norm_clamped_relu" and n % 64:
        # N % 8 != 0: normkit.cudnn raises a ValueError (its mask rows would not start on a byte); other N that
        # are not multiples of 64 (8, 264, 520 seen): cuDNN 9.19 has no engine (python -m normkit.cudnn.support)
        pytest.skip("cuDNN's fused LayerNorm + ReLU builds for N % 64 == 0 only (cuDNN 9.19, H200)")
    if backend == "cudnn" and op == "layer_norm_clamped_relu" and w_dtype not in (None, x_dtype):
        pytest.skip("cuDNN's fused LayerNorm + ReLU needs weight in x's dtype (normkit.cudnn raises a TypeError)")


def check_forward(backend, op, x, w, b, zero_centered_gamma=False, eps=1e-5):
    fn = FORWARDS[op]
    args = (x, w, b, eps)
    kwargs = {"zero_centered_gamma": zero_centered_gamma}
    if op == "layer_norm_clamped_relu":
        kwargs.update(lower=LOWER, upper=UPPER)
    got = getattr(backend_ops(backend), fn)(*args, **kwargs)
    want = getattr(reference, fn)(*args, **kwargs)
    names = {"layer_norm": ["y", "mean", "rstd"], "rms_norm": ["y", "rstd"]}.get(op, ["y", "mean", "rstd", "mask"])
    for name, g, e in zip(names, got, want):
        if name == "mask":
            # bits may differ only where the reference's output before the clamp sits on a bound
            pre_clamp = reference.layer_norm_fwd(x, w, b, eps, zero_centered_gamma)[0]
            compare_masks(g, e, x.shape[1], pre_clamp, LOWER, UPPER)
        else:
            compare(g, e, f"{backend}.{fn} {name}")
    return want


def backward_call(op, x, w, b, zero_centered_gamma=False, eps=1e-5):
    """``(name of the backward function, its arguments but the flags)`` of op on x: dy random, the statistics (and
    the mask) the reference's."""
    dy = torch.randn(x.shape, device=x.device).to(x.dtype)
    if op == "rms_norm":
        _, rstd = reference.rms_norm_fwd(x, w, b, eps, zero_centered_gamma)
        return "rms_norm_bwd", (dy, x, w, rstd)
    if op == "layer_norm":
        _, mean, rstd = reference.layer_norm_fwd(x, w, b, eps, zero_centered_gamma)
        return "layer_norm_bwd", (dy, x, w, mean, rstd)
    _, mean, rstd, mask = reference.layer_norm_clamped_relu_fwd(x, w, b, eps, LOWER, UPPER, zero_centered_gamma)
    return "layer_norm_clamped_relu_bwd", (dy, mask, x, w, mean, rstd)


def check_backward(backend, op, x, w, b, zero_centered_gamma=False, has_dbias=True, eps=1e-5):
    fn, args = backward_call(op, x, w, b, zero_centered_gamma, eps)
    got = getattr(backend_ops(backend), fn)(*args, zero_centered_gamma, has_dbias)
    want = getattr(reference, fn)(*args, zero_centered_gamma, has_dbias)
    for name, g, e in zip(["dx", "dw", "db"], got, want):
        if e is None:
            assert g is None, f"{fn}: db must be None when has_dbias=False"
        else:
            compare(g, e, f"{backend}.{fn} {name}")
    return got


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("op", list(FORWARDS))
@pytest.mark.parametrize("dtypes", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("n", N_VALUES)
def test_forward_and_backward(backend, op, dtypes, n):
    skip_unsupported(backend, op, n, *dtypes)
    x, w, b = make_inputs(5, n, *dtypes, bias=op != "rms_norm")
    check_forward(backend, op, x, w, b)
    check_backward(backend, op, x, w, b, has_dbias=op != "rms_norm")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("op", list(FORWARDS))
@pytest.mark.parametrize("zero_centered_gamma", [False, True])
@pytest.mark.parametrize("bias", [False, True])
def test_flags(backend, op, zero_centered_gamma, bias):
    dtypes = (torch.bfloat16, torch.bfloat16 if backend == "cudnn" else torch.float32)
    x, w, b = make_inputs(9, 768 if backend == "cudnn" else 264, *dtypes, bias=bias)
    check_forward(backend, op, x, w, b, zero_centered_gamma)
    check_backward(backend, op, x, w, b, zero_centered_gamma, has_dbias=bias)


@pytest.mark.parametrize("op", list(FORWARDS))
@pytest.mark.parametrize("dtypes", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("n", [1, 7, 100, 264, 1024])
@pytest.mark.parametrize("zero_centered_gamma, bias", [(False, True), (True, False)])
def test_forwards_in_3d_tiles(op, dtypes, n, zero_centered_gamma, bias):
    """The forwards' one-tile rows held as [rows, N / 8, 8] (TILE_3D, the heuristic's layout from 2048 columns
    with float32 weights), forced at every width and dtype: strided rows, ragged and whole bytes, with and without
    bias."""
    x, w, b = make_inputs(6, n, *dtypes, bias=bias, row_pad=24)
    with tile_layout("3d"):
        check_forward("triton", op, x, w, b, zero_centered_gamma)


@pytest.mark.parametrize("op", list(FORWARDS))
@pytest.mark.parametrize("dtypes", [DTYPES[1], DTYPES[3]], ids=[DTYPE_IDS[1], DTYPE_IDS[3]])
@pytest.mark.parametrize("n", [1000, 1024])  # a ragged last chunk and byte; whole chunks (EVEN_N)
@pytest.mark.parametrize("block_m", [1, 2])
def test_chunked_forwards_in_3d_tiles(op, dtypes, n, block_m):
    """The second pass of chunked rows in [rows, chunk / 8, 8] tiles (TILE_3D, the heuristic's layout where a thread
    holds 8 elements of a chunk and the weights are wider than x), forced: 8 chunks of 128, strided rows, a row
    block that runs past M, zero-centered gamma."""
    from normkit.triton import config
    from normkit.triton.config import LaunchConfig

    x, w, b = make_inputs(7, n, *dtypes, bias=op != "rms_norm", row_pad=24)
    with tile_layout("3d"), config.forced(fwd=LaunchConfig(block_m, 128, -(-n // 128), 1)):
        check_forward("triton", op, x, w, b, zero_centered_gamma=True)


@pytest.mark.parametrize("op", list(FORWARDS))
@pytest.mark.parametrize("dtypes", [DTYPES[1], DTYPES[3]], ids=[DTYPE_IDS[1], DTYPE_IDS[3]])
@pytest.mark.parametrize("n, block_n", [(100, 16), (900, 128), (1000, 128)])  # 7 chunks (6 whole), 8 (7 whole)
@pytest.mark.parametrize("block_m", [1, 2])
@pytest.mark.parametrize("layout", ["2d", "3d"])
def test_chunked_forward_whole_chunks_then_a_ragged_one(op, dtypes, n, block_n, block_m, layout):
    """Chunked rows of at least 7 chunks that end in a ragged chunk (``WHOLE_CHUNKS``, ``ops._whole_chunks``): the
    whole chunks without column bounds, the last with them, forced: strided rows, a row block past M, a large mean,
    zero-centered gamma, both tile layouts of pass two, training and inference calls."""
    from normkit.triton import config
    from normkit.triton.config import LaunchConfig

    x, w, b = make_inputs(7, n, *dtypes, bias=op != "rms_norm", row_pad=24)
    x = x * 10 + 100
    with tile_layout(layout), config.forced(fwd=LaunchConfig(block_m, block_n, -(-n // block_n), 1)):
        assert forward_constexprs(op, x, w)["WHOLE_CHUNKS"] == n // block_n
        check_forward("triton", op, x, w, b, zero_centered_gamma=True)
        with torch.no_grad():
            check_forward("triton", op, x, w, b)


def test_whole_chunks_rule():
    """``WHOLE_CHUNKS`` where measured faster (GPU runs 361-364): chunked rows that end in a ragged chunk, not with
    ``ahead``, in calls of more than 4096 rows or of at least 7 chunks a row; 0 for whole chunks, fewer chunks at
    4096 rows, one-tile rows, and chunks past the row's end."""
    from normkit.triton import config, ops
    from normkit.triton.config import LaunchConfig

    def whole(m, n, **kwargs):
        return ops._whole_chunks(m, n, config.fwd_config(m, n, **kwargs))

    assert whole(4096, 12800) == 6 and whole(4096, 14848) == 7  # 7 and 8 chunks of 2048
    assert whole(32768, 6656) == whole(32768, 6656, has_mask=True) == 6  # 7 chunks of 1024
    assert whole(32768, 5632) == whole(4097, 5632) == 5 and whole(32768, 4608) == 4  # many rows: any chunks
    assert whole(32768, 5632, is_rms=True) == 2  # 3 chunks of 2048
    for m, n in [(4096, 10752), (4096, 5632), (4096, 14336), (4096, 8704), (32768, 16384), (32768, 4096), (4096, 4608)]:
        assert whole(m, n) == 0, (m, n)
    assert ops._whole_chunks(7, 1000, LaunchConfig(1, 128, 8, 1)) == 7
    assert ops._whole_chunks(7, 1000, LaunchConfig(1, 128, 8, 1, ahead=True)) == 0
    assert ops._whole_chunks(7, 1000, LaunchConfig(1, 128, 9, 1)) == 0  # a chunk past the row's end: all bounded
    assert ops._whole_chunks(7, 700, LaunchConfig(1, 128, 6, 1)) == 0
    assert ops._whole_chunks(4097, 700, LaunchConfig(1, 128, 6, 1)) == 5


@pytest.mark.parametrize("op", list(FORWARDS))
def test_chunked_forward_whole_chunks_of_many_rows(op):
    """A call of more than 4096 rows takes ``WHOLE_CHUNKS`` with fewer than 7 chunks a row: 4 chunks of 32 (3
    whole), 64 rows a tile (the last one past M), forced, against the reference."""
    from normkit.triton import config
    from normkit.triton.config import LaunchConfig

    x, w, b = make_inputs(4100, 100, torch.bfloat16, torch.float32, bias=op != "rms_norm", row_pad=8)
    with config.forced(fwd=LaunchConfig(64, 32, 4, 1)):
        assert forward_constexprs(op, x, w)["WHOLE_CHUNKS"] == 3
        check_forward("triton", op, x, w, b, zero_centered_gamma=True)


def test_row_align_rule():
    """``ALIGN`` (``ops._row_align(itemsize, n, *strides)``): 1 where N and the row strides are multiples of 16
    (Triton's own specialization), else the largest power of two that divides them all, up to 16 bytes of x."""
    from normkit.triton import ops

    assert ops._row_align(2, 9000, 9000) == 8 and ops._row_align(4, 9000, 9000) == 4
    assert ops._row_align(2, 4500, 4500) == ops._row_align(2, 1300, 1300) == ops._row_align(4, 100, 100) == 4
    assert ops._row_align(2, 1024, 1032) == ops._row_align(2, 1000, 1024) == 8 and ops._row_align(8, 264, 264) == 2
    assert ops._row_align(2, 1000, 1000, 1004) == 4  # dy's stride 1000, x's 1004
    assert ops._row_align(2, 1024, 1024) == ops._row_align(4, 4096, 8192, 4096) == 1  # multiples of 16
    assert ops._row_align(2, 7, 7) == ops._row_align(2, 1, 1) == ops._row_align(2, 4097, 4097) == 1  # odd


@pytest.mark.parametrize("op", list(FORWARDS))
@pytest.mark.parametrize(
    "n, row_pad, dtypes, align",
    [
        (264, 0, DTYPES[3], 8),  # bf16 x, float32 weights: 16-byte rows
        (100, 0, DTYPES[0], 4),  # float32: 16-byte rows
        (1000, 4, DTYPES[1], 4),  # fp16, a row stride of 1004: 8-byte rows
        (1024, 8, DTYPES[2], 8),  # N a multiple of 16, the stride not
        (4100, 0, DTYPES[3], 4),  # chunked rows under the rules (3 chunks of 2048)
        (7, 0, DTYPES[1], 1),
    ],
)
def test_forward_in_units_of_row_alignment(monkeypatch, op, n, row_pad, dtypes, align):
    """The forwards take N and the row strides in units of ``ALIGN`` elements where N or x's row stride is not a
    multiple of 16 (``ops._row_align``): launched so, and against the reference (training and inference calls)."""
    from normkit.triton import ops

    x, w, b = make_inputs(9, n, *dtypes, bias=op != "rms_norm", row_pad=row_pad)
    check_forward("triton", op, x, w, b, zero_centered_gamma=True)
    with torch.no_grad():
        check_forward("triton", op, x, w, b)
    launched = _record_launches(monkeypatch, "NORM_FWD")
    getattr(ops, FORWARDS[op])(x, w, b, 1e-5, **({"lower": LOWER, "upper": UPPER} if "clamped" in op else {}))
    assert launched[0]["ALIGN"] == align


@pytest.mark.parametrize("op", list(FORWARDS))
@pytest.mark.parametrize(
    "n, row_pad, dtypes, align, forced",
    [
        (264, 0, DTYPES[3], 8, None),  # whole rows under the rules
        (100, 0, DTYPES[0], 4, None),
        (1000, 4, DTYPES[1], 4, None),
        (1000, 4, DTYPES[1], 4, (1, 128, 8, 1, 2)),  # chunked rows
        (1000, 8, DTYPES[2], 8, (1, 256, 1, 1, 1, 4)),  # split rows: 4 parts of 256
        (
            1000,
            24,
            DTYPES[3],
            8,
            dict(block_m=1, block_n=512, num_chunks=1, num_warps=1, programs_per_sm=1, tail_n=512, tma=True),
        ),  # dy and x by the TMA, dx by each thread
        (7, 0, DTYPES[1], 1, None),
    ],
    ids=["264", "100-fp32", "1000-stride-1004", "1000-chunked", "1000-split", "1000-tma", "7"],
)
def test_backward_in_units_of_row_alignment(monkeypatch, op, n, row_pad, dtypes, align, forced):
    """The backwards (whole, chunked and split rows; by the TMA, N and dx's row stride) take N and the row strides in
    units of ``ALIGN`` elements where N or a row stride of dy or x is not a multiple of 16: against the reference,
    and launched so."""
    import contextlib

    from normkit.triton import config, ops
    from normkit.triton.config import LaunchConfig

    x, w, b = make_inputs(9, n, *dtypes, bias=op != "rms_norm", row_pad=row_pad)
    if forced is None:
        forcing = contextlib.nullcontext()
    else:
        forcing = config.forced(bwd=LaunchConfig(**forced) if isinstance(forced, dict) else LaunchConfig(*forced))
    with forcing:
        check_backward("triton", op, x, w, b, zero_centered_gamma=True, has_dbias=op != "rms_norm")
        launched = _record_launches(monkeypatch, "NORM_BWD", "SPLIT_ROWS", "NORM_BWD_TMA")
        fn, args = backward_call(op, x, w, b, zero_centered_gamma=True)
        getattr(ops, fn)(*args, True, op != "rms_norm")
    kernel = "TMA_STORE" if isinstance(forced, dict) else "PARTS" if forced and len(forced) > 5 else "NUM_CHUNKS"
    assert launched[0]["ALIGN"] == align and kernel in launched[0]


def _record_launches(monkeypatch, *names: str) -> list[dict]:
    """Make the launchers ``names`` of ``normkit.triton.ops`` (``NORM_FWD``, ``SPLIT_ROWS``, ...) record each launch
    instead of launching: its constexprs by name, ``num_warps`` and ``grid``, added to the list returned. Their
    ``launch`` is replaced, which ``launcher[grid](...)`` calls too. A recorded backward writes no dW/dB partials, so
    the sum of them after it (``ops._sum_partials``) is skipped too: it would add up memory nothing wrote."""
    from normkit.triton import ops

    if {"NORM_BWD", "SPLIT_ROWS", "NORM_BWD_TMA"} & set(names):
        monkeypatch.setattr(ops, "_sum_partials", lambda *args, **kwargs: (None, None))
    launched = []
    for name in names:
        launcher = getattr(ops, name)

        def record(grid, args, num_warps, values, head=0, launcher=launcher):
            launched.append(dict(zip(launcher.constexpr_names, values), num_warps=num_warps, grid=grid))

        monkeypatch.setattr(launcher, "launch", record)
    return launched


def test_3d_tiles_from_the_heuristics_width(monkeypatch):
    """TILE_3D where the weights are wider than x, for one-tile rows at least ``tile_3d_min_n`` wide and for chunks
    of 8 elements a thread (and only there)."""
    from normkit.triton import config, ops

    launched = _record_launches(monkeypatch, "NORM_FWD")
    x, w, b = make_inputs(4, 2048, torch.bfloat16, torch.float32)
    ops.layer_norm_clamped_relu_fwd(x, w, b, 1e-5)
    ops.layer_norm_fwd(x, w, b, 1e-5)
    ops.layer_norm_clamped_relu_fwd(x[:, :1024], w[:1024], b[:1024], 1e-5)
    ops.layer_norm_clamped_relu_fwd(x, w.bfloat16(), b.bfloat16(), 1e-5)  # weights in x's dtype
    ops.layer_norm_clamped_relu_fwd(x.float(), w, b, 1e-5)
    with config.limits(fwd_max_block_n=1024):  # 2048 columns in chunks of 1024, 16 elements a thread
        ops.layer_norm_clamped_relu_fwd(x, w, b, 1e-5)
    with config.forced(fwd=config.LaunchConfig(1, 256, 8, 1)):  # chunks of 8 elements a thread
        ops.layer_norm_clamped_relu_fwd(x, w, b, 1e-5)
        ops.rms_norm_fwd(x, w, None, 1e-5)
        ops.layer_norm_fwd(x, w.bfloat16(), b.bfloat16(), 1e-5)
    assert [k["TILE_3D"] for k in launched] == [True, True, False, False, False, False, True, True, False]
    assert config.LIMITS["tile_3d_min_n"] == 2048 and launched[0]["BLOCK_N"] == 2048


def test_whole_row_blocks_drop_the_row_bounds(monkeypatch):
    """``EVEN_M`` (the forward's loads and stores without a row bound) only where every program's rows are in x: M a
    multiple of the rows a tile, on a grid of one program a row block (a persistent program's last steps, and the
    loads it issues a block ahead, pass the last row)."""
    from normkit.triton import config, ops

    launched = _record_launches(monkeypatch, "NORM_FWD")
    x, w, b = make_inputs(8, 100, torch.float32, torch.float32)
    with config.forced(fwd=config.LaunchConfig(4, 128, 1, 1)):
        ops.layer_norm_fwd(x, w, b, 1e-5)  # 8 rows, 4 a tile
        ops.layer_norm_fwd(x[:7], w, b, 1e-5)  # 7 rows
    with config.forced(fwd=config.LaunchConfig(4, 128, 1, 1, 4)):  # the same tiles on a persistent grid
        ops.rms_norm_fwd(x, w, None, 1e-5)
    with config.forced(fwd=config.LaunchConfig(1, 32, 4, 1)):  # chunked rows, one a program
        ops.layer_norm_clamped_relu_fwd(x[:7], w, b, 1e-5)
    assert [(k["EVEN_M"], k["PERSISTENT"]) for k in launched] == [(True, False), (False, False), (False, True),
                                                                   (True, False)]  # fmt: skip


def test_cached_plans_follow_forced_configs_and_limits(monkeypatch):
    """The launchers keep each shape's plan (config, grid, constexprs) from call to call; a plan must not outlive the
    rules it came from: inside ``forced`` and ``limits`` the same shape launches their config, and after them the
    heuristic's again."""
    from normkit.triton import config, ops

    launched = _record_launches(monkeypatch, "NORM_FWD", "NORM_BWD")
    x, w, b = make_inputs(8, 100, torch.float32, torch.float32)
    dy, mean, rstd = torch.randn_like(x), torch.zeros(8, device=DEVICE), torch.ones(8, device=DEVICE)

    def both():
        ops.layer_norm_fwd(x, w, b, 1e-5)
        ops.layer_norm_bwd(dy, x, w, mean, rstd)
        return [(k["BLOCK_M"], k["BLOCK_N"], k["NUM_CHUNKS"], k["num_warps"]) for k in launched[-2:]]

    heuristic = both()
    assert heuristic == [(8, 128, 1, 1), (8, 128, 1, 1)]  # whole rows of 100 in one tile of 128
    forced = config.LaunchConfig(1, 32, 4, 1), config.LaunchConfig(2, 32, 4, 2, 1)
    with config.forced(fwd=forced[0], bwd=forced[1]):
        assert both() == [(1, 32, 4, 1), (2, 32, 4, 2)]
    assert both() == heuristic
    with config.limits(fwd_max_block_n=64, bwd_max_block_n=64, chunk_n=64):  # chunks of 64
        assert both() == [(1, 64, 2, 1), (1, 64, 2, 1)]
    assert both() == heuristic


def test_inference_rule_and_its_launch(monkeypatch):
    """``config.infer_config``: its own tiles for many rows of 256 columns and RMSNorm's of 257-1024, the training
    forward's plain tiles elsewhere (the clamped ReLU's too: no mask stored); the inference call launches it without
    ``TRAINING``, the training forward with."""
    from normkit.triton import config, ops

    L = config.LaunchConfig
    assert config.infer_config(32768, 256) == L(4, 256, 1, 2) and config.infer_config(8193, 200, True) == L(
        8, 256, 1, 2
    )
    assert config.infer_config(32768, 600, True) == L(1, 1024, 1, 1) and config.infer_config(16384, 512, True) == L(
        2, 512, 1, 1
    )
    for m, n, is_rms in [(32768, 512, False), (32768, 2048, True), (8192, 256, False), (4096, 1024, True)]:
        assert config.infer_config(m, n, is_rms) == config.fwd_config(m, n, is_rms)
    launched = _record_launches(monkeypatch, "NORM_FWD")
    x, w, b = make_inputs(9000, 256, torch.bfloat16, torch.float32)
    ops.infer_unchecked("layer_norm_clamped_relu", x, w, b, 1e-5, False, 0.0, 6.0)
    ops.layer_norm_clamped_relu_fwd(x, w, b, 1e-5)
    (infer, train) = [(k["BLOCK_M"], k["num_warps"], k["TRAINING"], k["CLAMP_MASK"], k["grid"]) for k in launched]
    assert infer == (4, 2, False, True, (2250,)) and train[2:4] == (True, True) and train[:2] != (4, 2)


@pytest.mark.parametrize("op", list(FORWARDS))
@pytest.mark.parametrize("m, n", [(37, 256), (5, 700), (6, 512)])
def test_inference_tiles_give_the_training_forwards_y(op, m, n):
    """The inference rule's tiles (forced here for a few rows), each against the training forward in the same tile:
    the same y, bit for bit (the mask and statistics are what the inference call leaves out), and the reference's
    within tolerance. Strided bf16 rows with float32 weights."""
    from normkit.triton import config, ops

    x, w, b = make_inputs(m, n, torch.bfloat16, torch.float32, bias=op != "rms_norm", row_pad=8)
    cfg = config.infer_config(32768, n, op == "rms_norm")
    assert cfg.num_chunks == 1 and cfg.programs_per_sm == 0
    with config.forced(fwd=cfg):
        y = ops.infer_unchecked(op, x, w, b, 1e-5, True, LOWER, UPPER)
        kwargs = {"lower": LOWER, "upper": UPPER} if op == "layer_norm_clamped_relu" else {}
        trained = getattr(ops, FORWARDS[op])(x, w, b, 1e-5, zero_centered_gamma=True, **kwargs)
    assert torch.equal(y, trained[0])
    compare(y, getattr(reference, FORWARDS[op])(x, w, b, 1e-5, zero_centered_gamma=True, **kwargs)[0], "y")


# (n, head, tail, rows a program) of the forced head + tail tests: a ragged tail (100 = 64 + 36 of 64; 130 = 128 + 2
# of 16), a whole one (320 = 256 + 64), a head past the row's end (100 in 128 + 16: the tail all padding)
HEAD_AND_TAIL_ROWS = [(100, 64, 64, 1), (130, 128, 16, 2), (320, 256, 64, 2), (100, 128, 16, 1)]


@pytest.mark.parametrize("op", list(FORWARDS))
@pytest.mark.parametrize("dtypes", [DTYPES[1], DTYPES[3]], ids=[DTYPE_IDS[1], DTYPE_IDS[3]])
@pytest.mark.parametrize("n, head, tail, block_m", HEAD_AND_TAIL_ROWS)
@pytest.mark.parametrize("layout", ["2d", "3d"])
def test_head_and_tail_tiles(op, dtypes, n, head, tail, block_m, layout):
    """One-tile rows held as a head tile and a tail tile after it (``tail_n``), forced: a ragged tail (100 = 64 +
    36 of 64; 130 = 128 + 2 of 16), a whole one (320 = 256 + 64), a head past the row's end (100 in 128 + 16: the
    tail all padding), 1 and 2 rows a program (a row block past M), strided rows, zero-centered gamma, both tile
    layouts."""
    from normkit.triton import config
    from normkit.triton.config import LaunchConfig

    x, w, b = make_inputs(7, n, *dtypes, bias=op != "rms_norm", row_pad=24)
    with tile_layout(layout), config.forced(fwd=LaunchConfig(block_m, head, 1, 1, tail_n=tail)):
        check_forward("triton", op, x, w, b, zero_centered_gamma=True)


@pytest.mark.parametrize("op", list(FORWARDS))
@pytest.mark.parametrize("dtypes", [DTYPES[1], DTYPES[3]], ids=[DTYPE_IDS[1], DTYPE_IDS[3]])
@pytest.mark.parametrize("n, head, tail, block_m", [(100, 128, 0, 1), (130, 128, 16, 2), (320, 256, 64, 2)])
@pytest.mark.parametrize("layout", ["2d", "3d"])
def test_persistent_forward(op, dtypes, n, head, tail, block_m, layout):
    """The forward's one-tile rows on a persistent grid (``programs_per_sm``), forced: 7 rows over at most 4
    programs (the interpreter's grid), so a program takes one or two row blocks (and issues loads for a block past
    M at its last step); with and without a tail tile, strided rows, zero-centered gamma, both tile layouts."""
    from normkit.triton import config
    from normkit.triton.config import LaunchConfig

    x, w, b = make_inputs(7, n, *dtypes, bias=op != "rms_norm", row_pad=24)
    with tile_layout(layout), config.forced(fwd=LaunchConfig(block_m, head, 1, 1, 1, tail_n=tail)):
        check_forward("triton", op, x, w, b, zero_centered_gamma=True)


@pytest.mark.parametrize("op", list(FORWARDS))
@pytest.mark.parametrize("case", ["aligned", "weights_off_16_bytes", "odd_row_stride", "persistent"])
def test_forward_weights_in_tile(op, case):
    """One-tile rows of bf16 x with float32 weights loaded by each thread for its own columns of the 2-D tile
    (``W_IN_TILE``, ``norm_fwd._load_columns``), forced for every op: 16 bytes at a time where four columns lie side by
    side on a multiple of 16 bytes, else 4 at a time (weights and bias starting 4 bytes past one); rows of an odd stride
    (whose tiles keep 8 columns a thread in the sm_90 code); also on a persistent grid; 37 rows (a ragged last row
    block), zero-centered gamma, against the reference, with ``W_IN_TILE`` in the launch's constexprs."""
    from unittest import mock

    from normkit.triton import config, ops
    from normkit.triton.config import LaunchConfig

    n = 512
    x, w, b = make_inputs(
        37, n, torch.bfloat16, torch.float32, bias=op != "rms_norm", row_pad=1 if case == "odd_row_stride" else 0
    )
    if case == "weights_off_16_bytes":
        w = torch.cat([w[:1], w]).narrow(0, 1, n)
        b = None if b is None else torch.cat([b[:1], b]).narrow(0, 1, n)
        assert w.data_ptr() % 16 == 4
    cfg = LaunchConfig(4, n, 1, 4, 2 if case == "persistent" else 0)
    with mock.patch.object(ops, "_weights_in_tile", lambda *args: True), config.forced(fwd=cfg):
        check_forward("triton", op, x, w, b, zero_centered_gamma=True)
        clamp = (LOWER, UPPER) if op == "layer_norm_clamped_relu" else None
        is_rms = op == "rms_norm"
        plan = ops._forward_plan(
            37, n, x.dtype, w.dtype, b is not None, is_rms, True, clamp, True, x.get_device(), config.generation
        )
    values = dict(zip(ops.NORM_FWD.constexpr_names, plan.values))
    assert values["W_IN_TILE"] and not values["TILE_3D"] and values["PERSISTENT"] == (case == "persistent")


PARAMS_EARLY_CASES = {  # (dtypes, n, LaunchConfig's fields, tail_n, W_IN_TILE)
    "head_and_ragged_tail": (DTYPES[1], 130, (2, 128, 1, 1), 16, False),  # 2 rows a program, a row block past M
    "persistent_head_and_tail": (DTYPES[2], 320, (1, 256, 1, 1, 1), 64, False),
    "one_ragged_tile": (DTYPES[3], 100, (1, 128, 1, 1), 0, False),
    "weights_in_tile": (DTYPES[3], 512, (4, 512, 1, 4, 2), 0, True),
}


@pytest.mark.parametrize("op", list(FORWARDS))
@pytest.mark.parametrize("case", list(PARAMS_EARLY_CASES))
@pytest.mark.parametrize("layout", ["2d", "3d"])
@pytest.mark.parametrize("early", ["both", "weights", "bias", "weights_no_bias"])
def test_forward_params_loaded_before_the_statistics(op, case, layout, early):
    """One-tile rows that load their weights and / or bias before the statistics (``W_EARLY``, ``BIAS_EARLY``,
    ``ops._params_early``), forced for every op, RMSNorm with a bias too, the weights early without a bias: a head and
    a ragged tail tile, on a persistent grid, one ragged tile, float32 weights loaded in the tile's layout
    (``W_IN_TILE``), both tile layouts, 7 strided rows, zero-centered gamma, against the reference, with the flags in
    the launch's constexprs."""
    from unittest import mock

    from normkit.triton import config, ops
    from normkit.triton.config import LaunchConfig

    dtypes, n, fields, tail_n, in_tile = PARAMS_EARLY_CASES[case]
    if in_tile and layout == "3d":
        pytest.skip("W_IN_TILE is a 2-D tile's")
    bias = early != "weights_no_bias"
    flags = {"W_EARLY": early != "bias", "BIAS_EARLY": early in ("both", "bias")}
    x, w, b = make_inputs(7, n, *dtypes, bias=bias, row_pad=24)
    cfg = LaunchConfig(*fields, tail_n=tail_n)
    with (
        tile_layout(layout),
        mock.patch.object(ops, "_params_early", lambda *args: flags),
        mock.patch.object(ops, "_weights_in_tile", lambda *args: in_tile),
        config.forced(fwd=cfg),
    ):
        check_forward("triton", op, x, w, b, zero_centered_gamma=True)
        clamp = (LOWER, UPPER) if op == "layer_norm_clamped_relu" else None
        plan = ops._forward_plan(
            7, n, x.dtype, w.dtype, bias, op == "rms_norm", True, clamp, True, x.get_device(), config.generation
        )
    values = dict(zip(ops.NORM_FWD.constexpr_names, plan.values))
    assert {name: values[name] for name in flags} == flags
    assert values["TAIL_N"] == tail_n and values["W_IN_TILE"] == in_tile


def test_params_early_rule():
    """``ops._params_early``: LayerNorm's forward with a bias at 4096 x 2560 fp16 (a 2048 head and a 512 tail at 2
    warps) and 4096 x 2048 (one tile of 2048 at 4 warps, whole rows, 16-bit weights), on a persistent grid of 8
    programs a SM, loads its bias and weights early: the training and inference calls, and the clamped ReLU's
    inference call (the same launch), not its training call (another launch); with float32 weights at 2560 the bias
    alone, at 2048 neither; neither without a bias, for RMSNorm (the same launches), for rows of 1600 (the 2048
    launch, ragged), nor at 4096 x 1536 / 3072 (other launches)."""
    from normkit.triton import config, ops

    def params_early(n, has_bias=True, is_rms=False, training=True, clamp=None, w_dtype=torch.float16):
        plan = ops._forward_plan(
            4096, n, torch.float16, w_dtype, has_bias, is_rms, False, clamp, training, -1, config.generation
        )
        values = dict(zip(ops.NORM_FWD.constexpr_names, plan.values))
        return values["W_EARLY"], values["BIAS_EARLY"]

    both, bias_alone, neither = (True, True), (False, True), (False, False)
    assert params_early(2560) == params_early(2560, training=False) == both
    assert params_early(2560, training=False, clamp=(LOWER, UPPER)) == both
    assert params_early(2560, clamp=(LOWER, UPPER)) == neither
    assert (
        params_early(2560, w_dtype=torch.float32)
        == params_early(2560, training=False, w_dtype=torch.float32)
        == bias_alone
    )
    assert params_early(2048) == params_early(2048, training=False) == both
    assert params_early(2048, w_dtype=torch.float32) == params_early(1600) == neither
    for n in (2560, 2048):
        assert params_early(n, has_bias=False) == params_early(n, is_rms=True) == neither
        assert params_early(n, is_rms=True, training=False) == neither
    assert params_early(1536) == params_early(3072) == params_early(3072, training=False) == neither


@pytest.mark.parametrize("dtypes", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize(
    "m, n, block_n, warps, row_pad",
    [
        (7, 9216, 1024, 8, 0),  # whole chunks
        (3, 8704, 1024, 8, 0),  # a ragged last chunk
        (5, 4096, 512, 4, 0),
        (2, 2000, 128, 1, 0),  # 16 chunks, the last one ragged
        (3, 2048, 256, 2, 16),  # strided rows, 16-element aligned
        (3, 2048, 256, 2, 8),  # strided rows, not aligned: the reshape's path
    ],
)
def test_fused_forward_mask_by_nibbles(m, n, block_n, warps, row_pad, dtypes):
    """The fused forward's chunked rows at 4 elements a thread, one row a tile: on a GPU, where the rows are
    16-element aligned, each lane makes its 4 bits' nibble and the two lanes of a byte swap them by a shuffle
    (``PAIR_NIBBLES``, ``norm_fwd._store_mask_by_nibbles``); in the interpreter, and for rows not so aligned, the
    reshape's path. y, the statistics and every mask bit against the reference, zero-centered gamma too."""
    from normkit.triton import config, ops
    from normkit.triton.config import LaunchConfig

    x, w, b = make_inputs(m, n, *dtypes, row_pad=row_pad)
    cfg = LaunchConfig(1, block_n, -(-n // block_n), warps)
    assert cfg.per_thread == 4
    with config.forced(fwd=cfg):
        check_forward("triton", "layer_norm_clamped_relu", x, w, b)
        check_forward("triton", "layer_norm_clamped_relu", x, w, b, zero_centered_gamma=True)
        row_align = ops._row_align(x.element_size(), n, x.stride(0))  # 1 where N and the stride are multiples of 16
        plan = ops._forward_plan(
            m, n, x.dtype, w.dtype, True, False, False, (LOWER, UPPER), True, x.get_device(), config.generation,
            row_align,
        )  # fmt: skip
    values = dict(zip(ops.NORM_FWD.constexpr_names, plan.values))
    assert values["PAIR_NIBBLES"] == (x.is_cuda and row_align == 1 and not values["TILE_3D"])


def test_weights_in_tile_rule():
    """``W_IN_TILE`` where measured faster (GPU runs 328-330) and safe: one-tile rows of 256-1024 columns in 2-D
    tiles, 16-bit x and float32 weights, at least 4 columns a thread (``block_n >= 128 * num_warps``: tiles of 16 rows
    of 256 at 4 warps are not); RMSNorm's 256 on a persistent grid only; the fused forward at 256 only (GPU runs
    331-334); not chunked rows, 3-D tiles, or weights in x's dtype."""
    from normkit.triton import config, ops

    def plan_of(n, op="layer_norm", x_dtype=torch.bfloat16, w_dtype=torch.float32, m=32768):
        clamp = (LOWER, UPPER) if op == "layer_norm_clamped_relu" else None
        is_rms = op == "rms_norm"
        plan = ops._forward_plan(m, n, x_dtype, w_dtype, not is_rms, is_rms, False, clamp, True, -1, config.generation)
        return dict(zip(ops.NORM_FWD.constexpr_names, plan.values)), plan.num_warps

    def in_tile(n, *args, **kwargs):
        values, num_warps = plan_of(n, *args, **kwargs)
        if values["W_IN_TILE"]:
            assert values["BLOCK_N"] >= 128 * num_warps and values["NUM_CHUNKS"] == 1 and not values["TILE_3D"]
        return values["W_IN_TILE"]

    for n in (256, 512, 1024):
        assert in_tile(n) and in_tile(n, "rms_norm", m=65536) and in_tile(n, m=4096) and in_tile(n, m=8192)
    assert in_tile(512, "rms_norm") and in_tile(1024, "rms_norm")
    assert not in_tile(256, "rms_norm")  # an H200's 16897-32768 rows: sixteen rows of 4 warps (round 129)
    for m in (4096, 8192, 32768):  # the fused forward at 256 only
        assert in_tile(256, "layer_norm_clamped_relu", m=m)
    assert not in_tile(512, "layer_norm_clamped_relu") and not in_tile(1024, "layer_norm_clamped_relu")
    with config.forced(fwd=config.LaunchConfig(16, 256, 1, 4)):  # 16 rows of 256 at 4 warps: 2 a thread in some layouts
        assert not in_tile(256) and not in_tile(256, "layer_norm_clamped_relu")
    assert not in_tile(256, "rms_norm", m=4096)  # RMSNorm's 256 on a persistent grid only (more than 8192 rows)
    assert not in_tile(16384) and not in_tile(16384, "rms_norm")  # chunked rows
    assert not in_tile(4096)  # 3-D tiles
    assert not in_tile(512, x_dtype=torch.float16, w_dtype=torch.float16)
    assert not in_tile(512, x_dtype=torch.float32, w_dtype=torch.float32)


@pytest.mark.parametrize("op", ["layer_norm", "rms_norm"])
@pytest.mark.parametrize("dtypes", [DTYPES[1], DTYPES[3]], ids=[DTYPE_IDS[1], DTYPE_IDS[3]])
@pytest.mark.parametrize(
    "n, cfg",
    [
        (1024, (2, 1024, 1, 2, 0)),
        (1000, (2, 1024, 1, 2, 0)),
        (1000, (2, 1024, 1, 4, 0)),
        (256, (8, 256, 1, 2, 8)),
        (512, (4, 512, 1, 4, 0)),
    ],
    ids=["2x1024", "2x1024-ragged", "2x1024-ragged-4-warps", "8x256-persistent", "4x512"],
)
def test_forward_stats_as_held(op, dtypes, n, cfg):
    """The training forward's mean and rstd stored as each thread holds them (``STATS_AS_HELD``,
    ``norm_fwd._store_stat``: inline PTX on the GPU, ``tl.store`` in the interpreter), forced in the rule's tiles (2
    rows of 1024 at 2 warps, RMSNorm's at 4; whole and ragged rows) and in others (8 rows of 256 on a persistent
    grid, 4 of 512 at 4 warps): 37 rows (a ragged last row block, whose rows past M must not be written), strided
    rows, against the reference, with the flag in the launch's constexprs."""
    from unittest import mock

    from normkit.triton import config, ops
    from normkit.triton.config import LaunchConfig

    x, w, b = make_inputs(37, n, *dtypes, bias=op != "rms_norm", row_pad=8)
    is_rms = op == "rms_norm"
    with mock.patch.object(ops, "_stats_as_held", lambda *args: True), config.forced(fwd=LaunchConfig(*cfg)):
        check_forward("triton", op, x, w, b)
        plan = ops._forward_plan(
            37, n, x.dtype, w.dtype, b is not None, is_rms, False, None, True, x.get_device(), config.generation
        )
        # the statistics' outputs are 37 long: a store past them would land in memory the caching allocator may
        # hand to the next tensor, so check that the rows after them, as far as the launch's row blocks reach, stay
        fill = torch.full(((plan.programs * plan.blocks_per_program + 1) * cfg[0],), 7.0, device=x.device)
        stats = fill[:37]
        ops.NORM_FWD.launch(
            (plan.programs,),
            (x, torch.empty_like(x), w, b if b is not None else w, stats, stats, torch.empty_like(x),
             37, n, x.stride(0), n, 0, 1e-5, *plan.thresholds, plan.programs, plan.blocks_per_program),
            plan.num_warps, plan.values,
        )  # fmt: skip
    assert torch.all(fill[37:] == 7.0), "STATS_AS_HELD stored past the last row"
    values = dict(zip(ops.NORM_FWD.constexpr_names, plan.values))
    assert values["STATS_AS_HELD"] and values["PERSISTENT"] == (cfg[4] > 0)


def test_stats_as_held_rule():
    """``STATS_AS_HELD`` where measured faster (GPU runs 343-346): the plain training forwards in tiles of 2 rows of
    1024 at 2 warps (at most 4096 rows of 513-1024 columns); not the fused forward, an inference call, float64 x
    (float64 statistics), rows of 256 or 512, or the tiles of 4 rows of 1024 that more rows take."""
    from normkit.triton import config, ops

    def held(m, n, op="layer_norm", x_dtype=torch.float16, w_dtype=torch.float16, training=True):
        clamp = (LOWER, UPPER) if op == "layer_norm_clamped_relu" else None
        is_rms = op == "rms_norm"
        plan = ops._forward_plan(
            m, n, x_dtype, w_dtype, not is_rms, is_rms, False, clamp, training, -1, config.generation
        )  # fmt: skip
        values = dict(zip(ops.NORM_FWD.constexpr_names, plan.values))
        if values["STATS_AS_HELD"]:
            warps = 4 if is_rms else 2  # RMSNorm's tiles of 2 x 1024 at 4 warps (GPU runs 351-352)
            assert (values["BLOCK_M"], values["BLOCK_N"], values["NUM_CHUNKS"], plan.num_warps) == (2, 1024, 1, warps)
        return values["STATS_AS_HELD"]

    for m, n in [(4096, 1024), (4096, 768), (2048, 1024), (3000, 1000), (5, 1024)]:
        assert held(m, n) and held(m, n, "rms_norm") and held(m, n, x_dtype=torch.bfloat16, w_dtype=torch.float32)
        assert not held(m, n, "layer_norm_clamped_relu") and not held(m, n, training=False)
        assert not held(m, n, x_dtype=torch.float64, w_dtype=torch.float64)
    for m, n in [(4096, 256), (4096, 512), (32768, 1024), (8192, 1024), (4096, 2048), (32768, 16384)]:
        assert not held(m, n) and not held(m, n, "rms_norm")


@pytest.mark.parametrize("op", list(FORWARDS))
@pytest.mark.parametrize("dtypes", [DTYPES[1], DTYPES[3]], ids=[DTYPE_IDS[1], DTYPE_IDS[3]])
@pytest.mark.parametrize("n, head, tail, block_m", HEAD_AND_TAIL_ROWS)
@pytest.mark.parametrize("has_dbias", [True, False])
def test_backward_head_and_tail_tiles(op, dtypes, n, head, tail, block_m, has_dbias):
    """The backward's one-tile rows as a head tile and a tail tile after it (``tail_n``), forced: the same rows as
    the forward's test (a ragged tail, a whole one, a head past the row's end), with and without dB, the mask read
    in both tiles, strided rows, zero-centered gamma; 7 rows over 4 persistent programs (row blocks past M)."""
    from normkit.triton import config
    from normkit.triton.config import LaunchConfig

    x, w, b = make_inputs(7, n, *dtypes, bias=op != "rms_norm", row_pad=24)
    with config.forced(bwd=LaunchConfig(block_m, head, 1, 1, 1, tail_n=tail)):
        check_backward("triton", op, x, w, b, zero_centered_gamma=True, has_dbias=has_dbias)


def clear_plans() -> None:
    """Drop the forward's and the backward's cached plans: each carries ``config.slower_dram``'s answer (the
    backward's since round 118)."""
    from normkit.triton import ops

    ops._forward_plan.cache_clear()
    ops._backward_plan.cache_clear()


@contextlib.contextmanager
def dram_rules(slower: bool):
    """``config.slower_dram`` answers ``slower`` for every GPU inside (an H100's rules on an H200 too, or the other
    way), the cached plans cleared on the way in and out (``clear_plans``)."""
    from normkit.triton import config

    real = config.slower_dram
    config.slower_dram = lambda index: slower
    clear_plans()
    try:
        yield
    finally:
        config.slower_dram = real
        clear_plans()


@pytest.fixture
def dram(monkeypatch):
    """``dram(slower)``: ``config.slower_dram`` answers ``slower`` for every GPU in this test; the cached plans, which
    carry its answer, are cleared when it is set and after the test (``clear_plans``)."""
    from normkit.triton import config

    def choose(slower: bool) -> None:
        monkeypatch.setattr(config, "slower_dram", lambda index: slower)
        clear_plans()

    yield choose
    monkeypatch.undo()
    clear_plans()


@pytest.mark.parametrize(
    "props, slower",
    [
        ({"memory_clock_rate": 2619000, "memory_bus_width": 5120}, True),  # an H100 SXM: 3.35 TB/s
        ({"memory_clock_rate": 3201000, "memory_bus_width": 6144}, False),  # an H200: 4.9 TB/s
        ({}, False),  # a torch whose device properties do not say
    ],
)
def test_slower_dram_by_the_gpus_memory(dram, props, slower):
    """``config.slower_dram``: a GPU whose peak DRAM bandwidth (memory clock x bus width x 2) is below
    ``SLOWER_DRAM_BELOW`` takes the rules of ``slower_dram``; the CPU never does. The forward's plan passes it on:
    RMSNorm's 1025 x 9216 then launches as a head tile of 8192 and a tail of 1024 (else in chunks of 4096). The plan
    passes ``has_bias`` on too: RMSNorm's 520 x 9216 with a bias and float32 weights on a persistent grid at 8 warps
    (16-bit weights take chunks of 2048 there), as LayerNorm's 520 x 9728 (a head tile and a tail of 2048), on either
    DRAM; their y and statistics match the reference."""
    import types

    from normkit.triton import config, ops

    bandwidth = config.dram_bytes_per_s(types.SimpleNamespace(**props))
    assert (0 < bandwidth < config.SLOWER_DRAM_BELOW) is slower and config.slower_dram(-1) is False
    if HAS_GPU:  # this GPU's own answer, as its properties say
        real = config.dram_bytes_per_s(torch.cuda.get_device_properties(0))
        assert config.slower_dram(0) is (0 < real < config.SLOWER_DRAM_BELOW)
    dram(slower)
    x, w, _ = make_inputs(1025, 9216, torch.bfloat16, torch.bfloat16, bias=False)
    with pytest.MonkeyPatch.context() as recording:
        launched = _record_launches(recording, "NORM_FWD")
        ops.rms_norm_fwd(x, w, None, 1e-5)
    want = (1024, 8192, False) if slower else (0, 4096, False)
    assert (launched[0]["TAIL_N"], launched[0]["BLOCK_N"], launched[0]["PERSISTENT"]) == want
    if slower:  # the chunks of 4096 are the suite's everywhere
        check_forward("triton", "rms_norm", x, w, None)
    x, w, b = make_inputs(520, 9728, torch.bfloat16, torch.bfloat16)
    w32, b32 = w[:9216].float(), b[:9216].float()
    with pytest.MonkeyPatch.context() as recording:
        launched = _record_launches(recording, "NORM_FWD")
        ops.rms_norm_fwd(x[:, :9216], w32, b32, 1e-5)
        ops.layer_norm_fwd(x, w, b, 1e-5)
    assert [(launch["num_warps"], launch["PERSISTENT"]) for launch in launched] == [(8, True), (8, True)]
    assert launched[1]["TAIL_N"] == 2048  # a head tile and a tail
    head_tail = config.LaunchConfig(1, 8192, 1, 8, 2, tail_n=1024)
    assert launched[0]["grid"][0] == config.persistent_programs(x.get_device(), 520, head_tail.programs_per_sm)
    if slower:  # the same launches on either DRAM: checked once
        check_forward("triton", "rms_norm", x[:, :9216], w32, b32)
        check_forward("triton", "layer_norm", x, w, b)


def test_persistent_forward_grid_fits_the_sm(monkeypatch):
    """A persistent forward asks at most as many programs a SM as fit on one by its compiled kernel's registers
    (``ops._persistent_grid``; ``Launcher.programs_that_fit_compiled`` compiles the kernel before its first launch),
    worked out at its plan's first call and kept; never more than the plan asks, and the plan's in the interpreter. On
    the GPU: LayerNorm's 3000 x 1536 with float32 weights (1-warp programs, 16 a SM asked, 12 fit) launches the grid
    that fits from its first call, and matches the reference."""
    from normkit.triton import config, ops
    from normkit.triton.launch import _dtypes

    plan_args = (3000, 1536, torch.bfloat16, torch.float32, True, False, False, None, True)
    asked = []

    def fits(fit):  # NORM_FWD.programs_that_fit_compiled answering ``fit``, the arguments it was asked with kept
        return lambda args, warps, values, device: asked.append(args) or fit

    monkeypatch.setattr(config, "multiprocessor_count", lambda device: 132)
    monkeypatch.setattr(config, "slower_dram", lambda device: False)
    ops._forward_plan.cache_clear()
    try:
        plan = ops._forward_plan(*plan_args, 0, config.generation)
        assert (plan.programs_per_sm, plan.programs, plan.row_blocks) == (16, 16 * 132, 3000)
        monkeypatch.setattr(ops.NORM_FWD, "programs_that_fit_compiled", fits(12))
        assert ops._persistent_grid(plan, ("args",), 0) == (12 * 132, 2) == plan.fitted[0] and asked == [("args",)]
        monkeypatch.setattr(ops.NORM_FWD, "programs_that_fit_compiled", fits(1))
        assert ops._persistent_grid(plan, ("args",), 0) == (12 * 132, 2) and len(asked) == 1  # kept with the plan
        roomy = ops._forward_plan(*plan_args[:3], torch.bfloat16, *plan_args[4:], 0, config.generation)
        monkeypatch.setattr(ops.NORM_FWD, "programs_that_fit_compiled", fits(32))
        assert ops._persistent_grid(roomy, (), 0) == (roomy.programs, roomy.blocks_per_program)  # never more
        not_compiled = ops._forward_plan(*plan_args[:2], torch.float16, *plan_args[3:], 0, config.generation)
        monkeypatch.setattr(ops.NORM_FWD, "programs_that_fit_compiled", fits(None))  # Triton's own path
        grid = (not_compiled.programs, not_compiled.blocks_per_program)
        assert ops._persistent_grid(not_compiled, (), 0) == grid == not_compiled.fitted[0]
        interpreted = ops._forward_plan(*plan_args, -1, config.generation)
        assert ops._persistent_grid(interpreted, (), -1) == (interpreted.programs, interpreted.blocks_per_program)
        assert len(asked) == 3  # the interpreter not asked
    finally:
        monkeypatch.undo()
        ops._forward_plan.cache_clear()
    if HAS_GPU:
        x, w, b = make_inputs(3000, 1536, torch.bfloat16, torch.float32)
        launches, dtypes, launch = [], set(), ops.NORM_FWD.launch

        def recorded(grid, args, num_warps, values, head=0):
            launches.append((grid, args[-2:]))
            dtypes.add(_dtypes(args))
            return launch(grid, args, num_warps, values, head)

        with pytest.MonkeyPatch.context() as recording:
            recording.setattr(ops.NORM_FWD, "launch", recorded)
            for _ in range(2):
                check_forward("triton", "layer_norm", x, w, b)
        plan = ops._forward_plan(*plan_args, x.get_device(), config.generation, 1)
        (launched_dtypes,) = dtypes
        fit = ops.NORM_FWD.programs_that_fit(plan.values, plan.num_warps, x.get_device(), launched_dtypes)
        assert fit is not None and plan.programs_per_sm > 0
        sms = config.multiprocessor_count(x.get_device())
        programs = min(plan.programs, min(fit, plan.programs_per_sm) * sms)
        first = ((programs,), (programs, -(-3000 // programs)))
        assert launches[0] == first and launches[-1] == first, (fit, launches)


def test_persistent_backward_grid_fits_the_sm(monkeypatch):
    """A persistent backward asks at most as many programs a SM as fit on one by its compiled kernel's registers
    (``ops._backward_grid``; ``Launcher.programs_that_fit_compiled`` compiles the kernel before its first launch),
    worked out at its plan's first call and kept, so that every call sums the partials in the same order; never more
    than the plan asks, and the plan's in the interpreter. On the GPU: a forced launch that asks more than fit (two
    rows of 1024 at 4 warps, 4 programs a SM: 154 registers a thread, round 57) launches the grid that fits from its
    first call, matches the reference, and gives the same bits on its first call and its second."""
    from normkit.triton import config, ops
    from normkit.triton.config import LaunchConfig
    from normkit.triton.launch import _dtypes

    class Fits:  # a launcher that answers ``fit`` and counts the questions
        def __init__(self, fit):
            self.fit, self.asked = fit, 0

        def programs_that_fit_compiled(self, args, num_warps, values, device):
            self.asked += 1
            return self.fit

    cfg = LaunchConfig(2, 1024, 1, 4, 4)

    def plan():  # 32768 rows: 16384 row blocks over 4 programs a SM of 132
        return ops._BackwardPlan(cfg, 528, 32, (), [], {})

    monkeypatch.setattr(config, "multiprocessor_count", lambda device: 132)
    fitted, three = plan(), Fits(3)
    assert ops._backward_grid(fitted, three, (), 32768, 0) == (3 * 132, 42) == fitted.fitted[0]
    assert ops._backward_grid(fitted, Fits(1), (), 32768, 0) == (396, 42) and three.asked == 1  # kept with the plan
    for fit in (4, 8, None):
        assert ops._backward_grid(plan(), Fits(fit), (), 32768, 0) == (528, 32), fit
    interpreted, never = plan(), Fits(3)
    assert ops._backward_grid(interpreted, never, (), 32768, -1) == (528, 32) and never.asked == 0
    monkeypatch.undo()
    if HAS_GPU:
        x, w, b = make_inputs(32768, 1024, torch.bfloat16, torch.float32)
        _, mean, rstd = reference.layer_norm_fwd(x, w, b, 1e-5)
        dy = torch.randn_like(x)
        dtypes, launch = set(), ops.NORM_BWD.launch

        def recorded(grid, args, num_warps, values, head=0):
            dtypes.add(_dtypes(args))
            return launch(grid, args, num_warps, values, head)

        with config.forced(bwd=cfg), pytest.MonkeyPatch.context() as recording:
            recording.setattr(ops.NORM_BWD, "launch", recorded)
            first, second = [ops.layer_norm_bwd(dy, x, w, mean, rstd) for _ in range(2)]
            device = x.get_device()
            staged = ops._staged_capable(device)  # the plan's key as the call made it (asked of every unmasked call)
            launched = ops._backward_plan(
                32768, 1024, x.dtype, w.dtype, True, False, False, False, device, True, config.generation, 1, staged
            )
        (launched_dtypes,) = dtypes
        fit = ops.NORM_BWD.programs_that_fit(launched.values, cfg.num_warps, device, launched_dtypes)
        sms = config.multiprocessor_count(device)
        assert fit is not None and launched.fitted[0][0] == min(launched.programs, min(fit, 4) * sms), (fit, launched)
        for name, a, c, e in zip(("dx", "dw", "db"), first, second, reference.layer_norm_bwd(dy, x, w, mean, rstd)):
            assert torch.equal(a, c), name
            compare(a, e, name)


def test_few_waves_rules():
    """2049-4096 rows (a call of a few waves of programs) take their own rules (``config._few_waves_fwd``,
    ``_few_waves_bwd`` and ``_few_waves_masked_bwd``); many rows and the fused forward keep theirs."""
    from normkit.triton import config

    def fwd(m, n, is_rms=False, w_bytes=2):
        cfg = config.fwd_config(m, n, is_rms, w_bytes=w_bytes)
        return cfg.block_n, cfg.num_chunks, cfg.num_warps, cfg.tail_n

    for m in (3000, 4096):
        # LayerNorm's 4097-4608: chunks of 1024, 8 elements a thread; 4353-4608 with 16-bit weights 4096 + 512
        assert fwd(m, 4608, w_bytes=4) == fwd(m, 4352) == fwd(m, 4097) == (1024, 5, 4, 0)
        assert fwd(m, 4608) == fwd(m, 4353) == (4096, 1, 2, 512)
        assert (
            config.infer_config(m, 4400, w_bytes=2).tail_n == 512
            and config.infer_config(m, 4400, w_bytes=4).tail_n == 0
        )
        assert fwd(m, 5120) == (4096, 1, 4, 1024)  # head + tail
        assert fwd(m, 6144) == (4096, 1, 8, 2048)
        assert fwd(m, 6656) == fwd(m, 8192) == (8192, 1, 8, 0)  # one tile, 32 a thread
        assert fwd(m, 8704) == (2048, 5, 8, 0)
        # with a bias and 16-bit weights (round 83, GPU runs 646-650): 6145-8192 as two tiles of 4096 (at 4 warps up
        # to 7168, else 8), 8193-9216 as 8192 + 1024 at 4; the inference call too. Without a bias, or float32
        # weights: as above
        for call in (config.fwd_config, config.infer_config):
            for n, want in ((6145, (4096, 1, 4, 4096)), (7169, (4096, 1, 8, 4096)), (8193, (8192, 1, 4, 1024))):
                biased = call(m, n, w_bytes=2, x_fp16=True, has_bias=True)
                assert (biased.block_n, biased.num_chunks, biased.num_warps, biased.tail_n) == want, (m, n)
                assert call(m, n, w_bytes=4, has_bias=True) == call(m, n, w_bytes=2), (m, n)
            assert call(m, 9216, has_bias=True).tail_n == 1024 and call(m, 9217, has_bias=True).num_chunks == 5
            assert call(m, 6144, has_bias=True).tail_n == 2048
            # zero-centered weights (round 84, runs 654-656): as the others, but fp16 x keeps its chunks at 8193-9216
            for n, warps in ((7000, 4), (7169, 8)):
                zero_centered = call(m, n, has_bias=True, zero_centered=True)
                assert (zero_centered.tail_n, zero_centered.num_warps) == (4096, warps), (m, n)
            assert call(m, 8704, has_bias=True, zero_centered=True) == call(m, 8704, has_bias=True), m
            fp16 = call(m, 8704, x_fp16=True, has_bias=True, zero_centered=True)
            assert fp16 == call(m, 8704, x_fp16=True) and fp16.num_chunks == 5, m
        # 10241-12288 with 16-bit weights: a head of 8192 and a tail of 4096 at 8 warps (GPU run 508); float32
        # weights keep chunks of 2048 at 4 a thread
        assert fwd(m, 10241) == fwd(m, 12288) == (8192, 1, 8, 4096)
        assert config.infer_config(m, 11000).tail_n == 4096 and config.infer_config(m, 11000, w_bytes=4).tail_n == 0
        assert fwd(m, 10240) == (2048, 5, 8, 0) and fwd(m, 12289) == (2048, 7, 16, 0)
        assert fwd(m, 12288, w_bytes=4) == (2048, 6, 16, 0) and fwd(m, 14337) == (2048, 8, 8, 0)
        # 12289-14336 at 8 a thread for fp16 x with fp16 weights only (GPU runs 374-375)
        assert fwd(m, 12800) == fwd(m, 14336) == (2048, 7, 16, 0)  # bf16 x (fwd_config's default)
        fp16 = config.fwd_config(m, 12800, x_fp16=True), config.infer_config(m, 14336, x_fp16=True)
        assert [(c.block_n, c.num_chunks, c.num_warps) for c in fp16] == [(2048, 7, 8), (2048, 7, 8)]
        assert config.fwd_config(m, 12288, x_fp16=True).tail_n == 4096
        assert config.fwd_config(m, 12800, w_bytes=4, x_fp16=True).num_warps == 16
        assert fwd(m, 4608, True) == (2048, 3, 8, 0)
        # RMSNorm's 7169-8192 with 16-bit weights, float32 weights at 8192: one tile at 16 warps (GPU run 519)
        assert fwd(m, 7169, True) == fwd(m, 7680, True) == fwd(m, 8192, True, w_bytes=4) == (8192, 1, 16, 0)
        assert fwd(m, 7168, True) == (2048, 4, 8, 0) and fwd(m, 7680, True, w_bytes=4) == (2048, 4, 8, 0)
        assert config.infer_config(m, 8000, is_rms=True).num_chunks == 1
        for call in (config.fwd_config, config.infer_config):  # with a bias: chunks (forced in turns, GPU run 520)
            assert call(m, 7680, is_rms=True, has_bias=True).num_chunks == 4
        assert fwd(m, 8704, True) == (4096, 3, 16, 0)
        assert fwd(m, 4096) == fwd(32768, 4096)  # one-tile rows as before
        assert fwd(m, 3584, True) == fwd(m, 3073, True) == (4096, 1, 8, 0)  # RMSNorm's 3073-4095: one row a tile
        assert config.fwd_config(m, 3584, True).block_m == 1 and config.fwd_config(m, 3584).block_m == 2
        assert config.fwd_config(m, 2304, True).block_m == 2  # 2049-2304 (no persistent rule) keep two rows a tile
    assert fwd(32768, 6144) == (1024, 6, 8, 0)  # many rows: 4 a thread
    assert config.fwd_config(2048, 3584, True).block_m == config.fwd_config(32768, 3584, True).block_m == 2
    assert config.fwd_config(4096, 4096, True).block_m == 2
    assert fwd(1024, 12288) == (8192, 1, 8, 4096)  # few rows: LayerNorm's head + tail
    # at most 4096 rows of 65-128 columns: tiles of 8 rows at 1 warp (round 65, GPU runs 520-521); 129-256 and more
    # rows as before
    for m, n, is_rms in ((4096, 128, False), (4096, 65, True), (2049, 100, False), (1024, 128, True)):
        short = config.fwd_config(m, n, is_rms)
        assert (short.block_m, short.num_warps) == (8, 1), (m, n, is_rms)
    assert config.fwd_config(4097, 128).block_m == 32 and config.fwd_config(4096, 256).block_m == 8
    # ... but LayerNorm's inference call keeps 16 rows at 2 warps (round 66, GPU runs 526-527); RMSNorm's takes the 8
    for m, n in ((4096, 128), (2048, 96), (100, 65)):
        for w_bytes in (2, 4):
            kept = config.infer_config(m, n, w_bytes=w_bytes)
            assert (kept.block_m, kept.num_warps) == (16, 2), (m, n, w_bytes)
    assert config.infer_config(7, 128).block_m == 8 and config.infer_config(4097, 128).block_m == 32
    assert config.infer_config(4096, 128, is_rms=True).block_m == 8
    assert config.fwd_config(4096, 64).block_m == 32 and config.fwd_config(4096, 64).num_warps == 2
    assert fwd(2048, 12288, True)[3] == fwd(1024, 12289)[3] == 0 and fwd(1024, 12288, True) == (8192, 1, 16, 4096)

    # the fused forward of a few waves of rows of 4353-5888 with 16-bit weights takes the plain one's head + tail
    # tiles, the tail of 2048 at 4 warps (GPU runs 396-398)
    def fused(m, n, w_bytes=2, x_fp16=True):
        return config.fwd_config(m, n, has_mask=True, w_bytes=w_bytes, x_fp16=x_fp16)

    for m in (3000, 4096):
        head_512 = config.LaunchConfig(1, 4096, 1, 2, tail_n=512)
        for x_fp16 in (True, False):
            assert fused(m, 4608, x_fp16=x_fp16) == fused(m, 4353, x_fp16=x_fp16) == head_512
            assert fused(m, 5120, x_fp16=x_fp16) == config.LaunchConfig(1, 4096, 1, 4, tail_n=1024)
            assert (
                fused(m, 5121, x_fp16=x_fp16)
                == fused(m, 5888, x_fp16=x_fp16)
                == config.LaunchConfig(1, 4096, 1, 4, tail_n=2048)
            )
        assert config.fwd_config(m, 4608, w_bytes=2, x_fp16=True) == head_512
        assert config.fwd_config(m, 5888, w_bytes=2, x_fp16=True).num_warps == 8  # the plain forward's tail
        assert fused(m, 4352).tail_n == fused(m, 5889).tail_n == fused(m, 6144).tail_n == 0  # 6144 level: chunks
        assert fused(m, 4608, w_bytes=4).tail_n == fused(m, 5120, w_bytes=4).tail_n == 0  # float32 weights
    assert fused(8192, 5120).tail_n == fused(2048, 5120).tail_n == 0  # many rows, few rows: their own rules
    # the fused forward of few rows (at most 2048) up to 16384 columns: 8 chunks of 8 elements a thread, as many rows
    # (GPU runs 398-399), but not at most 512 rows of at most 8192 columns; above 16384, chunks of 4096 at 4 warps
    for m in (1, 512, 2048):
        assert fused(m, 12288) == fused(4097, 12288) == config.LaunchConfig(1, 2048, 6, 8)
        assert fused(m, 16384) == config.LaunchConfig(1, 2048, 8, 8)
        assert fused(m, 16385) == config.LaunchConfig(1, 4096, 5, 4)
        assert fused(m, 4096).num_chunks == 1
    assert fused(1024, 8192) == fused(2048, 8192) == fused(4097, 8192) == config.LaunchConfig(1, 1024, 8, 4)
    assert fused(512, 8192) == fused(128, 8192) == config.LaunchConfig(1, 2048, 4, 4)
    assert fused(513, 8192) == config.LaunchConfig(1, 1024, 8, 4)
    # the plain forwards of few rows: LayerNorm's 12289-16384 columns and RMSNorm's 8192-16384 in chunks of 4096 at
    # 8 / 16 warps (GPU run 399); elsewhere chunks of 2048-4096 at 4 warps, LayerNorm's 8193-12288 head + tail
    for m in (1, 2048):
        assert fwd(m, 12289) == ((2048, 7, 8, 0) if m == 2048 else (4096, 4, 8, 0)) and fwd(m, 16384) == (4096, 4, 8, 0)
        assert fwd(m, 8192, True) == (4096, 2, 16, 0) and fwd(m, 16384, True) == (4096, 4, 16, 0)
        assert fwd(m, 8191, True) == ((8192, 1, 16, 0) if m == 2048 else (2048, 4, 4, 0))  # round 47 below
        assert fwd(m, 16385, True) == fwd(m, 16385) == (4096, 5, 4, 0)
    for m in (1, 256, 512, 2048):
        assert fwd(m, 8192) == (2048, 4, 4, 0)
    for m in (1, 256, 1024, 2048):
        assert fwd(m, 12288)[3] == 4096
    # LayerNorm's 257-512 rows of 8193-12288 columns and 513-1024 rows of 4097-8192: chunks of 8 a thread (run 402)
    assert fwd(512, 12288) == (2048, 6, 8, 0) and fwd(257, 8193) == (2048, 5, 8, 0)
    assert fwd(1024, 8192) == fwd(513, 8192) == (1024, 8, 4, 0) and fwd(1024, 4608)[:3] == (1024, 5, 4)
    assert fwd(1024, 8192, True) == (4096, 2, 16, 0)  # RMSNorm keeps its own
    # 1025-2048 rows of 4353-8191 columns (RMSNorm's of 6145-8191): one program a row without chunks, LayerNorm's
    # as a few waves' (head + tail tiles, one tile of 8192 above 6144), RMSNorm's one tile of 8192 at 16 warps (runs
    # 403-405); not float32 weights at 4353-4608, not 513-1024 rows, not 4352 or 8192 columns
    for m in (1025, 2048):
        assert fwd(m, 4353) == fwd(m, 4608) == (4096, 1, 2, 512) and fwd(m, 5120) == (4096, 1, 4, 1024)
        assert fwd(m, 6144) == fwd(m, 6144, w_bytes=4) == (4096, 1, 8, 2048)
        assert fwd(m, 6145) == fwd(m, 8191) == (8192, 1, 8, 0)
        assert fwd(m, 6145, True) == fwd(m, 8191, True, w_bytes=4) == (8192, 1, 16, 0)
        assert config.infer_config(m, 5120) == config.fwd_config(m, 5120)
        assert fwd(m, 4608, w_bytes=4) == fwd(m, 4352) == (2048, 3, 4, 0)
        assert fwd(m, 4608, True) == fwd(m, 6144, True) == (2048, 3, 4, 0)
        assert fwd(m, 8192) == (2048, 4, 4, 0) and config.fwd_config(m, 5120, has_mask=True).tail_n == 0
    assert fwd(1024, 5120) == (1024, 5, 4, 0) and fwd(1024, 7168, True) == (2048, 4, 4, 0)
    # LayerNorm's 513-2048 rows of 8193-9216 (a tail of at most an eighth of the head): chunks of 4 a thread, 1024 at
    # 8 warps, 2048 at 16 above 1024 rows (runs 411-412); 9217, 512 rows, 2049 rows and the fused forward as before
    for m in (513, 1024):
        assert fwd(m, 8193) == fwd(m, 9216) == fwd(m, 9216, w_bytes=4) == (1024, 9, 8, 0)
    assert fwd(1025, 8193) == fwd(2048, 9216) == (2048, 5, 16, 0)
    assert config.infer_config(1024, 9216) == config.fwd_config(1024, 9216)
    assert fwd(1024, 9217) == fwd(1, 9217) == (8192, 1, 8, 2048) and fwd(256, 12288) == (8192, 1, 8, 4096)
    assert fwd(512, 9216) == fwd(3000, 9216) == (2048, 5, 8, 0)
    assert fused(3000, 9216) == fused(512, 9216) == config.LaunchConfig(1, 2048, 5, 8)
    # the fused forward of 129-256 and 513-1024 rows of 8193-9216 (16-element aligned): the plain forward's chunks of 4
    # a thread, its mask bytes by nibbles on a GPU (run 430); not at 9208 columns, 9217, 1-128, 257-512 or 1025+ rows
    assert fused(1024, 9216) == fused(513, 8208) == fused(1024, 9216, w_bytes=4) == config.LaunchConfig(1, 1024, 9, 8)
    assert fwd(1024, 9216)[:3] == (1024, 9, 8) and fused(129, 9216) == fused(256, 8704) == config.LaunchConfig(
        1, 2048, 5, 16
    )
    for m, n in ((1024, 9208), (1024, 9217), (128, 9216), (512, 9216), (1025, 9216), (2048, 8704), (2049, 9216)):
        assert fused(m, n) == config.LaunchConfig(1, 2048, 5, 8), (m, n)
    # and 1-256 rows of 8193-9216 (run 422): chunks of 2048 at 16 warps, as 1025-2048 rows; RMSNorm as before
    for m in (1, 200, 256):
        assert fwd(m, 8193) == fwd(m, 9216) == fwd(m, 9216, w_bytes=4) == (2048, 5, 16, 0)
        assert config.infer_config(m, 9216) == config.fwd_config(m, 9216)
        assert fwd(m, 9216, True) == (4096, 3, 16, 0)
    # RMSNorm's few rows of 8193-12288 keep their chunks of 4096 at 16 warps (its head + tail lost on an H200, run 420)
    # but 513-1024 rows of 8705-12288 (round 53, runs 450-451) and 8193-8448 (round 54, run 454) take a head tile of
    # 8192 and a tail at 16 warps on a persistent grid of 2 programs a SM, on any GPU (the tail of 2048, 9217-10240
    # columns, at 8 warps but on slower DRAM), and on slower DRAM (an H100, ``slower_dram``) 8449-8704 columns too, and
    # 1025-2048 rows the head and tail tiles without one (runs 411-416); the training forward and the inference call,
    # any weights; not LayerNorm, 512 or 2049 rows
    chunks = config.LaunchConfig(1, 4096, 3, 16)
    for m in (1, 512, 513, 1024, 1025, 2048):
        for slower_dram in (False, True):

            def rms(n, w_bytes=2, m=m, slower_dram=slower_dram):
                return config.fwd_config(m, n, True, w_bytes=w_bytes, slower_dram=slower_dram)

            if 512 < m <= 1024 or (slower_dram and m > 1024):
                grid = 2 if m <= 1024 else 0
                head_tail = config.LaunchConfig(1, 8192, 1, 16, grid, tail_n=1024)
                assert rms(8705) == rms(9210) == head_tail  # rows not of whole 16-element vectors
                if slower_dram:
                    assert rms(9216) == rms(9216, w_bytes=4) == rms(8720) == head_tail
                else:  # whole vectors: chunks of 2048 at 8 warps, a chunk ahead (round 54, runs 456-457)
                    chunks_2048 = config.LaunchConfig(1, 2048, 5, 8, ahead=True)
                    assert rms(9216) == rms(9216, w_bytes=4) == rms(8720) == chunks_2048
                    assert config.infer_config(m, 9216, True) == chunks_2048
                assert rms(12288) == config.infer_config(m, 12288, True, slower_dram=slower_dram)
                assert rms(12288) == config.LaunchConfig(1, 8192, 1, 16, grid, tail_n=4096)
                assert rms(8193) == config.LaunchConfig(1, 8192, 1, 16, grid, tail_n=16)
                assert rms(8448) == rms(8448, w_bytes=4) == config.LaunchConfig(1, 8192, 1, 16, grid, tail_n=256)
                warps = 8 if m <= 1024 and not slower_dram else 16
                tail_2048 = config.LaunchConfig(1, 8192, 1, warps, grid, tail_n=2048)
                assert rms(9217) == rms(10240) == rms(10240, w_bytes=4) == tail_2048
                assert config.infer_config(m, 9728, True, slower_dram=slower_dram) == tail_2048
                if slower_dram:
                    assert rms(8449) == rms(8704) == config.LaunchConfig(1, 8192, 1, 16, grid, tail_n=512)
                else:
                    assert rms(8449) == rms(8704) == config.infer_config(m, 8704, True) == chunks
            else:
                assert rms(8704) == rms(12288) == rms(12288, w_bytes=4) == chunks
            assert rms(8192) == config.fwd_config(m, 8192, True) and rms(12289) == config.fwd_config(m, 12289, True)
            assert config.fwd_config(m, 9216, slower_dram=slower_dram) == config.fwd_config(m, 9216)
            masked = config.fwd_config(m, 9216, has_mask=True, slower_dram=slower_dram)
            assert masked == config.fwd_config(m, 9216, has_mask=True)
    assert config.fwd_config(2049, 9216, True, slower_dram=True) == config.fwd_config(2049, 9216, True)
    # round 51 (runs 442-443, an H100; an H200 since round 53, run 450): RMSNorm's persistent grid at 8 warps with a
    # bias (the inference call above 9216 columns only), and LayerNorm's 513-1024 rows of 9217-12288 (16-bit weights)
    # on a persistent grid of 2 programs a SM; not 1025+ rows, not float32 weights, not 8193-9216 columns (chunks)
    chunks_2048 = config.LaunchConfig(1, 2048, 5, 8, ahead=True)
    for m in (513, 1024):
        for n, tail in ((8448, 256), (9216, 1024), (12288, 4096)):
            head_tail = config.LaunchConfig(1, 8192, 1, 8, 2, tail_n=tail)
            with_bias = config.fwd_config(m, n, True, has_bias=True)
            # but 8705-9216 columns with a bias and 16-bit weights take the chunks of 2048 (round 56, run 463)
            assert with_bias == (chunks_2048 if n == 9216 else head_tail), (m, n)
            assert config.fwd_config(m, n, True, slower_dram=True, has_bias=True) == head_tail
            # the inference call at up to 8704 columns takes the launch without a bias; at 8705-9216 the training
            # forward's with its bias: the chunks, or with float32 weights (or rows not of whole 16-element vectors)
            # its head + tail at 16 warps
            infer = config.infer_config(m, n, True, has_bias=True)
            assert infer == {8448: config.infer_config(m, n, True), 9216: chunks_2048}.get(n, with_bias), (m, n)
            if n <= 9216:  # on slower DRAM the launch without a bias, as before
                slower = config.infer_config(m, n, True, has_bias=True, slower_dram=True)
                assert slower == config.infer_config(m, n, True, slower_dram=True), (m, n)
        # 8705-9216 with a bias: the head + tail at 8 warps in training, 16 in the inference call, where the weights
        # are float32 or the rows not whole 16-element vectors (8705, 8711, 9210); else the chunks in both
        trained_head_tail = config.LaunchConfig(1, 8192, 1, 8, 2, tail_n=1024)
        inferred_head_tail = dataclasses.replace(trained_head_tail, num_warps=16)
        for n in (8720, 8960, 9216):  # 16-bit weights
            assert config.fwd_config(m, n, True, has_bias=True) == chunks_2048, (m, n)
            assert config.infer_config(m, n, True, has_bias=True) == chunks_2048, (m, n)
        for n, w_bytes in [(n, 4) for n in (8720, 8960, 9216)] + [(n, 2) for n in (8705, 8711, 9210)]:
            assert config.fwd_config(m, n, True, w_bytes=w_bytes, has_bias=True) == trained_head_tail, (m, n, w_bytes)
            assert config.infer_config(m, n, True, w_bytes=w_bytes, has_bias=True) == inferred_head_tail, (m, n)
        # but a bias with float32 weights keeps the chunks at 8193-8448 columns on an H200 (x0.858 at 8448, run 454)
        assert config.fwd_config(m, 8448, True, w_bytes=4, has_bias=True) == config.LaunchConfig(1, 4096, 3, 16)
        with_bias = config.fwd_config(m, 8448, True, w_bytes=4, has_bias=True, slower_dram=True)
        assert with_bias == config.LaunchConfig(1, 8192, 1, 8, 2, tail_n=256)
        for n, tail in ((9217, 2048), (10240, 2048), (12288, 4096)):
            head_tail = config.LaunchConfig(1, 8192, 1, 8, 2, tail_n=tail)
            assert config.fwd_config(m, n) == config.fwd_config(m, n, slower_dram=True) == head_tail, (m, n)
            assert config.infer_config(m, n, has_bias=True) == head_tail, (m, n)
            float32_w = config.fwd_config(m, n, w_bytes=4)
            assert float32_w == config.fwd_config(m, n, w_bytes=4, slower_dram=True), (m, n)
            assert float32_w == config.LaunchConfig(1, 8192, 1, 8, 0, tail_n=tail), (m, n)
        assert config.fwd_config(m, 9216, slower_dram=True).num_chunks == 9
    assert config.fwd_config(2048, 12288, True, slower_dram=True, has_bias=True).num_warps == 16
    assert config.fwd_config(1025, 12288, slower_dram=True).programs_per_sm == 0
    assert config.fwd_config(512, 12288, slower_dram=True).num_chunks == 6
    # LayerNorm's 1025-2048 rows of 12289-14336: chunks of 2048 at 8 warps (run 408); 14337 and 1024 rows as before
    assert fwd(1025, 12289) == fwd(2048, 14336) == (2048, 7, 8, 0)
    assert fwd(2048, 14337) == fwd(1024, 13312) == (4096, 4, 8, 0) and fwd(2048, 13312, True)[:3] == (4096, 4, 16)
    # the fused forward of more than 4096 rows of 512-4096 columns: two rows a tile, one of 4096 (32 a thread)
    for n, block_m, warps in ((512, 2, 1), (1024, 2, 2), (2048, 2, 4), (4096, 1, 4)):
        assert config.fwd_config(4097, n, has_mask=True) == config.LaunchConfig(block_m, n, 1, warps)
    assert config.fwd_config(4096, 4096, has_mask=True) == config.LaunchConfig(2, 4096, 1, 8)
    # the forwards (the fused one too) of more than 4096 rows of 256 columns: 8 rows of 2 warps, above 8192 rows 8
    # programs a SM
    for is_rms, has_mask in ((False, False), (True, False), (False, True)):
        assert config.fwd_config(8193, 256, is_rms, has_mask) == config.LaunchConfig(8, 256, 1, 2, 8)
        assert config.fwd_config(4097, 256, is_rms, has_mask) == config.LaunchConfig(8, 256, 1, 2)
        assert config.fwd_config(8192, 256, is_rms, has_mask) == config.LaunchConfig(8, 256, 1, 2)
    for m, n in ((32768, 200), (32768, 512)):
        assert config.fwd_config(m, n).programs_per_sm == 0, (m, n)
    for n in (2560, 4096):
        assert config.bwd_config(4096, n, False, is_rms=True) == config.LaunchConfig(2, 4096, 1, 16, 1)
    # LayerNorm's of 2049-4095 columns one row a tile of 4 warps, two a SM; of 4096 two rows a tile of 16 warps
    assert config.bwd_config(4096, 2049) == config.bwd_config(3000, 4095) == config.LaunchConfig(1, 4096, 1, 4, 2)
    assert config.bwd_config(4096, 4096) == config.LaunchConfig(2, 4096, 1, 16, 1)
    assert config.bwd_config(4096, 2048) == config.bwd_config(32768, 2048)
    assert config.bwd_config(4096, 4096, has_mask=True) == config.bwd_config(32768, 4096, has_mask=True)
    # the masked backward's split rows of 4097-5632, 6144 and 7168 columns
    for n, parts in ((4097, 5), (5120, 5), (5121, 6), (5632, 6), (6144, 6), (7168, 7)):
        assert config.bwd_config(3000, n, has_mask=True) == config.split_rows_config(n, False, True), n
        assert config.bwd_config(3000, n, has_mask=True).parts == parts
    for n in (4096, 5633, 6143, 6145, 7167, 7169, 8192):
        assert config.bwd_config(3000, n, has_mask=True).parts == 1, n
    assert (
        config.bwd_config(32768, 6144, has_mask=True).parts == config.bwd_config(2048, 6144, has_mask=True).parts == 1
    )
    # the masked backward (config._masked_tile), in calls of more than 8192 rows: rows of 513-1024 columns one a
    # program of one warp, 8 programs a SM, rows of 512 eight a program of 4 warps; 2048 one of two warps
    for n in (1000, 1024):
        assert config.bwd_config(8193, n, has_mask=True) == config.LaunchConfig(1, 1024, 1, 1, 8)
        assert config.bwd_config(8192, n, has_mask=True) == config.LaunchConfig(2, 1024, 1, 2, 4)
    assert config.bwd_config(8193, 512, has_mask=True) == config.LaunchConfig(8, 512, 1, 4, 2)
    assert config.bwd_config(8192, 512, has_mask=True) == config.LaunchConfig(4, 512, 1, 2, 4)
    assert config.bwd_config(32768, 2048, has_mask=True, tma=False) == config.LaunchConfig(1, 2048, 1, 2, 4)
    assert config.bwd_config(4096, 5120).parts == 5 and config.bwd_config(4096, 5121).parts == 1
    assert config.bwd_config(4096, 5120, False, is_rms=True).parts == 1
    assert config.bwd_config(32768, 5120).parts == 1
    # LayerNorm's 5121-6144 as head + tail; not RMSNorm's, not many rows'
    assert config.bwd_config(3000, 5121) == config.LaunchConfig(1, 4096, 1, 8, 1, tail_n=2048)
    assert config.bwd_config(3000, 6144, False, is_rms=True).tail_n == config.bwd_config(32768, 6144).tail_n == 0
    assert config.bwd_config(3000, 6145).tail_n == 0


def test_many_rows_rules_on_slower_dram():
    """On slower DRAM (an H100, ``config.slower_dram``) LayerNorm's forward of more than 4096 rows of 7169-8192 columns
    takes chunks of 2048 at 16 warps (1024 at 8 up to 7168, and on an H200), and the fused forward of more than 2048
    rows of 4097-8192 columns, 16-element aligned, chunks of 1024 at 8 warps (4 elements a thread) up to 7168 and of
    2048 at 8 above (GPU runs 432-438). Not RMSNorm, not 2049-4096 rows of the plain forward or of the fused one's head
    + tail tiles, not fewer rows, not rows that are not 16-element aligned, and nothing without ``slower_dram``."""
    from normkit.triton import config
    from normkit.triton.config import LaunchConfig

    def fwd(m, n, has_mask=False, slower=True, **kwargs):
        return config.fwd_config(m, n, has_mask=has_mask, slower_dram=slower, **kwargs)

    for m in (4097, 8192, 32768):
        assert fwd(m, 7169) == fwd(m, 7680) == fwd(m, 8192, w_bytes=4) == LaunchConfig(1, 2048, 4, 16)
        assert config.infer_config(m, 8192, slower_dram=True) == LaunchConfig(1, 2048, 4, 16)
        assert fwd(m, 7168) == fwd(m, 7168, slower=False) == LaunchConfig(1, 1024, 7, 8)
        assert fwd(m, 8192, slower=False) == LaunchConfig(1, 1024, 8, 8)
        for n in (8192, 8193, 12287):  # (12288 and up: round 134's chunks at 32 warps on slower DRAM)
            assert fwd(m, n, is_rms=True) == fwd(m, n, is_rms=True, slower=False)
        assert fwd(m, 8193) == fwd(m, 8193, slower=False)
    for m in (3000, 4096, 2048, 1024):
        assert fwd(m, 8192) == fwd(m, 8192, slower=False)
    for m in (2049, 3000, 4096, 32768):
        assert fwd(m, 4112, True) == LaunchConfig(1, 1024, 5, 8)
        assert fwd(m, 6144, True) == fwd(m, 6144, True, w_bytes=4) == LaunchConfig(1, 1024, 6, 8)
        assert fwd(m, 7168, True) == LaunchConfig(1, 1024, 7, 8)
        for n in (7184, 7680, 8000, 8192):
            assert fwd(m, n, True) == fwd(m, n, True, w_bytes=4) == LaunchConfig(1, 2048, 4, 8), (m, n)
        for n in (4104, 7176, 8200, 8208, 9216):  # not 16-element aligned, above 8192
            assert fwd(m, n, True) == fwd(m, n, True, slower=False), (m, n)
        assert fwd(m, 8192, True, slower=False) == LaunchConfig(1, 1024, 8, 4)
    assert fwd(3000, 5120, True) == fwd(3000, 5120, True, slower=False) == LaunchConfig(1, 4096, 1, 4, tail_n=1024)
    assert fwd(3000, 5120, True, w_bytes=4) == LaunchConfig(1, 1024, 5, 8)  # float32 weights: no head + tail
    for m in (1, 1024, 2048):
        assert fwd(m, 6144, True) == fwd(m, 6144, True, slower=False)


def test_rms_backward_head_and_tail_rule():
    """RMSNorm's backward of 16-bit x (``config._rms_head_tail_bwd``): rows of 4097-5120 columns in calls of more
    than 1024 rows (no dB) as a head tile of 4096 and a tail of 1024 at 4 warps, two programs a SM; of 8193-10240 at any
    rows a head of 8192 and a tail of 2048 at 8 warps, one a SM (not with dB and float32 weights); of 10241-12288 a
    head of 8192 and a tail of 4096, with 16-bit weights and no dB only. Not float32 x, rows that are not a multiple
    of 16 columns, LayerNorm, other lengths, nor tiles wider than LIMITS allows."""
    from normkit.triton import config
    from normkit.triton.config import LaunchConfig

    def rms(m, n, x_bytes=2, w_bytes=2, has_dbias=False):
        return config.bwd_config(m, n, has_dbias, is_rms=True, x_bytes=x_bytes, w_bytes=w_bytes)

    for m in (1025, 3000, 32768):
        for n in (4112, 4608, 5120):
            assert rms(m, n) == LaunchConfig(1, 4096, 1, 4, 2, tail_n=1024), (m, n)
        for n in (8208, 9216, 10240):
            assert rms(m, n) == LaunchConfig(1, 8192, 1, 8, 1, tail_n=2048), (m, n)
        assert rms(m, 4608, x_bytes=4).tail_n == rms(m, 9216, x_bytes=4).tail_n == 0
        assert rms(m, 9216, x_bytes=4).parts == 9
        for n in (10256, 11264, 12288):
            assert rms(m, n) == LaunchConfig(1, 8192, 1, 8, 1, tail_n=4096), (m, n)
            assert rms(m, n, w_bytes=4).parts == rms(m, n, has_dbias=True).parts == -(-n // 1024), (m, n)
        # dB with float32 weights: split rows at 8193-10240 (the head + tail spills); 16-bit weights keep the rule
        assert rms(m, 9216, w_bytes=4).tail_n == rms(m, 9216, has_dbias=True).tail_n == 2048
        assert rms(m, 9216, w_bytes=4, has_dbias=True).parts == 9
        assert rms(m, 4608, has_dbias=True) == LaunchConfig(1, 8192, 1, 16, 1)  # dB: the whole-row rule
    # rows of 8193-10240 at any rows; 4097-5120 from 1025 rows
    assert rms(1024, 9216).tail_n == 2048 and rms(1024, 4608).tail_n == 0
    for n in (4097, 4104, 5128, 8192, 8200, 9217, 10248, 12304, 12800):  # 4104, 8200, 10248: not 16-column rows
        assert rms(4096, n).tail_n == 0, n
    assert config.bwd_config(4096, 4608).parts == 5 and config.bwd_config(32768, 9216).parts == 9  # LayerNorm
    with config.limits(bwd_max_block_n=4096):
        assert rms(4096, 4608).tail_n == rms(4096, 9216).tail_n == 0


def test_rms_backward_with_dbias_takes_the_dw_launch():
    """RMSNorm's backward with dB (a bias), 16-bit x, rows of 4097-8192 columns: a whole row at 16 elements a thread
    (the launch without dB), not LayerNorm's dB launch of 32 a thread; float32 x, other widths and LayerNorm keep
    LayerNorm's. The launches against the reference: ``test_rms_backward_with_dbias_launches``."""
    from normkit.triton import config
    from normkit.triton.config import LaunchConfig

    for m in (1024, 4096, 32768):
        for n in (4608, 6144, 8192):
            assert config.bwd_config(m, n, True, is_rms=True) == LaunchConfig(1, 8192, 1, 16, 1), (m, n)
            assert config.bwd_config(m, n, True, is_rms=True, x_bytes=4) == LaunchConfig(1, 8192, 1, 8, 1), (m, n)
            if m != 4096:  # LayerNorm (at 2049-4096 rows its own rules: ``_few_waves_bwd``)
                assert config.bwd_config(m, n, True) == LaunchConfig(1, 8192, 1, 8, 1), (m, n)
    # not at 4096 columns (0.78x there with float32 weights)
    assert config.bwd_config(32768, 4096, True, is_rms=True) == LaunchConfig(1, 4096, 1, 4, 2)


@pytest.mark.parametrize("n, dtypes", [(4608, DTYPES[1]), (8192, DTYPES[3])], ids=["4608-fp16", "8192-bf16-fp32w"])
def test_rms_backward_with_dbias_launches(n, dtypes):
    """The launch of RMSNorm's backward with dB at 4097-8192 columns, as the rule gives it for 32768 rows, forced on
    37 strided rows with zero-centered gamma, against the reference (dx, dW and dB)."""
    from normkit.triton import config

    x, w, b = make_inputs(37, n, *dtypes, bias=True, row_pad=16)
    rule = config.bwd_config(32768, n, True, is_rms=True, x_bytes=x.element_size(), w_bytes=w.element_size())
    assert rule.num_warps == 16 and rule.block_n == 8192
    with config.forced(bwd=rule):
        check_backward("triton", "rms_norm", x, w, b, zero_centered_gamma=True, has_dbias=True)


@pytest.mark.parametrize(
    "n, dtypes",
    [(4608, DTYPES[1]), (8208, DTYPES[1]), (9216, DTYPES[3]), (10256, DTYPES[2]), (12288, DTYPES[1])],
    ids=["4608-fp16", "8208-fp16", "9216-bf16-fp32w", "10256-bf16", "12288-fp16"],
)
def test_rms_backward_head_and_tail_launches(n, dtypes):
    """The launches of RMSNorm's head + tail rule, as the rule gives them (4608: the rule of 2048 rows, forced on 37
    rows), against the reference: 37 rows over persistent programs, strided rows, zero-centered gamma; 8208 has a
    tail of 2048 with 16 columns in the row, 10256 one of 4096 with 2064."""
    from normkit.triton import config

    x, w, _ = make_inputs(37, n, *dtypes, bias=False, row_pad=16)
    rule = config.bwd_config(2048, n, False, is_rms=True, x_bytes=x.element_size(), w_bytes=w.element_size())
    assert rule.tail_n in (1024, 2048, 4096)
    with config.forced(bwd=rule):
        check_backward("triton", "rms_norm", x, w, None, zero_centered_gamma=True, has_dbias=False)


def test_rms_backward_head_and_tail_by_the_tma_rule():
    """Where the call's rows can be loaded by the TMA (``tma``, at least ``TMA_MIN_ELEMENTS``), RMSNorm's rows of
    8193-12288 columns (16-bit x) take the head + tail tiles on ``norm_bwd_tma_kernel``: any weights, dB up to 10240
    columns; dx by the TMA where the weights are float32 or the tail is of 4096, whose 16-bit weights take 16 warps.
    Smaller calls, ``tma=False``, float32 x, dB above 10240 columns and LayerNorm keep their launches without it."""
    from dataclasses import replace

    from normkit.triton import config
    from normkit.triton.config import LaunchConfig

    def rms(m, n, w_bytes=2, has_dbias=False, tma=True, x_bytes=2):
        return config.bwd_config(m, n, has_dbias, is_rms=True, tma=tma, x_bytes=x_bytes, w_bytes=w_bytes)

    for m in (4096, 32768):
        for n in (8208, 9216, 10240):
            for has_dbias in (False, True):
                want = LaunchConfig(1, 8192, 1, 8, 1, tail_n=2048, tma=True)
                assert rms(m, n, has_dbias=has_dbias) == want, (m, n, has_dbias)
                assert rms(m, n, 4, has_dbias) == replace(want, tma_store=True), (m, n, has_dbias)
        for n in (10256, 11264, 12288):
            want = LaunchConfig(1, 8192, 1, 8, 1, tail_n=4096, tma=True, tma_store=True)
            assert rms(m, n, 4) == want and rms(m, n) == replace(want, num_warps=16), (m, n)
            assert rms(m, n, has_dbias=True).parts == rms(m, n, 4, True).parts == -(-n // 1024), (m, n)
        for n in (9216, 12288):
            assert not rms(m, n, tma=False).tma and not rms(m, n, x_bytes=4).tma, (m, n)
        assert not config.bwd_config(m, 12288, True, tma=True).tma, m  # LayerNorm (``_tma_bwd``)
        for n in (4608, 8192, 8200, 12304, 16384):
            assert not rms(m, n).tma, (m, n)
    # below TMA_MIN_ELEMENTS: the pointer kernel's head + tail (and split rows with float32 weights at 12288)
    assert rms(2048, 12288) == LaunchConfig(1, 8192, 1, 8, 1, tail_n=4096) and rms(2048, 12288, 4).parts == 12
    assert rms(3640, 9216) == LaunchConfig(1, 8192, 1, 8, 1, tail_n=2048)  # 3640 x 9216 < 2**25
    assert rms(3641, 9216).tma  # 3641 x 9216 > 2**25


@pytest.mark.parametrize(
    "op, n, dtypes, has_dbias",
    [
        ("rms_norm", 9216, DTYPES[1], True),
        ("rms_norm", 9216, DTYPES[3], True),
        ("rms_norm", 10256, DTYPES[2], False),
        ("rms_norm", 12288, DTYPES[3], False),
        ("layer_norm", 9216, DTYPES[1], True),
        ("layer_norm", 8200, DTYPES[3], True),
        ("layer_norm_clamped_relu", 4608, DTYPES[3], True),
        ("layer_norm_clamped_relu", 5120, DTYPES[1], True),
        ("layer_norm_clamped_relu", 9216, DTYPES[3], True),
        ("layer_norm_clamped_relu", 10240, DTYPES[2], True),
    ],
    ids=[
        "rms-9216-fp16-dB", "rms-9216-bf16-fp32w-dB", "rms-10256-bf16", "rms-12288-bf16-fp32w",
        "ln-9216-fp16", "ln-8200-bf16-fp32w", "masked-4608-bf16-fp32w", "masked-5120-fp16", "masked-9216-bf16-fp32w",
        "masked-10240-bf16",
    ],
)  # fmt: skip
def test_head_and_tail_by_the_tma_launches(op, n, dtypes, has_dbias):
    """The TMA head + tail launches of the backward (RMSNorm's ``config._rms_head_tail_bwd``, LayerNorm's and the
    masked backward's ``config._tma_bwd``), as the rules give them for 32768 rows, forced on 37 strided rows (several
    row blocks a program, the last past M) with zero-centered gamma, against the reference. 10256 has a tail of 4096
    holding 2064 columns and 8200 one of 2048 holding 8, which the descriptors load as zeros past the row."""
    from normkit.triton import config

    x, w, b = make_inputs(37, n, *dtypes, bias=has_dbias, row_pad=16)
    rule = config.bwd_config(
        32768, n, has_dbias, has_mask=op == "layer_norm_clamped_relu", is_rms=op == "rms_norm", tma=True,
        x_bytes=x.element_size(), w_bytes=w.element_size(),
    )  # fmt: skip
    assert rule.tma and rule.tail_n in (1024, 2048, 4096)
    with config.forced(bwd=rule), tma_launches() as launches:
        check_backward("triton", op, x, w, b, zero_centered_gamma=True, has_dbias=has_dbias)
    assert launches.call_count == 1


def test_few_waves_persistent_forward_rules():
    """2049-4096 rows of 1153-3072 columns: one row a step of a persistent grid (``config._few_waves_persistent_fwd``),
    with a tail tile where the row is more than an eighth past 1024 or 2048 (past 2048: LayerNorm's at 2 warps,
    RMSNorm's a tail of 1024 at 4); not for many rows or 2049-2304 columns. The masked forward's rows of 1793-2048 two
    a step."""
    from normkit.triton import config, ops

    def fwd(n, is_rms=False, m=3000, w_bytes=2):
        cfg = config.fwd_config(m, n, is_rms, w_bytes=w_bytes)
        return cfg.block_m, cfg.block_n, cfg.num_warps, cfg.programs_per_sm, cfg.tail_n

    # 1024 + 512 at 1 warp, but RMSNorm's with 16-bit weights at 2; a tail of 256 at 1 warp
    assert fwd(1536) == fwd(1536, True, w_bytes=4) == fwd(1281, True, w_bytes=4) == (1, 1024, 1, 16, 512)
    assert fwd(1536, True) == fwd(1281, True) == (1, 1024, 2, 16, 512)
    assert config.infer_config(3000, 1536, True, w_bytes=2).num_warps == 2
    assert config.infer_config(3000, 1536, True, w_bytes=4).num_warps == 1
    for training in (True, False):  # the launchers pass the weights' size
        plans = [
            ops._forward_plan(3000, 1536, torch.bfloat16, w, False, True, False, None, training, -1, config.generation)
            for w in (torch.bfloat16, torch.float32)
        ]  # fmt: skip
        assert [plan.num_warps for plan in plans] == [2, 1]
    for is_rms in (False, True):
        assert fwd(1153, is_rms) == fwd(1280, is_rms) == (1, 1024, 1, 16, 256)
        assert fwd(1537, is_rms) == fwd(2048, is_rms) == (1, 2048, 4, 8, 0)
        for n in (1024, 1152, 2049, 2304, 3073):  # one program a row block
            assert fwd(n, is_rms)[3] == 0
        assert fwd(2048, is_rms, m=2048)[3] == fwd(2048, is_rms, m=4097)[3] == 0
    assert fwd(2305) == fwd(2560) == (1, 2048, 2, 8, 512) and fwd(2561) == fwd(3072) == (1, 2048, 2, 8, 1024)
    assert fwd(2560, w_bytes=4) == (1, 2048, 2, 8, 512) and fwd(3072, w_bytes=4)[3] == 0  # float32 weights
    assert fwd(2305, True) == fwd(2560, True) == fwd(2561, True) == fwd(3072, True) == (1, 2048, 4, 8, 1024)
    # the masked forward: rows of 1793-2048 two a step, 4 programs a SM; elsewhere one program a row block
    masked = {n: config.fwd_config(3000, n, has_mask=True) for n in (1792, 1793, 2048, 2049)}
    assert masked[1793] == masked[2048] == config.LaunchConfig(2, 2048, 1, 4, 4)
    assert masked[1792].programs_per_sm == masked[2049].programs_per_sm == 0
    assert config.fwd_config(4097, 2048, has_mask=True).programs_per_sm == 0


def test_rms_norm_few_rows_by_their_tail(dram):
    """RMSNorm's 513-1024 rows of 8193-12288 columns on an H200's DRAM (round 54): a head tile of 8192 and a tail
    tile on a persistent grid where the tail is 256 columns or less or 1024 (16 warps) or 2048 (8 warps), chunks of
    4096 where it would be 512, chunks of 2048 at 8 warps (a chunk ahead) at 8705-9216 where rows are whole 16-element
    vectors, with a bias too where the weights are 16-bit (round 56); the short tail's y and rstd match the reference,
    and so do the chunks' with a bias."""
    from normkit.triton import config, ops

    dram(False)
    x, w, _ = make_inputs(520, 9300, torch.bfloat16, torch.bfloat16, bias=False)
    with pytest.MonkeyPatch.context() as recording:
        launched = _record_launches(recording, "NORM_FWD")
        for n in (8300, 8600, 8705, 9216, 9300):
            ops.rms_norm_fwd(x[:, :n], w[:n], None, 1e-5)
    got = [(launch["BLOCK_N"], launch["TAIL_N"], launch["num_warps"], launch["PERSISTENT"]) for launch in launched]
    assert got == [(8192, 128, 16, True), (4096, 0, 16, False), (8192, 1024, 16, True), (2048, 0, 8, False),
                   (8192, 2048, 8, True)]  # fmt: skip
    assert launched[3]["X_AHEAD"] and launched[3]["NUM_CHUNKS"] == 5
    check_forward("triton", "rms_norm", x[:, :8300], w[:8300], None)
    # with a bias (round 56): the chunks with 16-bit weights, training and inference calls alike; with float32
    # weights the head + tail (8 warps training, 16 inference)
    x, b = x[:, :9216], torch.randn(9216, device=x.device)
    with pytest.MonkeyPatch.context() as recording:
        launched = _record_launches(recording, "NORM_FWD")
        for weights, bias in ((w[:9216], b.bfloat16()), (w[:9216].float(), b)):
            ops.rms_norm_fwd(x, weights, bias, 1e-5)
            ops.infer_unchecked("rms_norm", x, weights, bias, 1e-5, False)
    got = [(launch["BLOCK_N"], launch["TAIL_N"], launch["num_warps"], launch["PERSISTENT"]) for launch in launched]
    assert got == [(2048, 0, 8, False)] * 2 + [(8192, 1024, 8, True), (8192, 1024, 16, True)]
    with config.forced(fwd=config.fwd_config(520, 9216, True, has_bias=True)):  # that launch on a few rows
        y, rstd = ops.rms_norm_fwd(x[:5], w[:9216], b.bfloat16(), 1e-5)
        y_infer = ops.infer_unchecked("rms_norm", x[:5], w[:9216], b.bfloat16(), 1e-5, False)
    want_y, want_rstd = reference.rms_norm_fwd(x[:5], w[:9216], b.bfloat16(), 1e-5)
    compare(y, want_y, "y (chunks with a bias)")
    compare(rstd, want_rstd, "rstd (chunks with a bias)")
    compare(y_infer, want_y, "y (the inference call's chunks with a bias)")


@pytest.mark.gpu
@pytest.mark.parametrize("op", list(FORWARDS))
def test_few_waves_on_the_gpu(op):
    """The rules of 2049-4096 rows, LayerNorm's head + tail tiles of few rows and RMSNorm's backward head + tail tiles,
    compiled as launched, forward and backward, against the reference."""
    shapes = [(3000, 4608), (3000, 5120), (3000, 6144), (3000, 6656), (3000, 8704), (3000, 12289), (3000, 2560)]
    shapes += [(3000, 4112), (3000, 8208), (3000, 10240), (1500, 4608), (1500, 9216)]  # RMSNorm's head + tail
    shapes += [(3000, 1200), (3000, 1536), (3000, 2000), (3000, 3072), (3000, 5500)]  # persistent, head + tail
    shapes += [(3000, 4400), (3000, 1300)]  # 16-bit weights: LayerNorm's 4096 + 512 at 2 warps, RMSNorm's 1024 + 512
    shapes += [(3000, 5888)]  # the fused forward's head + tail of 4096 + 2048 at 4 warps
    shapes += [(3000, 11000)]  # LayerNorm's head + tail of 8192 + 4096 at 8 warps with 16-bit weights (round 63)
    shapes += [(3000, 7500), (3000, 8192)]  # RMSNorm's one tile of 8192 at 16 warps (round 65; float32 weights: 8192)
    few_rows = [(1024, 12288), (700, 10240), (700, 14000), (300, 20480), (300, 10240), (700, 6144)]
    few_rows += [(1500, 4500), (2000, 5200), (1100, 7000), (1500, 13000)]  # 1025-2048 rows (round 47)
    few_rows += [(1000, 9216), (1800, 8800), (700, 8200), (600, 12000)]  # 513-2048 rows of 8193-12288 (round 48)
    few_rows += [(200, 9000), (1, 8193)]  # 1-256 rows of 8193-9216 (round 49); on an H100 RMSNorm's head + tail above
    few_rows += [(200, 9216)]  # the fused forward's mask by nibbles (round 49; 1000 x 9216 above too)
    # on an H100 (round 50): LayerNorm's many rows of 7169-8192 in chunks of 2048 at 16 warps, the fused forward's in
    # chunks of 2048 at 8 there and of 4 a thread by nibbles at 4097-7168 (3000 x 5120-6656 above); RMSNorm's 513-1024
    # rows of 8193-12288 on a persistent grid (1000 x 9216, 700 x 10240, 600 x 12000 above)
    few_rows += [(4100, 7680), (4100, 8192)]
    few_rows += [(800, 8448), (800, 9728)]  # RMSNorm's tails of 256 and 2048 (round 54)
    for m, n in shapes + few_rows:  # few rows: 8 a thread (the fused forward; LayerNorm at 257-1024 rows)
        for dtypes in (DTYPES[1], DTYPES[3]):
            x, w, b = make_inputs(m, n, *dtypes, bias=op != "rms_norm")
            check_forward("triton", op, x, w, b)
            check_backward("triton", op, x, w, b, has_dbias=op != "rms_norm")


@pytest.mark.gpu
@pytest.mark.parametrize("op", ["layer_norm", "layer_norm_clamped_relu"])
def test_two_half_tiles_with_a_bias_on_the_gpu(op):
    """LayerNorm's few waves with a bias and 16-bit weights (round 83): rows of 6145-8192 columns as two tiles of
    4096, of 8193-9216 as 8192 + 1024 (zero-centered weights with fp16 x in chunks there, round 84), compiled as
    launched, the training and the inference call, with and without zero-centered weights, against the reference."""
    from normkit.triton import config, ops

    kwargs = {"lower": LOWER, "upper": UPPER} if op == "layer_norm_clamped_relu" else {}
    for m, n in ((3000, 7000), (4096, 8192), (2000, 6500), (3000, 8704), (4096, 9216), (2100, 8200)):
        for dtypes in (DTYPES[1], DTYPES[2]):
            x, w, b = make_inputs(m, n, *dtypes)
            assert config.infer_config(m, n, w_bytes=2, has_bias=True).tail_n in (1024, 4096), (m, n)
            for zero_centered in (False, True):
                check_forward("triton", op, x, w, b, zero_centered)
                y = ops.infer_unchecked(op, x, w, b, 1e-5, zero_centered, LOWER, UPPER)
                want = getattr(reference, FORWARDS[op])(x, w, b, 1e-5, zero_centered_gamma=zero_centered, **kwargs)
                compare(y, want[0], f"y of the inference call ({m} x {n}, zero-centered {zero_centered})")


@pytest.mark.gpu
@pytest.mark.parametrize("op", list(FORWARDS))
def test_few_short_rows_on_the_gpu(op):
    """At most 4096 rows of 65-128 columns: tiles of 8 rows at 1 warp (round 65), compiled as launched, forward and
    backward, against the reference; with and without a bias, fp16 and bf16 x with float32 weights."""
    for m, n in ((4096, 128), (3000, 100), (7, 128), (1, 97)):
        for dtypes in (DTYPES[1], DTYPES[3]):
            for bias in (True, False):
                x, w, b = make_inputs(m, n, *dtypes, bias=bias)
                check_forward("triton", op, x, w, b)
                check_backward("triton", op, x, w, b, has_dbias=bias)


@pytest.mark.parametrize("op", list(FORWARDS))
def test_strided_rows_are_read_without_a_copy(op):
    x, w, b = make_inputs(11, 96, torch.float16, torch.float16, row_pad=40)
    assert x.stride() == (136, 1)
    check_forward("triton", op, x, w, b)
    check_backward("triton", op, x, w, b)


@pytest.mark.parametrize("op", list(FORWARDS))
@pytest.mark.parametrize("m, row_pad", [(11, 40), (1, 40), (5, 0)])
def test_outputs_are_new_contiguous_tensors(op, m, row_pad):
    """y, the mask and dx are new contiguous tensors in x's dtype on x's device, whatever x's and dy's row stride
    (strided rows, one row, contiguous rows): the launchers allocate them after x (``ops._forward_outputs``)."""
    from normkit.triton import ops

    x, w, b = make_inputs(m, 96, torch.bfloat16, torch.float32, row_pad=row_pad)
    dy = make_inputs(m, 96, torch.bfloat16, torch.float32, row_pad=row_pad)[0]
    if op == "layer_norm_clamped_relu":
        y, mean, rstd, mask = ops.layer_norm_clamped_relu_fwd(x, w, b, 1e-5, LOWER, UPPER)
        dx = ops.layer_norm_clamped_relu_bwd(dy, mask, x, w, mean, rstd)[0]
        assert mask.shape == (m, 12) and mask.dtype == torch.uint8 and mask.is_contiguous()
    elif op == "layer_norm":
        y, mean, rstd = ops.layer_norm_fwd(x, w, b, 1e-5)
        dx = ops.layer_norm_bwd(dy, x, w, mean, rstd)[0]
    else:
        y, rstd = ops.rms_norm_fwd(x, w, b, 1e-5)
        dx = ops.rms_norm_bwd(dy, x, w, rstd)[0]
    for out in (y, dx):
        assert out.shape == x.shape and out.dtype == x.dtype and out.device == x.device
        assert out.stride() == (96, 1) and out.data_ptr() not in (x.data_ptr(), dy.data_ptr())
    assert rstd.shape == (m,) and rstd.dtype == torch.float32


@pytest.mark.parametrize("op", list(FORWARDS))
def test_chunked_rows(op):
    """Rows longer than one tile take the two-pass chunked path; force it at a small N."""
    from normkit.triton import config

    x, w, b = make_inputs(7, 1000, torch.float32, torch.float32, row_pad=3)
    x = x * 10 + 100  # a large mean: the chunked variance must not cancel
    with config.limits(fwd_max_block_n=128, bwd_max_block_n=128, chunk_n=128):
        assert config.fwd_config(7, 1000).num_chunks == 8
        check_forward("triton", op, x, w, b, zero_centered_gamma=True)
        check_backward("triton", op, x, w, b, zero_centered_gamma=True)


@pytest.mark.parametrize("n", [1000, 1024])  # a ragged last chunk, and whole chunks (EVEN_N)
@pytest.mark.parametrize("data", ["large_mean", "outlier_chunk0"])
def test_chunked_forward_variance_is_stable(n, data):
    """large_mean: a mean 10**4 standard deviations from zero; a sum of squares in float32 loses the variance
    entirely (E[x^2] = 1e8, eps * 1e8 > 1). outlier_chunk0: the first chunk, whose values are the shifts of the
    LayerNorm lanes' sums, is 10**4 away from the rest of the row. The chunked forward must get both right."""
    from normkit.triton import config

    x = torch.randn(5, n, device=DEVICE)
    if data == "large_mean":
        x += 1e4
    else:
        x[:, :128] += 1e4
    w, b = torch.ones(n, device=DEVICE), torch.zeros(n, device=DEVICE)
    with config.limits(fwd_max_block_n=128, chunk_n=128):
        assert config.fwd_config(5, n).num_chunks == 8
        _, mean, rstd = backend_ops("triton").layer_norm_fwd(x, w, b, 1e-5)
    # the statistics only: y = (x - mean) * rstd inherits the float32 spacing of x and of the mean at 1e4 (0.001),
    # so any two float32 computations of y differ by that much
    want = reference.layer_norm_fwd(x, w, b, 1e-5)
    compare(mean, want[1], "mean")
    compare(rstd, want[2], "rstd")


@pytest.mark.parametrize("data", ["large_mean", "outlier_first"])
@pytest.mark.parametrize(
    "n, cfg",
    [
        (1000, dict(block_m=1, num_warps=1)),  # one tile, ragged (not EVEN_N)
        (1024, dict(block_m=2, num_warps=2)),  # two rows a tile, whole
        (1152, dict(block_m=1, num_warps=1, tail_n=128)),  # a head tile and a tail tile
        (1100, dict(block_m=1, num_warps=1, tail_n=128, programs_per_sm=2)),  # the same, ragged, on a persistent grid
    ],
)
def test_one_tile_forward_variance_is_stable(n, cfg, data):
    """LayerNorm's rows held whole in registers (``_normalize_one_tile``) sum (x - mean)^2 after the mean.
    large_mean: a mean 10**4 standard deviations from zero, where E[x^2] - E[x]^2 in float32 loses the variance.
    outlier_first: the first column 10**4 from the rest of the row, where sums shifted by a row's first element
    (round 80's one-reduction form, GPU run 632, not kept) lose about log2(N) bits of the variance: 1e-3 off in
    rstd at N = 1000. Each must match the reference."""
    from normkit.triton import config
    from normkit.triton.config import LaunchConfig

    x = torch.randn(6, n, device=DEVICE)
    if data == "large_mean":
        x += 1e4
    else:
        x[:, 0] += 1e4
    w, b = torch.ones(n, device=DEVICE), torch.zeros(n, device=DEVICE)
    with config.forced(fwd=LaunchConfig(block_n=1024, num_chunks=1, **cfg)):
        y, mean, rstd = backend_ops("triton").layer_norm_fwd(x, w, b, 1e-5)
    want = reference.layer_norm_fwd(x, w, b, 1e-5)
    compare(mean, want[1], "mean")
    compare(rstd, want[2], "rstd")
    if data == "outlier_first":
        # at a mean of 10**4, y = (x - mean) * rstd inherits the float32 spacing of x and of the mean there (0.001),
        # so any two float32 computations of y differ by that much: y is compared where the mean is small (about 10)
        compare(y, want[0], "y")


def test_launch_heuristic_is_cached_but_follows_limits():
    """The heuristic's answers are cached for small calls; the cache must not outlive a change of LIMITS."""
    from normkit.triton import config

    before = config.bwd_config(64, 1000), config.fwd_config(64, 1000)
    assert before[0].num_chunks == before[1].num_chunks == 1
    with config.limits(fwd_max_block_n=128, bwd_max_block_n=128, chunk_n=128):
        chunked = config.bwd_config(64, 1000), config.fwd_config(64, 1000)
        assert [c.num_chunks for c in chunked] == [8, 8]
        assert chunked[0].parts == 1  # 1000 columns: one program a row, the whole row's partials in registers
    assert (config.bwd_config(64, 1000), config.fwd_config(64, 1000)) == before
    # past chunked_max_n the backward splits its rows: LayerNorm's from 8193 columns, RMSNorm's from 16385
    for is_rms in (False, True):
        longest = config.chunked_max_n(is_rms)
        assert config.bwd_config(64, longest, is_rms=is_rms).parts == 1
        split = config.bwd_config(64, longest + 1, is_rms=is_rms)
        assert split.parts > 1 and split.parts * split.block_n >= longest + 1
    # parts of 1024 up to rows of 16384 (parts of 8192 until round 30 where more than 4096 rows)
    assert [config.bwd_config(m, 16384).parts for m in (4096, 32768)] == [16, 16]
    # RMSNorm's chunked rows at 16384 only; below, rows that are not a power of two are split
    assert config.bwd_config(4096, 16384, is_rms=True).num_chunks > 1
    assert config.bwd_config(4096, 12288, is_rms=True, w_bytes=4).parts == 12  # 16-bit weights: head + tail (round 32)
    assert config.bwd_config(4096, 9216, is_rms=True, x_bytes=4).parts == 9  # 16-bit x: head + tail (round 31)
    with config.limits(ln_bwd_chunked_max_n=512):
        assert config.bwd_config(32768, 1000).parts == 2
        assert config.bwd_config(32768, 1000, is_rms=True).parts == 1
    assert config.bwd_config(64, 1000).parts == 1
    # the row sums of split rows one step ahead: LayerNorm's above 16384 columns but at 32768
    ahead = [config.bwd_config(32768, n).ahead for n in (16384, 16385, 32767, 32768, 32769)]
    assert ahead == [False, True, True, False, True]
    assert config.bwd_config(4096, 12288, is_rms=True).ahead  # RMSNorm's split rows: always
    # parts of 4096 at 4 warps, in step: LayerNorm's rows of 32768 columns, the masked backward's of 16385-32768
    for n, has_mask in [(32768, False), (16385, True), (20000, True), (32768, True)]:
        cfg = config.bwd_config(32768, n, has_mask=has_mask)
        shape = (cfg.block_n, cfg.parts, cfg.num_warps, cfg.programs_per_sm, cfg.ahead)
        assert shape == (4096, -(-n // 4096), 4, 2, False), (n, has_mask)
    assert config.bwd_config(32768, 32769, has_mask=True).block_n == config.bwd_config(32768, 32769).block_n == 2048
    assert config.bwd_config(32768, 20000).block_n == 2048  # the plain backward's ragged rows as before
    assert config.bwd_config(32768, 16384, has_mask=True).block_n == 1024
    assert config.bwd_config(32768, 32768, is_rms=True).block_n == 2048  # RMSNorm's as before


def test_forward_chunks_follow_the_norm():
    """Many rows of 4097-8192 columns: LayerNorm's forward in chunks of 1024 (faster there), RMSNorm's in 2048 (its
    1024-column chunks ran 6% slower at 8192); at 16384 both take 2048; above, chunks of 4096 at 32 warps, and above
    32768 columns 8192. The clamped ReLU's forward: 8 chunks a row (N rounded up to a power of two), 8 elements a
    thread."""
    from normkit.triton import config

    for n in (6144, 8192):
        assert config.fwd_config(32768, n).block_n == 1024
        assert config.fwd_config(32768, n, is_rms=True).block_n == 2048
    assert config.fwd_config(32768, 16384).block_n == config.fwd_config(32768, 16384, is_rms=True).block_n == 2048
    for n in (16385, 32768, 32769, 65536):
        for is_rms in (False, True):
            chunk = 8192 if n > 32768 else 4096
            cfg = config.fwd_config(32768, n, is_rms)
            assert (cfg.block_n, cfg.num_warps, cfg.num_chunks) == (chunk, 32, -(-n // chunk))
    for n, chunk in ((4097, 1024), (8192, 1024), (8193, 2048), (16384, 2048), (16385, 4096), (65536, 8192)):
        cfg = config.fwd_config(32768, n, has_mask=True)
        assert (cfg.block_n, cfg.num_warps, cfg.num_chunks) == (chunk, chunk // 256, -(-n // chunk))
    assert config.fwd_config(32768, 131072, has_mask=True).num_chunks == 16  # chunks of at most chunk_n


@pytest.mark.gpu
@pytest.mark.parametrize("op", list(FORWARDS))
def test_long_rows_forward_on_the_gpu(op):
    """The heuristic's forward of long rows compiled as launched, a ragged last chunk, against the reference:
    chunks of 2048 (at 8 warps: 2050 rows take ``_few_waves_fwd``), 4096 at 32 and 8192 in 3-D tiles (the clamped
    ReLU's 2048 at 8, 4096 at 16 and 8192 at 32, in 3-D tiles); and the backward after it (split rows, above 16384
    columns sums published a step ahead; the masked backward's in parts of 4096 in step at 32767)."""
    from normkit.triton import config

    for n, chunk in ((12289, 2048), (32767, 4096), (32771, 8192)):
        x, w, b = make_inputs(2050, n, torch.bfloat16, torch.float32, bias=op != "rms_norm")
        assert config.fwd_config(2050, n).block_n == config.fwd_config(2050, n, has_mask=True).block_n == chunk
        assert config.bwd_config(2050, n).ahead == (n > 16384)
        check_forward("triton", op, x, w, b)
        check_backward("triton", op, x, w, b, has_dbias=op != "rms_norm")


@pytest.mark.parametrize("limit", ["fwd_max_block_n", "bwd_max_block_n"])
def test_no_tile_is_wider_than_its_limit(limit):
    """A chunk is a tile too: lowering one max_block_n alone (chunk_n left at its default) must still give tiles no
    wider than that limit, for any M and N."""
    from normkit.triton import config

    with config.limits(**{limit: 128}):
        for m in (1, 100, 4096, 32768):
            for n in (100, 1000, 12288, 65536):
                cfg = config.fwd_config(m, n) if limit.startswith("fwd") else config.bwd_config(m, n)
                assert cfg.block_n <= 128, (m, n, cfg)


@pytest.mark.parametrize("op", list(FORWARDS))
@pytest.mark.parametrize("block_m", [1, 2, 4])
@pytest.mark.parametrize("n", [1000, 300, 1024])
def test_chunked_rows_with_several_rows_per_program(op, block_m, n):
    """The chunked path over [BLOCK_M, chunk] tiles: rows of a block that run past M, and partial dW/dB shared by
    the block's rows, kept in registers (8 or 3 chunks of 128, the last one part full, or 8 whole chunks). One warp
    for several rows: the fused forward's pass two then runs its plain loop (8-16 elements a thread), with one row
    its unrolled one."""
    from normkit.triton import config
    from normkit.triton.config import LaunchConfig

    x, w, b = make_inputs(7, n, torch.bfloat16, torch.float32, row_pad=5)
    fwd = LaunchConfig(block_m, 128, -(-n // 128), 4 if block_m == 1 else 1)
    bwd = LaunchConfig(block_m, 128, -(-n // 128), 4, 1)
    with config.forced(fwd=fwd, bwd=bwd):
        check_forward("triton", op, x, w, b)
        check_backward("triton", op, x, w, b)


@pytest.mark.parametrize("op", list(FORWARDS))
@pytest.mark.parametrize(
    "block_m, block_n, num_warps, n",
    [(1, 128, 4, 1000), (1, 128, 4, 1024), (2, 128, 1, 1000), (1, 256, 1, 1000), (1, 256, 1, 1280)],
    ids=["ragged", "even", "two_rows", "3d_ragged", "3d_five_chunks"],
)
def test_chunked_second_pass_ahead(op, block_m, block_n, num_warps, n):
    """Chunked rows whose second pass loads the next chunk's x before it stores the current one (``ahead``:
    norm_fwd.py's ``X_AHEAD``), forced for every forward: a ragged last chunk, whole chunks, two rows a program, and
    8 elements a thread (3-D tiles with float32 weights over bf16 x), training and inference calls."""
    from normkit.triton import config
    from normkit.triton.config import LaunchConfig

    x, w, b = make_inputs(7, n, torch.bfloat16, torch.float32, row_pad=5)
    x = x * 10 + 100  # a large mean
    forced = LaunchConfig(block_m, block_n, -(-n // block_n), num_warps, ahead=True)
    with config.forced(fwd=forced):
        assert forward_constexprs(op, x, w)["X_AHEAD"]
        check_forward("triton", op, x, w, b, zero_centered_gamma=True)
        with torch.no_grad():
            check_forward("triton", op, x, w, b)


def test_fused_forward_pass_two_unrolled_rule():
    """``PASS_TWO_UNROLL`` (``ops._pass_two_unrolled``, GPU runs 390-393): the fused forward's chunked rows of at most 4
    elements a thread unroll their second pass over the whole chunks, and those of 5-8 where a row has 6 chunks or more
    or there are 16384 rows or more, in programs of fewer than 32 warps; not its rows of 16-32 elements a thread (few
    rows), its 32-warp chunks of 8192, its one-tile rows, nor the plain forwards."""
    from normkit.triton import config, ops
    from normkit.triton.config import LaunchConfig

    def unroll(m, n, op="layer_norm_clamped_relu", x_dtype=torch.bfloat16, w_dtype=torch.float32):
        shape = torch.empty(m, n, device="meta", dtype=x_dtype)
        return forward_constexprs(op, shape, torch.empty(n, device="meta", dtype=w_dtype))["PASS_TWO_UNROLL"]

    assert unroll(32768, 6656) == 6 and unroll(32768, 8192) == 8 and unroll(32768, 32768) == 8  # 7 chunks, 6 whole
    assert unroll(32768, 4608) == 4  # 5 chunks of 1024, 4 whole, many rows
    fp16 = {"x_dtype": torch.float16, "w_dtype": torch.float16}
    assert unroll(4096, 12800, **fp16) == 6  # 7 chunks of 2048
    assert unroll(4096, 8704, **fp16) is None and unroll(4096, 4608, **fp16) is None  # 5 chunks, few rows
    assert config.fwd_config(32768, 65536, has_mask=True).num_warps == 32 and unroll(32768, 65536) is None
    assert unroll(1024, 12288) == 6  # few rows: 6 chunks of 2048, 8 a thread
    assert config.fwd_config(1024, 20480, has_mask=True).per_thread > 8 and unroll(1024, 20480) is None
    assert unroll(32768, 4096) is None and unroll(32768, 256) is None  # one-tile rows
    for op in ("layer_norm", "rms_norm"):
        assert unroll(32768, 6656, op) is None
    assert ops._pass_two_unrolled(1024, LaunchConfig(1, 1024, 2, 8))  # 4 elements a thread: any rows, 2 chunks
    assert not ops._pass_two_unrolled(1024, LaunchConfig(1, 2048, 5, 8))  # 8 a thread: few rows of 5 chunks
    assert ops._pass_two_unrolled(1024, LaunchConfig(1, 2048, 6, 8))  # 6 chunks
    assert ops._pass_two_unrolled(16384, LaunchConfig(1, 2048, 2, 8))  # many rows
    assert not ops._pass_two_unrolled(32768, LaunchConfig(1, 4096, 8, 8))  # 16 a thread
    assert not ops._pass_two_unrolled(32768, LaunchConfig(1, 2048, 1, 8))  # one chunk


def test_second_pass_ahead_rule():
    """``ahead`` in chunked forwards where it was measured faster (GPU runs 337-340): LayerNorm's rows of 16384 in 8
    chunks of 2048 at 4 elements a thread and its few waves' rows of 5 chunks at 8 a thread, RMSNorm's chunks of 8192;
    not elsewhere, not in the fused forward with its mask, never in one-tile rows."""
    from normkit.triton import config

    def ahead(m, n, is_rms=False, has_mask=False, w_bytes=2):
        cfg = config.fwd_config(m, n, is_rms, has_mask, w_bytes=w_bytes)
        if cfg.ahead:
            assert cfg.num_chunks > 1
        if not has_mask:
            assert config.infer_config(m, n, is_rms, w_bytes=w_bytes).ahead == cfg.ahead
        return cfg.ahead

    for m in (8192, 32768):
        assert ahead(m, 16384) and ahead(m, 65536, True) and ahead(m, 40960, True)
        assert not ahead(m, 13312) and not ahead(m, 14336) and not ahead(m, 15360)  # 7-8 chunks of 2048, ragged
        assert not ahead(m, 8192) and not ahead(m, 12288) and not ahead(m, 65536) and not ahead(m, 32768, True)
        assert not ahead(m, 16384, has_mask=True) and not ahead(m, 16384, True)
    for n in (4352, 8704, 9216, 9728, 10240):  # few waves
        assert ahead(4096, n) and ahead(3000, n)
    assert ahead(4096, 4608, w_bytes=4) and not ahead(4096, 4608)  # 16-bit weights: 4096 + 512, one tile
    for n in (5120, 8192, 10752, 12288, 13312, 14336, 14848, 15872, 16384):
        assert not ahead(4096, n)
    assert not ahead(4096, 9216, has_mask=True) and not ahead(4096, 9216, True)
    assert not ahead(1024, 16384) and not ahead(32768, 4096) and not ahead(32768, 256)


@pytest.mark.parametrize("op", list(FORWARDS))
@pytest.mark.parametrize("block_m", [1, 2])
@pytest.mark.parametrize("n, part_n", [(100, 16), (1000, 256), (512, 256)], ids=["7_parts", "ragged", "even"])
@pytest.mark.parametrize("ahead", [False, True])
def test_split_row_backward(op, block_m, n, part_n, ahead):
    """Long rows' backward in one pass, each row split over programs that exchange their row sums
    (``split_rows_kernel``): 7 parts of 16 columns (the last part full to 4 columns, PARTS not a power of two),
    4 parts with a ragged last one, 2 whole parts. 11 rows: groups of row blocks, the last one past M. In the
    interpreter programs run one after another, so each group's first part reduces the others' sums itself and the
    later parts read the published ones: both ways are checked. Zero-centered gamma and row padding on."""
    from normkit.triton import config
    from normkit.triton.config import LaunchConfig

    x, w, b = make_inputs(11, n, torch.bfloat16, torch.float32, row_pad=3, bias=op != "rms_norm")
    with config.forced(bwd=LaunchConfig(block_m, part_n, 1, 4, 1, parts=-(-n // part_n), ahead=ahead)):
        check_backward("triton", op, x, w, b, zero_centered_gamma=True, has_dbias=op != "rms_norm")


def test_split_rows_drop_the_column_bounds_for_layer_norm_only(monkeypatch):
    """``split_rows_kernel``'s EVEN_N (its loads and stores without column bounds) where the row is whole parts, for
    LayerNorm (with and without the mask) only: RMSNorm's split rows ran slower without the bounds (GPU run 196,
    ``norm_bwd.py``). A ragged last part keeps them."""
    from normkit.triton import config, ops

    launched = _record_launches(monkeypatch, "SPLIT_ROWS")
    x, w, b = make_inputs(4, 64, torch.float32, torch.float32)
    _, mean, rstd = reference.layer_norm_fwd(x, w, b, 1e-5)
    mask = torch.zeros(4, 8, dtype=torch.uint8, device=x.device)
    dy = torch.randn_like(x)
    with config.forced(bwd=config.LaunchConfig(1, 16, 1, 1, 1, parts=4)):
        ops.layer_norm_bwd(dy, x, w, mean, rstd)
        ops.layer_norm_clamped_relu_bwd(dy, mask, x, w, mean, rstd)
        ops.rms_norm_bwd(dy, x, w, rstd)
        ops.layer_norm_bwd(dy[:, :60], x[:, :60], w[:60], mean, rstd)  # 3 parts of 16 and one of 12
    assert [k["EVEN_N"] for k in launched] == [True, True, False, False]
    assert [k["PARTS"] for k in launched] == [4, 4, 4, 4]


@pytest.mark.skipif(HAS_GPU, reason="programs run one after another in the interpreter only")
def test_split_row_part_never_published_gives_nan(monkeypatch):
    """A split-row program that finds a part's sums missing after its polls and may not reduce that part itself (on
    a GPU: a partner that never ran) writes NaN, not numbers from a partial sum. In the interpreter, with standing
    in switched off, every part but the last runs before some part after it has published: NaN there; the last part
    finds every sum and is right."""
    from normkit import triton as nt
    from normkit.triton import config
    from normkit.triton.config import LaunchConfig

    monkeypatch.setattr(config, "stands_in", lambda x: False)
    x, w, b = make_inputs(5, 48, torch.float32, torch.float32)
    _, mean, rstd = reference.layer_norm_fwd(x, w, b, 1e-5)
    dy = torch.randn_like(x)
    with config.forced(bwd=LaunchConfig(1, 16, 1, 1, 1, parts=3)):
        dx = nt.layer_norm_bwd(dy, x, w, mean, rstd)[0]
    assert torch.isnan(dx[:, :32]).all()
    compare(dx[:, 32:], reference.layer_norm_bwd(dy, x, w, mean, rstd)[0][:, 32:], "dx of the last part")


@pytest.mark.parametrize("op", list(FORWARDS))
@pytest.mark.parametrize("block_m", [1, 4])
@pytest.mark.parametrize("n", [100, 128])
def test_persistent_backward_walks_several_row_blocks(op, block_m, n):
    """Each program of the whole-row backward walks several row blocks, loading the next one before it works on the
    current one; the last block runs past M (37 rows), and the load after it is all masked."""
    from normkit.triton import config
    from normkit.triton.config import LaunchConfig

    x, w, b = make_inputs(37, n, torch.bfloat16, torch.float32, bias=op != "rms_norm")
    with config.forced(bwd=LaunchConfig(block_m, 128, 1, 1, 1)):
        check_backward("triton", op, x, w, b, has_dbias=op != "rms_norm")


def _check_masked_backward_of_mask_view(x, w, b, offset: int) -> None:
    """The masked backward with its packed mask given as a view ``offset`` bytes into rows 4 bytes wider, under
    whatever config and spies the caller set: dx, dW and dB compared with the reference's (of the mask itself)."""
    from normkit.triton import ops

    dy = torch.randn(x.shape, device=x.device).to(x.dtype)
    _, mean, rstd, mask = reference.layer_norm_clamped_relu_fwd(x, w, b, 1e-5, LOWER, UPPER)
    width = mask.shape[1]
    rows = torch.zeros(x.shape[0], width + 4, dtype=torch.uint8, device=x.device)
    rows[:, offset : offset + width] = mask
    want = reference.layer_norm_clamped_relu_bwd(dy, mask, x, w, mean, rstd)
    got = ops.layer_norm_clamped_relu_bwd(dy, rows[:, offset : offset + width], x, w, mean, rstd)
    for name, g, e in zip(["dx", "dw", "db"], got, want):
        compare(g, e, f"masked backward {name}")


@pytest.mark.parametrize("dtypes", DTYPES[:3], ids=DTYPE_IDS[:3])
@pytest.mark.parametrize("kernel", ["whole_row", "split_rows"])
def test_masked_backward_weights_held_or_loaded_again(monkeypatch, dtypes, kernel):
    """The masked backward's programs that load the weights again at every row block (``reload_w``): the one-row
    programs of 2048 columns and more where the weights are in x's dtype, float16 or float32, but float16's with the
    mask as 32-bit words (``norm_bwd_kernel``; the mask's bytes, from a view 1 byte into its rows, as well), and the
    split rows' whole parts of at most 1024 columns in float16 (``split_rows_kernel``); they hold the weights across
    the loop otherwise. Both ways give the reference's gradients over programs that walk several row blocks (37 rows:
    the split rows' 3 groups of row blocks in the interpreter, the whole row's 4 programs), zero-centered gamma on."""
    from normkit.triton import config
    from normkit.triton.config import LaunchConfig

    if kernel == "whole_row":
        n, cfg = 2048, LaunchConfig(1, 2048, 1, 2, 1)
    else:
        n, cfg = 1024, LaunchConfig(1, 256, 1, 1, 1, parts=4)
    x, w, b = make_inputs(37, n, *dtypes)
    with config.forced(bwd=cfg):
        check_backward("triton", "layer_norm_clamped_relu", x, w, b, zero_centered_gamma=True)
    if kernel == "whole_row" and dtypes[0] == torch.float16:  # the mask's bytes: the weights loaded again
        masks = _record_masks(monkeypatch)
        with config.forced(bwd=cfg):
            _check_masked_backward_of_mask_view(x, w, b, offset=1)
        assert [m.dtype for m in masks] == [torch.uint8]


@contextlib.contextmanager
def tma_launches():
    """A spy on the TMA backward's launches (``ops.NORM_BWD_TMA``): its ``call_count`` says whether it ran, counting
    its launches from kept descriptors (``launch_encoded``, from a plan's third call of the same rows on) too;
    ``call_args`` holds the last ``launch``'s arguments (``.args``, ``.kwargs``)."""
    from normkit.triton import ops

    launcher = ops.NORM_BWD_TMA
    spy = types.SimpleNamespace(call_count=0, call_args=None)
    launch, launch_encoded = launcher.launch, launcher.launch_encoded

    def counted(*args, **keywords):
        spy.call_count += 1
        spy.call_args = types.SimpleNamespace(args=args, kwargs=keywords)
        return launch(*args, **keywords)

    def counted_encoded(*args):
        taken = launch_encoded(*args)
        spy.call_count += taken
        return taken

    launcher.launch, launcher.launch_encoded = counted, counted_encoded
    try:
        yield spy
    finally:
        del launcher.launch, launcher.launch_encoded


# (N, head tile, tail tile, rows a tile): one tile; a head and a whole tail; a ragged tail; one tile past the row's end
TMA_ROWS = [(64, 64, 0, 2), (576, 512, 64, 1), (600, 512, 128, 2), (1000, 1024, 0, 4)]


@pytest.mark.parametrize("op", list(FORWARDS))
@pytest.mark.parametrize("dtypes", DTYPES[:2] + DTYPES[3:], ids=DTYPE_IDS[:2] + DTYPE_IDS[3:])
@pytest.mark.parametrize("n, head, tail, block_m", TMA_ROWS)
@pytest.mark.parametrize("tma_store", [True, False])
def test_tma_backward(op, dtypes, n, head, tail, block_m, tma_store):
    """The backward with dy and x loaded by the TMA (``norm_bwd_tma_kernel``; Triton's interpreter runs the
    descriptors' loads too), forced: strided rows (a row stride of N + 24), zero-centered gamma, dB for LayerNorm,
    37 rows over 4 persistent programs (several row blocks each, the last past M: the descriptors load zeros there
    and store nothing), dx stored by the TMA or by each thread; the masked backward's mask bytes loaded by each
    thread beside them, in step with the row block or a row block ahead (``ahead``)."""
    from normkit.triton import config
    from normkit.triton.config import LaunchConfig

    x, w, b = make_inputs(37, n, *dtypes, bias=op != "rms_norm", row_pad=24)
    for ahead in (False, True) if op == "layer_norm_clamped_relu" else (False,):
        cfg = LaunchConfig(block_m, head, 1, 1, 1, ahead=ahead, tail_n=tail, tma=True, tma_store=tma_store)
        with config.forced(bwd=cfg), tma_launches() as launches:
            check_backward("triton", op, x, w, b, zero_centered_gamma=True, has_dbias=op != "rms_norm")
        assert launches.call_count == 1


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_tma_backward_widened_weights(dtype):
    """LayerNorm's TMA backward in head + tail tiles with ``widen_w`` (its launch at 8193-10240 columns of 16-bit
    weights): fp16 weights held as loaded and widened at every row block, bfloat16's held in float32 (only the masked
    launch loads them again: ``test_masked_tma_backward_mask_by_the_tma`` runs that one): 37 strided rows of 1152 (a
    head of 1024, a ragged tail of 1024) over 4 persistent programs, zero-centered gamma, dB, against the reference."""
    from normkit.triton import config, ops
    from normkit.triton.config import LaunchConfig

    x, w, b = make_inputs(37, 1152, dtype, dtype, row_pad=24)
    cfg = LaunchConfig(1, 1024, 1, 1, 1, tail_n=1024, tma=True, widen_w=True)
    with config.forced(bwd=cfg), tma_launches() as launches:
        check_backward("triton", "layer_norm", x, w, b, zero_centered_gamma=True)
        index = x.get_device()
        key = (37, 1152, x.dtype, w.dtype, True, False, False, True, index, True)
        plan = ops._backward_plan(*key, config.generation, 1, False)
    assert launches.call_count == 1
    values = dict(zip(ops.NORM_BWD_TMA.constexpr_names, plan.values))
    assert values["WIDEN_W"] and not values["HAS_MASK"] and values["TAIL_N"] == 1024


@pytest.mark.parametrize("rows", ["odd_stride", "unaligned_start"])
def test_tma_backward_falls_back_where_rows_are_not_aligned(rows):
    """Rows the TMA cannot load (a row stride of 100 fp16 = 200 bytes; a view starting 2 bytes into its storage)
    run a forced TMA config's launch shape on ``norm_bwd_kernel``, with the same results."""
    from normkit.triton import config
    from normkit.triton.config import LaunchConfig

    if rows == "odd_stride":
        x, w, b = make_inputs(37, 100, torch.float16, torch.float16)
    else:
        x, w, b = make_inputs(37, 65, torch.float16, torch.float16, row_pad=7)
        x = x[:, 1:]
        w, b = w[1:], b[1:]
    assert x.data_ptr() % 16 if rows == "unaligned_start" else x.stride(0) * 2 % 16
    with config.forced(bwd=LaunchConfig(2, 128, 1, 1, 1, tma=True, tma_store=True)), tma_launches() as launches:
        check_backward("triton", "layer_norm", x, w, b)
    assert launches.call_count == 0


# (N, head tile, tail tile, rows a tile): one tile of two rows; a head and a whole tail; a tail holding 128 columns;
# N not a multiple of 128 (the mask in bytes, by each thread)
MASK_TMA_ROWS = [(1024, 1024, 0, 2), (2048, 1024, 1024, 1), (1152, 1024, 1024, 1), (1000, 1024, 0, 1)]


@pytest.mark.parametrize("n, head, tail, block_m", MASK_TMA_ROWS)
@pytest.mark.parametrize(
    "widen_w, mask_bytes, dtype",
    [
        (False, False, torch.float16),
        (True, False, torch.float16),
        (True, False, torch.bfloat16),
        (False, True, torch.float16),
    ],
)
def test_masked_tma_backward_mask_by_the_tma(n, head, tail, block_m, widen_w, mask_bytes, dtype):
    """The masked backward on the TMA kernel, forced, with its packed mask loaded by the TMA, as 32-bit words or as
    bytes (``mask_bytes``), where its rows allow (``ops._mask_tma``: N a multiple of 128, tiles of at least 1024
    columns; ``MASK_TMA`` in the plan) and by each thread elsewhere; its 16-bit weights held across the loop in
    float32, or not (``widen_w``: fp16's held as loaded and widened at every row block, bfloat16's loaded again): 37
    strided rows over 4 persistent programs, zero-centered gamma, against the reference. The words or bytes past the
    row (1152's tail) and past M load as zeros."""
    from normkit.triton import config, ops
    from normkit.triton.config import LaunchConfig

    x, w, b = make_inputs(37, n, dtype, dtype, row_pad=24)
    cfg = LaunchConfig(
        block_m, head, 1, 1, 1, tail_n=tail, tma=True, tma_store=True, widen_w=widen_w, mask_bytes=mask_bytes
    )
    with config.forced(bwd=cfg), tma_launches() as launches:
        check_backward("triton", "layer_norm_clamped_relu", x, w, b, zero_centered_gamma=True)
        index = x.get_device()
        key = (37, n, x.dtype, w.dtype, True, True, False, True, index, True)
        plan = ops._backward_plan(*key, config.generation, 1, False)
    assert launches.call_count == 1
    values = dict(zip(ops.NORM_BWD_TMA.constexpr_names, plan.values))
    assert values["MASK_TMA"] == (n % 128 == 0) and values["WIDEN_W"] == widen_w
    if values["MASK_TMA"]:  # the descriptors' 7th and 8th: the mask's head and tail, over its bytes or its words
        mask_head, mask_tail = launches.call_args.args[1][6:8]
        assert mask_head.base.dtype == (torch.uint8 if mask_bytes else torch.int32)
        assert mask_head.block_shape == [block_m, head // (8 if mask_bytes else 32)]
        assert mask_tail.block_shape == [block_m, (tail or head) // (8 if mask_bytes else 32)]


def test_masked_tma_backward_falls_back_where_mask_rows_are_not_aligned():
    """A mask whose rows do not start on 16 bytes (a view into rows of 132 bytes) cannot be loaded by the TMA: a
    forced TMA config that would load it so runs its launch shape on ``norm_bwd_kernel``, with the same results."""
    from normkit.triton import config
    from normkit.triton.config import LaunchConfig

    x, w, b = make_inputs(37, 1024, torch.float16, torch.float16)
    with config.forced(bwd=LaunchConfig(1, 1024, 1, 1, 1, tma=True)), tma_launches() as launches:
        _check_masked_backward_of_mask_view(x, w, b, offset=0)
    assert launches.call_count == 0


def _record_masks(monkeypatch) -> list:
    """The packed masks ``norm_bwd_kernel``'s launches take from here on (``ops.NORM_BWD.launch``'s sixth runtime
    argument), in the list returned: the bytes (uint8), or an int32 view of them (``ops._mask_words``)."""
    from normkit.triton import ops

    launcher, masks = ops.NORM_BWD, []
    launch = launcher.launch

    def recorded(grid, args, *rest, **keywords):
        masks.append(args[5])
        return launch(grid, args, *rest, **keywords)

    monkeypatch.setattr(launcher, "launch", recorded)
    return masks


# (N, the forced launch, whether it loads the mask as 32-bit words): whole tiles of several rows, one row of 4096 in
# four warps, whole chunks, a ragged tile of one row, ragged chunks of one row, one warp; a ragged tile of two rows,
# a head and a tail, a row not of whole words (100)
MASK_WORDS_LAUNCHES = [
    (256, (8, 256, 1, 2, 1), {}, True),
    (4096, (1, 4096, 1, 4, 1), {}, True),
    (1024, (2, 256, 4, 2, 1), {}, True),
    (3072, (1, 4096, 1, 4, 1), {}, True),
    (8192, (1, 8192, 1, 8, 1), {}, True),
    (7168, (1, 8192, 1, 8, 1), {}, True),
    (1056, (1, 256, 5, 2, 1), {}, True),
    (1024, (1, 1024, 1, 1, 1), {}, True),
    (768, (2, 1024, 1, 2, 1), {}, False),
    (3072, (1, 2048, 1, 2, 1), {"tail_n": 1024}, False),
    (100, (16, 128, 1, 2, 1), {}, False),
]


@pytest.mark.parametrize("n, launch, extra, words", MASK_WORDS_LAUNCHES)
@pytest.mark.parametrize("dtypes", [(torch.float16, torch.float16), (torch.bfloat16, torch.float32)], ids=str)
def test_masked_backward_mask_as_words(monkeypatch, n, launch, extra, words, dtypes):
    """The whole-row masked backward loads its packed mask as 32-bit words (an int32 view, ``ops._mask_words``) where
    rows and tiles are of whole words, without a tail, a ragged tile in programs of one row only; as bytes elsewhere.
    Either way the results are the reference's: 9 strided rows (two row blocks of 8 at 256 columns), zero-centered
    gamma, with and without dB."""
    from normkit.triton import config
    from normkit.triton.config import LaunchConfig

    x, w, b = make_inputs(9, n, *dtypes, row_pad=24)
    masks = _record_masks(monkeypatch)
    with config.forced(bwd=LaunchConfig(*launch, **extra)):
        check_backward("triton", "layer_norm_clamped_relu", x, w, b, zero_centered_gamma=True)
        check_backward("triton", "layer_norm_clamped_relu", x, w, b, has_dbias=False)
    assert len(masks) == 2
    assert all(mask.dtype == (torch.int32 if words else torch.uint8) for mask in masks)


@pytest.mark.parametrize("offset, words", [(4, True), (1, False)])
def test_masked_backward_mask_words_need_aligned_rows(monkeypatch, offset, words):
    """A mask given as a view into rows of 132 bytes: starting 4 bytes in, its rows start on 4 bytes and load as
    words; 1 byte in, as bytes (a word's load there would be misaligned). The same results either way."""
    x, w, b = make_inputs(37, 1024, torch.float16, torch.float16)
    masks = _record_masks(monkeypatch)
    _check_masked_backward_of_mask_view(x, w, b, offset)
    assert [m.dtype for m in masks] == [torch.int32 if words else torch.uint8]


def test_mask_words_rule(monkeypatch):
    """``ops._mask_words`` and ``ops._mask_in_words``: words where rows and tiles are of whole words, without a tail,
    and the mask's rows allow it (one warp too, a ragged tile in programs of one row); not with ``MASK_WORDS`` off, at
    a ragged tile of several rows, a tail, a row not of whole words, rows not on 4 bytes. The masked plan holds the
    rule (``mask_words``); a TMA plan and a plan without a mask never."""
    from normkit.triton import config, ops
    from normkit.triton.config import LaunchConfig

    mask = torch.zeros(8, 512, dtype=torch.uint8)
    whole = LaunchConfig(1, 4096, 1, 4, 1)
    assert ops._mask_words(4096, whole) and ops._mask_in_words(mask)
    assert ops._mask_words(3072, whole) and ops._mask_words(4096, LaunchConfig(1, 4096, 1, 1, 1))
    assert ops._mask_words(1024, LaunchConfig(2, 1024, 1, 2, 1)) and not ops._mask_words(
        768, LaunchConfig(2, 1024, 1, 2, 1)
    )
    assert not ops._mask_words(4096, LaunchConfig(1, 2048, 1, 2, 1, tail_n=2048))
    assert not ops._mask_words(3080, whole)
    assert not ops._mask_in_words(torch.zeros(8, 513, dtype=torch.uint8)[:, 1:])
    for has_mask in (True, False):
        plan = ops._backward_plan(4096, 4096, torch.float16, torch.float16, True, has_mask, False, False, -1, False,
                                  config.generation, 1, False)  # fmt: skip
        assert plan.mask_words == (has_mask and ops._mask_words(4096, plan.cfg)), plan.cfg
    with config.forced(bwd=LaunchConfig(1, 4096, 1, 4, 1, tma=True)):
        plan = ops._backward_plan(4096, 4096, torch.float16, torch.float16, True, True, False, False, -1, True,
                                  config.generation, 1, False)  # fmt: skip
    assert plan.cfg.tma and not plan.mask_words
    monkeypatch.setattr(ops, "MASK_WORDS", False)
    assert not ops._mask_words(4096, whole)


def test_tma_rules():
    """``config._tma_bwd``'s shapes take the TMA backward where the call can (``tma``) and is large enough
    (``TMA_MIN_ELEMENTS_LAYER_NORM``, LayerNorm's and the masked backward's; RMSNorm's ``TMA_MIN_ELEMENTS``), and only
    those: whole rows of 2048, 4096 and 8192 (LayerNorm's of 16-bit x from 5121); head + tail tiles of 16-bit x at
    8193-10240 (LayerNorm, its 16-bit weights not held in float32) and 4097-5120 (LayerNorm and the masked backward,
    more than 4096 rows). The masked backward's rows of a multiple of 128 columns (its mask by
    the TMA too) from 4097 rows at 5121-8191 in 8192's tile and at 8193-10240 as LayerNorm's; at 4097-5120 and
    8193-10240 with dx by each thread, at 8193-10240 its 16-bit weights not held in float32 (``widen_w``; at 4097-5120
    held, round 111), its mask by the TMA as bytes where the weights are float32 (``mask_bytes``; 32-bit words
    elsewhere). LayerNorm's with dB at 2049-4096 rows of 6145-8192 in 8192's tile from three quarters of its minimum
    (``_few_waves_tma_bwd``)."""
    from dataclasses import replace

    from normkit.triton import config
    from normkit.triton.config import LaunchConfig

    def bwd(m, n, is_rms=False, tma=True, has_mask=False, w_bytes=2):
        return config.bwd_config(m, n, not is_rms, has_mask=has_mask, is_rms=is_rms, tma=tma, w_bytes=w_bytes)

    assert config.TMA_MIN_ELEMENTS == 8192 * 4096 + 1 and config.TMA_MIN_ELEMENTS_LAYER_NORM == 8192 * 4096
    # LayerNorm's from 2**25 elements (round 59), the masked backward's too (round 113); RMSNorm's from 2**25 + 1
    assert bwd(16384, 2048) == bwd(16385, 2048) and bwd(8192, 4096) == bwd(8193, 4096)
    for m, n in ((16384, 2048), (8192, 4096)):
        assert bwd(m, n, has_mask=True) == bwd(m + 1, n, has_mask=True) and bwd(m, n, has_mask=True).tma, (m, n)
        assert not bwd(m - 1, n, has_mask=True).tma and not bwd(m, n, is_rms=True).tma, (m, n)
    assert config.bwd_config(16384, 2048, False, tma=True) == bwd(16384, 2048)  # without dB too
    assert not bwd(16383, 2048).tma and not bwd(8191, 4096).tma  # 4096 x 8192: ``_few_waves_tma_bwd``, below
    assert bwd(16385, 2048) == bwd(32768, 2048) == LaunchConfig(1, 2048, 1, 4, 4, tma=True, tma_store=True)
    assert bwd(8193, 4096) == bwd(32768, 4096) == LaunchConfig(1, 4096, 1, 8, 2, tma=True, tma_store=True)
    assert bwd(4097, 8192) == bwd(32768, 8192) == LaunchConfig(1, 8192, 1, 8, 1, tma=True)
    # rows of 513-1024 columns of 16-bit x, two a program (round 57): LayerNorm and RMSNorm with dB or without, the
    # masked backward at a multiple of 128 columns; from 32769 rows of 1024
    two_rows = LaunchConfig(2, 1024, 1, 4, 4, tma=True, tma_store=True)
    for n in (520, 768, 1000, 1024):
        m = config.TMA_MIN_ELEMENTS // n + 1
        assert bwd(m, n) == bwd(m, n, is_rms=True) == two_rows, n
        assert config.bwd_config(m, n, False, tma=True) == config.bwd_config(m, n, True, is_rms=True, tma=True), n
        assert config.bwd_config(m, n, False, tma=True) == two_rows, n
        assert bwd(m, n, has_mask=True) == (two_rows if n % 128 == 0 else bwd(m, n, has_mask=True, tma=False)), n
        assert not bwd(m - 1, n, is_rms=True).tma, n
        # 32768 x 1024 is 2**25 elements: LayerNorm's minimum, masked or not
        assert bwd(m - 1, n).tma == bwd(m - 1, n, has_mask=True).tma == (n == 1024), n
        assert not bwd(m - 2, n).tma and not bwd(m - 2, n, has_mask=True).tma and not bwd(m, n, tma=False).tma, n
        assert not config.bwd_config(m, n, True, tma=True, x_bytes=4).tma, n
    assert not bwd(1 << 17, 512).tma and not bwd(1 << 17, 512, is_rms=True).tma
    untaken = [(16383, 2048), (8191, 4096), (4096, 8192, True), (32767, 1024), (32768, 3072), (32768, 16384)]
    untaken += [(4096, 4608, True), (4096, 5120, True), (32768, 4096, True), (32768, 8192, True)]
    for shape in untaken:
        assert not bwd(*shape).tma, shape
    assert not bwd(32768, 4096, tma=False).tma and not bwd(32768, 4096, has_mask=True, tma=False).tma
    # head + tail tiles of 16-bit x: LayerNorm's rows of 8193-10240 at any rows, of 4097-5120 (and the masked
    # backward's) from 4097 rows
    head8k = LaunchConfig(1, 8192, 1, 8, 1, tail_n=2048, tma=True)
    for m in (4096, 32768):
        for n in (8200, 9216, 10240):
            assert bwd(m, n) == replace(head8k, widen_w=True), (m, n)  # 16-bit weights not held in float32
            assert bwd(m, n, w_bytes=4) == head8k, (m, n)
            assert not bwd(m, n, tma=False).tma, (m, n)
            assert not config.bwd_config(m, n, True, tma=True, x_bytes=4).tma, (m, n)
            # the masked backward: from 4097 rows, of a multiple of 128 columns
            masked = bwd(m, n, has_mask=True)
            assert masked.tma == (m > 4096 and n % 128 == 0), (m, n)
            if masked.tma:
                assert masked == replace(head8k, widen_w=True), (m, n)
            # float32 weights held, the mask by the TMA in bytes
            assert bwd(m, n, has_mask=True, w_bytes=4) == (replace(head8k, mask_bytes=True) if masked.tma else masked)
    assert bwd(3641, 9216).tma and not bwd(3640, 9216).tma  # 3640 x 9216 < TMA_MIN_ELEMENTS
    for m in (7282, 32768):
        for n in (4608, 5120):
            want = LaunchConfig(1, 4096, 1, 4, 2, tail_n=1024, tma=True, tma_store=True)
            assert bwd(m, n) == want, (m, n)
            masked = replace(want, tma_store=False)  # its mask by the TMA, dx by each thread
            assert bwd(m, n, has_mask=True) == masked, (m, n)  # its weights held in float32 (round 111)
            assert bwd(m, n, has_mask=True, w_bytes=4) == replace(masked, mask_bytes=True), (m, n)
            assert not config.bwd_config(m, n, True, tma=True, x_bytes=4).tma, (m, n)
    assert bwd(32768, 4104, has_mask=True) == want  # its mask in bytes, as round 33's
    assert not bwd(7281, 4608).tma  # 7281 x 4608 < TMA_MIN_ELEMENTS
    for n in (5632, 6144, 7168, 8191):  # LayerNorm's 5121-8191 in 8192's tile (the masked backward's at 128s)
        assert bwd(32768, n) == LaunchConfig(1, 8192, 1, 8, 1, tma=True), n
        assert bwd(32768, n, has_mask=True).tma == (n % 128 == 0) and not bwd(3000, n).tma, n
        assert not config.bwd_config(32768, n, True, tma=True, x_bytes=4).tma, n
    for n in (10248, 12288):
        assert not bwd(32768, n).tma, n
    # LayerNorm's with dB of 2049-4096 rows of 6145-8192 columns, from three quarters of TMA_MIN_ELEMENTS_LAYER_NORM
    # (``_few_waves_tma_bwd``, round 64): 8192's tile; not the masked backward's, RMSNorm's, without dB, nor float32 x
    tile8k = LaunchConfig(1, 8192, 1, 8, 1, tma=True)
    for m, n in ((4096, 6145), (4096, 7168), (3511, 7168), (3072, 8192), (4096, 8192)):
        assert bwd(m, n) == bwd(m, n, w_bytes=4) == tile8k, (m, n)
        assert not bwd(m, n, tma=False).tma and not bwd(m, n, is_rms=True).tma, (m, n)
        assert not bwd(m, n, has_mask=True).tma and not config.bwd_config(m, n, False, tma=True).tma, (m, n)
        assert not config.bwd_config(m, n, True, tma=True, x_bytes=4).tma, (m, n)
    for m, n in ((4096, 6144), (3510, 7168), (3071, 8192), (3000, 6656), (2049, 8192), (4096, 8200)):
        assert bwd(m, n) != tile8k, (m, n)
    # the masked backward at 2048 and 4096 columns (its mask bytes a row block ahead) and 8192
    assert bwd(16385, 2048, has_mask=True) == LaunchConfig(1, 2048, 1, 4, 4, ahead=True, tma=True, tma_store=True)
    assert bwd(8193, 4096, has_mask=True) == LaunchConfig(1, 4096, 1, 4, 2, ahead=True, tma=True, tma_store=True)
    assert bwd(4097, 8192, has_mask=True) == LaunchConfig(1, 8192, 1, 8, 1, tma=True)
    assert not bwd(16383, 2048, has_mask=True).tma and not bwd(4096, 8192, has_mask=True).tma
    assert not bwd(8191, 4096, has_mask=True).tma and not bwd(32767, 1024, has_mask=True).tma
    # LayerNorm without dB of 16-bit x: its launches with dB at 4096 and 5121-8192, from 16385 rows (round 58)
    for n, want in (
        (4096, LaunchConfig(1, 4096, 1, 8, 2, tma=True, tma_store=True)),
        (6144, LaunchConfig(1, 8192, 1, 8, 1, tma=True)),
        (8192, LaunchConfig(1, 8192, 1, 8, 1, tma=True)),
    ):
        assert config.bwd_config(16385, n, False, tma=True) == config.bwd_config(32768, n, False, tma=True) == want, n
        assert config.bwd_config(32768, n, False, tma=True, w_bytes=4) == want, n
        assert not config.bwd_config(16384, n, False, tma=True).tma, n
        assert not config.bwd_config(32768, n, False, tma=True, x_bytes=4).tma, n
        # the masked backward without dB: its launch with dB, the TMA's here (round 114; the pointer kernel's before)
        masked = config.bwd_config(32768, n, True, has_mask=True, tma=True)
        assert masked.tma and config.bwd_config(32768, n, False, has_mask=True, tma=True) == masked, n
    # at the head + tail tiles' 4097-5120 and 8193-10240 wherever LayerNorm's with dB take them (round 103): calls of
    # at least TMA_MIN_ELEMENTS_LAYER_NORM (from 7282 rows of 4608, 3641 of 9216) and, at 4097-5120, more than 4096 rows
    for n, tail_n, fewest in ((4608, 1024, 7282), (5120, 1024, 6554), (8704, 2048, 3856), (9216, 2048, 3641)):
        for m in (fewest, 8192, 32768):
            got = config.bwd_config(m, n, False, tma=True, w_bytes=4)
            assert got == config.bwd_config(m, n, True, tma=True, w_bytes=4), (m, n)
            assert got.tma and got.tail_n == tail_n and not got.staged, (m, n)
        assert not config.bwd_config(fewest - 1, n, False, tma=True, w_bytes=4).tma, n
        assert not config.bwd_config(fewest, n, False, tma=False, w_bytes=4).tma, n
    assert config.bwd_config(4096, 10240, False, tma=True, w_bytes=4).tma
    assert not config.bwd_config(4096, 5120, False, tma=True, w_bytes=4).tma  # few waves: parts of 1024
    assert not config.bwd_config(32768, 8192, False, is_rms=True, tma=True).tma  # RMSNorm's: not taken
    # rows of 2048 of 16-bit x: RMSNorm's and LayerNorm's without dB as LayerNorm's with dB (round 58)
    one_row = LaunchConfig(1, 2048, 1, 4, 4, tma=True, tma_store=True)
    for has_dbias in (False, True):
        assert config.bwd_config(16385, 2048, has_dbias, is_rms=True, tma=True) == one_row, has_dbias
        assert config.bwd_config(32768, 2048, has_dbias, tma=True, w_bytes=4) == one_row, has_dbias
        assert not config.bwd_config(16384, 2048, has_dbias, is_rms=True, tma=True).tma, has_dbias
        assert not config.bwd_config(32768, 2048, has_dbias, is_rms=True, tma=True, x_bytes=4).tma, has_dbias
        assert not config.bwd_config(32768, 2048, has_dbias, is_rms=True, tma=False).tma, has_dbias


def test_masked_backward_without_dbias_launches_as_with_dbias():
    """LayerNorm + clamped ReLU's backward without dB (no bias) takes its launch with dB at every shape of rows up to
    15872 columns: the TMA kernel's too (round 114; before it ``config._tma_bwd`` gave it none, so in calls large
    enough for the TMA it ran the pointer kernel's tiles, 8192's at 4097-5120 columns: x1.33-1.45 at 32768 x 4608 /
    5120, GPU run 827). Long rows differ (``_split_staged_bwd``'s slices and parts by dB)."""
    from normkit.triton import config

    rows = (1, 100, 2048, 3000, 4096, 4097, 7281, 7282, 8192, 16383, 16384, 32768, 65536)
    widths = (128, 768, 1000, 1024, 2048, 3072, 4096, 4104, 4608, 5120, 6144, 7168, 8192, 9216, 10240, 12288, 15872)
    taken = 0
    for m, n, x_bytes, w_bytes, tma, staged in itertools.product(rows, widths, (2, 4), (2, 4), *[(False, True)] * 2):
        flags = dict(has_mask=True, tma=tma, x_bytes=x_bytes, w_bytes=w_bytes, staged=staged)
        with_dbias = config.bwd_config(m, n, True, **flags)
        assert config.bwd_config(m, n, False, **flags) == with_dbias, (m, n, flags)
        taken += with_dbias.tma
    assert taken > 100  # the TMA's launches among them
    for m, n in ((32768, 4608), (32768, 5120), (8192, 8192), (16384, 2048), (32768, 6144)):
        assert config.bwd_config(m, n, False, has_mask=True, tma=True, w_bytes=4).tma, (m, n)


def test_slower_dram_backward_of_2048_columns():
    """On slower DRAM (an H100, ``slower_dram``) the backward of rows of 2048 columns of 16-bit x without the mask, in
    calls the TMA's launch takes on an H200, takes the pointer kernel's: two rows of 8 warps, 4 programs a SM
    (RMSNorm with dB or without, LayerNorm without dB), LayerNorm's with dB one row of 4 warps, 8 a SM
    (``config._slower_dram_bwd``, round 120); the masked backward's of 16-bit weights two rows of 4 warps, 2 a SM
    (rounds 121-122). Nowhere else: not float32 x, not the masked backward's of float32 weights, not calls too small
    for the TMA or where it cannot load the rows, not rows of 1024 or 4096 (but LayerNorm's, the next test), and
    nothing on an H200's DRAM."""
    from normkit.triton import config
    from normkit.triton.config import LaunchConfig

    def bwd(m, n, has_dbias=True, is_rms=False, slower=True, tma=True, **kwargs):
        return config.bwd_config(m, n, has_dbias, is_rms=is_rms, tma=tma, slower_dram=slower, **kwargs)

    two_rows, one_row = LaunchConfig(2, 2048, 1, 8, 4), LaunchConfig(1, 2048, 1, 4, 8)
    masked_rows = LaunchConfig(2, 2048, 1, 4, 2)
    by_tma = LaunchConfig(1, 2048, 1, 4, 4, tma=True, tma_store=True)
    for m in (16385, 16400, 24576, 32767, 65536):
        for w_bytes in (2, 4):
            assert bwd(m, 2048, is_rms=True, w_bytes=w_bytes) == bwd(m, 2048, False, True, w_bytes=w_bytes) == two_rows
            assert bwd(m, 2048, False, w_bytes=w_bytes) == two_rows and bwd(m, 2048, w_bytes=w_bytes) == one_row
            for has_dbias in (False, True):
                for is_rms in (False, True):
                    assert bwd(m, 2048, has_dbias, is_rms, slower=False, w_bytes=w_bytes) == by_tma, (m, has_dbias)
                    fp32 = bwd(m, 2048, has_dbias, is_rms, x_bytes=4)
                    assert fp32 == bwd(m, 2048, has_dbias, is_rms, False, x_bytes=4), (m, has_dbias)
                    assert bwd(m, 2048, has_dbias, is_rms, tma=False) not in (two_rows, one_row), (m, has_dbias)
                masked = bwd(m, 2048, has_dbias, has_mask=True, w_bytes=w_bytes)
                on_h200 = bwd(m, 2048, has_dbias, has_mask=True, slower=False, w_bytes=w_bytes)
                # float32 weights keep the TMA (round 122: x0.980 / 0.994 off it at 32768 bf16 x float32)
                assert on_h200.tma and masked == (masked_rows if w_bytes == 2 else on_h200), (m, w_bytes, has_dbias)
                assert bwd(m, 2048, has_dbias, has_mask=True, x_bytes=4).tma == on_h200.tma, (m, has_dbias)
                assert not bwd(m, 2048, has_dbias, has_mask=True, tma=False).tma, (m, has_dbias)
    assert bwd(16384, 2048) == one_row and bwd(16384, 2048, is_rms=True) != two_rows  # RMSNorm's TMA from 2**25 + 1
    assert bwd(16384, 2048, has_mask=True) == masked_rows  # the masked backward's TMA from 2**25, as LayerNorm's
    assert bwd(16383, 2048) == bwd(16383, 2048, slower=False) and not bwd(16383, 2048).tma
    assert bwd(16383, 2048, has_mask=True) == bwd(16383, 2048, has_mask=True, slower=False)
    for n in (1024, 2040, 4096):  # LayerNorm's rows of 4096: the next test
        m = config.TMA_MIN_ELEMENTS // n + 1
        assert bwd(m, n, False, is_rms=True) == bwd(m, n, False, is_rms=True, slower=False), n
        assert n == 4096 or bwd(m, n, is_rms=True) == bwd(m, n, is_rms=True, slower=False), n  # 4096: round 123's
        assert n == 4096 or bwd(m, n) == bwd(m, n, slower=False), n


def test_slower_dram_backward_of_4096_columns():
    """On slower DRAM LayerNorm's backward of rows of 4096 of 16-bit x (no mask), in calls the TMA takes, leaves its
    one row of 8 warps, 2 programs a SM, for the pointer kernel's one row of 8 warps, 4 a SM: with 16-bit weights, and
    with float32 weights without dB (``config._slower_dram_bwd``, rounds 121-122; with float32 weights and dB it ran
    x0.865 at 32768 rows, x0.892 at 8200). Not RMSNorm's, not the masked backward's, not float32 x, not calls too
    small for the TMA, not an H200's DRAM."""
    from normkit.triton import config
    from normkit.triton.config import LaunchConfig

    def bwd(m, has_dbias=True, is_rms=False, slower=True, **kwargs):
        return config.bwd_config(m, 4096, has_dbias, is_rms=is_rms, tma=True, slower_dram=slower, **kwargs)

    pointer = LaunchConfig(1, 4096, 1, 8, 4)
    for m in (8192, 8200, 12300, 16384, 16385, 32768, 65536):
        for w_bytes in (2, 4):
            for has_dbias in (False, True):
                on_h200 = bwd(m, has_dbias, slower=False, w_bytes=w_bytes)
                assert on_h200.tma == (has_dbias or m > 16384), (m, has_dbias)  # without dB from 16385 rows
                off_the_tma = on_h200.tma and (w_bytes == 2 or not has_dbias)
                assert bwd(m, has_dbias, w_bytes=w_bytes) == (pointer if off_the_tma else on_h200), (m, w_bytes)
                for kwargs in ({"is_rms": True}, {"has_mask": True}, {"x_bytes": 4}):
                    assert bwd(m, has_dbias, w_bytes=w_bytes, **kwargs) != pointer, (m, kwargs)
    for has_dbias in (False, True):
        assert bwd(8191, has_dbias) == bwd(8191, has_dbias, slower=False), has_dbias  # below 2**25 elements


def test_slower_dram_rms_forward_of_256_and_backward_of_4096():
    """On slower DRAM (an H100) RMSNorm's forward of more than 16384 rows of 256 of fp16 x and 16-bit weights without a
    bias takes sixteen rows a tile of 4 warps, 16 programs a SM, and so do 16385-32768 rows of bf16 x with float32
    weights (round 124); RMSNorm's backward with dB of at least 2048 rows of 4096 of 16-bit x two rows a tile of 16
    warps, one program a SM (round 123; on either DRAM the launch of 2049-4096 rows, a few waves). Not bf16 x with bf16
    weights, fp16 x or float32 x with float32 weights, bf16 x with float32 weights above 32768 rows, a bias or a mask in
    the forward, nor LayerNorm, nor 16384 rows; not the backward without dB, of float32 x, of the mask, of LayerNorm, of
    other widths or of 2047 rows; on an H200's DRAM nothing of these but its own rule for bf16 x (round 129, below)."""
    from normkit.triton import config
    from normkit.triton.config import LaunchConfig

    def fwd(m, is_rms=True, slower=True, x_fp16=True, w_bytes=2, **kwargs):
        return config.fwd_config(m, 256, is_rms, x_fp16=x_fp16, w_bytes=w_bytes, slower_dram=slower, **kwargs)

    sixteen_rows, eight_rows = LaunchConfig(16, 256, 1, 4, 16), LaunchConfig(8, 256, 1, 2, 8)
    bf16_fp32 = {"x_fp16": False, "w_bytes": 4}
    for m in (16385, 16400, 24576, 32768, 32769, 40000, 131072):
        assert fwd(m) == sixteen_rows and fwd(m, slower=False) == eight_rows, m
        assert (fwd(m, **bf16_fp32) == sixteen_rows) is (m <= 32768), m
        h200_sixteen_rows = LaunchConfig(16, 256, 1, 4, 8) if 16896 < m <= 32768 else eight_rows  # round 129
        assert fwd(m, slower=False, **bf16_fp32) == h200_sixteen_rows, m
        others = [{"x_fp16": False}, {"w_bytes": 4}, {**bf16_fp32, "x_bytes": 4}]
        for kwargs in others + [{"is_rms": False}, {"has_bias": True}, {"has_mask": True}]:
            assert fwd(m, **kwargs) != sixteen_rows, (m, kwargs)
        for kwargs in ({"is_rms": False}, {"has_bias": True}, {"has_mask": True}):
            assert fwd(m, **bf16_fp32, **kwargs) != sixteen_rows, (m, kwargs)
    assert fwd(16384) == eight_rows and fwd(16384, **bf16_fp32) == eight_rows

    def bwd(m, n=4096, has_dbias=True, is_rms=True, slower=True, **kwargs):
        return config.bwd_config(m, n, has_dbias, is_rms=is_rms, slower_dram=slower, **kwargs)

    two_rows = LaunchConfig(2, 4096, 1, 16, 1)
    for m in (2048, 4096, 8200, 16400, 32768, 65536):
        few_waves = 2048 < m <= 4096  # the launch of a few waves of rows on either DRAM
        for w_bytes in (2, 4):
            for tma in (False, True):
                assert bwd(m, w_bytes=w_bytes, tma=tma) == two_rows, (m, w_bytes, tma)
                assert (bwd(m, w_bytes=w_bytes, tma=tma, slower=False) == two_rows) is few_waves, (m, w_bytes, tma)
        for kwargs in ({"has_dbias": False}, {"x_bytes": 4}):  # no rule of slower DRAM's there
            assert bwd(m, tma=True, **kwargs) == bwd(m, tma=True, slower=False, **kwargs), (m, kwargs)
        for kwargs in ({"is_rms": False}, {"is_rms": False, "has_mask": True}, {"n": 2048}):
            got = bwd(m, tma=True, **kwargs)
            assert few_waves or (got.block_m, got.num_warps, got.programs_per_sm) != (2, 16, 1), (m, kwargs)
    assert bwd(2047, tma=True) == bwd(2047, tma=True, slower=False)


def test_slower_dram_forward_of_256_on_twelve_a_sm():
    """On slower DRAM (an H100) the forward of 16897-32768 rows of 256 of 16-bit x and weights, LayerNorm's of fp16 or
    bf16 x with a bias and RMSNorm's of bf16 x with a bias or without, takes eight rows a tile of 2 warps on 12
    programs a SM (rounds 124-125), the rows as the call has them: 16400 and 16896 rows (whose rounded key is
    32768's), two passes of 8 a SM on an H100, and 32769 keep 8 a SM. Not RMSNorm's fp16 x, float32 x or weights,
    LayerNorm's without a bias, the mask, other widths, nor an H200's DRAM."""
    from normkit.triton import config
    from normkit.triton.config import LaunchConfig

    def fwd(m, n=256, is_rms=False, slower=True, w_bytes=2, has_bias=True, **kwargs):
        rules = dict(w_bytes=w_bytes, slower_dram=slower, has_bias=has_bias)
        return config.fwd_config(m, n, is_rms, **rules, **kwargs)

    twelve_a_sm = LaunchConfig(8, 256, 1, 2, 12)
    taken_by = [{"x_fp16": False}, {"x_fp16": True}, {"is_rms": True}, {"is_rms": True, "has_bias": False}]
    for m in (16400, 16896, 16897, 20480, 24576, 32768, 32769, 65536):
        taken = 16896 < m <= 32768
        for kwargs in taken_by:
            assert (fwd(m, **kwargs) == twelve_a_sm) is taken, (m, kwargs)
            h200 = fwd(m, slower=False, **kwargs)  # RMSNorm's bf16 x without a bias: sixteen rows (round 129)
            sixteen_rows = taken and kwargs == {"is_rms": True, "has_bias": False}
            expected = LaunchConfig(16, 256, 1, 4, 8) if sixteen_rows else LaunchConfig(8, 256, 1, 2, 8)
            assert h200 == expected, (m, kwargs)
        others = ({"w_bytes": 4}, {"has_bias": False}, {"has_mask": True}, {"n": 200}, {"x_bytes": 4})
        for rms in ({"is_rms": True}, {"is_rms": True, "has_bias": False}):
            others += ({**rms, "x_fp16": True}, {**rms, "x_bytes": 4}, {**rms, "w_bytes": 4}, {**rms, "has_mask": True})
        for kwargs in others:
            assert fwd(m, **kwargs).programs_per_sm != 12, (m, kwargs)


@pytest.mark.parametrize("slower", [False, True])
def test_slower_dram_forward_of_256_on_twelve_a_sm_as_ops_asks(dram, slower):
    """``ops`` asks the rule with the call's rows, dtypes and bias: under slower DRAM's rules LayerNorm's forward of
    24576 x 256 fp16 with a bias and RMSNorm's of bf16 (with a bias and without) are planned on a persistent grid of 12
    programs a SM (an H200's rules 8, RMSNorm's without a bias there in sixteen rows of 4 warps, round 129); LayerNorm's
    16400 rows and float32 weights and RMSNorm's fp16 x with a bias on 8 (on a GPU as many as fit of those,
    ``ops._fitted_grid``). Nothing runs (the launches are recorded, and the launch
    config each call is given), so on the CPU too."""
    from normkit.triton import config, ops

    dram(slower)
    layer_norm = [make_inputs(24576, 256, *DTYPES[1]), make_inputs(16400, 256, *DTYPES[1])]
    layer_norm.append(make_inputs(24576, 256, *DTYPES[3]))
    x, w, b = make_inputs(24576, 256, *DTYPES[2])
    rms_norm = [(x, w, b), (x, w, None), make_inputs(24576, 256, *DTYPES[1])]
    asked = []
    fwd_config = config.fwd_config

    def record(*args, **kwargs):
        launch = fwd_config(*args, **kwargs)
        asked.append(launch.programs_per_sm)
        return launch

    with pytest.MonkeyPatch.context() as recording:
        launched = _record_launches(recording, "NORM_FWD")
        recording.setattr(config, "fwd_config", record)
        for x, w, b in layer_norm:
            ops.layer_norm_fwd(x, w, b, 1e-5)
        for x, w, b in rms_norm:
            ops.rms_norm_fwd(x, w, b, 1e-5)
    sixteen_rows = [(8, 2)] if slower else [(16, 4)]  # an H200's RMSNorm of bf16 x without a bias (round 129)
    assert [(launch["BLOCK_M"], launch["num_warps"]) for launch in launched] == [(8, 2)] * 4 + sixteen_rows + [(8, 2)]
    twelve = 12 if slower else 8
    assert asked == [twelve, 8, 8, twelve, twelve, 8]


def test_faster_dram_rms_forward_of_256_in_sixteen_rows():
    """On an H200's DRAM (not ``slower_dram``) RMSNorm's forward of 16897-32768 rows of 256 of bf16 x (float32 or bf16
    weights) without a bias takes sixteen rows a tile of 4 warps on 8 programs a SM (round 129), the rows as the call
    has them: 16400 and 16896 (whose rounded key is 32768's) and 32769 keep eight rows of 2 warps. Not fp16 or float32
    x, a bias, the mask, LayerNorm, other widths, nor slower DRAM (its own rules, rounds 123-125)."""
    from normkit.triton import config
    from normkit.triton.config import LaunchConfig

    def fwd(m, n=256, is_rms=True, slower=False, w_bytes=4, **kwargs):
        return config.fwd_config(m, n, is_rms, w_bytes=w_bytes, slower_dram=slower, **kwargs)

    sixteen_rows = LaunchConfig(16, 256, 1, 4, 8)
    for m in (16400, 16896, 16897, 17408, 20480, 24576, 32768, 32769, 65536):
        taken = 16896 < m <= 32768
        for w_bytes in (4, 2):
            assert (fwd(m, w_bytes=w_bytes) == sixteen_rows) is taken, (m, w_bytes)
        others = ({"x_fp16": True}, {"x_fp16": True, "w_bytes": 2}, {"x_bytes": 4}, {"has_bias": True})
        others += ({"has_mask": True}, {"is_rms": False}, {"n": 512}, {"n": 200}, {"slower": True})
        for kwargs in others:
            assert fwd(m, **kwargs) != sixteen_rows, (m, kwargs)
        assert config.infer_config(m, 256, True, w_bytes=4) != sixteen_rows, m  # the inference call: its own launch


@pytest.mark.gpu
@pytest.mark.parametrize("slower", [False, True])
def test_faster_dram_rms_forward_of_256_in_sixteen_rows_on_the_gpu(dram, slower):
    """Round 129's RMSNorm forward of 256 columns under each DRAM's rules against the reference, on whichever GPU:
    16897, 17408 and 24576 rows of bf16 x with float32 and bf16 weights (an H200's rules: sixteen rows of 4 warps),
    zero-centered at 24576, and with a bias (eight rows of 2 warps)."""
    dram(slower)
    for m in (16897, 17408, 24576):
        for dtypes in (DTYPES[3], DTYPES[2]):
            check_forward("triton", "rms_norm", *make_inputs(m, 256, *dtypes, bias=False))
    x, w, b = make_inputs(24576, 256, *DTYPES[3])
    check_forward("triton", "rms_norm", x, w, None, zero_centered_gamma=True)
    check_forward("triton", "rms_norm", x, w, b)


def test_slower_dram_layer_norm_forward_of_1024_in_two_rows():
    """On slower DRAM (an H100) LayerNorm's forward of more than 8192 rows of 1024 of 16-bit x (bf16 or fp16) with
    float32 weights and a bias takes tiles of two rows at 4 warps, one program a tile (round 126); 8192 rows keep the
    heuristic's four. Not 16-bit weights, float32 x, no bias, the mask, RMSNorm, other widths, nor an H200's DRAM."""
    from normkit.triton import config
    from normkit.triton.config import LaunchConfig

    def fwd(m, n=1024, is_rms=False, slower=True, w_bytes=4, has_bias=True, **kwargs):
        rules = dict(w_bytes=w_bytes, slower_dram=slower, has_bias=has_bias)
        return config.fwd_config(m, n, is_rms, **rules, **kwargs)

    two_rows = LaunchConfig(2, 1024, 1, 4, 0)
    for m in (4096, 8192, 8193, 8200, 16400, 32768, 65536):
        taken = m > 8192
        for kwargs in ({"x_fp16": False}, {"x_fp16": True}, {"zero_centered": True}):
            assert (fwd(m, **kwargs) == two_rows) is taken, (m, kwargs)
            assert fwd(m, slower=False, **kwargs) != two_rows, (m, kwargs)
        others = ({"w_bytes": 2}, {"x_bytes": 4}, {"has_bias": False}, {"has_mask": True}, {"is_rms": True})
        for kwargs in others + ({"n": 1000}, {"n": 2048}):  # (RMSNorm's few rows have the tile by their own rule)
            assert fwd(m, **kwargs) != two_rows or fwd(m, slower=False, **kwargs) == two_rows, (m, kwargs)


@pytest.mark.parametrize("slower", [False, True])
def test_slower_dram_layer_norm_forward_of_1024_as_ops_asks(dram, slower):
    """``ops`` asks the rule with the call's rows, dtypes and bias: under slower DRAM's rules LayerNorm's forward of
    8200 x 1024 bf16 and fp16 x float32 weights with a bias launches tiles of two rows (an H200's rules four); 8192
    rows, bf16 weights and no bias keep four. Nothing runs (the launches are recorded), so on the CPU too."""
    from normkit.triton import ops

    dram(slower)
    x, w, b = make_inputs(8200, 1024, *DTYPES[3])
    calls = [(x, w, b), (x.half(), w, b), (x[:8192], w, b), (x, w.bfloat16(), b.bfloat16()), (x, w, None)]
    with pytest.MonkeyPatch.context() as recording:
        launched = _record_launches(recording, "NORM_FWD")
        for args in calls:
            ops.layer_norm_fwd(*args, 1e-5)
    tiles = [(launch["BLOCK_M"], launch["BLOCK_N"], launch["num_warps"]) for launch in launched]
    assert tiles == [(2 if slower else 4, 1024, 4)] * 2 + [(4, 1024, 4)] * 3


@pytest.mark.parametrize("zero_centered", [False, True])
def test_slower_dram_layer_norm_forward_of_1024_forced_on_odd_rows(zero_centered):
    """Round 126's two rows of 1024 at 4 warps forced on few rows, which the interpreter runs: 7 rows (a last tile of
    one) and 100 strided rows, bf16 and fp16 x with float32 weights and a bias, zero-centered weights and not, against
    the reference."""
    from normkit.triton import config
    from normkit.triton.config import LaunchConfig

    with config.forced(fwd=LaunchConfig(2, 1024, 1, 4, 0)):
        for m, pad in ((7, 0), (100, 8)):
            for x_dtype in (torch.bfloat16, torch.float16):
                x, w, b = make_inputs(m, 1024, x_dtype, torch.float32, row_pad=pad)
                check_forward("triton", "layer_norm", x, w, b, zero_centered_gamma=zero_centered)


@pytest.mark.gpu
@pytest.mark.parametrize("slower", [False, True])
def test_slower_dram_layer_norm_forward_of_1024_on_the_gpu(dram, slower):
    """Round 126's LayerNorm forward under each DRAM's rules against the reference, on whichever GPU: 8200 and 32768
    rows of 1024, bf16 and fp16 x with float32 weights and a bias, zero-centered weights at 8200."""
    dram(slower)
    for m in (8200, 32768):
        for x_dtype in (torch.bfloat16, torch.float16):
            check_forward("triton", "layer_norm", *make_inputs(m, 1024, x_dtype, torch.float32))
    check_forward("triton", "layer_norm", *make_inputs(8200, 1024, *DTYPES[3]), zero_centered_gamma=True)


def test_slower_dram_rms_forward_of_12289_to_16384_as_head_and_tail():
    """On slower DRAM (an H100) RMSNorm's forward of more than 4096 rows of 12289-16384 columns without a bias holds
    each row whole, a head tile of 8192 and a tail tile of 8192 at 32 warps (round 127), whatever the dtypes, and with a
    bias the same tiles at 16 warps (at 16384 columns, round 128; below, round 131, but 16-bit x with float32 weights);
    4096 rows, 12288 and 16385 columns, 16-bit x with float32 weights and a bias below 14336 keep the heuristic's
    launch; float32 x, and 16-bit x with float32 weights and a bias from 14336, take round 133's chunks at 32 warps
    instead, 16-bit x and weights without a bias round 134's (their own test below). Not the mask nor LayerNorm; on an
    H200's DRAM float32 x at 16384 columns alone (round 129). The inference call (``infer_config``) takes the tiles at
    32 warps without a bias (round 128) and with one the training forward's launch, 16 warps but 16-bit x with float32
    weights below 16384 (round 132); on an H200's DRAM its chunks with a bias."""
    from normkit.triton import config
    from normkit.triton.config import LaunchConfig

    def fwd(m, n, is_rms=True, slower=True, **kwargs):
        return config.fwd_config(m, n, is_rms, slower_dram=slower, **kwargs)

    dtypes = ({"w_bytes": 4}, {"w_bytes": 2}, {"w_bytes": 2, "x_fp16": True}, {"w_bytes": 4, "x_bytes": 4})
    for m in (4096, 4097, 4200, 8200, 32768, 65536):
        for n in (12288, 12289, 13000, 14336, 16383, 16384, 16385):
            rows = m > 4096 and 12288 < n <= 16384
            for bias, warps in ((False, 32), (True, 16)):
                head_and_tail = LaunchConfig(1, 8192, 1, warps, 0, tail_n=8192)
                for kwargs in dtypes + ({"w_bytes": 4, "zero_centered": True},):
                    wide_weights = kwargs.get("x_bytes", 2) == 2 and kwargs["w_bytes"] == 4  # 16-bit x, float32 w
                    fp32_x = kwargs.get("x_bytes") == 4  # round 133: chunks at 32 warps on slower DRAM
                    narrow = not bias and kwargs.get("x_bytes", 2) == kwargs["w_bytes"] == 2  # round 134's chunks
                    chunked = m > 4096 and (fp32_x or (bias and wide_weights and n >= 14336) or narrow)  # (bias below)
                    taken = rows and not fp32_x and not (bias and wide_weights) and not narrow
                    got = fwd(m, n, has_bias=bias, **kwargs)
                    assert (got == head_and_tail) is taken, (m, n, bias, kwargs)
                    assert got.tail_n != 8192 or taken, (m, n, bias, kwargs)
                    chunks_of_32_warps = got.num_warps == 32 and got.num_chunks > 1  # 12288 too (round 133)
                    assert n > 16384 or chunks_of_32_warps is chunked, (m, n, bias, kwargs)
                    h200 = fwd(m, n, slower=False, has_bias=bias, **kwargs)  # float32 x at 16384 alone (round 129)
                    h200_taken = m > 4096 and n == 16384 and kwargs.get("x_bytes") == 4
                    assert (h200 == head_and_tail) is h200_taken and (h200.tail_n != 8192 or h200_taken), (m, n, bias)
                    infer = config.infer_config(m, n, True, slower_dram=True, has_bias=bias, **kwargs)
                    assert (infer == head_and_tail) is taken, (m, n, bias, kwargs)  # the training forward's launch
                    assert infer.tail_n != 8192 or taken, (m, n, bias, kwargs)
                    h200_infer = config.infer_config(m, n, True, has_bias=bias, **kwargs)
                    h200_taken = h200_taken and not bias  # with a bias, not timed there: the chunks
                    assert (h200_infer == head_and_tail) is h200_taken, (m, n, bias, kwargs)
                    assert h200_infer.tail_n != 8192 or h200_taken, (m, n, bias, kwargs)
                    ln = config.infer_config(m, n, False, slower_dram=True, has_bias=bias, **kwargs)
                    assert ln != LaunchConfig(1, 8192, 1, 32, 0, tail_n=8192), (m, n, bias, kwargs)  # RMSNorm's alone
                for kwargs in ({"has_mask": True}, {"is_rms": False}):
                    assert fwd(m, n, w_bytes=4, has_bias=bias, **kwargs).tail_n != 8192, (m, n, bias, kwargs)


@pytest.mark.parametrize("slower", [False, True])
def test_slower_dram_rms_forward_of_12289_to_16384_as_ops_asks(dram, slower):
    """``ops`` asks the rule with the call's rows and bias: under slower DRAM's rules RMSNorm's forward of 4097 x 16384
    without a bias (bf16 x with float32 weights) launches one program of 32 warps a row, a head tile of 8192 and a tail
    of 8192, with bf16 weights since round 134, and with a bias (bf16 x with float32 weights) since round 133, chunks of
    4096 at 32 warps (an H200's rules chunks of 2048 at 16 warps); 4096 rows keep the few waves' chunks of 4096; the
    inference call takes the same launches (with a bias since round 132; an H200's rules the chunks). Nothing runs (the
    launches are recorded), so on the CPU too."""
    from normkit.triton import ops

    dram(slower)
    x = torch.empty(4097, 16384, dtype=torch.bfloat16, device=DEVICE)
    w = torch.ones(16384, device=DEVICE)
    calls = [(x, w, None), (x, w.bfloat16(), None), (x, w, torch.zeros_like(w)), (x[:4096], w, None)]
    with pytest.MonkeyPatch.context() as recording:
        launched = _record_launches(recording, "NORM_FWD")
        for args in calls:
            ops.rms_norm_fwd(*args, 1e-5)
        for args in calls[:3]:  # the inference calls
            ops.infer_unchecked("rms_norm", *args, 1e-5, False)
    tiles = [(launch["BLOCK_N"], launch["NUM_CHUNKS"], launch["TAIL_N"], launch["num_warps"]) for launch in launched]
    chunks = (2048, 8, 0, 16)
    asked = [(8192, 1, 8192, 32), (4096, 4, 0, 32), (4096, 4, 0, 32)] if slower else [chunks] * 3  # rounds 133-134
    assert tiles == asked + [(4096, 4, 0, 16)] + asked  # 4096 rows: a few waves' chunks
    assert [launch["TRAINING"] for launch in launched] == [True] * 4 + [False] * 3


@pytest.mark.parametrize("zero_centered", [False, True])
def test_slower_dram_rms_forward_of_12289_to_16384_forced_on_odd_rows(zero_centered):
    """Round 127's head tile of 8192 and tail of 8192 at 32 warps forced on few rows, which the interpreter runs: 7
    strided rows of 12289 columns (a tail of one column in a tile of 8192) and 3 rows of 16384, float32, fp16 and bf16
    x with float32 weights, and at 16 warps 3 strided rows of 16384 with a bias (fp16, bf16 x float32) and 7 of 12289
    (float32, fp16; round 131's bias below 16384), zero-centered weights and not, against the reference."""
    from normkit.triton import config
    from normkit.triton.config import LaunchConfig

    with config.forced(fwd=LaunchConfig(1, 8192, 1, 32, 0, tail_n=8192)):
        for m, n, pad in ((7, 12289, 8), (3, 16384, 0)):
            for dtypes in (DTYPES[0], DTYPES[1], DTYPES[3]):
                x, w, _ = make_inputs(m, n, *dtypes, bias=False, row_pad=pad)
                check_forward("triton", "rms_norm", x, w, None, zero_centered_gamma=zero_centered)
    with config.forced(fwd=LaunchConfig(1, 8192, 1, 16, 0, tail_n=8192)):  # with a bias
        biased = ((3, 16384, DTYPES[1]), (3, 16384, DTYPES[3]), (7, 12289, DTYPES[0]), (7, 12289, DTYPES[1]))
        for m, n, dtypes in biased:
            x, w, b = make_inputs(m, n, *dtypes, row_pad=8)
            check_forward("triton", "rms_norm", x, w, b, zero_centered_gamma=zero_centered)


@pytest.mark.gpu
@pytest.mark.parametrize("slower", [False, True])
def test_slower_dram_rms_forward_of_12289_to_16384_on_the_gpu(dram, slower):
    """Round 127's RMSNorm forward under each DRAM's rules against the reference, on whichever GPU: 4200 x 16384 and
    8200 x 13000 without a bias, float32, fp16 and bf16 x with float32 weights, zero-centered weights at 4200 x
    16384, and with a bias 4200 x 16384 bf16 x float32 and fp16, 8200 x 13000 float32 and fp16 (round 131: 16 warps
    on slower DRAM); the inference call of 4200 x 16384 (float32 and bf16 x with float32 weights), with a bias and
    without, and with a bias of 8200 x 13000 float32 and fp16 (round 132: 16 warps on slower DRAM). On an H200's rules
    float32 x at 16384 takes the tiles too (round 129; with a bias at 16 warps, 4200 x 16384 float32 with a bias).
    Since round 133 slower DRAM's rules read float32 x, and bf16 x with float32 weights and a bias at 16384, in chunks
    at 32 warps instead (``test_rms_forward_in_chunks_at_32_warps_on_the_gpu``); these cases run that launch then."""
    dram(slower)
    for m, n in ((4200, 16384), (8200, 13000)):
        for dtypes in (DTYPES[0], DTYPES[1], DTYPES[3]):
            x, w, _ = make_inputs(m, n, *dtypes, bias=False)
            check_forward("triton", "rms_norm", x, w, None)
    x, w, b = make_inputs(4200, 16384, *DTYPES[3])
    check_forward("triton", "rms_norm", x, w, None, zero_centered_gamma=True)
    check_forward("triton", "rms_norm", x, w, b)  # with a bias: 16 warps on slower DRAM
    check_forward("triton", "rms_norm", *make_inputs(4200, 16384, *DTYPES[1]))
    check_forward("triton", "rms_norm", *make_inputs(4200, 16384, *DTYPES[0]))  # float32 x with a bias: 16 warps
    for dtypes in (DTYPES[0], DTYPES[1]):  # a bias below 16384 on slower DRAM: 16 warps (round 131)
        check_forward("triton", "rms_norm", *make_inputs(8200, 13000, *dtypes))
    from normkit.triton import ops

    for dtypes in (DTYPES[0], DTYPES[3]):  # the inference call without a bias and with one (16 warps, round 132)
        x, w, b = make_inputs(4200, 16384, *dtypes)
        for bias in (None, b):
            y = ops.infer_unchecked("rms_norm", x, w, bias, 1e-5, False)
            compare(y, reference.rms_norm_fwd(x, w, bias, 1e-5)[0], f"inference y, bias {bias is not None}")
    for dtypes in (DTYPES[0], DTYPES[1]):  # the inference call with a bias below 16384 (round 132)
        x, w, b = make_inputs(8200, 13000, *dtypes)
        y = ops.infer_unchecked("rms_norm", x, w, b, 1e-5, False)
        compare(y, reference.rms_norm_fwd(x, w, b, 1e-5)[0], f"inference y at 13000 with a bias, {dtypes}")


def test_slower_dram_rms_forward_in_chunks_at_32_warps():
    """On slower DRAM (an H100) RMSNorm's forward of more than 4096 rows is read twice in chunks at 32 warps, as
    torch.compile's kernel there (rounds 133-135): float32 x of 6144-16384 columns, with a bias or without,
    zero-centered or not, in chunks of 4096 (two of 8192 at 16384 columns), 16-bit x and weights without a bias of
    12288-16384 columns and 16-bit x with float32 weights and a bias of 14336-16384 in chunks of 4096; the inference
    call takes the same launch, and with float32 weights and a bias from 13824 (round 135). 4096 rows, 6143 columns
    (12287, 13823 and 14335 for 16-bit x), 16-bit x with float32 weights and no bias or with 16-bit weights and a bias,
    LayerNorm, the mask and an H200's DRAM keep their launches."""
    from normkit.triton import config
    from normkit.triton.config import LaunchConfig

    float32 = [{"w_bytes": 4, "x_bytes": 4, **kwargs} for kwargs in ({}, {"has_bias": True}, {"zero_centered": True})]
    narrow = [{"w_bytes": 2}, {"w_bytes": 2, "x_fp16": True}, {"w_bytes": 2, "zero_centered": True}]
    wide_weights = [{"w_bytes": 4, "has_bias": True}, {"w_bytes": 4, "has_bias": True, "x_fp16": True}]
    wide_weights += [{"w_bytes": 4, "has_bias": True, "zero_centered": True}]
    others = [{"w_bytes": 4}, {"w_bytes": 2, "has_bias": True}, {"w_bytes": 2, "has_bias": True, "x_fp16": True}]
    columns = (5120, 6143, 6144, 7168, 8192, 8193, 9216, 12287, 12288, 13000, 13823, 13824, 14080, 14335, 14336)
    groups = ((float32, 6144, 6144), (narrow, 12288, 12288), (wide_weights, 14336, 13824), (others, None, None))
    for m in (4096, 4097, 8200, 32768):
        for n in columns + (15360, 16383, 16384, 16385):
            for group, first, first_inferred in groups:  # the training forward's first columns, the inference call's
                for kwargs in group:
                    taken = first is not None and m > 4096 and first <= n <= 16384
                    inferred = first_inferred is not None and m > 4096 and first_inferred <= n <= 16384
                    block_n = 8192 if n == 16384 and kwargs.get("x_bytes") == 4 else 4096
                    chunks = LaunchConfig(1, block_n, -(-n // block_n), 32)
                    for inference, expected in ((False, taken), (True, inferred)):
                        rule = config._slower_dram_rms_fwd_chunks_at_32_warps(
                            m, n, True, False, kwargs.get("has_bias", False), kwargs.get("x_bytes", 2),
                            kwargs["w_bytes"], True, inference,
                        )  # fmt: skip
                        assert rule == (chunks if expected else None), (m, n, kwargs, inference)  # its own answer
                    if n > 16384:  # the heuristic's launch above 16384 columns is alike: chunks of 4096 at 32 warps
                        continue
                    slower = {**kwargs, "slower_dram": True}
                    assert (config.fwd_config(m, n, True, **slower) == chunks) is taken, (m, n, kwargs)
                    assert (config.infer_config(m, n, True, **slower) == chunks) is inferred, (m, n, kwargs)
                    assert config.fwd_config(m, n, True, **kwargs) != chunks, (m, n, kwargs)  # an H200
                    assert config.infer_config(m, n, True, **kwargs) != chunks, (m, n, kwargs)
                    assert config.fwd_config(m, n, True, has_mask=True, **slower) != chunks, (m, n, kwargs)
                    ln = config.fwd_config(m, n, False, **slower)  # LayerNorm: its own rule of 16-bit x and weights
                    ln_taken = m > 4096 and 14336 < n and kwargs.get("x_bytes", 2) == kwargs["w_bytes"] == 2
                    assert (ln == LaunchConfig(1, 4096, 4, 32)) is ln_taken or ln != chunks, (m, n, kwargs)


def _chunked_rms_biases(dtypes, b):
    """The biases rounds 133-134's RMSNorm chunks at 32 warps take: float32 x with and without, 16-bit x and weights
    without, 16-bit x with float32 weights with."""
    return {DTYPES[0]: (None, b), DTYPES[1]: (None,), DTYPES[2]: (None,)}.get(dtypes, (b,))


@pytest.mark.parametrize("zero_centered", [False, True])
def test_rms_forward_in_chunks_at_32_warps_forced_on_odd_rows(zero_centered):
    """Rounds 133-134's chunks at 32 warps forced on few rows, which the interpreter runs: float32 x and weights, 7
    strided rows of 6144 columns in 2 chunks of 4096, of 9216 in 3 (the last a quarter full) and of 13000 in 4, 3 rows
    of 16384 in 2 chunks of 8192, with a bias and without; fp16 and bf16 x and weights without a bias, 5 strided rows
    of 12288 in 3 chunks of 4096 and of 13000 in 4; bf16 and fp16 x with float32 weights and a bias, 7 strided rows of
    14337 in 4 chunks of 4096 and 3 of 16384; zero-centered weights and not. The training forward against the
    reference, the inference call against its y."""
    from normkit.triton import config, ops
    from normkit.triton.config import LaunchConfig

    cases = [(7, 6144, 4096, 8, DTYPES[0]), (7, 9216, 4096, 8, DTYPES[0]), (7, 13000, 4096, 8, DTYPES[0])]
    cases += [(3, 16384, 8192, 0, DTYPES[0]), (5, 12288, 4096, 8, DTYPES[1]), (5, 13000, 4096, 8, DTYPES[2])]
    cases += [(7, 14337, 4096, 8, DTYPES[3]), (3, 16384, 4096, 0, (torch.float16, torch.float32))]
    for m, n, block_n, pad, dtypes in cases:
        with config.forced(fwd=LaunchConfig(1, block_n, -(-n // block_n), 32)):
            x, w, b = make_inputs(m, n, *dtypes, row_pad=pad)
            for bias in _chunked_rms_biases(dtypes, b):
                check_forward("triton", "rms_norm", x, w, bias, zero_centered_gamma=zero_centered)
                y = ops.infer_unchecked("rms_norm", x, w, bias, 1e-5, zero_centered)
                expected = reference.rms_norm_fwd(x, w, bias, 1e-5, zero_centered)[0]
                compare(y, expected, f"inference y at {m} x {n}, bias {bias is not None}, {dtypes}")


@pytest.mark.gpu
@pytest.mark.parametrize("slower", [False, True])
def test_rms_forward_in_chunks_at_32_warps_on_the_gpu(dram, slower):
    """Rounds 133-135's launches under each DRAM's rules against the reference, on whichever GPU: float32 RMSNorm of
    4200 x 6144, 8200 x 7168, 4200 x 9216, 8200 x 12288 and 4200 x 16384 with a bias and without, zero-centered at 8200
    x 12288, fp16 / bf16 x and weights without a bias at 8200 x 12288 / 4200 x 13000, and bf16 / fp16 x with float32
    weights and a bias at 8200 x 14336 and 4200 x 16384 (and 8200 x 13824 bf16, where the inference call alone takes
    them, round 135); training forward and inference call (on slower DRAM chunks of 4096 at 32 warps, of 8192 at 16384
    for float32 x)."""
    from normkit.triton import ops

    dram(slower)
    cases = [(4200, 6144, DTYPES[0]), (8200, 7168, DTYPES[0]), (4200, 9216, DTYPES[0]), (8200, 12288, DTYPES[0])]
    cases += [(4200, 16384, DTYPES[0]), (8200, 12288, DTYPES[1]), (4200, 13000, DTYPES[2])]
    cases += [(8200, 14336, DTYPES[3]), (4200, 16384, (torch.float16, torch.float32)), (8200, 13824, DTYPES[3])]
    for m, n, dtypes in cases:
        x, w, b = make_inputs(m, n, *dtypes)
        for bias in _chunked_rms_biases(dtypes, b):
            check_forward("triton", "rms_norm", x, w, bias)
            y = ops.infer_unchecked("rms_norm", x, w, bias, 1e-5, False)
            compare(y, reference.rms_norm_fwd(x, w, bias, 1e-5)[0], f"inference y at {m} x {n}, {dtypes}")
        if n == 12288:
            check_forward("triton", "rms_norm", x, w, b, zero_centered_gamma=True)


def test_slower_dram_layer_norm_forward_in_chunks_of_4096_at_32_warps():
    """On slower DRAM (an H100) LayerNorm's forward of more than 4096 rows of 14337-16384 columns of 16-bit x and
    weights, zero-centered or not, reads each row in chunks of 4096 at 32 warps: the inference call (the clamped ReLU's
    too: ``infer_config`` serves both) with a bias (round 133 at 16384, round 134 below), the training forward without a
    bias and with one from 15360 columns, but not the clamped ReLU's, which stores the mask (round 134). 4096 rows,
    14336 and 16385 columns, float32 weights or x, the inference call without a bias and an H200's DRAM keep their
    launches (RMSNorm's own rules: the tests above)."""
    from normkit.triton import config
    from normkit.triton.config import LaunchConfig

    chunks = LaunchConfig(1, 4096, 4, 32)
    sixteen_bit = [{"w_bytes": 2}, {"w_bytes": 2, "x_fp16": True}, {"w_bytes": 2, "zero_centered": True}]
    others = [{"w_bytes": 4}, {"w_bytes": 4, "x_bytes": 4}]
    for m in (4096, 4097, 8200, 32768):
        for n in (14335, 14336, 14337, 14848, 15360, 16383, 16384, 16385):
            rows = m > 4096 and 14336 < n <= 16384
            for kwargs in sixteen_bit + others:
                sixteen = rows and kwargs in sixteen_bit
                x_bytes = kwargs.get("x_bytes", 2)
                for bias in (False, True):
                    slower = {**kwargs, "has_bias": bias, "slower_dram": True}
                    training = sixteen and (n >= 15360 or not bias)  # with a bias from 15360 (run 929)
                    launches = ((False, False, training), (True, False, False), (False, True, sixteen and bias))
                    for mask, inference, taken in launches:
                        assert config._slower_dram_ln_fwd_in_chunks_of_4096(
                            m, n, False, mask, bias, x_bytes, kwargs["w_bytes"], True, inference
                        ) is taken, (m, n, kwargs, bias, mask, inference)  # fmt: skip
                        if inference:
                            launch = config.infer_config(m, n, False, **slower)
                        else:
                            launch = config.fwd_config(m, n, False, has_mask=mask, **slower)
                        assert (launch == chunks) is taken, (m, n, kwargs, bias, mask, inference)
                    assert config.fwd_config(m, n, False, **{**slower, "slower_dram": False}) != chunks, (m, n)
                    assert config.infer_config(m, n, False, **{**slower, "slower_dram": False}) != chunks, (m, n)


@pytest.mark.parametrize("zero_centered", [False, True])
def test_layer_norm_forward_in_chunks_of_4096_at_32_warps_forced_on_odd_rows(zero_centered):
    """Rounds 133-134's LayerNorm launch forced on few rows, which the interpreter runs: 3 strided rows of 16384 columns
    and 5 of 14337 (a last chunk of one column), bf16 and fp16 x and weights: the training forward with a bias and
    without against the reference, LayerNorm's inference y and the clamped ReLU's with a bias against its y."""
    from normkit.triton import config, ops
    from normkit.triton.config import LaunchConfig

    for m, n in ((3, 16384), (5, 14337)):
        with config.forced(fwd=LaunchConfig(1, 4096, 4, 32)):
            for dtypes in (DTYPES[1], DTYPES[2]):
                x, w, b = make_inputs(m, n, *dtypes, row_pad=8)
                for bias in (None, b):
                    check_forward("triton", "layer_norm", x, w, bias, zero_centered_gamma=zero_centered)
                y = ops.infer_unchecked("layer_norm", x, w, b, 1e-5, zero_centered)
                compare(y, reference.layer_norm_fwd(x, w, b, 1e-5, zero_centered)[0], f"y at {m} x {n}, {dtypes}")
                y = ops.infer_unchecked("layer_norm_clamped_relu", x, w, b, 1e-5, zero_centered, 0.0, 6.0)
                expected = reference.layer_norm_clamped_relu_fwd(x, w, b, 1e-5, 0.0, 6.0, zero_centered)[0]
                compare(y, expected, f"clamped y at {m} x {n}, {dtypes}")


@pytest.mark.gpu
@pytest.mark.parametrize("slower", [False, True])
def test_layer_norm_forward_in_chunks_of_4096_on_the_gpu(dram, slower):
    """Rounds 133-134's launch under each DRAM's rules against the reference, on whichever GPU: LayerNorm's and the
    clamped ReLU's inference calls with a bias and LayerNorm's training forward with a bias and without, of 4200 x
    16384 and 8200 x 14848 bf16 and fp16 x and weights (chunks of 4096 at 32 warps on slower DRAM), zero-centered for
    fp16; the clamped ReLU's training forward (its own launch) beside them."""
    from normkit.triton import ops

    dram(slower)
    for (m, n), dtypes in itertools.product(((4200, 16384), (8200, 14848)), (DTYPES[1], DTYPES[2])):
        x, w, b = make_inputs(m, n, *dtypes)
        zero_centered = dtypes == DTYPES[1]
        for bias in (None, b):
            check_forward("triton", "layer_norm", x, w, bias, zero_centered_gamma=zero_centered)
        check_forward("triton", "layer_norm_clamped_relu", x, w, b)
        y = ops.infer_unchecked("layer_norm", x, w, b, 1e-5, zero_centered)
        compare(y, reference.layer_norm_fwd(x, w, b, 1e-5, zero_centered)[0], f"inference y, {dtypes}")
        y = ops.infer_unchecked("layer_norm_clamped_relu", x, w, b, 1e-5, False, 0.0, 6.0)
        compare(y, reference.layer_norm_clamped_relu_fwd(x, w, b, 1e-5, 0.0, 6.0)[0], f"clamped y, {dtypes}")


def test_slower_dram_layer_norm_forward_of_float32_x_as_head_and_tail():
    """On slower DRAM (an H100) LayerNorm's forward of float32 x of more than 4096 rows of 9217-16384 columns holds
    each row whole at 16 warps, a head tile of 8192 and a tail of the rest's power of two (round 128), with a bias or
    not, zero-centered or not, in training and inference calls; with the mask (the clamped ReLU's training forward)
    at 12288, 14336 and 16384 alone, which an H200's DRAM takes too (round 129). 4096 rows, 9216 and 16385 columns,
    16-bit x, RMSNorm's rule and an H200's DRAM without the mask keep their launches."""
    from normkit.triton import config
    from normkit.triton.config import LaunchConfig

    def launches(m, n, slower=True, mask=False, **kwargs):
        kwargs = {"w_bytes": 4, "x_bytes": 4, "slower_dram": slower, **kwargs}
        return config.fwd_config(m, n, False, has_mask=mask, **kwargs), config.infer_config(m, n, False, **kwargs)

    def head_of_8192_at_16_warps(launch):
        return launch.block_n == 8192 and launch.num_chunks == 1 and launch.num_warps == 16 and launch.tail_n > 0

    for m in (4096, 4097, 4200, 32768):
        for n in (9216, 9217, 9300, 10240, 12288, 12400, 13000, 14336, 16383, 16384, 16385):
            rows = m > 4096 and 9216 < n <= 16384
            tail = {9217: 2048, 9300: 2048, 10240: 2048, 12288: 4096}.get(n, 8192)
            head_and_tail = LaunchConfig(1, 8192, 1, 16, 0, tail_n=tail)
            for kwargs in ({}, {"has_bias": True}, {"zero_centered": True}):
                for launch in launches(m, n, **kwargs):  # training, inference
                    assert (launch == head_and_tail) is rows, (m, n, kwargs)
                    assert head_of_8192_at_16_warps(launch) is rows, (m, n, kwargs)
                for slower in (True, False):  # the mask: on either DRAM
                    masked = launches(m, n, slower, mask=True, **kwargs)[0]
                    taken = m > 4096 and n in (12288, 14336, 16384)
                    assert head_of_8192_at_16_warps(masked) is taken, (m, n, slower, kwargs)
                    assert masked == head_and_tail or not taken, (m, n, slower, kwargs)
                for other in ({"slower": False}, {"x_bytes": 2}, {"x_bytes": 2, "w_bytes": 2}):
                    for launch in launches(m, n, **kwargs, **other):
                        assert not head_of_8192_at_16_warps(launch), (m, n, kwargs, other)
                for other in ({"x_bytes": 2}, {"x_bytes": 2, "w_bytes": 2}):
                    for slower in (True, False):
                        masked = launches(m, n, slower, mask=True, **kwargs, **other)[0]
                        assert not head_of_8192_at_16_warps(masked), (m, n, slower, kwargs, other)


@pytest.mark.parametrize("zero_centered", [False, True])
def test_slower_dram_layer_norm_forward_of_float32_x_forced_on_odd_rows(zero_centered):
    """Round 128's head tile of 8192 and tail at 16 warps forced on few rows of float32 x, which the interpreter runs:
    7 strided rows of 9217 columns (a tail tile of 2048 holding one column) and 3 rows of 16384, LayerNorm with a bias
    and without, LayerNorm + clamped ReLU's training forward (its mask) at 12288, and the inference call, zero-centered
    weights and not, against the reference."""
    from normkit.triton import config, ops
    from normkit.triton.config import LaunchConfig

    for n, pad in ((9217, 8), (16384, 0), (12288, 8)):
        tail = config.row_block_n(n - 8192)
        with config.forced(fwd=LaunchConfig(1, 8192, 1, 16, 0, tail_n=tail)):
            x, w, b = make_inputs(7 if n == 9217 else 3, n, *DTYPES[0], row_pad=pad)
            for bias in (b, None):
                check_forward("triton", "layer_norm", x, w, bias, zero_centered_gamma=zero_centered)
            expected = reference.layer_norm_fwd(x, w, b, 1e-5, zero_centered)[0]
            compare(ops.infer_unchecked("layer_norm", x, w, b, 1e-5, zero_centered), expected, "inference y")
            if n == 12288:
                check_forward("triton", "layer_norm_clamped_relu", x, w, b, zero_centered_gamma=zero_centered)


@pytest.mark.gpu
@pytest.mark.parametrize("slower", [False, True])
def test_slower_dram_layer_norm_forward_of_float32_x_on_the_gpu(dram, slower):
    """Round 128's LayerNorm forward of float32 x under each DRAM's rules against the reference, on whichever GPU:
    4200 x 16384 and 8200 x 9300 with a bias and without, zero-centered at 4200 x 16384, LayerNorm + clamped ReLU at
    4200 x 16384 and 4200 x 12288, the inference call at 4200 x 16384."""
    from normkit.triton import ops

    dram(slower)
    for m, n in ((4200, 16384), (8200, 9300)):
        x, w, b = make_inputs(m, n, *DTYPES[0])
        for bias in (b, None):
            check_forward("triton", "layer_norm", x, w, bias)
    x, w, b = make_inputs(4200, 16384, *DTYPES[0])
    check_forward("triton", "layer_norm", x, w, b, zero_centered_gamma=True)
    check_forward("triton", "layer_norm_clamped_relu", x, w, b)
    check_forward("triton", "layer_norm_clamped_relu", *make_inputs(4200, 12288, *DTYPES[0]))
    compare(ops.infer_unchecked("layer_norm", x, w, b, 1e-5, False), reference.layer_norm_fwd(x, w, b, 1e-5)[0], "y")


@pytest.mark.parametrize("slower", [False, True])
def test_slower_dram_rms_launches_as_the_ops_ask(dram, slower):
    """``ops`` asks the rules of rounds 123-124 with the call's dtypes and bias: under slower DRAM's rules the launches
    recorded are the new ones (RMSNorm's forward of 16400 x 256 without a bias, fp16 or bf16 x float32 weights, in
    tiles of 16 rows at 4 warps; its backward with dB of 2048 x 4096 bf16 x float32 weights in tiles of 2 rows at 16
    warps); with a bias, bf16 x with bf16 weights, float32 x, 40000 rows of bf16 x float32 weights or an H200's DRAM
    the forward keeps eight rows of 2 warps. Nothing runs (the launches are recorded), so on the CPU too."""
    from normkit.triton import ops

    dram(slower)
    x, w, b = make_inputs(16400, 256, torch.float16, torch.float16)
    calls = [(x, w, None), (x.bfloat16(), w.float(), None), (x, w, b), (x.bfloat16(), w.bfloat16(), None)]
    calls += [(x.float(), w.float(), None), (make_inputs(40000, 256, *DTYPES[3])[0], w.float(), None)]
    with pytest.MonkeyPatch.context() as recording:
        launched = _record_launches(recording, "NORM_FWD")
        for args in calls:
            ops.rms_norm_fwd(*args, 1e-5)
    tiles = [(launch["BLOCK_M"], launch["num_warps"]) for launch in launched]
    assert tiles == [(16, 4) if slower else (8, 2)] * 2 + [(8, 2)] * 4
    x, w, b = make_inputs(2048, 4096, torch.bfloat16, torch.float32)
    with pytest.MonkeyPatch.context() as recording:
        launched = _record_launches(recording, "NORM_BWD", "NORM_BWD_TMA")
        fn, args = backward_call("rms_norm", x, w, b, False, 1e-5)
        getattr(ops, fn)(*args, False, True)
    assert ((launched[0]["BLOCK_M"], launched[0]["num_warps"]) == (2, 16)) is slower, launched[0]


@pytest.mark.parametrize("zero_centered", [False, True])
def test_slower_dram_rms_launches_forced_on_odd_rows(zero_centered):
    """Round 123's two launches forced on few rows, which the interpreter runs: the forward's 16 rows of 256 on a
    persistent grid at 100 strided rows (a last block of 4 rows; fp16 and bf16 x float32 weights, with a bias too), the
    backward's two rows of 4096 with dB on one program a SM at 7 rows (a last block of one), zero-centered weights and
    not, against the reference."""
    from normkit.triton import config
    from normkit.triton.config import LaunchConfig

    with config.forced(fwd=LaunchConfig(16, 256, 1, 4, 16)):
        for dtypes, bias in ((DTYPES[1], False), (DTYPES[3], False), (DTYPES[3], True)):
            x, w, b = make_inputs(100, 256, *dtypes, bias=bias, row_pad=8)
            check_forward("triton", "rms_norm", x, w, b, zero_centered_gamma=zero_centered)
    with config.forced(bwd=LaunchConfig(2, 4096, 1, 16, 1)):
        for dtypes in (DTYPES[1], DTYPES[3]):
            x, w, b = make_inputs(7, 4096, *dtypes)
            check_backward("triton", "rms_norm", x, w, b, zero_centered_gamma=zero_centered, has_dbias=True)


@pytest.mark.gpu
@pytest.mark.parametrize("slower", [False, True])
def test_slower_dram_rms_launches_on_the_gpu(dram, slower):
    """Rounds 123-124's RMSNorm launches under each DRAM's rules against the reference, on whichever GPU: the forward
    of 16400 x 256 fp16 and bf16 x float32 weights (with a bias, which keeps the launch before, too) and the backward
    with dB at 2048-16400 rows of 4096 (fp16, bf16 and bf16 x float32 weights); the forward of 16960 and 24576 rows of
    256 on 12 programs a SM (LayerNorm's fp16 and bf16 with a bias, RMSNorm's bf16 with a bias and without)."""
    dram(slower)
    for dtypes in (DTYPES[1], DTYPES[3]):
        for bias in (False, True):
            x, w, b = make_inputs(16400, 256, *dtypes, bias=bias)
            check_forward("triton", "rms_norm", x, w, b)
    for m in (16960, 24576):  # 12 programs a SM (rounds 124-125)
        for dtypes in (DTYPES[1], DTYPES[2]):
            check_forward("triton", "layer_norm", *make_inputs(m, 256, *dtypes))
        for bias in (False, True):
            check_forward("triton", "rms_norm", *make_inputs(m, 256, *DTYPES[2], bias=bias))
    for m, dtypes in ((2048, DTYPES[2]), (8200, DTYPES[3]), (16400, DTYPES[1])):
        x, w, b = make_inputs(m, 4096, *dtypes)
        check_backward("triton", "rms_norm", x, w, b, has_dbias=True)


@pytest.mark.gpu
@pytest.mark.parametrize("slower", [False, True])
def test_slower_dram_backward_of_2048_columns_on_the_gpu(dram, slower):
    """Rows of 2048 of 16-bit x in TMA-sized calls, each DRAM's launch (``config._slower_dram_bwd`` on slower DRAM,
    the TMA's on an H200's) against the reference, on whichever GPU: LayerNorm, RMSNorm and the masked backward with
    dB and without, fp16 and bf16 x float32 weights, and LayerNorm's rows of 4096 (rounds 121-122). On slower DRAM
    float32 weights keep the TMA in the masked backward and in LayerNorm's of 4096 with dB (round 122)."""
    from normkit.triton import config

    dram(slower)
    masked, ln = "layer_norm_clamped_relu", "layer_norm"
    # rows of 4096 by the TMA without dB from 16385 rows (round 58)
    cases = [(config.TMA_MIN_ELEMENTS // 2048 + 16, 2048, op) for op in FORWARDS] + [(16400, 4096, ln)]
    for rows, n, op in cases:
        for dtypes in (DTYPES[1], DTYPES[3]):
            for has_dbias in (False, True):
                x, w, b = make_inputs(rows, n, *dtypes, bias=has_dbias)
                kept = w.dtype == torch.float32 and (op == masked or (n == 4096 and has_dbias))
                with tma_launches() as launches:
                    check_backward("triton", op, x, w, b, has_dbias=has_dbias)
                assert launches.call_count == (not slower or kept), (rows, n, op, has_dbias, dtypes)


@pytest.mark.gpu
@pytest.mark.parametrize("op", list(FORWARDS))
def test_tma_backward_on_the_gpu(dram, op):
    """The TMA backward's shapes (``config._tma_bwd``; RMSNorm's head + tail tiles, ``config._rms_head_tail_bwd``),
    compiled as launched, against the reference: each op takes it at the shapes whose set names it, and
    ``norm_bwd_kernel`` elsewhere (a width no rule names, 12296, and calls below ``TMA_MIN_ELEMENTS`` among them).
    A shape whose rule takes the staged kernel where it can run (``config.bwd_config``'s ``staged``: LayerNorm's with
    16-bit weights at its short rows, ``config.STAGED_LN_SHORT_BWD_N``, since round 101) takes neither. Under an
    H200's DRAM rules on any GPU (``dram``): slower DRAM's move some of these shapes off the TMA
    (``config._slower_dram_bwd``, rounds 120-122; ``test_slower_dram_backward_of_2048_columns_on_the_gpu``)."""
    from normkit.triton import config, ops

    dram(False)

    ln, masked, rms = "layer_norm", "layer_norm_clamped_relu", "rms_norm"
    shapes = [(16400, 2048, {ln, masked, rms}), (8200, 4096, {ln, masked}), (4100, 8192, {ln, masked})]
    shapes += [(16384, 2048, {ln, masked}), (8192, 8200 + 4096, set()), (3000, 4608, set()), (8200, 4608, {ln, masked})]
    shapes += [(4100, 9216, {ln, masked, rms}), (4100, 11264, {rms}), (8200, 6144, {ln, masked}), (8200, 6152, {ln})]
    shapes += [(4096, 9216, {ln, rms}), (32776, 1024, {ln, masked, rms}), (33600, 1000, {ln, rms})]
    shapes += [(4096, 7000, {ln}), (3000, 7000, set())]  # LayerNorm's few waves of 6145-8192 (round 64)
    for m, n, taken in shapes:
        for dtypes in (DTYPES[1], DTYPES[3]):
            x, w, b = make_inputs(m, n, *dtypes, bias=op != "rms_norm")
            capable, fp16 = ops._staged_capable(x.get_device()), x.dtype == torch.float16
            staged = config.bwd_config(
                m, n, has_dbias=op != rms, has_mask=op == masked, is_rms=op == rms, tma=True,
                x_bytes=x.element_size(), w_bytes=w.element_size(), staged=capable, x_fp16=fp16,
            ).staged  # fmt: skip
            with tma_launches() as launches:
                check_backward("triton", op, x, w, b, has_dbias=op != "rms_norm")
            assert launches.call_count == (op in taken and not staged), (m, n, dtypes)
    if op == ln:  # without dB: by the TMA from 16385 rows of 4096 and 5121-8192 columns (round 58); at 4097-5120 and
        # 8193-10240 wherever LayerNorm's with dB are (round 103: 4100 x 5120 is below ``TMA_MIN_ELEMENTS_LAYER_NORM``)
        without_dbias = [(16400, 4096, True), (16400, 6144, True), (16384, 4096, False), (8200, 4608, True)]
        without_dbias += [(4100, 5120, False), (4100, 9216, True), (8200, 10240, True), (4096, 9216, True)]
        for m, n, taken in without_dbias:
            x, w, b = make_inputs(m, n, torch.bfloat16, torch.float32)
            with tma_launches() as launches:
                check_backward("triton", op, x, w, b, has_dbias=False)
            assert launches.call_count == taken, (m, n)
    if op == masked:  # without dB (no bias): its launches with dB (round 114), the pointer kernel's before
        without_dbias = [(16384, 2048, True), (16383, 2048, False), (8200, 4096, True), (8200, 4608, True)]
        without_dbias += [(4100, 5120, False), (4100, 9216, True), (8200, 6144, True), (32776, 1024, True)]
        for m, n, taken in without_dbias:
            for dtypes in ((torch.bfloat16, torch.float32), (torch.float16, torch.float16)):
                x, w, _ = make_inputs(m, n, *dtypes, bias=False)
                staged = config.bwd_config(
                    m, n, False, has_mask=True, tma=True, w_bytes=w.element_size(),
                    staged=ops._staged_capable(x.get_device()),
                ).staged  # fmt: skip
                with tma_launches() as launches:
                    check_backward("triton", op, x, w, None, has_dbias=False)
                assert launches.call_count == (taken and not staged), (m, n, dtypes)


def test_tma_rows_refuse_an_expanded_matrix():
    """A matrix of one row seen M times (row stride 0: an expanded gradient, ``y.backward(v.expand_as(y))``) is not
    rows the TMA loads (``ops._tma_rows``), nor the staged kernels (``ops._staged_rows``): the backward runs the
    pointer kernel on it. Rows of any other stride that starts them on 16 bytes are."""
    from normkit.triton import ops

    row = torch.randn(1, 4096, dtype=torch.bfloat16)
    expanded, padded = row.expand(64, 4096), torch.randn(64, 4104, dtype=torch.bfloat16)[:, :4096]
    assert ops._tma_rows(expanded) is None and ops._tma_rows(row) == ([1, 4096], [4096, 1])
    assert ops._tma_rows(padded) == ([64, 4096], [4104, 1])
    assert not ops._staged_rows(expanded, padded.contiguous(), torch.ones(4096, dtype=torch.bfloat16))


@pytest.mark.gpu
@pytest.mark.parametrize("op", list(FORWARDS))
def test_backward_of_an_expanded_gradient_on_the_gpu(op):
    """dy of one row seen M times (row stride 0) at shapes whose rules take the TMA kernel (16400 x 2048, 8200 x
    4608), the whole-row staged kernel (4096 x 13312 fp16) and the split staged one (4096 x 16384): neither loads such
    rows, the pointer kernel runs them, against the reference's backward of the same dy made contiguous."""
    has_dbias = op != "rms_norm"
    for m, n in [(16400, 2048), (8200, 4608), (4096, 13312), (4096, 16384)]:  # fp16 weights: dW's tolerance fp16's
        x, w, b = make_inputs(m, n, torch.float16, torch.float16, bias=has_dbias)
        fn, args = backward_call(op, x, w, b)  # its dy replaced below
        dy = torch.randn(1, n, device=x.device).half().expand(m, n)
        with tma_launches() as launches:
            got = getattr(backend_ops("triton"), fn)(dy, *args[1:], False, has_dbias)
        want = getattr(reference, fn)(dy.contiguous(), *args[1:], False, has_dbias)
        assert launches.call_count == 0, (m, n)
        for name, g, e in zip(["dx", "dw", "db"], got, want):
            if e is not None:
                compare(g, e, f"{fn} {name} of an expanded dy at {m} x {n}")


def test_sum_plan_loads_a_persistent_grids_partials_at_once():
    """The backward's partials of 4 programs a SM on an H200 (528 rows) are loaded at once at columns of 16 (rows of
    1024-4096): one round trip a program (round 57)."""
    from normkit.triton import ops

    for n in (1024, 2048, 4096):
        _, values = ops._sum_plan(2, 528, n, torch.float32, True)
        assert dict(zip(ops.SUM_PARTIALS.constexpr_names, values))["BLOCK_G"] >= 528, n


@pytest.mark.parametrize("g, n", [(1, 7), (1100, 37), (9, 8300)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_sum_of_partials(g, n, dtype):
    """dW and dB from the backward's ``[2, G, N]`` float32 partials (``ops._sum_partials``): one program and one
    partial; 1100 partials, more than a program loads at once (``_sum_plan``: 1024 at columns of 16), so its loop
    takes two steps, the second part past G; a row of 8300 in blocks of 32 columns, the last part past N."""
    from normkit.triton import ops

    partial = torch.randn(2, g, n, device=DEVICE)
    (_, which), values = ops._sum_plan(2, g, n, partial.dtype, False)
    block = dict(zip(ops.SUM_PARTIALS.constexpr_names, values))
    assert which == 2 and (g <= block["BLOCK_G"]) == (g != 1100)
    dw, db = ops._sum_partials(partial, dtype)  # in the weights' dtype
    want = partial.sum(dim=1).to(dtype)
    compare(dw, want[0], "dw")
    compare(db, want[1], "db")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("op", ["layer_norm", "rms_norm"])
def test_large_hidden_size(backend, op):
    n = 262144 if HAS_GPU else 65536 + 3
    if backend == "cudnn":
        n = 65536
    x, w, b = make_inputs(3, n, torch.bfloat16, torch.float32)
    check_forward(backend, op, x, w, b)
    check_backward(backend, op, x, w, b)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("op", list(FORWARDS))
def test_weight_gradients_are_bit_identical_across_runs(backend, op):
    w_dtype = torch.bfloat16 if backend == "cudnn" else torch.float32
    x, w, b = make_inputs(300 if HAS_GPU else 40, 512 if backend == "cudnn" else 520, torch.bfloat16, w_dtype)
    runs = [check_backward(backend, op, x, w, b) for _ in range(3)]
    # check_backward draws a fresh dy each call; rerun with one fixed dy to compare bits
    dy = torch.randn(x.shape, device=x.device).to(x.dtype)
    _, mean, rstd = reference.layer_norm_fwd(x, w, b, 1e-5)
    ops = backend_ops(backend)
    if op == "rms_norm":
        runs = [ops.rms_norm_bwd(dy, x, w, rstd, False, True) for _ in range(5)]
    elif op == "layer_norm":
        runs = [ops.layer_norm_bwd(dy, x, w, mean, rstd, False, True) for _ in range(5)]
    else:
        mask = reference.layer_norm_clamped_relu_fwd(x, w, b, 1e-5, LOWER, UPPER)[3]
        runs = [ops.layer_norm_clamped_relu_bwd(dy, mask, x, w, mean, rstd, False, True) for _ in range(5)]
    for dx, dw, db in runs[1:]:
        assert torch.equal(dx, runs[0][0]) and torch.equal(dw, runs[0][1]) and torch.equal(db, runs[0][2])


@pytest.mark.parametrize("backend", BACKENDS)
def test_empty_batch(backend):
    x, w, b = make_inputs(0, 64, torch.float32, torch.float32)
    ops = backend_ops(backend)
    y, mean, rstd = ops.layer_norm_fwd(x, w, b, 1e-5)
    assert y.shape == (0, 64) and mean.shape == (0,) and rstd.shape == (0,)
    dx, dw, db = ops.layer_norm_bwd(torch.empty_like(x), x, w, mean, rstd)
    assert dx.shape == (0, 64) and torch.equal(dw, torch.zeros_like(w)) and torch.equal(db, torch.zeros_like(w))


@pytest.mark.parametrize("backend", BACKENDS)
def test_nan_and_inf_propagate_like_the_reference(backend):
    x, w, b = make_inputs(4, 32, torch.float32, torch.float32)
    x[1, 3] = float("nan")
    x[2, 5] = float("inf")
    for op in ("layer_norm", "rms_norm"):
        check_forward(backend, op, x, w, b if op == "layer_norm" else None)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("n", [100, 1024])  # a ragged row, and whole tiles (EVEN_N)
def test_masked_backward_multiplies_by_the_mask(backend, n):
    """The masked backward is the backward of ``dy * mask``: an infinite dy where the mask is 0 still gives NaN (inf
    times 0), in that row's dx and in that column's dW, as the reference gives. A kernel that selected 0 there
    instead would hide the overflow. (cuDNN's graph is ``mul(dy, mask)``; its case here has not yet run on a GPU.)"""
    skip_unsupported(backend, "layer_norm_clamped_relu", n, torch.float32, torch.float32)
    x, w, b = make_inputs(4, n, torch.float32, torch.float32)
    _, mean, rstd, mask = reference.layer_norm_clamped_relu_fwd(x, w, b, 1e-5, LOWER, UPPER)
    keep = bitmask.unpack(mask, n)
    row, col = 2, int((~keep[2]).nonzero()[0])  # a column the clamp cut off
    dy = torch.randn(x.shape, device=x.device)
    dy[row, col] = float("inf")
    got = backend_ops(backend).layer_norm_clamped_relu_bwd(dy, mask, x, w, mean, rstd)
    want = reference.layer_norm_clamped_relu_bwd(dy, mask, x, w, mean, rstd)
    assert got[0][row].isnan().all() and got[1][col].isnan()
    for name, g, e in zip(["dx", "dw", "db"], got, want):
        compare(g, e, f"{backend} {name}")


# bounds on a value of every dtype, bounds no 16-bit dtype holds (0.1, 6.0001), bounds closer than a bf16 step
# the default (0, 6) and (0.1, 6.0001), (1.0, 1.001) give keep_from > 0: the kernel's test on the float's bits
CLAMP_BOUNDS = [(-0.25, 1.0), (0.1, 6.0001), (1.0, 1.001), (-math.inf, 0.5), (0.0, 6.0)]


def values_around_mask_thresholds(lower, upper, out_dtype):
    """float32 y at the Triton forward's mask thresholds, the 40 float32 values each side of them and of the
    bounds, +-inf, +-0 and NaN of either sign."""
    from normkit.triton.ops import mask_thresholds

    around = [v for v in (*mask_thresholds(lower, upper, out_dtype), lower, upper) if math.isfinite(v)]
    bits = torch.tensor(around, dtype=torch.float32).view(torch.int32)
    steps = torch.arange(-40, 41, dtype=torch.int32)
    near = (bits[:, None] + steps[None, :]).view(torch.float32).flatten()  # same-sign neighbours of each value
    negative_nan = torch.tensor([-0x400000], dtype=torch.int32).view(torch.float32)  # bits 0xFFC00000
    return torch.cat([near, torch.tensor([-math.inf, math.inf, math.nan, 0.0, -0.0]), negative_nan])


@pytest.mark.parametrize("out_dtype", [torch.float32, torch.float16, torch.bfloat16], ids=["fp32", "fp16", "bf16"])
@pytest.mark.parametrize("bounds", CLAMP_BOUNDS, ids=str)
def test_mask_thresholds_give_the_references_bits(out_dtype, bounds):
    """The Triton forward sets a bit where ``keep_from <= y <= keep_to`` for its float32 y: exactly the bits of
    ``reference.clamp_and_mask`` at and around the thresholds."""
    from normkit.triton.ops import mask_thresholds

    lower, upper = bounds
    keep_from, keep_to = mask_thresholds(lower, upper, out_dtype)
    y = values_around_mask_thresholds(lower, upper, out_dtype)
    want = reference.clamp_and_mask(y, lower, upper, out_dtype)[1]
    got = (y >= keep_from) & (y <= keep_to)
    assert torch.equal(got, want), f"differs at y = {y[got != want].tolist()[:5]}"
    assert want.any() or (lower, upper) == (1.0, 1.001)  # the values tried reach both sides of each threshold


@pytest.mark.parametrize("layout", ["2d", "3d"])
@pytest.mark.parametrize("x_dtype", [torch.float32, torch.float16, torch.bfloat16], ids=["fp32", "fp16", "bf16"])
@pytest.mark.parametrize("bounds", CLAMP_BOUNDS, ids=str)
def test_forward_mask_bits_at_the_thresholds(x_dtype, bounds, layout):
    """The kernel's comparison itself: a zero weight makes y the float32 bias exactly, so the bias sets y on and
    around each threshold (and at +-inf, NaN and +-0); every bit and every stored value must be the reference's."""
    from normkit import triton as nt

    lower, upper = bounds
    b = values_around_mask_thresholds(lower, upper, x_dtype).to(DEVICE)
    x = torch.randn(3, b.numel(), device=DEVICE).to(x_dtype)
    w = torch.zeros_like(b)
    with tile_layout(layout):
        out, _, _, mask = nt.layer_norm_clamped_relu_fwd(x, w, b, 1e-5, lower, upper)
    want_out, want = reference.clamp_and_mask(b.expand(3, -1), lower, upper, x_dtype)
    assert torch.equal(bitmask.unpack(mask, b.numel()), want)
    if HAS_GPU or x_dtype != torch.bfloat16:  # the interpreter truncates float32 to bfloat16 (a GPU rounds)
        # 16-bit out is clamped as stored, with the bounds rounded (norm_fwd._clamp_16): the reference's values
        torch.testing.assert_close(out, want_out, rtol=0, atol=0, equal_nan=True)


@pytest.mark.parametrize("layout", ["2d", "3d"])
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtypes", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("bounds", CLAMP_BOUNDS[:2], ids=str)
def test_mask_describes_the_stored_output(backend, dtypes, bounds, layout):
    """Bit = ``lower < out < upper`` for the kernel's own stored ``out``, exactly (cuDNN's rule), with the norm's
    output crowded within a few steps of its dtype around both bounds: weight a few steps wide, bias on a bound."""
    skip_unsupported(backend, "layer_norm_clamped_relu", 1024, *dtypes)
    lower, upper = bounds
    x_dtype, w_dtype = dtypes
    if backend == "triton" and not HAS_GPU and x_dtype == torch.bfloat16:
        pytest.skip("Triton's CPU interpreter truncates float32 to bfloat16 (a GPU rounds to nearest even), so its "
                    "stored out may sit a step below the value the mask describes")  # fmt: skip
    n = 1024
    x = torch.randn(6, n, device=DEVICE).to(x_dtype)
    step = torch.finfo(x_dtype).eps * max(abs(lower), abs(upper))
    w = torch.full((n,), 3 * step, device=DEVICE).to(w_dtype)
    b = torch.tensor([lower, upper], device=DEVICE).repeat_interleave(n // 2).to(w_dtype)
    if backend != "triton" and layout == "3d":
        pytest.skip("a layout of the Triton kernel")
    with tile_layout(layout):
        out, _, _, mask = backend_ops(backend).layer_norm_clamped_relu_fwd(x, w, b, 1e-5, lower, upper)
    stored = out.float()
    for half, bound in ((stored[:, : n // 2], lower), (stored[:, n // 2 :], upper)):  # crowded as intended
        assert ((half - bound).abs() <= 4 * step).float().mean() > 0.5
    want = (stored > lower) & (stored < upper)  # all ones in bf16 for (0.1, 6.0001): round(0.1) > 0.1, 6.0 < 6.0001
    assert torch.equal(bitmask.unpack(mask, n), want)


@pytest.mark.gpu
def test_more_than_2_to_the_31_elements():
    """64-bit offsets: one op over M * N >= 2**31 elements."""
    from normkit import triton as nt

    m, n = 32768 + 1, 65536
    x = torch.randn(m, n, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(n, device="cuda")
    y, rstd = nt.rms_norm_fwd(x, w, None, 1e-5)
    assert x.numel() >= 2**31
    rows = torch.tensor([0, m // 2, m - 1], device="cuda")
    y_ref, rstd_ref = reference.rms_norm_fwd(x[rows], w, None, 1e-5)
    compare(y[rows], y_ref, "y")
    compare(rstd[rows], rstd_ref, "rstd")


@pytest.mark.gpu
@pytest.mark.parametrize("n", [1024, 12288])  # one-tile rows (partials in registers) and chunked rows (in memory)
def test_weight_gradients_are_bit_identical_over_20_runs(n):
    """The persistent grid's partials are summed in a fixed order: no run-to-run change in any bit."""
    from normkit import triton as nt

    x, w, b = make_inputs(8192, n, torch.bfloat16, torch.float32)
    _, mean, rstd = reference.layer_norm_fwd(x, w, b, 1e-5)
    dy = torch.randn(x.shape, device=x.device).to(x.dtype)
    first = nt.layer_norm_bwd(dy, x, w, mean, rstd)
    for _ in range(19):
        again = nt.layer_norm_bwd(dy, x, w, mean, rstd)
        assert all(torch.equal(a, f) for a, f in zip(again, first))


@pytest.mark.gpu
@pytest.mark.parametrize("op", list(FORWARDS))
@pytest.mark.parametrize(
    "part_n, per_thread, block_m, ahead", [(8192, 32, 1, False), (4096, 16, 2, False), (2048, 16, 1, False),
    (2048, 32, 1, True), (1024, 32, 2, True)],
)  # fmt: skip
def test_split_rows_on_the_gpu(op, part_n, per_thread, block_m, ahead):
    """The split-row backward compiled (its programs wait for each other's sums, none stands in), 4100 rows of
    16388 columns (a last part of 4 columns), against the reference, and bit-identical over 5 runs; with the sums
    published a step ahead (``AHEAD``) too."""
    from normkit.triton import config

    n = 16388
    x, w, b = make_inputs(4100, n, torch.bfloat16, torch.float32, bias=op != "rms_norm")
    cfg = config.split_rows_config(n, part_n=part_n, per_thread=per_thread, block_m=block_m, ahead=ahead)
    with config.forced(bwd=cfg):
        check_backward("triton", op, x, w, b, zero_centered_gamma=True, has_dbias=op != "rms_norm")
        dy = torch.randn(x.shape, device=x.device).to(x.dtype)
        _, mean, rstd, mask = reference.layer_norm_clamped_relu_fwd(x, w, b, 1e-5, LOWER, UPPER)
        ops = backend_ops("triton")
        runs = []
        for _ in range(5):
            if op == "rms_norm":
                runs.append(ops.rms_norm_bwd(dy, x, w, rstd, False, False)[:2])
            elif op == "layer_norm":
                runs.append(ops.layer_norm_bwd(dy, x, w, mean, rstd, False, True))
            else:
                runs.append(ops.layer_norm_clamped_relu_bwd(dy, mask, x, w, mean, rstd, False, True))
    for again in runs[1:]:
        assert all(torch.equal(a, f) for a, f in zip(again, runs[0]))


@pytest.mark.gpu
@pytest.mark.parametrize("warps_per_sm", [8, 16])
@pytest.mark.parametrize("ahead", [False, True])
def test_split_rows_of_two_row_blocks_read_every_copy_of_the_sums(warps_per_sm, ahead):
    """Blocks of 2 rows in parts of 1024 at 16 elements a thread (4 warps): warps 2-3 hold the [2, 32] tile of the
    other parts' sums again, and the wait's test sees warps 0-1's copy only. A copy that still held SENTINEL where its
    wait ended left NaN in that warp's columns (GPU run 381: 3072 and 6144 NaN of dx at 128 x 32768 in step) until
    ``_row_means`` read such slots once more after its wait. Three launches each, against the reference: all 4 cases
    failed with the code before (4ca98d5) and passed with the fix (GPU run 385)."""
    from normkit.triton import config

    n = 32768
    x, w, b = make_inputs(128, n, torch.bfloat16, torch.float32)
    cfg = config.split_rows_config(n, part_n=1024, per_thread=16, block_m=2, warps_per_sm=warps_per_sm, ahead=ahead)
    assert (cfg.block_m, cfg.num_warps, cfg.parts) == (2, 4, 32)
    with config.forced(bwd=cfg):
        for _ in range(3):
            check_backward("triton", "layer_norm", x, w, b)


def test_tuner_reports_the_launch_as_the_call_takes_it(monkeypatch):
    """The tuner's heuristic row (``bench.tune.heuristic_config``) on a GPU is the backward's launch as the call takes
    it, the staged kernel's and the TMA's included (``ops._backward_plan``), not the pointer kernel's launch the rules
    would give without them; and ``ops`` hands the rules x's dtype: RMSNorm's 4096 x 10240 fp16 on the pointer kernel's
    head and tail tiles, bf16 staged (round 84); the masked backward's staged kernels (round 110: the tuner asked the
    rules without them for it, though its call has taken the split one since round 91). A Hopper GPU of 132 SMs stood
    in for on the CPU."""
    pytest.importorskip("normkit.triton.norm_bwd_staged", reason="the staged kernel needs Triton 3.6")
    from normkit.bench.cases import Case
    from normkit.bench.tune import heuristic_config
    from normkit.triton import config, ops
    from normkit.triton.config import LaunchConfig

    for name, value in (("is_available", lambda: True), ("current_device", lambda: 0)):
        monkeypatch.setattr(torch.cuda, name, value)
    for name in ("_staged_capable", "_tma_capable", "_hopper_or_newer"):
        monkeypatch.setattr(ops, name, lambda device: True)
    monkeypatch.setattr(config, "multiprocessor_count", lambda device: 132)
    monkeypatch.setattr(config, "slower_dram", lambda device: False)  # an H200's DRAM (the backward's plan asks)
    ops._backward_plan.cache_clear()  # plans of device 0 made here must not outlive the stand-in
    try:
        launched = {(n, x): heuristic_config(Case("rms_bwd", 4096, n, x, x), False) for n in (10240, 13312) for x in
                    ("fp16", "bf16")}  # fmt: skip
        pointer = heuristic_config(Case("rms_bwd", 4096, 13312, "fp16", "fp16"), False, as_launched=False)
        tma = heuristic_config(Case("rms_bwd", 32768, 9216, "bf16", "fp32"), False)
        masked = [
            heuristic_config(Case("ln_relu_bwd", m, n, "fp16", "fp16"), False)
            for m, n in ((4096, 6144), (32768, 32768))
        ]
    finally:
        ops._backward_plan.cache_clear()
    assert launched[13312, "fp16"].staged and launched[13312, "bf16"].staged and launched[10240, "bf16"].staged
    assert launched[10240, "fp16"] == LaunchConfig(1, 8192, 1, 8, 1, tail_n=2048)
    assert not pointer.staged and pointer.parts == 13
    assert tma.tma and tma.tail_n == 2048
    # the masked backward's staged kernels too: the whole-row one at 6144 (round 110), the split one at 32768
    assert masked[0] == LaunchConfig(1, 6144, 1, 8, 1, staged=True) and masked[1].staged and masked[1].parts > 1


def test_tuner_takes_sweeps_and_custom_shapes():
    """``python -m normkit.bench.tune``'s cases (``tune_cases``): a sweep's shapes (``--N`` keeps some of them), custom
    shapes ``--M`` x ``--N`` in ``--dtype`` / ``--wdtype`` as ``python -m normkit.bench`` takes them, each shape once;
    without either, or ``--M`` without ``--N``, or a size below 1, it exits naming what to give (before it asks for a
    GPU)."""
    import argparse

    from normkit.bench.cases import Case
    from normkit.bench.tune import main, tune_cases

    def args(**given):
        defaults = dict(sweep=None, N=None, M=None, dtype="bf16", wdtype=None, ops=["rms_bias_bwd"])
        return argparse.Namespace(**(defaults | given))

    assert tune_cases(args(sweep=["genai"], N=[2048])) == [Case("rms_bias_bwd", 32768, 2048, "bf16", "fp32")]
    custom = tune_cases(args(M=32768, N=[2048, 4096], ops=["rms_bias_bwd", "rms_bwd"]))
    assert custom == [Case(op, 32768, n, "bf16", "bf16") for n in (2048, 4096) for op in ("rms_bias_bwd", "rms_bwd")]
    both = tune_cases(args(sweep=["tutorial"], M=4096, N=[9216], dtype="fp16", wdtype="fp16"))
    assert both == [Case("rms_bias_bwd", 4096, 9216, "fp16", "fp16")]  # the tutorial's own shape, once
    assert tune_cases(args(M=8, N=[4096], dtype="fp16", wdtype="fp32"))[0].w_dtype == "fp32"
    for bad, message in ((args(), "give --sweep NAME or --M and --N"), (args(M=4096), "--M needs --N"),
                         (args(M=0, N=[1024]), "--M and --N must be positive")):  # fmt: skip
        with pytest.raises(SystemExit, match=message):
            tune_cases(bad)
    with pytest.raises(SystemExit, match="--M needs --N"):
        main(["--M", "4096", "--ops", "rms_bwd"])


def test_tuner_grid_contains_the_heuristics_choice():
    """`python -m normkit.bench.tune` times the heuristic next to its grid; every shape of the benchmark sweeps must
    find the heuristic's config in that grid, or the tuner could not show that it is the fastest one: on the GPUs of
    either DRAM (``config.slower_dram``). The pointer kernels' launches (``as_launched=False``): the TMA's and the
    staged kernel's are timed as the call's own, not in the grid."""
    from normkit.bench.cases import SWEEPS, Case
    from normkit.bench.tune import candidates, heuristic_config

    for m, n, x_dtype, w_dtype in {shape for sweep in SWEEPS.values() for shape in sweep}:
        for op in ("ln_fwd", "rms_fwd", "ln_bwd", "rms_bwd", "ln_relu_bwd", "ln_relu_fwd"):
            case = Case(op, m, n, x_dtype, w_dtype)
            for slower_dram in (False, True):
                chosen = heuristic_config(case, slower_dram, as_launched=False)
                assert chosen in candidates(case), (op, m, n, slower_dram, chosen)


def test_tuner_whole_rows_grid():
    """``python -m normkit.bench.tune --whole-rows`` times the grid's launches of one program a row block only: no
    chunks, no split rows; every such launch of the full grid, the heuristic's pointer launch among them where it is
    one, and far fewer kernels to compile at 8192 columns (round 122: the full grid's compiles outlasted a GPU call)."""
    from normkit.bench.cases import Case
    from normkit.bench.tune import _compile_key, candidates, heuristic_config, main

    shapes = (("ln_bwd", 4096), ("ln_bwd", 8192), ("rms_bias_bwd", 8192), ("ln_relu_bwd", 2048), ("ln_fwd", 8192))
    for op, n in shapes + (("ln_bwd", 32768),):  # 32768: split rows only, so no whole-row launch
        case = Case(op, 32768, n, "bf16", "bf16")
        full, whole = candidates(case), candidates(case, whole_rows=True)
        assert whole == [cfg for cfg in full if cfg.num_chunks == 1 and cfg.parts == 1], (op, n)
        chosen = heuristic_config(case, slower_dram=False, as_launched=False)
        assert (chosen in whole) == (chosen.num_chunks == 1 and chosen.parts == 1), (op, n, chosen)
        if n == 8192:
            assert len({_compile_key(c) for c in whole}) < len({_compile_key(c) for c in full}) // 2, (op, n)
        if n == 32768:
            assert full and not whole, (op, n)
    with pytest.raises(SystemExit, match="--M needs --N"):
        main(["--M", "4096", "--ops", "ln_bwd", "--whole-rows"])  # the flag parses; the shape's check comes first


def compiled_on_the_cpu(script: str, path, cases: list, timeout: int) -> list:
    """The JSON lines a compile script (``python -c script path cases``) printed, run with Triton's interpreter off
    (which cannot compile for a GPU: ``triton.compile`` for sm_90 needs no GPU); its stderr where it failed."""
    import json
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    done = subprocess.run(
        [sys.executable, "-c", script, str(path), json.dumps(cases)], env=env, capture_output=True, text=True,
        timeout=timeout,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return [json.loads(line) for line in done.stdout.splitlines()]


SM90_PRELUDE = """
import importlib, json, os, pathlib, re, subprocess, sys, tempfile, types

import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

for name, path in (("normkit", "normkit"), ("normkit.triton", "normkit/triton")):  # the package without its
    package = types.ModuleType(name)  # __init__, which asks for a GPU or the interpreter
    package.__path__ = [str(pathlib.Path(sys.argv[1]) / path)]
    sys.modules[name] = package
CUOBJDUMP = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "cuobjdump")


def compile_sm90(kernel, values, warps, pointers, aligned_names, floats=()):
    \"\"\"``kernel`` compiled for sm_90 with these constexprs: the pointers of ``pointers``' types, ``floats``
    float32, the other runtime arguments i32, ``aligned_names`` specialized as multiples of 16.\"\"\"
    signature = {name: pointers.get(name, "i32") for name in kernel.arg_names if name not in values}
    signature |= {name: "fp32" for name in floats} | {name: "constexpr" for name in values}
    aligned = [i for i, name in enumerate(kernel.arg_names) if name in aligned_names]
    source = ASTSource(kernel, signature, values, {(i,): [["tt.divisibility", 16]] for i in aligned})
    return triton.compile(source, target=GPUTarget("cuda", 90, 32), options={"num_warps": warps})


def cuobjdump(compiled, flag):
    \"\"\"What the ``cuobjdump`` Triton bundles prints with ``flag`` (``-res-usage``, ``-sass``) for a compiled
    kernel's cubin.\"\"\"
    with tempfile.NamedTemporaryFile(suffix=".cubin") as cubin:
        cubin.write(compiled.asm["cubin"])
        cubin.flush()
        return subprocess.run([CUOBJDUMP, flag, cubin.name], capture_output=True, text=True).stdout
"""

NORM_BWD_PTX = (
    SM90_PRELUDE
    + """
norm_bwd = importlib.import_module("normkit.triton.norm_bwd")
pointers = dict(DY="*fp16", X="*fp16", W="*fp16", MEAN="*fp32", RSTD="*fp32", MASK="*u8", DX="*fp16", PARTIAL="*fp32",
                SUMS="*i64")


def row_values(block_n, has_mask=True, even=True, tail_n=0, evict="evict_first", x_evict="evict_first"):
    \"\"\"``norm_bwd_kernel``'s constexprs for one-row programs of LayerNorm with dB over one tile of block_n columns
    (and a tail of tail_n), the L2 policies of its rows' loads as given.\"\"\"
    return dict(IS_RMS=False, ZERO_CENTERED=False, HAS_MASK=has_mask, HAS_DBIAS=True, ACC=tl.float32, BLOCK_M=1,
                BLOCK_N=block_n, NUM_CHUNKS=1, CHUNKS_P2=1, EVEN_N=even, TAIL_N=tail_n, PDL_TRIGGER=False, ALIGN=1,
                ROW_EVICT=evict, ROW_X_EVICT=x_evict)


def compiled(kernel, values, warps, aligned_too=()):
    \"\"\"``kernel`` compiled for sm_90 with these constexprs (``pointers``' types; the pointers, N, the row strides
    of dy and x and ``aligned_too`` specialized as multiples of 16, as in a call of whole 16-byte rows).\"\"\"
    return compile_sm90(kernel, values, warps, pointers, (*pointers, "N", "stride_dy", "stride_x", *aligned_too))


def ptx_of(kernel, values, warps):
    \"\"\"``kernel``'s PTX for sm_90 with these constexprs (``compiled``).\"\"\"
    return compiled(kernel, values, warps).asm["ptx"]


def loads_of(kernel, values, warps):
    \"\"\"The global loads of ``kernel``'s PTX for sm_90 with these constexprs, and the L2 policies it creates.\"\"\"
    ptx = ptx_of(kernel, values, warps)
    policies = sorted(set(re.findall(r"createpolicy\\.fractional\\.L2::(\\w+)", ptx)))
    return re.findall(r"ld\\.global[^;]*;", ptx), policies
"""
)

ROW_EVICT_PTX = (
    NORM_BWD_PTX
    + """
for block_n, tail_n, has_mask, evict, x_evict in json.loads(sys.argv[2]):
    values = row_values(block_n, has_mask, tail_n=tail_n, evict=evict, x_evict=x_evict)
    loads, policies = loads_of(norm_bwd.norm_bwd_kernel, values, 4)
    print(json.dumps({
        "hinted": [load.split()[0] for load in loads if "L2::cache_hint" in load],
        "plain": [load.split()[0] for load in loads if "L2::cache_hint" not in load],
        "policies": policies,
    }))
"""
)


def test_backward_reads_its_rows_evict_first_on_hopper():
    """``norm_bwd_kernel`` compiled for sm_90 on any machine (Triton's interpreter off): with ROW_EVICT and
    ROW_X_EVICT "evict_first" dy's and x's loads (and the clamped-ReLU mask's bytes) carry that L2 policy and stay
    16-byte vectors, the weights, mean and rstd keep the default; with ROW_EVICT alone (36-64 MiB of x,
    ``config.bwd_row_evict``) dy's and the mask's do, half the vectors; with neither (larger calls) no load carries a
    policy. A head + tail tile (4096 + 1024: each tile's loads, the first row block's and the next's), a masked tile
    of 2048, a tile of 1024."""
    from pathlib import Path

    first = "evict_first"
    cases = [(4096, 1024, False, first, first), (2048, 0, True, first, first), (1024, 0, False, first, first)]
    cases += [(4096, 1024, False, first, ""), (2048, 0, True, first, "")]
    cases += [(4096, 1024, False, "", ""), (2048, 0, True, "", "")]
    compiled = compiled_on_the_cpu(ROW_EVICT_PTX, Path(__file__).resolve().parents[1], cases, timeout=300)
    assert len(compiled) == len(cases)
    vectors_of = {}
    for (block_n, tail_n, has_mask, evict, x_evict), c in zip(cases, compiled):
        if not evict:
            assert not c["hinted"] and not c["policies"], c
            continue
        vectors = [load for load in c["hinted"] if load.endswith(".v4.b32")]
        vectors_of[block_n, tail_n, has_mask, x_evict] = len(vectors)
        # a 16-byte vector a thread of dy (and x), their first row block's and the next's (one tile, or two)
        assert len(vectors) >= (2 if x_evict else 1) * 2 * (2 if tail_n else 1), (block_n, c)
        mask_bytes = [load for load in c["hinted"] if load.endswith(".b8")]
        assert len(vectors) + len(mask_bytes) == len(c["hinted"]) and bool(mask_bytes) == has_mask, c
        assert c["policies"] == ["evict_first"], c
        assert c["plain"], c  # the weights, mean and rstd (and x without ROW_X_EVICT): no policy
    for block_n, tail_n, has_mask in ((4096, 1024, False), (2048, 0, True)):  # dy's alone: half the vectors
        assert 2 * vectors_of[block_n, tail_n, has_mask, ""] == vectors_of[block_n, tail_n, has_mask, first]


def test_backward_row_evict_rule():
    """``config.bwd_row_evict``: dy's and x's "evict_first" up to 36 MiB of x (4096 x 4608 fp16, 32768 x 512 bf16),
    dy's alone up to 64 MiB (4096 x 5120 / 8192 fp16, 32768 x 1024 bf16), the default above (4096 x 10240 fp16,
    32768 x 4096 fp32 x)."""
    from normkit.triton import config

    both, dy_alone, neither = ("evict_first", "evict_first"), ("evict_first", ""), ("", "")
    assert config.bwd_row_evict(4096, 4608, 2) == config.bwd_row_evict(32768, 512, 2) == both
    assert config.bwd_row_evict(1, 1, 4) == both
    assert config.bwd_row_evict(4096, 5120, 2) == config.bwd_row_evict(32768, 1024, 2) == dy_alone
    assert config.bwd_row_evict(4096, 8192, 2) == dy_alone
    assert config.bwd_row_evict(4096, 10240, 2) == config.bwd_row_evict(32768, 4096, 4) == neither


def test_backward_plan_takes_the_row_evict_rule():
    """The whole-row backward's plan (``ops._backward_plan``) passes ``config.bwd_row_evict`` as ``ROW_EVICT`` and
    ``ROW_X_EVICT``: RMSNorm's 4096 x 1024 / 4608 fp16 and 32768 x 512 bf16 both "evict_first", 4096 x 5120 fp16 and
    32768 x 1024 bf16 dy's alone, 4096 x 10240 fp16 neither, and the masked backward's by the same bounds (4096 x
    1024 fp16 both, 4096 x 8192 dy's and the mask's alone)."""
    from normkit.triton import config, ops

    at = ops.NORM_BWD.constexpr_names.index("ROW_EVICT")
    x_at = ops.NORM_BWD.constexpr_names.index("ROW_X_EVICT")
    first = "evict_first"
    for m, n, dtype, evict in (
        (4096, 1024, torch.float16, (first, first)), (4096, 4608, torch.float16, (first, first)),
        (32768, 512, torch.bfloat16, (first, first)), (4096, 5120, torch.float16, (first, "")),
        (32768, 1024, torch.bfloat16, (first, "")), (4096, 10240, torch.float16, ("", "")),
    ):  # fmt: skip
        plan = ops._backward_plan(m, n, dtype, dtype, False, False, True, False, -1, False, config.generation, 1, False)
        assert plan.programs and not plan.cfg.tma and plan.cfg.parts == 1, (m, n, plan.cfg)
        assert (plan.values[at], plan.values[x_at]) == evict == config.bwd_row_evict(m, n, dtype.itemsize), (m, n)
    for n, evict in ((1024, (first, first)), (8192, (first, ""))):
        masked = ops._backward_plan(4096, n, torch.float16, torch.float16, True, True, False, False, -1, False,
                                    config.generation, 1, False)  # fmt: skip
        assert masked.programs and masked.cfg.parts == 1, (n, masked.cfg)
        assert (masked.values[at], masked.values[x_at]) == evict, n


SPLIT_ROWS_PTX = (
    NORM_BWD_PTX
    + """
for is_rms, has_mask, ahead in json.loads(sys.argv[2]):
    values = dict(IS_RMS=is_rms, ZERO_CENTERED=False, HAS_MASK=has_mask, HAS_DBIAS=not is_rms, ACC=tl.float32,
                  BLOCK_M=1, BLOCK_N=4096, PARTS=2, PARTS_P2=2, MAX_POLLS=1000, STAND_IN=False, EVEN_N=True,
                  AHEAD=ahead, PDL_WAIT=False, PDL_TRIGGER=False, ALIGN=1)
    loads, policies = loads_of(norm_bwd.split_rows_kernel, values, 8)
    print(json.dumps({"loads": len(loads), "hinted": sum("L2::cache_hint" in load for load in loads)}))
"""
)


MASK_BITS_PTX = (
    NORM_BWD_PTX
    + """
for mask_type, even in json.loads(sys.argv[2]):
    pointers["MASK"] = mask_type
    ptx = ptx_of(norm_bwd.norm_bwd_kernel, row_values(4096, even=even), 4)
    bit_tests = re.findall(r"and\\.b32\\s+%r\\d+, %r\\d+, (1|2|4|8|16|32|64|128);", ptx)
    print(json.dumps({"bit_tests": len(bit_tests), "and_of_registers": len(re.findall(r"and\\.b32[^;]*%r\\d+;", ptx))}))
"""
)


def test_masked_backward_tests_mask_bits_against_constants_on_hopper():
    """``norm_bwd_kernel``'s masked backward compiled for sm_90 on any machine (Triton's interpreter off), its mask as
    32-bit words (``MASK`` int32) and as bytes, a whole and a ragged row of 4096 in 4 warps: a thread's 32 columns'
    bits are tested against constants (an ``and.b32`` with 1, 2, ... 128), and no ``and`` of two registers is left.
    Tested in the word, where a thread's bits are ``1 << (8 * place + k)`` by its byte's place (round 108's form), they
    were 32 ``and``s of two registers and 8 registers a thread held the bits."""
    from pathlib import Path

    cases = [("*i32", True), ("*i32", False), ("*u8", True)]
    compiled = compiled_on_the_cpu(MASK_BITS_PTX, Path(__file__).resolve().parents[1], cases, timeout=300)
    assert len(compiled) == len(cases)
    for (mask_type, even), c in zip(cases, compiled):
        assert c["and_of_registers"] == 0, (mask_type, even, c)
        if mask_type == "*i32":
            assert c["bit_tests"] >= 32, (mask_type, even, c)


MASKED_ROW_USAGE = (
    NORM_BWD_PTX
    + """
for mask_type, block_n, warps, even in json.loads(sys.argv[2]):
    pointers["MASK"] = mask_type
    values = row_values(block_n, even=even)
    kernel = compiled(norm_bwd.norm_bwd_kernel, values, warps, aligned_too=("stride_dx", "stride_mask"))
    usage, sass = cuobjdump(kernel, "-res-usage"), cuobjdump(kernel, "-sass")
    print(json.dumps({"stack": [int(k) for k in re.findall(r"STACK:(\\d+)", usage)],
                      "moves": len(re.findall(r"\\bMOV R\\d+, R\\d+ ;", sass))}))
"""
)


def test_masked_backward_holds_fp16_weights_without_spills_on_hopper():
    """The masked one-row programs of 2048-8192 columns with fp16 x and weights, compiled for sm_90 on any machine
    (Triton's interpreter off; the stack read by the ``cuobjdump`` Triton bundles): with the mask as 32-bit words they
    hold the weights in float32 across the loop (``reload_w`` off since round 109) and spill nothing; with its bytes
    they load them again at every row block and spill nothing either (held there: 16 bytes of stack at 4096)."""
    from pathlib import Path

    cases = [("*i32", 2048, 2, True), ("*i32", 4096, 4, True), ("*i32", 8192, 8, True), ("*u8", 4096, 4, True)]
    compiled = compiled_on_the_cpu(MASKED_ROW_USAGE, Path(__file__).resolve().parents[1], cases, timeout=400)
    assert len(compiled) == len(cases)
    for case, c in zip(cases, compiled):
        assert c["stack"] == [0], (case, c)


def test_masked_backward_of_8192_columns_masks_before_its_next_loads_on_hopper():
    """The masked one-row programs of 8192 columns that read the mask as words mask dy and widen x before the next
    row block's loads go out (``mask_first`` in ``norm_bwd_kernel``), so those loads reuse the registers the raw rows
    held: compiled for sm_90 on any machine, whole and ragged (7168) rows, their SASS moves at most a few registers
    into others (3; 36 in the order before) and spills nothing. A program of 4096 columns keeps the order (its loads
    go out first, which ran faster there) and so its moves: 32 a row block at least, or the contrast is gone."""
    from pathlib import Path

    cases = [("*i32", 8192, 8, True), ("*i32", 8192, 8, False), ("*i32", 4096, 4, True)]
    compiled = compiled_on_the_cpu(MASKED_ROW_USAGE, Path(__file__).resolve().parents[1], cases, timeout=400)
    assert len(compiled) == len(cases)
    for case, c in zip(cases[:2], compiled):
        assert c["stack"] == [0] and c["moves"] <= 8, (case, c)
    assert compiled[2]["moves"] >= 32, compiled[2]


KERNEL_USAGE = (
    SM90_PRELUDE
    + """
for module, name, pointers, aligned_names, floats, values, warps in json.loads(sys.argv[2]):
    kernel = getattr(importlib.import_module(module), name)
    values = {key: tl.float32 if value == "fp32" else value for key, value in values.items()}
    compiled = compile_sm90(kernel, values, warps, pointers, aligned_names, floats)
    usage = cuobjdump(compiled, "-res-usage")
    print(json.dumps({"registers": int(re.search(r"REG:(\\d+)", usage).group(1)), "shared": compiled.metadata.shared,
                      "stack": [int(k) for k in re.findall(r"STACK:(\\d+)", usage)]}))
"""
)


HOPPER_SM = (65536, 2048, 228 * 1024)  # an H100's or H200's SM: registers, threads, shared memory bytes


POINTER_TYPES = {torch.float32: "*fp32", torch.float16: "*fp16", torch.bfloat16: "*bf16"}


def _usage_values(launcher, plan) -> dict:
    """A plan's constexprs by name for ``KERNEL_USAGE``'s JSON (ACC, tl.float32, by its name "fp32")."""
    named = zip(launcher.constexpr_names, plan.values)
    return {name: "fp32" if str(value) == "fp32" else value for name, value in named}


def fwd_usage_case(x_dtype: torch.dtype, w_dtype: torch.dtype, plan) -> tuple:
    """A case of ``KERNEL_USAGE`` (registers, shared memory and stack of a kernel compiled for sm_90):
    ``norm_fwd_kernel`` with the constexprs and warps of ``plan`` (``ops._forward_plan``'s), x and y of ``x_dtype``,
    the weights and bias of ``w_dtype``, the pointers, N and the row strides specialized as multiples of 16, as in a
    call of whole 16-byte rows."""
    from normkit.triton import ops

    x_type, w_type = POINTER_TYPES[x_dtype], POINTER_TYPES[w_dtype]
    pointers = dict(X=x_type, Y=x_type, W=w_type, B=w_type, MEAN="*fp32", RSTD="*fp32", MASK="*u8")
    aligned_names = (*pointers, "N", "stride_x", "stride_y")
    floats = ("eps", "lower", "upper")
    values = _usage_values(ops.NORM_FWD, plan)
    return "normkit.triton.norm_fwd", "norm_fwd_kernel", pointers, aligned_names, floats, values, plan.num_warps


def bwd_usage_case(x_dtype: torch.dtype, w_dtype: torch.dtype, plan) -> tuple:
    """``fwd_usage_case``'s for ``norm_bwd_kernel`` and ``ops._backward_plan``'s pointer-kernel ``plan``: dy, x and dx
    of ``x_dtype``, the weights of ``w_dtype``."""
    from normkit.triton import ops

    x_type, w_type = POINTER_TYPES[x_dtype], POINTER_TYPES[w_dtype]
    pointers = dict(DY=x_type, X=x_type, W=w_type, MEAN="*fp32", RSTD="*fp32", MASK="*u8", DX=x_type, PARTIAL="*fp32")
    aligned_names = (*pointers, "N", "stride_dy", "stride_x", "stride_dx")
    values = _usage_values(ops.NORM_BWD, plan)
    return "normkit.triton.norm_bwd", "norm_bwd_kernel", pointers, aligned_names, (), values, plan.cfg.num_warps


def test_slower_dram_rms_forward_head_and_tail_fits_two_programs_a_sm_on_hopper(dram):
    """Rounds 127-128's launches (a head tile and a tail tile of 8192) as ``ops`` plans them on slower DRAM (forced
    where rounds 133-134 read the rows in chunks at 32 warps instead, whose registers are read too), compiled
    for sm_90 on any machine (Triton's interpreter off; the registers read by the ``cuobjdump`` Triton bundles):
    without a bias, at 32 warps (1024 threads), the training call and the inference call hold at most 32 registers a
    thread and spill nothing, so two programs fill a SM's 64 warps and 65536 registers, whatever the dtypes, at 16384
    and 13000 columns and with zero-centered weights. With a bias at 32 warps (forced: the rule gives it 16) it holds
    more, so one program a SM, the likely cause of that launch's x0.743 against the chunks (GPU run 888; without a
    bias, two a SM, x1.03); at the rule's 16 warps it holds at most 64, two programs a SM again (x1.030, run 894)."""
    from pathlib import Path

    from normkit.triton import config, ops
    from normkit.triton.config import LaunchConfig

    dram(True)
    # (n, x, w, zero-centered, bias, training, forced: the warps of the head and tail, or 0 for the rule's launch);
    # forced where rounds 133-134 take the rows to chunks at 32 warps (float32 x; bf16 x with float32 weights and a bias
    # at 16384; 16-bit x and weights without a bias), their own registers below
    calls = [(16384, *DTYPES[3], False, False, True, 0), (16384, *DTYPES[1], False, False, True, 32)]
    calls += [(16384, *DTYPES[0], True, False, True, 32), (13000, *DTYPES[3], False, False, True, 0)]
    calls += [(16384, *DTYPES[3], False, False, False, 0), (16384, *DTYPES[0], False, False, False, 32)]
    calls += [(16384, *DTYPES[3], False, True, True, 16), (16384, *DTYPES[3], False, True, True, 32)]
    calls += [(13000, *DTYPES[0], False, True, True, 16), (14336, *DTYPES[1], True, True, True, 0)]  # round 131
    # rounds 133-134's chunks at 32 warps, as the rule plans them: float32 x of 16384 with a bias (chunks of 8192),
    # 12288 without one in an inference call, 13000 zero-centered with a bias, bf16 x with float32 weights and a bias
    # at 15360, fp16 x and weights without a bias at 12288 (round 134), 6144 float32 (round 134; chunks of 4096)
    chunked = [(16384, *DTYPES[0], False, True, True, 0), (12288, *DTYPES[0], False, False, False, 0)]
    chunked += [(13000, *DTYPES[0], True, True, True, 0), (15360, *DTYPES[3], False, True, True, 0)]
    chunked += [(12288, *DTYPES[1], False, False, True, 0), (6144, *DTYPES[0], False, True, True, 0)]
    cases = []
    for n, x_dtype, w_dtype, zero_centered, bias, training, forced in calls + chunked:
        with config.forced(fwd=LaunchConfig(1, 8192, 1, forced, 0, tail_n=8192) if forced else None):
            key = (32768, n, x_dtype, w_dtype, bias, True, zero_centered, None, training, -1, config.generation)
            plan = ops._forward_plan(*key)
        tail_n, chunks = (plan.values[ops.NORM_FWD.constexpr_names.index(name)] for name in ("TAIL_N", "NUM_CHUNKS"))
        if len(cases) < len(calls):
            warps = forced or (16 if bias else 32)
            assert (tail_n, plan.num_warps) == (8192, warps), key
        else:
            assert (tail_n, chunks, plan.num_warps) == (
                0,
                2 if x_dtype == w_dtype == torch.float32 and n == 16384 else -(-n // 4096),
                32,
            ), key
        cases.append(fwd_usage_case(x_dtype, w_dtype, plan))
    compiled = compiled_on_the_cpu(KERNEL_USAGE, Path(__file__).resolve().parents[1], cases, timeout=400)
    assert len(compiled) == len(cases)
    for case, c in zip(calls[:6], compiled[:6]):
        assert c["registers"] <= 32 and c["stack"] == [0], (case, c)
    assert compiled[6]["registers"] <= 64 and compiled[6]["stack"] == [0], compiled[6]  # a bias at 16 warps
    assert compiled[7]["registers"] > 32, compiled[7]  # a bias at 32 warps
    for case, c in zip(calls[8:], compiled[8 : len(calls)]):  # a bias below 16384 at 16 warps (round 131): two a SM
        assert c["registers"] <= 64 and c["stack"] == [0], (case, c)
    # round 133's chunks at 32 warps spill nothing: of 4096 (4 elements a thread) two programs a SM (24 and 30
    # registers read in round 133), of 8192 with a bias (8 a thread) one (38, as torch.compile's kernel there)
    eight_a_thread, *four_a_thread = compiled[len(calls) :]
    assert eight_a_thread["registers"] <= 64 and eight_a_thread["stack"] == [0], eight_a_thread
    for case, c in zip(chunked[1:], four_a_thread):
        assert c["registers"] <= 32 and c["stack"] == [0], (case, c)


def test_rms_forward_of_256_columns_in_sixteen_row_tiles_fits_fewer_programs_a_sm_than_asked_on_hopper(dram):
    """RMSNorm's forward of 16897-32768 rows of 256 columns without a bias in tiles of sixteen rows at 4 warps, as
    ``ops`` plans it on an H200 (``config._faster_dram_rms_fwd_256_sixteen_rows``: 8 programs a SM asked, bf16 x) and
    on an H100 (``_fwd_heuristic``'s rule of slower DRAM: 16 asked, fp16 x and weights or bf16 x with float32
    weights), compiled for sm_90 on any machine (Triton's interpreter off; the registers read by the ``cuobjdump``
    Triton bundles): nothing spills, and fewer programs than either count asked fit a SM (80-86 registers a thread: 5
    or 6, round 139), so the grid ``ops._persistent_grid`` fits is the same for 8 or 16 asked, as the tuner found
    them alike (GPU run 902), and the rules' passes are counted at what fits."""
    from pathlib import Path

    from normkit.triton import config, launch, ops

    calls = [(False, *DTYPES[3], 8), (False, *DTYPES[2], 8), (True, *DTYPES[1], 16), (True, *DTYPES[3], 16)]
    cases = []
    for slower, x_dtype, w_dtype, asked in calls:
        dram(slower)
        key = (32768, 256, x_dtype, w_dtype, False, True, False, None, True, -1, config.generation)
        plan = ops._forward_plan(*key)
        block_m = plan.values[ops.NORM_FWD.constexpr_names.index("BLOCK_M")]
        assert (block_m, plan.num_warps, plan.programs_per_sm) == (16, 4, asked), (slower, key)
        cases.append(fwd_usage_case(x_dtype, w_dtype, plan))
    compiled = compiled_on_the_cpu(KERNEL_USAGE, Path(__file__).resolve().parents[1], cases, timeout=400)
    assert len(compiled) == len(cases)
    for call, c in zip(calls, compiled):
        fit = launch.programs_per_sm(c["registers"], c["shared"], 4, HOPPER_SM)
        assert c["stack"] == [0] and 5 <= fit < 8, (call, c)


def test_slower_dram_backward_launches_fit_fewer_programs_a_sm_than_asked_on_hopper(dram):
    """``config._slower_dram_bwd``'s pointer-kernel launches on an H100, as ``ops`` plans them at 32768 rows, compiled
    for sm_90 on any machine (Triton's interpreter off; registers by the ``cuobjdump`` Triton bundles, shared memory
    from the compiled kernel): nothing spills, and of the programs a SM each asks fewer fit (round 139), which is what
    its timings ran (``ops._backward_grid`` fits the grid): LayerNorm's one row of 4 warps with dB at 2048 columns 3-4
    of 8, the two rows of 8 warps at 2048 (RMSNorm's, LayerNorm's without dB) 2 of 4, LayerNorm's one row of 8 warps at
    4096 2 of 4."""
    from pathlib import Path

    from normkit.triton import config, launch, ops

    dram(True)
    # (n, x, w, dB, RMSNorm, the launch's rows, warps and programs a SM asked, those that fit at most)
    calls = [(2048, *DTYPES[1], True, False, (1, 4, 8), 4), (2048, *DTYPES[3], True, False, (1, 4, 8), 3)]
    calls += [(2048, *DTYPES[2], False, False, (2, 8, 4), 2), (2048, *DTYPES[1], False, True, (2, 8, 4), 2)]
    calls += [(2048, *DTYPES[3], True, True, (2, 8, 4), 2), (4096, *DTYPES[1], True, False, (1, 8, 4), 2)]
    cases = []
    for n, x_dtype, w_dtype, has_dbias, is_rms, launch_asked, _ in calls:
        key = (32768, n, x_dtype, w_dtype, has_dbias, False, is_rms, False, -1, True, config.generation, 1, True)
        plan = ops._backward_plan(*key)
        cfg = plan.cfg
        assert not cfg.tma and (cfg.block_m, cfg.num_warps, cfg.programs_per_sm) == launch_asked, key
        cases.append(bwd_usage_case(x_dtype, w_dtype, plan))
    compiled = compiled_on_the_cpu(KERNEL_USAGE, Path(__file__).resolve().parents[1], cases, timeout=400)
    assert len(compiled) == len(cases)
    for call, c in zip(calls, compiled):
        (_, warps, asked), most = call[5:]
        fit = launch.programs_per_sm(c["registers"], c["shared"], warps, HOPPER_SM)
        assert c["stack"] == [0] and 2 <= fit <= most < asked, (call, c, fit)


def test_split_rows_kernel_compiles_for_hopper():
    """``split_rows_kernel`` compiled for sm_90 on any machine (Triton's interpreter off), which its interpreter runs
    cannot stand for: the interpreter took a string constexpr's default in a ``@triton.jit`` helper that the compiler
    rejects (round 108's first GPU test run). LayerNorm with a mask, RMSNorm, with and without its loads a row block
    ahead: it compiles, and its parts' loads carry no L2 policy (``_load_row_block`` with "" for dy's and x's)."""
    from pathlib import Path

    cases = [(False, True, False), (True, False, False), (False, False, True)]
    compiled = compiled_on_the_cpu(SPLIT_ROWS_PTX, Path(__file__).resolve().parents[1], cases, timeout=300)
    assert len(compiled) == len(cases)
    for case, c in zip(cases, compiled):
        assert c["loads"] > 0 and c["hinted"] == 0, (case, c)
