"""``python -m normkit.bench``: every provider checked, then timed in turns (its timing needs a GPU, faked here)."""

import re
import sys

import pytest
from conftest import DEVICE

from normkit.bench import __main__ as bench
from normkit.bench import cases, providers, timing


@pytest.fixture
def fake_harness(monkeypatch):
    """``bench.measure`` with the GPU parts replaced: inputs on the tests' device, a fixed copy speed, providers
    "a", "b" and "c" that answer the reference's outputs ("wrong" adds one to them, "absent" is unsupported), the
    real same-size copy, and a timer that records which provider it timed and answers each provider's next time from
    ``times``."""
    times = {"a": [3.0, 1.0, 2.0], "b": [5.0, 4.0, 6.0], "c": [1.0, 1.0, 1.0], "copy": [2.0, 2.0, 2.0]}  # ms
    times["triton"] = times["a"]  # a name the command line takes
    timed = []
    real_make = providers.make

    def make(provider, case, inputs):
        if provider == providers.SAME_SIZE_COPY:  # the real yardstick, on the tests' device
            call = real_make(provider, case, inputs)
            call.provider = provider
            return call
        if provider == "absent":
            raise providers.Unsupported("not offered")
        outputs = inputs.expected if provider != "wrong" else tuple(t + 1 for t in inputs.expected)

        def call():
            return outputs

        call.provider = provider
        return call

    def fake_timer(fn, **kwargs):
        timed.append(fn.provider)
        return times[fn.provider][sum(p == fn.provider for p in timed) - 1]

    monkeypatch.setattr(bench.torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(bench.torch.cuda, "get_device_name", lambda: "fake GPU")
    monkeypatch.setattr(bench.torch.cuda, "empty_cache", lambda: None)
    monkeypatch.setattr(bench, "copy_bandwidth_gbs", lambda do_bench: 1000.0)
    monkeypatch.setattr(bench, "make_inputs", lambda case: cases.make_inputs(case, device=DEVICE))
    monkeypatch.setattr(bench, "make", make)
    monkeypatch.setattr(timing, "gpu_time_ms", fake_timer)
    return timed


def test_providers_are_timed_in_turns_each_round_starting_one_later(fake_harness):
    case = cases.Case("ln_fwd", 4, 64, "fp32", "fp32")
    rows = bench.measure([case], ["a", "b", "c"], rounds=3)
    assert fake_harness == ["a", "b", "c", "b", "c", "a", "c", "a", "b"]
    by_provider = {row["provider"]: row for row in rows}
    assert [row["provider"] for row in rows] == ["a", "b", "c"]  # the rows keep the providers' order
    # the median of each provider's rounds, and every round listed in the order it was taken
    assert by_provider["a"]["us"] == 2000.0 and by_provider["a"]["us_rounds"] == "3000.00 1000.00 2000.00"
    assert by_provider["b"]["us"] == 5000.0 and by_provider["c"]["us"] == 1000.0
    mb = cases.bytes_moved(case) / 1e6
    assert by_provider["c"]["gbs"] == round(mb / 1.0, 1) and all(row["status"] == "ok" for row in rows)


def test_one_round_times_each_provider_once_and_lists_no_rounds(fake_harness):
    (row,) = bench.measure([cases.Case("rms_bwd", 4, 64, "fp32", "fp32")], ["a"])
    assert fake_harness == ["a"] and row["us"] == 3000.0 and "us_rounds" not in row


def test_a_wrong_or_unsupported_provider_is_reported_and_never_timed(fake_harness):
    rows = bench.measure([cases.Case("ln_fwd", 4, 64, "fp32", "fp32")], ["wrong", "a", "absent"], rounds=2)
    status = {row["provider"]: row["status"] for row in rows}
    assert status["wrong"].startswith("wrong: y") and status["absent"] == "unsupported: not offered"
    assert status["a"] == "ok" and fake_harness == ["a", "a"]


def test_rounds_must_be_at_least_one(fake_harness):
    with pytest.raises(ValueError, match="rounds must be at least 1, got 0"):
        bench.measure([cases.Case("ln_fwd", 4, 64, "fp32", "fp32")], ["a"], rounds=0)
    with pytest.raises(SystemExit):
        bench.main(["--M", "4", "--N", "64", "--ops", "ln_fwd", "--rounds", "0"])


def test_the_same_size_copy_is_timed_in_turns_and_not_checked(fake_harness):
    case = cases.Case("ln_bwd", 4, 64, "fp32", "fp32")
    rows = bench.measure([case], ["a", "copy"], rounds=3)
    assert fake_harness == ["a", "copy", "copy", "a", "a", "copy"]
    copy_row = {row["provider"]: row for row in rows}["copy"]
    assert copy_row["status"] == "ok" and copy_row["us"] == 2000.0
    assert copy_row["gbs"] == round(cases.bytes_moved(case) / 1e6 / 2.0, 1)  # the case's bytes in the copy's time


def test_measure_does_not_take_the_notebook_progress_bar(fake_harness, monkeypatch):
    """``measure`` (the lessons' benchmark cells too) shows tqdm's plain bar, on a terminal only; it does not import
    ``tqdm.auto``, whose notebook bar warns as it is imported in a kernel without ipywidgets (lesson 05's output on the
    GPU machine, run 592). Here ``tqdm.auto`` cannot be imported, and ``measure`` runs."""
    monkeypatch.setitem(sys.modules, "tqdm.auto", None)  # an import of it raises ImportError
    (row,) = bench.measure([cases.Case("ln_fwd", 4, 64, "fp32", "fp32")], ["a"])
    assert row["status"] == "ok" and fake_harness == ["a"]


@pytest.mark.parametrize("op", ["ln_fwd", "rms_bwd", "ln_relu_bwd"])
def test_the_same_size_copy_moves_the_ops_bytes_into_a_buffer_of_its_own(op):
    case = cases.Case(op, 3, 40, "bf16", "fp32")
    inputs = cases.make_inputs(case, device=DEVICE)
    call = providers.make(providers.SAME_SIZE_COPY, case, inputs)
    out = call()
    # half the bytes read, half written: as many as the op moves, whatever their split between its tensors
    assert out.dtype == bench.torch.uint8 and 2 * out.numel() in (cases.bytes_moved(case), cases.bytes_moved(case) - 1)
    assert call().data_ptr() == out.data_ptr()  # the same buffers every call: nothing allocated while timed
    assert all(out.data_ptr() != t.data_ptr() for t in (inputs.x, inputs.dy, inputs.weight))


def test_the_command_takes_the_same_size_copy_and_the_overhead_command_does_not(fake_harness, tmp_path, capsys):
    from normkit.bench import overhead

    bench.main(["--M", "4", "--N", "64", "--ops", "rms_fwd", "--providers", "triton", "copy", "--out", str(tmp_path)])
    written = (tmp_path / "bench.csv").read_text().splitlines()
    assert len(written) == 3 and written[2].startswith("rms_fwd,4,64,bf16,bf16,copy,ok,2000.0,")
    with pytest.raises(SystemExit):
        overhead.main(["--providers", "copy"])
    assert "invalid choice: 'copy'" in capsys.readouterr().err


def test_the_lessons_bandwidth_plot_prints_each_case_as_soon_as_it_is_timed(
    fake_harness, monkeypatch, tmp_path, capsys
):
    from normkit import lesson

    monkeypatch.chdir(tmp_path)  # the plot's file
    printed_before = []  # what had been printed when each timing began
    fake_timer = timing.gpu_time_ms

    def watched(fn, **kwargs):
        printed_before.append(capsys.readouterr().out)
        return fake_timer(fn, **kwargs)

    monkeypatch.setattr(timing, "gpu_time_ms", watched)
    rows = lesson.bandwidth_plot(["rms_fwd"], 4, [64, 128], providers=("a", "absent"))
    printed = "".join(printed_before) + capsys.readouterr().out
    assert len(printed_before) == 2 and [r["N"] for r in rows] == [64, 64, 128, 128]
    assert re.search(r"rms_fwd +N=64 +a +\d+ GB/s \(\d+% of copy\)", printed_before[1])  # before case 2 is timed
    assert re.search(r"rms_fwd +N=64 +absent +unsupported: not offered", printed_before[1])
    assert "N=128" not in printed_before[1] and "N=128    a" in printed
    assert (tmp_path / "bandwidth.png").exists()


@pytest.mark.parametrize("direction", ["fwd", "bwd"])
@pytest.mark.parametrize("stem, kind", [("ln", "layer_norm"), ("ln_relu", "layer_norm_clamped_relu")])
def test_layer_norm_without_a_bias_is_an_op_of_its_own(direction, stem, kind):
    """``ln_nobias_*`` and ``ln_relu_nobias_*``: LayerNorm (+ clamped ReLU) with ``bias=None``. It moves no bias
    (forward) and no dB (backward), normkit's and PyTorch's calls are checked against the reference's, and normkit's
    backward returns no dB."""
    case = cases.Case(f"{stem}_nobias_{direction}", 5, 72, "bf16", "fp32")
    with_bias = cases.Case(f"{stem}_{direction}", 5, 72, "bf16", "fp32")
    assert not case.has_bias and with_bias.has_bias and case.kind == with_bias.kind == kind
    assert cases.bytes_moved(case) == cases.bytes_moved(with_bias) - 72 * 4  # a float32 bias read, or dB written
    inputs = cases.make_inputs(case, device=DEVICE)
    assert inputs.bias is None and (direction == "fwd" or inputs.expected[2] is None)
    for provider in ("triton", "eager"):
        outputs = providers.make(provider, case, inputs)()
        bench._check(case, outputs, inputs.expected)
        if direction == "bwd" and provider == "triton":
            assert outputs[2] is None
        if direction == "bwd" and provider == "eager":
            assert len(outputs) == 2  # x's and the weight's gradients: no bias to differentiate


@pytest.mark.parametrize("direction", ["fwd", "bwd"])
def test_rms_norm_with_a_bias_is_an_op_of_its_own(direction):
    """``rms_bias_*``: RMSNorm with a bias. It moves the bias (forward) and dB (backward), normkit's and PyTorch's calls
    are checked against the reference's, normkit's backward returns dB, and Liger (whose RMSNorm has no bias) is
    unsupported rather than timed without it."""
    case = cases.Case(f"rms_bias_{direction}", 5, 72, "bf16", "fp32")
    without = cases.Case(f"rms_{direction}", 5, 72, "bf16", "fp32")
    assert case.has_bias and not without.has_bias and case.kind == without.kind == "rms_norm"
    assert cases.bytes_moved(case) == cases.bytes_moved(without) + 72 * 4  # a float32 bias read, or dB written
    inputs = cases.make_inputs(case, device=DEVICE)
    assert inputs.bias is not None and (direction == "fwd" or inputs.expected[2] is not None)
    for provider in ("triton", "eager"):
        outputs = providers.make(provider, case, inputs)()
        bench._check(case, outputs, inputs.expected)
        if direction == "bwd":
            assert outputs[2] is not None and outputs[2].shape == (72,)
    with pytest.raises(providers.Unsupported, match="(no bias|not importable)"):
        providers.make("liger", case, inputs)


def test_liger_without_a_bias_gets_zeros_that_need_no_gradient(monkeypatch):
    """Liger's LayerNorm reads a bias: without one the harness hands it zeros that need no gradient, so its backward
    computes no dB, as a user of it would call it (a stand-in module records what it is handed)."""
    import types

    import torch

    handed = []

    class StandIn(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, w, b, eps):
            handed.append(b)
            return torch.nn.functional.layer_norm(x, x.shape[-1:], w, b, eps)

    layer_norm = types.SimpleNamespace(LigerLayerNormFunction=StandIn)
    monkeypatch.setitem(sys.modules, "liger_kernel.ops.layer_norm", layer_norm)
    monkeypatch.setitem(sys.modules, "liger_kernel.ops.rms_norm", types.SimpleNamespace(LigerRMSNormFunction=None))
    for op, biased in (("ln_nobias_fwd", False), ("ln_fwd", True)):
        case = cases.Case(op, 3, 16, "fp32", "fp32")
        inputs = cases.make_inputs(case, device=DEVICE)
        providers.make("liger", case, inputs)()
        b = handed[-1]
        assert b.requires_grad == biased and (biased or not b.any())
