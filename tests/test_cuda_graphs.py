"""normkit's Triton calls captured in a CUDA graph and replayed: the remedy for small calls' host time (a captured
step issues no Python), so it must give the right answer for every kind of launch the rules make.

A replay runs the captured launches as they were: the same addresses, grids and launch arguments, with no host code
between them. What could go wrong there: state a launch keeps on the host or on the device between calls (the split
rows' row sums, reset by a fill captured with them; the TMA backward's tensor maps, encoded once per address and kept),
launches that wait on the one before on the device (programmatic dependent launch), and persistent grids fitted on the
host before their first launch. Each test warms the call up first (compiling, fitting the grids, keeping the
descriptors: capture cannot compile), captures it, then writes new values into the captured inputs and replays twice:
each replay against the reference of the new values, and bit for bit against the same step run eagerly on them (the
kernels use no atomic adds and sum dW in a fixed order, so the same inputs give the same bits).
"""

import pytest
import torch
from test_kernels import FORWARDS, LOWER, UPPER, make_inputs

import normkit as nk
from normkit import reference
from normkit.testing import compare, compare_masks
from normkit.triton import config

BF16_FP32W = (torch.bfloat16, torch.float32)
FP16 = (torch.float16, torch.float16)
# (rows, columns, x and weight dtypes): what the rules launch there on an H200 (``test_graph_cases_launches``)
CASES = {
    "whole_rows": (1000, 768, *BF16_FP32W),  # one tile a row; the backward on a persistent grid, dW summed after
    "short_rows": (4096, 128, *BF16_FP32W),  # tiles of 8 rows at one warp
    # LayerNorm's backward by the TMA, a few waves of rows (float32 weights: with 16-bit ones the staged kernel's since
    # round 101)
    "few_waves_tma": (4100, 8192, *BF16_FP32W),
    "persistent_forward": (1024, 12288, *FP16),  # a persistent forward of few rows; RMSNorm's head + tail backward
    # the backward's rows split over programs that trade their row sums; RMSNorm's (no bias here) staged in shared
    # memory by the Gluon kernel on a Hopper GPU (``norm_bwd_staged.py``)
    "split_rows": (2048, 13312, *FP16),
    # LayerNorm's backward with dB by the same Gluon kernel, dB summed by warps of their own (``staged_db_partition``)
    "staged_layer_norm": (2048, 11264, *FP16),
    "rms_chunked_backward": (4000, 16384, *BF16_FP32W),  # RMSNorm's backward in chunks; the others split
    # the backward's rows split in slices staged in shared memory by the Gluon kernel on a Hopper GPU (RMSNorm's in
    # slices of 16384, LayerNorm's with dB of 8192, the masked backward's too, its mask's bytes staged with x and dy:
    # ``norm_bwd_staged.split_staged_kernel``)
    "split_staged": (4100, 32768, *BF16_FP32W),
    "chunked_forward": (64, 65536, *BF16_FP32W),  # the forward in chunks, read twice; the backward split (masked too)
    # the forward's rows split in slices staged in shared memory by the Gluon kernel on a Hopper GPU
    # (``norm_fwd_staged.py``), its fewest rows lowered (``CASE_LIMITS``); the backward split
    "split_staged_forward": (300, 65536, *BF16_FP32W),
}
CASE_LIMITS = {"split_staged_forward": dict(split_staged_fwd_min_m=1)}  # ``config.limits`` a case runs under


def test_graph_cases_launches():
    """The cases above take the launches their comments name (so that a change of the rules does not leave a kind of
    launch out of the graph tests unnoticed)."""

    def bwd(case, is_rms=False, has_dbias=True, **flags):
        m, n, x_dtype, w_dtype = CASES[case]
        sizes = dict(x_bytes=x_dtype.itemsize, w_bytes=w_dtype.itemsize)
        return config.bwd_config(m, n, has_dbias, is_rms=is_rms, **sizes, **flags)

    def fwd(case, is_rms=False, **flags):
        m, n, x_dtype, w_dtype = CASES[case]
        sizes = dict(w_bytes=w_dtype.itemsize, x_bytes=x_dtype.itemsize)
        return config.fwd_config(m, n, is_rms, x_fp16=x_dtype == torch.float16, has_bias=True, **sizes, **flags)

    assert fwd("whole_rows").num_chunks == 1 and bwd("whole_rows").programs_per_sm > 0
    assert fwd("short_rows").block_m > 1
    assert bwd("few_waves_tma", tma=True).tma and not bwd("few_waves_tma", is_rms=True, tma=True).tma
    assert fwd("persistent_forward").programs_per_sm > 0
    assert bwd("split_rows").parts > 1 and bwd("split_rows", is_rms=True).parts > 1
    assert bwd("split_rows", is_rms=True, has_dbias=False, tma=True, staged=True).staged
    assert bwd("staged_layer_norm", tma=True, staged=True).staged and config.staged_db_partition(11264)[0] > 0
    assert bwd("rms_chunked_backward", is_rms=True).num_chunks > 1 and bwd("rms_chunked_backward").parts > 1
    assert not bwd("rms_chunked_backward", is_rms=True, has_dbias=False, tma=True, staged=True).staged
    split_staged = [bwd("split_staged", is_rms=True, has_dbias=False, tma=True, staged=True)]
    split_staged += [bwd("split_staged", tma=True, staged=True)]  # LayerNorm's, with dB
    assert all(cfg.staged and cfg.parts > 1 for cfg in split_staged)
    assert [cfg.block_n for cfg in split_staged] == [16384, 8192]  # both slices: RMSNorm's of 16384, LayerNorm's
    assert bwd("split_staged", has_mask=True, tma=True, staged=True) == split_staged[1]  # masked: LayerNorm's launch
    with config.limits(**CASE_LIMITS["split_staged_forward"]):
        assert fwd("split_staged_forward", staged=True).staged and fwd("split_staged_forward", True, staged=True).staged
        assert fwd("split_staged_forward", has_mask=True, staged=True).staged  # the clamped ReLU's
    assert not fwd("split_staged_forward", staged=True).staged  # 300 rows: under the rule's fewest
    assert fwd("chunked_forward").num_chunks > 1 and bwd("chunked_forward").parts > 1
    masked = bwd("chunked_forward", has_mask=True, tma=True, staged=True)
    assert not masked.staged and masked.parts > 1  # 64 rows: the masked split rows


def _step(op, x, w, b, dy, backend=nk.triton, mask=None):
    """A training step's two calls by ``backend`` (``nk.triton``, or ``normkit.reference``: the same six functions):
    the forward, then the backward of dy from the forward's own statistics, and its own mask unless ``mask`` is given,
    as autograd would chain them. Returns ``{name: tensor}``."""
    has_dbias = b is not None
    if op == "rms_norm":
        y, rstd = backend.rms_norm_fwd(x, w, b, 1e-5)
        dx, dw, db = backend.rms_norm_bwd(dy, x, w, rstd, has_dbias=has_dbias)
        return {"y": y, "rstd": rstd, "dx": dx, "dw": dw, "db": db}
    if op == "layer_norm":
        y, mean, rstd = backend.layer_norm_fwd(x, w, b, 1e-5)
        dx, dw, db = backend.layer_norm_bwd(dy, x, w, mean, rstd, has_dbias=has_dbias)
        return {"y": y, "mean": mean, "rstd": rstd, "dx": dx, "dw": dw, "db": db}
    y, mean, rstd, own_mask = backend.layer_norm_clamped_relu_fwd(x, w, b, 1e-5, LOWER, UPPER)
    mask_in = own_mask if mask is None else mask
    dx, dw, db = backend.layer_norm_clamped_relu_bwd(dy, mask_in, x, w, mean, rstd, has_dbias=has_dbias)
    return {"y": y, "mean": mean, "rstd": rstd, "mask": own_mask, "dx": dx, "dw": dw, "db": db}


def _check_step(op, got, x, w, b, dy, label):
    """The step against the reference's. The reference's backward takes the step's own mask: the two masks may differ
    where the output before the clamp sits on a bound (``compare_masks``: the kernel and the reference round it apart
    by an ulp), and a bit that differs changes that element of dx by its whole gradient. So the backward is checked on
    the mask the step made, and that mask against the reference's."""
    want = _step(op, x, w, b, dy, reference, got.get("mask"))
    assert got.keys() == want.keys(), label
    for name, expected in want.items():
        if expected is None:
            assert got[name] is None, f"{label}: {name} must be None without a bias"
        elif name == "mask":  # bits may differ only where the output before the clamp sits on a bound
            pre_clamp = reference.layer_norm_fwd(x, w, b, 1e-5)[0]
            compare_masks(got[name], expected, x.shape[1], pre_clamp, LOWER, UPPER, f"{label} mask")
        else:
            compare(got[name], expected, f"{label} {name}")


def _new_values(x, w, b, dy):
    """Fresh random values written into the captured inputs (in place: a replay reads the captured addresses)."""
    fresh_x, fresh_w, fresh_b = make_inputs(*x.shape, x.dtype, w.dtype, bias=b is not None)
    x.copy_(fresh_x)
    w.copy_(fresh_w)
    if b is not None:
        b.copy_(fresh_b)
    dy.copy_(torch.randn(dy.shape, device=dy.device))


@pytest.mark.gpu
@pytest.mark.parametrize("op", list(FORWARDS))
@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("warmups", [1, 3])  # 3: the TMA backward launches from descriptors kept from the third call
def test_step_replays_from_a_cuda_graph(op, case, warmups):
    with config.limits(**CASE_LIMITS.get(case, {})):
        _replay_step(op, case, warmups)


def _replay_step(op, case, warmups):
    m, n, x_dtype, w_dtype = CASES[case]
    x, w, b = make_inputs(m, n, x_dtype, w_dtype, bias=op != "rms_norm")
    dy = torch.randn(m, n, device="cuda").to(x_dtype)
    side = torch.cuda.Stream()  # warm-up off the capturing stream, as torch.cuda.graph's documentation does
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(warmups):
            _check_step(op, _step(op, x, w, b, dy), x, w, b, dy, f"{case} eager")
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        captured = _step(op, x, w, b, dy)
    for replay in range(2):
        _new_values(x, w, b, dy)
        graph.replay()
        _check_step(op, captured, x, w, b, dy, f"{case} replay {replay}")
        for name, eager in _step(op, x, w, b, dy).items():
            if eager is not None:
                assert torch.equal(captured[name], eager), f"{case} replay {replay}: {name} differs from eager mode's"


@pytest.mark.gpu
@pytest.mark.parametrize("op", ["layer_norm", "rms_norm"])
def test_split_staged_inference_call_replays_from_a_cuda_graph(op):
    """An inference call (y alone) in the split staged forward (``split_staged_forward``'s case, its fewest rows
    lowered), warmed up, captured and replayed on new values: y against the reference's and bit for bit against the
    same call run eagerly."""
    from normkit.triton import ops

    m, n, x_dtype, w_dtype = CASES["split_staged_forward"]
    x, w, b = make_inputs(m, n, x_dtype, w_dtype)

    def call():
        return ops.infer_unchecked(op, x, w, b, 1e-5, False)

    with config.limits(**CASE_LIMITS["split_staged_forward"]):
        key = (m, n, x_dtype, w_dtype, True, op == "rms_norm", False, None, False, x.get_device(), config.generation)
        assert ops._forward_plan(*key, 1, ops._staged_capable(x.get_device())).encoded is not None  # the kernel's
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                call()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            captured = call()
        for replay in range(2):
            _new_values(x, w, b, torch.empty(0, device="cuda"))
            graph.replay()
            compare(captured, getattr(reference, f"{op}_fwd")(x, w, b, 1e-5)[0], f"{op} inference replay {replay}")
            assert torch.equal(captured, call()), f"{op} inference replay {replay}: y differs from eager mode's"


@pytest.mark.gpu
@pytest.mark.parametrize("kept_before", [False, True])
def test_a_module_without_parameters_replays_from_a_cuda_graph(kept_before):
    """``nk.LayerNorm(n, elementwise_affine=False)``'s forward and backward captured: the ones that stand for its
    weight are made in the capture, not kept (kept, they would outlive the graph's memory), unless kept before it
    (then the graph reads those); the replays' y and dx against the reference with a weight of ones."""
    from normkit import functional

    m, n = 2048, 1024
    layer = nk.LayerNorm(n, elementwise_affine=False, backend="triton")
    x = torch.randn(m, n, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    dy = torch.randn(m, n, device="cuda", dtype=torch.bfloat16)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            layer(x).backward(dy)
    torch.cuda.current_stream().wait_stream(side)
    functional._KEPT_UNIT_SCALES.clear()
    if kept_before:
        layer(x)
    x.grad = None
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        y = layer(x)
        y.backward(dy)
    assert len(functional._KEPT_UNIT_SCALES) == int(kept_before)
    ones = torch.ones(n, device="cuda", dtype=torch.bfloat16)
    for replay in range(2):
        with torch.no_grad():
            _new_values(x, ones.clone(), None, dy)
        graph.replay()
        y_ref, mean, rstd = reference.layer_norm_fwd(x.detach(), ones, None, 1e-5)
        compare(y.detach(), y_ref, f"y, replay {replay}")
        compare(x.grad, reference.layer_norm_bwd(dy, x.detach(), ones, mean, rstd, has_dbias=False)[0], f"dx {replay}")


@pytest.mark.gpu
@pytest.mark.parametrize("module", ["LayerNorm", "RMSNorm"])
@pytest.mark.parametrize("shape", [(4096, 768), (2048, 13312)])
def test_module_from_make_graphed_callables(module, shape):
    """``torch.cuda.make_graphed_callables`` over ``nk.LayerNorm`` / ``nk.RMSNorm`` (the Triton backend, through
    autograd): the graphed module's output and its input's and weights' gradients, replayed on new inputs, against the
    reference."""
    m, n = shape
    norm = getattr(nk, module)(n, bias=True, backend="triton", device="cuda", dtype=torch.bfloat16)
    with torch.no_grad():
        norm.weight.copy_(torch.randn(n) * 0.5 + 1)
        norm.bias.copy_(torch.randn(n))
    sample = torch.randn(m, n, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    graphed = torch.cuda.make_graphed_callables(norm, (sample,))
    fwd, bwd = (reference.layer_norm_fwd, reference.layer_norm_bwd) if module == "LayerNorm" else (
        reference.rms_norm_fwd, reference.rms_norm_bwd)  # fmt: skip
    for replay in range(2):
        x = (torch.randn(m, n, device="cuda") * 2 + 0.5).bfloat16().requires_grad_()
        dy = torch.randn(m, n, device="cuda").bfloat16()
        y = graphed(x)
        # the gradients returned, not accumulated into .grad (PyTorch 2.11 still warns once that the weights'
        # AccumulateGrad nodes were made on make_graphed_callables' warm-up stream: GPU runs 539 and 542)
        dx_got, dw_got, db_got = torch.autograd.grad(y, (x, norm.weight, norm.bias), dy)
        stats = fwd(x.detach(), norm.weight.detach(), norm.bias.detach(), norm.eps)
        dx, dw, db = bwd(dy, x.detach(), norm.weight.detach(), *stats[1:], has_dbias=True)
        label = f"{module} {m} x {n} replay {replay}"
        compare(y, stats[0], f"{label} y")
        compare(dx_got, dx, f"{label} dx")
        compare(dw_got, dw, f"{label} dw")
        compare(db_got, db, f"{label} db")


@pytest.mark.gpu
def test_torch_compile_reduce_overhead_replays_the_triton_custom_ops():
    """``torch.compile(mode="reduce-overhead")`` (Inductor's CUDA graphs) over nk.LayerNorm and nk.RMSNorm: the
    custom ops are captured (Inductor counts no skipped graph), and a replay on new inputs gives eager mode's output
    and gradients."""
    from torch._dynamo.utils import counters

    torch.manual_seed(0)
    counters.clear()
    model = torch.nn.Sequential(
        torch.nn.Linear(768, 768), nk.LayerNorm(768, backend="triton"), nk.RMSNorm(768, backend="triton")
    ).cuda()
    compiled = torch.compile(model, mode="reduce-overhead", fullgraph=True)
    for step in range(4):  # the first calls record; the later ones replay the captured graph
        x = torch.randn(4096, 768, device="cuda", requires_grad=True)
        y_compiled = compiled(x)
        (gx_compiled,) = torch.autograd.grad(y_compiled.square().sum(), x)
        y_eager = model(x)
        (gx_eager,) = torch.autograd.grad(y_eager.square().sum(), x)
        torch.testing.assert_close(y_compiled, y_eager, msg=lambda text, step=step: f"step {step}: y: {text}")
        torch.testing.assert_close(gx_compiled, gx_eager, msg=lambda text, step=step: f"step {step}: dx: {text}")
    assert not counters["inductor"]["cudagraph_skips"], dict(counters["inductor"])
