"""cuDNN backend specifics: the graph cache, mask interop with Triton both ways, the seeds' shapes, clear errors."""

import pytest
import torch

import normkit as nk
from normkit import reference
from normkit.testing import compare, compare_masks

pytestmark = pytest.mark.skipif(nk.backends()["cudnn"] != "ok", reason=f"cuDNN: {nk.backends()['cudnn']}")


def _inputs(m, n, dtype=torch.float32):
    x = torch.randn(m, n, device="cuda", dtype=dtype)
    w = torch.randn(n, device="cuda", dtype=dtype)
    return x, w, torch.randn(n, device="cuda", dtype=dtype)


def test_second_call_with_the_same_key_builds_nothing():
    x, w, b = _inputs(256, 768)
    nk.cudnn.layer_norm_fwd(x, w, b, 1e-5)
    before = nk.cudnn.build_count()
    nk.cudnn.layer_norm_fwd(torch.randn_like(x), w, b, 1e-3)  # new data and eps: same plan
    assert nk.cudnn.build_count() == before
    nk.cudnn.layer_norm_fwd(x[:128], w, b, 1e-5)  # a new shape builds once
    assert nk.cudnn.build_count() == before + 1


@pytest.mark.parametrize("shape", [(4096, 768), (4096, 128)], ids=["4096x768", "4096x128"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16], ids=["fp32", "fp16", "bf16"])
def test_seed_shapes_against_the_reference(shape, dtype):
    x, w, b = _inputs(*shape, dtype)
    dy = torch.randn_like(x)
    for got, want in [
        (nk.cudnn.layer_norm_fwd(x, w, b, 1e-3), reference.layer_norm_fwd(x, w, b, 1e-3)),
        (nk.cudnn.rms_norm_fwd(x, w, b, 1e-3), reference.rms_norm_fwd(x, w, b, 1e-3)),
    ]:
        for g, e in zip(got, want):
            compare(g, e)
    _, mean, rstd = reference.layer_norm_fwd(x, w, b, 1e-3)
    for g, e in zip(nk.cudnn.layer_norm_bwd(dy, x, w, mean, rstd), reference.layer_norm_bwd(dy, x, w, mean, rstd)):
        compare(g, e)


def test_masks_interoperate_both_ways():
    x, w, b = _inputs(512, 768)
    dy = torch.randn_like(x)
    pre_clamp = reference.layer_norm_fwd(x, w, b, 1e-5)[0]
    _, mean_t, rstd_t, mask_t = nk.triton.layer_norm_clamped_relu_fwd(x, w, b, 1e-5)
    _, mean_c, rstd_c, mask_c = nk.cudnn.layer_norm_clamped_relu_fwd(x, w, b, 1e-5)
    compare_masks(mask_c, mask_t, 768, pre_clamp, 0.0, 6.0)
    expected = reference.layer_norm_clamped_relu_bwd(dy, mask_t, x, w, mean_t, rstd_t)
    for g, e in zip(nk.cudnn.layer_norm_clamped_relu_bwd(dy, mask_t, x, w, mean_t, rstd_t), expected):
        compare(g, e, "cuDNN backward fed the Triton mask")
    expected = reference.layer_norm_clamped_relu_bwd(dy, mask_c, x, w, mean_c, rstd_c)
    for g, e in zip(nk.triton.layer_norm_clamped_relu_bwd(dy, mask_c, x, w, mean_c, rstd_c), expected):
        compare(g, e, "Triton backward fed the cuDNN mask")


def test_clear_errors_for_what_cudnn_cannot_do():
    x, w, b = _inputs(8, 100)
    with pytest.raises(ValueError, match="N % 8"):
        nk.cudnn.layer_norm_clamped_relu_fwd(x, w, b, 1e-5)
    x, w, b = _inputs(8, 64, torch.bfloat16)
    with pytest.raises(TypeError, match="weight"):
        nk.cudnn.layer_norm_clamped_relu_fwd(x, w.float(), b.float(), 1e-5)
    strided = torch.randn(8, 80, device="cuda")[:, :64]
    with pytest.raises(ValueError, match="x"):
        nk.cudnn.layer_norm_fwd(strided, w.float(), None, 1e-5)


def _reference_y(kind, x, w, bias, zero_centered_gamma, clamp):
    args = (x, w, bias, 1e-5)
    if kind == "rms_norm":
        return reference.rms_norm_fwd(*args, zero_centered_gamma)[0]
    if kind == "layer_norm":
        return reference.layer_norm_fwd(*args, zero_centered_gamma)[0]
    return reference.layer_norm_clamped_relu_fwd(*args, zero_centered_gamma=zero_centered_gamma, **clamp)[0]


@pytest.mark.parametrize(
    "kind, n",
    [(kind, n) for kind in ("layer_norm", "rms_norm") for n in (1, 7, 100, 4097)]
    + [("layer_norm_clamped_relu", n) for n in (64, 192, 4160)],
)
def test_inference_graph_stores_y_alone(kind, n, monkeypatch):
    """``nk.cudnn.infer``: cuDNN's inference-phase graph, y as the reference's, with no statistics or mask among the
    graph's tensors. bf16 x with float32 weights (the fused op: bf16 weights, which cuDNN's engine for a norm with a
    pointwise epilogue needs, at the row lengths it builds for: whole multiples of 128 bytes), zero-centered gamma,
    with and without bias. Where nothing needs a gradient, the functional API takes it (the training forward
    patched out)."""
    from normkit.cudnn import ops

    torch.manual_seed(n)
    fused = kind == "layer_norm_clamped_relu"
    clamp = {"lower": -0.3, "upper": 0.8} if fused else {}
    x = torch.randn(5, n, device="cuda", dtype=torch.bfloat16)
    wdtype = torch.bfloat16 if fused else torch.float32
    w = torch.randn(n, device="cuda", dtype=wdtype) * 0.1
    for bias in (torch.randn(n, device="cuda", dtype=wdtype), None):
        for zc in (False, True):
            y = nk.cudnn.infer(kind, x, w, bias, 1e-5, zc, **clamp)
            compare(y, _reference_y(kind, x, w, bias, zc, clamp), f"y (bias: {bias is not None}, zc: {zc})")
    inference_graphs = [built for key, built in ops._cache.items() if key[0] in ("ln_fwd", "rms_fwd") and not key[3]]
    assert inference_graphs and not any({"mean", "rstd", "mask"} & set(built.tensors) for built in inference_graphs)

    def inference_only(*args, training=True, **kwargs):
        if training:
            raise AssertionError("the training forward was called")
        return forward(*args, training=training, **kwargs)

    forward = ops._forward
    monkeypatch.setattr(ops, "_forward", inference_only)
    y = getattr(nk, kind)(x, w, None, zero_centered_gamma=True, backend="cudnn", **clamp)
    compare(y, _reference_y(kind, x, w, None, True, clamp), "y of the functional API's inference call")


def test_inference_graph_errors_name_the_argument():
    x, w, b = _inputs(8, 64, torch.bfloat16)
    with pytest.raises(ValueError, match="kind"):
        nk.cudnn.infer("group_norm", x, w, b, 1e-5)
    with pytest.raises(TypeError, match="weight"):
        nk.cudnn.infer("layer_norm_clamped_relu", x, w.float(), b.float(), 1e-5)
    with pytest.raises(ValueError, match="x"):
        nk.cudnn.infer("rms_norm", torch.randn(8, 80, device="cuda")[:, :64], w.float(), None, 1e-5)
    x, w, b = _inputs(8, 100, torch.bfloat16)  # a row of 200 bytes: no engine for the fused graph
    with pytest.raises(nk.BackendUnavailable, match="x: .*multiple of 128 bytes"):
        nk.cudnn.infer("layer_norm_clamped_relu", x, w, b, 1e-5)
