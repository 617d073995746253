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
