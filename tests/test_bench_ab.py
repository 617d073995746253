"""``python -m normkit.bench.ab``: another revision's package imported beside this one (its timing needs a GPU)."""

import os
import subprocess
import sys

import pytest
import torch
from conftest import DEVICE, HAS_GPU

from normkit import reference
from normkit.testing import compare


def _in_git_checkout() -> bool:
    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True).returncode == 0
    except FileNotFoundError:  # no git on this machine
        return False


IN_GIT_CHECKOUT = _in_git_checkout()
pytestmark = pytest.mark.skipif(not IN_GIT_CHECKOUT, reason="needs the git checkout of normkit")


def test_load_revision_imports_that_commits_package():
    import normkit.triton as now
    from normkit.bench.ab import load_revision

    before = load_revision("HEAD")
    assert before.__name__.startswith("normkit_at_") and before.layer_norm_fwd is not now.layer_norm_fwd
    # the copy's functional module (torch custom ops under normkit's fixed names) is never imported
    assert before.__name__.replace(".triton", ".functional") not in sys.modules
    assert load_revision("HEAD") is before  # copied and imported once
    x = torch.randn(3, 40, device=DEVICE) * 2 + 1  # on the GPU where there is one: the copy's kernels run there
    w, b = torch.randn(40, device=DEVICE), torch.randn(40, device=DEVICE)
    for got, want, name in zip(before.layer_norm_fwd(x, w, b, 1e-5), reference.layer_norm_fwd(x, w, b, 1e-5), "yms"):
        compare(got, want, name)


def test_load_revision_reads_a_folder(tmp_path):
    """A folder holding a normkit package (how a machine without the git history gets the "before" version)."""
    import shutil

    import normkit
    import normkit.triton as now
    from normkit.bench.ab import load_revision

    shutil.copytree(os.path.dirname(normkit.__file__), tmp_path / "normkit")
    before = load_revision(str(tmp_path))
    assert before.__name__.startswith("normkit_in_") and before.layer_norm_fwd is not now.layer_norm_fwd
    assert before.__name__.replace(".triton", ".functional") not in sys.modules
    assert load_revision(str(tmp_path)) is before
    x, w = torch.randn(3, 40, device=DEVICE) * 2 + 1, torch.randn(40, device=DEVICE)
    for got, want, name in zip(before.rms_norm_fwd(x, w, None, 1e-5), reference.rms_norm_fwd(x, w, None, 1e-5), "yr"):
        compare(got, want, name)


def test_load_revision_names_a_bad_revision():
    from normkit.bench.ab import load_revision

    with pytest.raises(ValueError, match="rev: 'no-such-revision' is not a commit"):
        load_revision("no-such-revision")


def test_ab_names_the_package_it_times_as_now():
    """The command's "now" is the normkit package Python imported (under ``python -m`` the current folder's), and it
    names that package's folder: the one holding this normkit's modules."""
    import normkit
    from normkit.bench.ab import _now_package

    assert _now_package() == os.path.dirname(os.path.abspath(normkit.__file__))


@pytest.mark.skipif(HAS_GPU, reason="the message of a machine without a GPU")
def test_ab_says_it_needs_a_gpu():
    from normkit.bench.ab import main

    with pytest.raises(SystemExit, match="NVIDIA GPU"):
        main(["HEAD", "--M", "8", "--N", "64", "--ops", "ln_fwd"])


@pytest.fixture
def fake_gpu(monkeypatch):
    """``measure`` with the GPU parts replaced: inputs on the tests' device, a fixed copy speed, and timers (both
    ``--timer`` choices) that record what they timed and answer 2 ns for the first callable they see, 1 ns for
    any other."""
    import triton.testing

    from normkit.bench import ab, cases, timing

    timed = []

    def fake_timer(fn, **kwargs):
        timed.append(fn)
        return 2e-6 if fn is timed[0] else 1e-6

    monkeypatch.setattr(ab.torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(ab.torch.cuda, "get_device_name", lambda: "fake GPU")
    monkeypatch.setattr(ab.torch.cuda, "empty_cache", lambda: None)
    monkeypatch.setattr(ab, "copy_bandwidth_gbs", lambda do_bench: 1000.0)
    monkeypatch.setattr(ab, "make_inputs", lambda case: cases.make_inputs(case, device=DEVICE))
    monkeypatch.setattr(triton.testing, "do_bench", fake_timer)
    monkeypatch.setattr(timing, "gpu_time_ms", fake_timer)
    return timed


def test_measure_times_both_versions_in_turns(fake_gpu):
    from normkit.bench import ab, cases

    case = cases.Case("ln_fwd", 4, 64, "fp32", "fp32")
    (row,) = ab.measure(ab.load_revision("HEAD"), [case], rounds=3)
    before, now = fake_gpu[0], fake_gpu[1]
    assert before is not now and fake_gpu == [before, now, now, before, before, now]  # each round starts one later
    assert row["status"] == "ok" and len(row["before_rounds"].split()) == len(row["now_rounds"].split()) == 3
    mb = cases.bytes_moved(case) / 1e6
    assert row["before_gbs"] == round(mb / 2e-6, 1) and row["now_gbs"] == round(mb / 1e-6, 1) and row["ratio"] == 2.0


def test_measure_reports_a_version_whose_timing_raises(fake_gpu, monkeypatch):
    from normkit.bench import ab, cases, timing

    def timer_failing_on_now(fn, **kwargs):
        fake_gpu.append(fn)
        if fn is not fake_gpu[0]:
            raise RuntimeError("launch failed")
        return 1e-6

    monkeypatch.setattr(timing, "gpu_time_ms", timer_failing_on_now)
    (row,) = ab.measure(ab.load_revision("HEAD"), [cases.Case("ln_fwd", 4, 64, "fp32", "fp32")], rounds=3)
    assert row["status"] == "now: error: RuntimeError: launch failed" and "ratio" not in row
    assert fake_gpu.count(fake_gpu[0]) == 3 and len(fake_gpu) == 4  # the failed version is not timed again


def test_measure_reports_a_wrong_version_without_timing_it(fake_gpu):
    from types import SimpleNamespace

    from normkit.bench import ab, cases

    def wrong_forward(x, w, b, eps, zero_centered_gamma):
        y, mean, rstd = reference.layer_norm_fwd(x, w, b, eps)
        return y + 1, mean, rstd

    (row,) = ab.measure(SimpleNamespace(layer_norm_fwd=wrong_forward), [cases.Case("ln_fwd", 4, 64, "fp32", "fp32")])
    assert row["status"].startswith("wrong (before)") and not fake_gpu


@pytest.mark.parametrize("op", ["ln_infer", "rms_infer", "rms_bias_infer", "ln_relu_infer"])
def test_inference_ops_are_checked_and_counted_without_statistics(fake_gpu, op):
    """The benchmark's inference ops: y alone (no statistics or mask in the bytes), normkit's through its functional
    API and through ``ops.infer_unchecked`` in ``bench.ab`` (a version without it: its training forward's y), each
    checked against the reference."""
    from normkit.bench import __main__ as bench
    from normkit.bench import ab, cases, providers

    case = cases.Case(op, 5, 72, "bf16", "fp32")
    training = cases.Case(op.replace("infer", "fwd"), 5, 72, "bf16", "fp32")
    stats = (1 if case.kind == "rms_norm" else 2) * 5 * 4 + (5 * 9 if case.kind == "layer_norm_clamped_relu" else 0)
    assert cases.bytes_moved(case) == cases.bytes_moved(training) - stats
    inputs = cases.make_inputs(case, device=DEVICE)
    assert len(inputs.expected) == 1
    for provider in ("triton", "eager"):
        bench._check(case, providers.make(provider, case, inputs)(), inputs.expected)
    (row,) = ab.measure(ab.load_revision("HEAD"), [case], rounds=1)
    assert row["status"] == "ok" and len(fake_gpu) == 2


@pytest.mark.parametrize("op, training", [("ln_fwd", True), ("ln_infer", False), ("ln_bwd", True)])
def test_peers_forward_is_their_training_forward(op, training):
    """PyTorch's and Liger's forwards are timed as training forwards (inputs that require a gradient, so they save
    what their backward reads, as normkit's training kernels store it), their inference calls without autograd."""
    from normkit.bench import cases, providers

    case = cases.Case(op, 3, 16, "fp32", "fp32")
    inputs = cases.make_inputs(case, device=DEVICE)
    seen = []

    def fn(x, w, b):
        seen.append(x.requires_grad and w.requires_grad and b.requires_grad)
        return torch.nn.functional.layer_norm(x, (16,), w, b)

    out = providers._autograd(fn, case, inputs)()
    assert seen and all(s == training for s in seen)
    if case.direction == "fwd":
        assert out.grad_fn is None  # the graph is not kept beyond the call


def test_a_backward_that_writes_into_its_gradient_leaves_the_shared_dy_alone():
    """Liger's RMSNorm backward stores dx into the gradient it is handed (``in_place``); each provider's backward gets
    its own copy of dy, so the providers timed after it read the dy the reference used."""
    from normkit.bench import cases, providers

    class WritesIntoItsGradient(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, w):
            return x * w

        @staticmethod
        def backward(ctx, dy):
            dw = dy.sum(0)
            dy.mul_(2)  # as an in-place backward reuses dy's memory for dx
            return dy, dw

    case = cases.Case("rms_bwd", 3, 16, "fp32", "fp32")
    inputs = cases.make_inputs(case, device=DEVICE)
    dy = inputs.dy.clone()
    backward = providers._autograd(lambda x, w, b: WritesIntoItsGradient.apply(x, w), case, inputs)
    first, second = backward()[0].clone(), backward()[0]
    assert torch.equal(inputs.dy, dy)  # the shared dy is unchanged
    assert torch.equal(first, 2 * dy) and torch.equal(second, 4 * dy)  # the copy did change: the test can fail
