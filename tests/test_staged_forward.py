"""LayerNorm's and RMSNorm's forward of long rows by the split staged Gluon kernel
(``normkit/triton/norm_fwd_staged.py``): where the rule takes it, its plan, that it compiles for a Hopper GPU on a
machine without one, and its answers on the GPU, at the rule's shapes and, its fewest rows lowered, at odd ones."""

from pathlib import Path
from unittest import mock

import pytest
import torch
from test_kernels import LOWER, UPPER, check_forward, compiled_on_the_cpu, make_inputs
from test_staged_backward import recorded_launches, staged_launches

from normkit import reference
from normkit.testing import compare, compare_masks
from normkit.triton import config
from normkit.triton.config import LaunchConfig

KERNEL_FILE = Path(__file__).resolve().parents[1] / "normkit" / "triton" / "norm_fwd_staged.py"
HOPPER_SHARED_MEMORY = 232448  # bytes of shared memory a program may have on an H100 or H200 (227 KB)


def _fwd(m, n, is_rms=False, **flags):
    return config.fwd_config(m, n, is_rms, **{"staged": True, "w_bytes": 4, "has_bias": True} | flags)


def test_split_staged_forward_rule():
    """LayerNorm's, RMSNorm's and LayerNorm + clamped ReLU's forward at 65536 columns from 4096 rows, 16-bit x,
    float32 or 16-bit weights, a bias or none: slices of 16384 at 8 compute warps (4 a row); LayerNorm's and LayerNorm
    + clamped ReLU's at 32768 with a bias and float32 weights (2 a row). Not: other widths (16384, 49152), RMSNorm's at
    32768, LayerNorm's there without a bias or with 16-bit weights, fewer rows, float32 x, or where the kernel cannot
    run (``staged`` false). The clamped ReLU's training forward of float16 x and weights takes it too since round 94."""
    for is_rms in (False, True):
        for m in (4096, 32768, 100000):
            for flags in ({}, {"w_bytes": 2}, {"has_bias": False}, {"zero_centered": True}, {"x_fp16": True}):
                cfg = _fwd(m, 65536, is_rms, **flags)
                assert cfg.staged and (cfg.block_n, cfg.num_warps, cfg.parts) == (16384, 8, 4), (m, is_rms, flags)
        assert not any(_fwd(32768, n, is_rms).staged for n in (16384, 49152)), is_rms
    assert not _fwd(32768, 32768, is_rms=True).staged
    for m in (4096, 32768):
        for flags in (
            {},
            {"zero_centered": True},
            {"x_fp16": True},
            {"has_mask": True},
            {"has_mask": True, "x_fp16": True},
        ):
            cfg = _fwd(m, 32768, **flags)
            assert cfg.staged and (cfg.block_n, cfg.num_warps, cfg.parts) == (16384, 8, 2), (m, flags)
        for flags in ({"has_bias": False}, {"w_bytes": 2}, {"has_mask": True, "w_bytes": 2}):
            assert not _fwd(m, 32768, **flags).staged, (m, flags)
    assert not _fwd(4095, 32768).staged
    assert not _fwd(4095, 65536).staged and not _fwd(4095, 65536, has_mask=True).staged
    for flags in ({}, {"w_bytes": 2}, {"x_fp16": True}, {"has_bias": False}):  # the clamped ReLU's training forward
        assert _fwd(32768, 65536, has_mask=True, **flags).staged, flags
    assert _fwd(32768, 65536, has_mask=True, x_fp16=True, w_bytes=2).staged  # since round 94 (its mask partition)
    assert not _fwd(32768, 65536, x_bytes=4).staged and not _fwd(32768, 65536, staged=False).staged
    assert config.split_staged_fwd_form(False) == (5, 2) and config.split_staged_fwd_form(True) == (4, 1)
    with config.limits(split_staged_fwd_min_m=1):
        assert _fwd(1, 65536).staged


def _infer(m, n, is_rms=False, **flags):
    return config.infer_config(m, n, is_rms, **{"staged": True, "w_bytes": 4, "has_bias": True} | flags)


def test_split_staged_forward_rule_of_the_inference_call():
    """An inference call (y alone) takes the kernel where the training forward does: 65536 columns from 4096 rows,
    16-bit x, LayerNorm and RMSNorm, a bias or none; the same launch. Not at other widths, fewer rows, float32 x, or
    where the kernel cannot run (``staged`` false, the inference rule's launch then)."""
    for is_rms in (False, True):
        for m in (4096, 32768):
            for flags in ({}, {"w_bytes": 2}, {"has_bias": False}, {"zero_centered": True}, {"x_fp16": True}):
                assert _infer(m, 65536, is_rms, **flags) == _fwd(m, 65536, is_rms, **flags), (m, is_rms, flags)
        assert not any(_infer(32768, n, is_rms).staged for n in (16384, 256)), is_rms
        assert _infer(32768, 32768, is_rms) == _fwd(32768, 32768, is_rms), is_rms
        assert _infer(32768, 32768, is_rms).staged != is_rms  # LayerNorm's alone at 32768
        assert not _infer(32768, 32768, is_rms, has_bias=False).staged and not _infer(32768, 32768, w_bytes=2).staged
        assert not _infer(4095, 65536, is_rms).staged and not _infer(32768, 65536, is_rms, x_bytes=4).staged
        unstaged = _infer(32768, 65536, is_rms, staged=False)
        assert not unstaged.staged and unstaged == config.infer_config(32768, 65536, is_rms, w_bytes=4, has_bias=True)
    with config.limits(split_staged_fwd_min_m=1):
        assert _infer(1, 65536).staged


def _plan(
    m, n, is_rms=False, has_bias=True, zero_centered_gamma=False, staged=True, x_dtype=torch.bfloat16, training=True
):  # fmt: skip
    from normkit.triton import ops

    key = (m, n, x_dtype, torch.float32, has_bias, is_rms, zero_centered_gamma, None, training, -1, config.generation)
    return ops._forward_plan(*key, 1, staged)


def test_split_staged_forward_plan():
    """The plan of a split staged forward (worked out on the CPU too): slices of 64 rows of 256, the row's 4 slices and
    their slots, LayerNorm's 5 stages and statistics two rows ahead, RMSNorm's 4 and one; the bias, zero-centered
    gamma; one group on the CPU; an inference call's the same but ``TRAINING``. Without ``staged`` (a device it
    cannot run on) the chunked forward's plan."""
    pytest.importorskip("normkit.triton.norm_fwd_staged", reason="the staged kernel needs Triton 3.6")
    from normkit.triton import ops

    def values(plan):
        return dict(zip(ops.SPLIT_STAGED_FWD.constexpr_names, plan.values))

    for n, is_rms, stages, ahead in ((65536, False, 5, 2), (65536, True, 4, 1)):
        plan = _plan(32768, n, is_rms)
        assert plan.encoded == {} and plan.programs == n // 16384 and plan.num_warps == 8, n  # one group on the CPU
        v = values(plan)
        assert (v["SR"], v["PARTS"], v["PARTS_P2"], v["VALID"]) == (64, n // 16384, n // 16384, n // 256), n
        assert (v["STAGES"], v["AHEAD"], v["IS_RMS"], v["HAS_BIAS"], v["ZERO_CENTERED"]) == (
            stages, ahead, is_rms, True, False
        )  # fmt: skip
        assert v["L"] == ops.STAGED.layout(64, 8) and v["MAX_POLLS"] == config.GPU_MAX_POLLS
        assert v["TRAINING"] and values(_plan(32768, n, is_rms, training=False)) == v | {"TRAINING": False}, n
    v = values(_plan(32768, 65536, has_bias=False, zero_centered_gamma=True))
    assert not v["HAS_BIAS"] and v["ZERO_CENTERED"]
    assert _plan(32768, 65536, staged=False).encoded is None
    assert _plan(32768, 65536, staged=False, training=False).encoded is None
    assert ops.STAGED.SENTINEL == ops.SENTINEL  # the kernel's empty slot (``norm_bwd_staged``'s) is the one ops fills


def test_split_staged_forward_launch_arguments(monkeypatch):
    """``ops._staged_forward`` (a GPU's path; here ``SPLIT_STAGED_FWD.launch`` records what it is given) passes x's
    descriptor, then y's where the TMA stores y (the clamped ReLU's training forward of bf16 x, ``Y_SLOTS``) or x's in
    its place, then the weights, the bias (the weights for none), y, the mean (rstd for RMSNorm), rstd (y for both in
    an inference call), the mask (y without one), the row statistics' slots (``[M, PARTS]`` int64, every one
    ``SENTINEL``), the shape, eps and the plan's bounds. Distinct tensors, so a swap fails; the rules' plans of 32768
    rows of 65536 launched on 8 (the plan fixes the launch, the tensors the arguments)."""
    pytest.importorskip("normkit.triton.norm_fwd_staged", reason="the staged kernel needs Triton 3.6")
    from normkit.triton import ops

    launched = recorded_launches(monkeypatch, ops.SPLIT_STAGED_FWD)
    m, n, eps = 8, 65536, 1e-5
    for is_rms, has_bias, clamp, training, x_dtype, w_dtype in (
        (False, True, None, True, torch.bfloat16, torch.float32),  # LayerNorm's training forward
        (True, False, None, False, torch.bfloat16, torch.float32),  # RMSNorm's inference call
        (False, True, (LOWER, UPPER), True, torch.bfloat16, torch.float32),  # the clamped ReLU's: y by the TMA
        (False, False, (LOWER, UPPER), True, torch.float16, torch.float16),  # fp16: y stored by the compute warps
    ):  # fmt: skip
        key = (32768, n, x_dtype, w_dtype, has_bias, is_rms, False, clamp, training, -1, config.generation)
        plan = ops._forward_plan(*key, 1, True)
        assert plan.encoded is not None, key  # the split staged forward's plan
        x, w = torch.randn(m, n, dtype=x_dtype), torch.randn(n, dtype=w_dtype)
        b = torch.randn(n, dtype=w_dtype) if has_bias else None
        y, mean, rstd, mask = ops._forward_outputs(x, plan.stat_dtype, is_rms, clamp, training)
        ops._staged_forward(plan, x, w, b, eps, y, mean, rstd, mask)
        args, head = launched.pop()
        y_by_tma = plan.values[ops._FWD_Y_SLOTS_AT] > 0
        assert y_by_tma == (clamp is not None and x_dtype == torch.bfloat16), key
        box = [plan.values[ops._FWD_SR_AT], 256]
        assert head == 2 and [(d.base.data_ptr(), d.block_shape) for d in args[:2]] == [
            (x.data_ptr(), box), ((y if y_by_tma else x).data_ptr(), box)
        ], key  # fmt: skip
        rstd_or_y = rstd if rstd is not None else y
        expected = (w, b if has_bias else w, y, mean if mean is not None else rstd_or_y, rstd_or_y)
        expected += (mask if mask is not None else y,)
        assert all(a is e for a, e in zip(args[2:8], expected, strict=True)), key
        sums = args[8]
        assert sums.shape == (m, plan.values[ops._FWD_PARTS_AT]) and sums.dtype == torch.int64, key
        assert bool((sums == ops.SENTINEL).all()), key
        assert args[9:] == (m, n, eps, *plan.thresholds) and len(plan.thresholds) == 2, key


def test_split_staged_forward_constexprs():
    """A row's slices (a multiple of 256 that divides the row) and the rows ahead (1 or 2, fewer than the stages):
    else a ValueError that names them."""
    staged = pytest.importorskip("normkit.triton.norm_fwd_staged", reason="the staged kernel needs Triton 3.6")
    got = staged.constexprs(49152, 16384, 8, 5, 2, False, False, True, 1)
    assert (got["SR"], got["PARTS"], got["PARTS_P2"], got["VALID"], got["AHEAD"]) == (64, 3, 4, 192, 2)
    for bad in (1000, 0, 12288):
        with pytest.raises(ValueError, match="slice_n must be a multiple of 256 that divides n"):
            staged.constexprs(32768, bad, 8, 5, 2, False, False, True, 1)
    for stages, ahead in ((2, 2), (5, 3), (5, 0)):
        with pytest.raises(ValueError, match="ahead must be 1 or 2 and fewer than stages"):
            staged.constexprs(32768, 16384, 8, stages, ahead, False, False, True, 1)


def test_forced_staged_forward_where_it_cannot_run():
    """A forced split staged forward config where the kernel cannot run (here: float32 rows, or the CPU; the clamped
    ReLU's forward of float32 x on a device it runs on, patched in here) raises before any launch, naming why."""
    from normkit.triton import ops

    def forced():
        return config.forced(fwd=LaunchConfig(1, 16384, 1, 8, 1, parts=2, staged=True))

    x, w, b = make_inputs(4, 32768, torch.float32, torch.float32)
    with forced(), pytest.raises(ValueError, match="staged forward config was forced"):
        ops.layer_norm_fwd(x, w, b, 1e-5)
    x, w, b = make_inputs(4, 32768, torch.float32, torch.float32)
    with mock.patch.object(ops, "_staged_capable", lambda device: True), forced():
        with pytest.raises(ValueError, match="16-bit x with contiguous rows"):  # a device it runs on, x it cannot load
            ops.layer_norm_clamped_relu_fwd(x, w, b, 1e-5)


def test_staged_x():
    """What the split staged forward loads (``ops._staged_x``): 16-bit x of contiguous rows starting on 16 bytes."""
    from normkit.triton import ops

    x = torch.randn(4, 16384, dtype=torch.bfloat16)
    assert ops._staged_x(x) and ops._staged_x(x.half())
    assert not ops._staged_x(x.float())
    wide = torch.randn(4, 16640, dtype=torch.bfloat16)
    assert not ops._staged_x(wide[:, :16384])  # strided rows
    assert not ops._staged_x(torch.randn(4 * 16384 + 1, dtype=torch.bfloat16)[1:].view(4, 16384))  # off 16 bytes


COMPILE = """
import importlib.util, json, re, sys, types
import torch, triton
from triton.backends.compiler import GPUTarget
from triton.experimental.gluon._runtime import GluonASTSource
from triton.runtime.jit import mangle_type

# the kernel's module imports its helpers from norm_bwd_staged.py beside it: both loaded as a package of their own
package = types.ModuleType("staged_kernels")
package.__path__ = [sys.argv[1]]
sys.modules["staged_kernels"] = package
for name in ("norm_bwd_staged", "norm_fwd_staged"):
    spec = importlib.util.spec_from_file_location(f"staged_kernels.{name}", f"{sys.argv[1]}/{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
staged = sys.modules["staged_kernels.norm_fwd_staged"]
kernel = staged.split_staged_fwd_kernel
POINTER = {"float16": "*fp16", "bfloat16": "*bf16", "float32": "*fp32"}
cases = json.loads(sys.argv[2])
for n, slice_n, warps, stages, ahead, dtype, w_dtype, zero_centered, is_rms, has_bias, training, clamp, slots in cases:
    values = staged.constexprs(n, slice_n, warps, stages, ahead, zero_centered, is_rms, has_bias, 1 << 22, training,
                               clamp, slots)
    x = torch.empty(64, n, dtype=getattr(torch, dtype))
    stats = "*fp32" if training else POINTER[dtype]  # an inference call passes y for the statistics
    x_rows = mangle_type(staged.descriptor(x, values["SR"]))  # y's descriptor the same type as x's
    signature = {"xd": x_rows, "yd": x_rows, "W": POINTER[w_dtype], "B": POINTER[w_dtype],
                 "Y": POINTER[dtype], "MEAN": stats, "RSTD": stats, "MASK": "*u8" if clamp and training else
                 POINTER[dtype], "SUMS": "*i64", "M": "i32", "N": "i32", "eps": "fp32", "lower": "fp32",
                 "upper": "fp32"}
    signature |= {name: "constexpr" for name in values}
    aligned = [kernel.arg_names.index(name) for name in ("W", "B", "Y", "MEAN", "RSTD", "MASK", "SUMS", "N")]
    source = GluonASTSource(kernel, signature, values, {(i,): [["tt.divisibility", 16]] for i in aligned})
    compiled = triton.compile(source, target=GPUTarget("cuda", 90, 32), options={"num_warps": warps})
    threads = int(re.search(r"reqntid (\\d+)", compiled.asm["ptx"]).group(1))
    print(json.dumps({"n": n, "shared": compiled.metadata.shared, "cubin": len(compiled.asm["cubin"]),
                      "threads": threads}))
"""


def test_split_staged_forward_compiles_for_hopper():
    """The kernel compiled for sm_90 (ptxas included) on any machine, Triton's interpreter off (it cannot compile
    Gluon), in the rule's forms: LayerNorm's at 65536 (5 stages, two rows ahead) with a bias and without, and at 32768
    (2 slices a row), RMSNorm's at 65536 (4 stages, one row ahead), bf16 x with float32 weights and fp16 with fp16,
    zero-centered gamma, training and inference calls; its 8 compute warps, the load warp's group of 4 and, in the
    clamped ReLU's training forward, the mask partition's 4, its y in slots of its own (bf16 x) or over x's stage
    (fp16 x); its shared memory (the stages of a slice of x, and those slots of y) fits a Hopper SM."""
    pytest.importorskip("normkit.triton.norm_fwd_staged", reason="the staged kernel needs Triton 3.6")
    cases = [  # n, x, weights, zero-centered, RMSNorm, bias, training, clamped ReLU
        (65536, "bfloat16", "float32", False, False, True, True, False),
        (65536, "float16", "float16", True, False, False, True, False),
        (65536, "bfloat16", "float32", True, True, False, True, False),
        (65536, "float16", "float16", False, True, True, True, False),
        (65536, "bfloat16", "float32", False, False, True, False, False),
        (65536, "float16", "float16", True, True, True, False, False),
        (65536, "bfloat16", "float32", False, False, True, True, True),
        (65536, "float16", "float16", True, False, False, True, True),
        (65536, "bfloat16", "float32", False, False, True, False, True),
        (32768, "bfloat16", "float32", False, False, True, True, True),
        (32768, "float16", "float32", True, False, True, True, False),
    ]
    slice_n, warps = config.SPLIT_STAGED_FWD_SLICE_N, config.SPLIT_STAGED_FWD_WARPS
    cases = [(c[0], slice_n, warps, *config.split_staged_fwd_form(c[4]), *c[1:]) for c in cases]
    # the clamped ReLU's training forward's slots of y, by the rule (x's dtype)
    cases = [(*c, config.split_staged_fwd_y_slots(c[5] == "float16") if c[-1] and c[-2] else 0) for c in cases]
    compiled = compiled_on_the_cpu(COMPILE, KERNEL_FILE.parent, cases, timeout=600)
    assert [c["n"] for c in compiled] == [case[0] for case in cases]
    assert {c[-1] for c in cases} == {0, 2}  # both ways of the mask partition's y compiled
    for c, (n, slice_n, warps, stages, *_, training, clamp, y_slots) in zip(compiled, cases):
        # x's stages and the fused training forward's y slots beside them; its mask partition (4 warps)
        assert c["cubin"] > 0 and (stages + y_slots) * slice_n * 2 <= c["shared"] <= HOPPER_SHARED_MEMORY, (n, c)
        masker = 4 if training and clamp else 0
        assert c["threads"] == 32 * (warps + 4 + masker), (n, c)


def _check(op, m, n, x_dtype, w_dtype, taken, bias=True, zero_centered_gamma=False, row_pad=0):
    x, w, b = make_inputs(m, n, x_dtype, w_dtype, bias=bias, row_pad=row_pad)
    spy, patch = staged_launches("_staged_forward")
    with patch:
        check_forward("triton", op, x, w, b, zero_centered_gamma)
    assert spy.call_count == taken, (op, m, n, x_dtype, w_dtype, bias, row_pad)


@pytest.mark.gpu
@pytest.mark.parametrize(
    "op, m, n",
    [("layer_norm", 1, 65536), ("layer_norm", 7, 65536), ("layer_norm", 100, 65536), ("layer_norm", 1000, 65536),
     ("rms_norm", 1, 65536), ("rms_norm", 7, 65536), ("rms_norm", 300, 65536), ("layer_norm", 300, 32768),
     ("layer_norm_clamped_relu", 1, 65536), ("layer_norm_clamped_relu", 7, 65536),
     ("layer_norm_clamped_relu", 1000, 65536), ("layer_norm_clamped_relu", 300, 32768)],
)  # fmt: skip
@pytest.mark.parametrize("dtypes", [(torch.bfloat16, torch.float32), (torch.float16, torch.float16)],
                         ids=["bf16-fp32", "fp16"])  # fmt: skip
@pytest.mark.parametrize("bias, zero_centered_gamma", [(True, False), (False, True)])
def test_split_staged_forward_on_the_gpu(op, m, n, dtypes, bias, zero_centered_gamma):
    """The kernel at its width, taken from one row on (its fewest rows lowered), against the reference: a row a group
    (1), fewer rows than groups (7, 100), rows that do not divide over the groups (300, 1000), both forms (LayerNorm's
    two rows ahead, RMSNorm's one), LayerNorm + clamped ReLU (y and the mask), a bias or none, zero-centered gamma,
    bf16 x with float32 weights and fp16 with fp16; and, forced, LayerNorm's at 32768 (2 slices a row)."""
    pytest.importorskip("normkit.triton.norm_fwd_staged", reason="the staged kernel needs Triton 3.6")
    if n == 65536:
        with config.limits(split_staged_fwd_min_m=1):
            _check(op, m, n, *dtypes, 1, bias, zero_centered_gamma)
        return
    with config.forced(fwd=LaunchConfig(1, 16384, 1, 8, 1, parts=n // 16384, staged=True)):
        _check(op, m, n, *dtypes, 1, bias, zero_centered_gamma)


@pytest.mark.gpu
def test_split_staged_forward_at_the_rules_rows():
    """The rule's own launch, many rows a program (4096 x 65536 LayerNorm and LayerNorm + clamped ReLU, 4100 x 65536
    RMSNorm; LayerNorm + clamped ReLU's of fp16 x and weights too since round 94; at 32768 LayerNorm's with a bias and
    float32 weights); strided rows, which it cannot load, take the chunked forward, as LayerNorm's at 32768 without a
    bias or with fp16 weights; a mean far from zero (1000 + N(0, 1) in bf16) against the reference, which the threads'
    squares about their own means keep (``norm_fwd_staged._chan``), and rows with an element far out (30000) first or
    second in each slice."""
    pytest.importorskip("normkit.triton.norm_fwd_staged", reason="the staged kernel needs Triton 3.6")
    from normkit.triton import ops

    _check("layer_norm", 4096, 65536, torch.bfloat16, torch.float32, 1)
    _check("layer_norm_clamped_relu", 4096, 65536, torch.bfloat16, torch.float32, 1)
    _check("layer_norm_clamped_relu", 4096, 65536, torch.float16, torch.float16, 1)  # since round 94
    _check("rms_norm", 4100, 65536, torch.float16, torch.float16, 1)
    _check("layer_norm", 4096, 32768, torch.bfloat16, torch.float32, 1)  # 32768: a bias and float32 weights
    _check("layer_norm_clamped_relu", 4100, 32768, torch.float16, torch.float32, 1)
    _check("layer_norm", 4096, 32768, torch.bfloat16, torch.float32, 0, bias=False)  # the chunked forward's
    _check("layer_norm", 4096, 32768, torch.float16, torch.float16, 0)
    _check("layer_norm", 4096, 65536, torch.bfloat16, torch.float32, 0, row_pad=64)  # rows it cannot view
    x, w, b = make_inputs(1000, 65536, torch.float32, torch.bfloat16)
    x = (x + 1000).to(torch.bfloat16)
    x[7, ::16384] = 30000.0  # a thread's mean and squares far from the others'
    x[8, 1::16384] = -30000.0
    spy, patch = staged_launches("_staged_forward")
    with patch, config.limits(split_staged_fwd_min_m=1):
        got = ops.layer_norm_fwd(x, w, b, 1e-5)
    assert spy.call_count == 1
    for name, g, e in zip(("y", "mean", "rstd"), got, reference.layer_norm_fwd(x, w, b, 1e-5)):
        compare(g, e, f"mean 1000: {name}")


@pytest.mark.gpu
@pytest.mark.parametrize("lower, upper", [(0.0, 6.0), (-0.25, 1.0)])
@pytest.mark.parametrize("dtypes", [(torch.bfloat16, torch.float32), (torch.float16, torch.float16)],
                         ids=["bf16-fp32", "fp16"])  # fmt: skip
def test_split_staged_clamped_relu_bounds(lower, upper, dtypes):
    """LayerNorm + clamped ReLU in the kernel (300 x 65536, its fewest rows lowered) at bounds whose mask interval is
    positive (0 and 6) or reaches below zero (-0.25 and 1), a row holding a
    NaN (y NaN there, its bits 0): y, the statistics and the mask against the reference; the inference call's y bit
    for bit the training call's."""
    pytest.importorskip("normkit.triton.norm_fwd_staged", reason="the staged kernel needs Triton 3.6")
    from normkit.triton import ops

    x, w, b = make_inputs(300, 65536, *dtypes)
    x[5, 100] = float("nan")
    spy, patch = staged_launches("_staged_forward")
    with patch, config.limits(split_staged_fwd_min_m=1):
        got = ops.layer_norm_clamped_relu_fwd(x, w, b, 1e-5, lower, upper)
        inferred = ops.infer_unchecked("layer_norm_clamped_relu", x, w, b, 1e-5, False, lower, upper)
    assert spy.call_count == 2
    want = reference.layer_norm_clamped_relu_fwd(x, w, b, 1e-5, lower, upper)
    for name, g, e in zip(("y", "mean", "rstd"), got, want):
        compare(g, e, f"bounds {lower}, {upper}: {name}")
    assert got[0][5].isnan().all() and not got[3][5].any()  # the NaN row: y NaN, no bit set
    compare_masks(got[3], want[3], 65536, reference.layer_norm_fwd(x, w, b, 1e-5)[0], lower, upper)
    assert torch.equal(inferred.view(torch.int16), got[0].view(torch.int16))


def test_split_staged_forward_plan_of_the_clamped_relu():
    """The clamped ReLU's plan (worked out on the CPU): ``CLAMP_MASK``, ``TRAINING`` as the call's; the plan's bounds
    alone (the mask partition's bits compare y as stored against them, ``norm_fwd_staged._fwd_masker``), whether its
    interval is positive (bounds 0 and 6) or reaches below zero (-0.25 and 1); the training call's y in slots of its
    own of bf16 x (``config.split_staged_fwd_y_slots``), over x's stage of fp16 x and in no slots in an inference
    call; ``constexprs`` refuses slots of y without the mask, or fewer than none."""
    staged = pytest.importorskip("normkit.triton.norm_fwd_staged", reason="the staged kernel needs Triton 3.6")
    from normkit.triton import ops

    for clamp, training in (((0.0, 6.0), True), ((-0.25, 1.0), True), ((0.0, 6.0), False)):
        key = (32768, 65536, torch.bfloat16, torch.float32, True, False, False, clamp, training, -1, config.generation)
        plan = ops._forward_plan(*key, 1, True)
        v = dict(zip(ops.SPLIT_STAGED_FWD.constexpr_names, plan.values))
        assert v["CLAMP_MASK"] and v["TRAINING"] == training and "KEEP_BY_BITS" not in v, (clamp, training)
        assert plan.thresholds == clamp, (clamp, training)
        assert v["Y_SLOTS"] == (config.SPLIT_STAGED_FWD_Y_SLOTS if training else 0) == (2 if training else 0)
    for x_dtype, w_dtype, slots in ((torch.float16, torch.float16, 0), (torch.float16, torch.float32, 0),
                                    (torch.bfloat16, torch.bfloat16, 2)):  # fmt: skip
        key = (32768, 65536, x_dtype, w_dtype, True, False, False, (0.0, 6.0), True, -1, config.generation)
        v = dict(zip(ops.SPLIT_STAGED_FWD.constexpr_names, ops._forward_plan(*key, 1, True).values))
        assert v["Y_SLOTS"] == slots, (x_dtype, w_dtype)
    with pytest.raises(ValueError, match=r"y_slots \(2\) are the clamped ReLU's training forward's"):
        staged.constexprs(65536, 16384, 8, 5, 2, False, False, True, 1, False, True, 2)
    with pytest.raises(ValueError, match=r"y_slots \(-1\)"):
        staged.constexprs(65536, 16384, 8, 5, 2, False, False, True, 1, True, True, -1)
    with pytest.raises(ValueError, match="clamp_mask is LayerNorm's"):
        staged.constexprs(65536, 16384, 8, 4, 1, False, True, False, 1, True, True)
    with pytest.raises(ValueError, match="the mask's bytes need the slice's rows cut over the warps"):
        staged.mask_layout(3, 8)


def _inference_calls(op, x, w, b, zero_centered_gamma):
    """y of an inference call through ``ops.infer_unchecked`` and through the functional API under ``no_grad``, and
    the training call's y; the split staged forward's launches among them (the clamped ReLU's bounds ``LOWER`` and
    ``UPPER``)."""
    import normkit
    from normkit.triton import ops

    bounds = dict(lower=LOWER, upper=UPPER) if op == "layer_norm_clamped_relu" else {}
    spy, patch = staged_launches("_staged_forward")
    with patch:
        y = ops.infer_unchecked(op, x, w, b, 1e-5, zero_centered_gamma, LOWER, UPPER)
        with torch.no_grad():
            public = getattr(normkit, op)(
                x, w, b, 1e-5, zero_centered_gamma=zero_centered_gamma, backend="triton", **bounds
            )  # fmt: skip
        trained = ops.forward_unchecked(op, x, w, b, 1e-5, zero_centered_gamma, LOWER, UPPER)[0]
    return y, public, trained, spy.call_count


def _reference_y(op, x, w, b, zero_centered_gamma=False):
    if op == "layer_norm_clamped_relu":
        return reference.layer_norm_clamped_relu_fwd(x, w, b, 1e-5, LOWER, UPPER, zero_centered_gamma)[0]
    return getattr(reference, f"{op}_fwd")(x, w, b, 1e-5, zero_centered_gamma)[0]


@pytest.mark.gpu
@pytest.mark.parametrize(
    "op, m",
    [("layer_norm", 1), ("layer_norm", 300), ("rms_norm", 7), ("rms_norm", 1000), ("layer_norm_clamped_relu", 7),
     ("layer_norm_clamped_relu", 300)],
)  # fmt: skip
@pytest.mark.parametrize("dtypes", [(torch.bfloat16, torch.float32), (torch.float16, torch.float16)],
                         ids=["bf16-fp32", "fp16"])  # fmt: skip
@pytest.mark.parametrize("bias, zero_centered_gamma", [(True, False), (False, True)])
def test_split_staged_inference_call_on_the_gpu(op, m, dtypes, bias, zero_centered_gamma):
    """An inference call (y alone) at 65536 columns in the kernel, its fewest rows lowered (a row a group, rows that do
    not divide over the groups): y against the reference's, and bit for bit the training call's y (the same kernel
    but the statistics' stores), through ``ops`` and through the functional API under ``no_grad``; one launch each."""
    pytest.importorskip("normkit.triton.norm_fwd_staged", reason="the staged kernel needs Triton 3.6")
    x, w, b = make_inputs(m, 65536, *dtypes, bias=bias)
    with config.limits(split_staged_fwd_min_m=1):
        y, public, trained, launches = _inference_calls(op, x, w, b, zero_centered_gamma)
    assert launches == 3
    compare(y, _reference_y(op, x, w, b, zero_centered_gamma), f"{op} inference y")
    assert torch.equal(y, trained) and torch.equal(public, y)


@pytest.mark.gpu
def test_split_staged_inference_call_at_the_rules_rows():
    """The rule's own launch of an inference call (4096 x 65536 LayerNorm and LayerNorm + clamped ReLU bf16 x fp32
    with a bias, 4100 RMSNorm fp16) against the reference and the training call's y; strided rows, which it cannot
    load, take the chunked forward."""
    pytest.importorskip("normkit.triton.norm_fwd_staged", reason="the staged kernel needs Triton 3.6")
    for op, m, dtypes, row_pad, taken in (
        ("layer_norm", 4096, (torch.bfloat16, torch.float32), 0, 3),
        ("layer_norm_clamped_relu", 4096, (torch.bfloat16, torch.float32), 0, 3),
        ("rms_norm", 4100, (torch.float16, torch.float16), 0, 3),
        ("layer_norm", 4096, (torch.bfloat16, torch.float32), 64, 0),
        ("layer_norm_clamped_relu", 4096, (torch.bfloat16, torch.float32), 64, 0),
    ):
        x, w, b = make_inputs(m, 65536, *dtypes, row_pad=row_pad)
        y, public, trained, launches = _inference_calls(op, x, w, b, False)
        assert launches == taken, (op, m, row_pad)
        compare(y, _reference_y(op, x, w, b), f"{op} inference y, row pad {row_pad}")
        assert torch.equal(y, trained) and torch.equal(public, y), (op, m, row_pad)


@pytest.mark.gpu
def test_split_staged_forward_launches_from_its_kept_descriptor():
    """A call of the same x after the one that kept its descriptor (the first compiles, the second keeps) launches
    from it (no descriptor made); a new x (another address) makes its own; the outputs are the same either way."""
    pytest.importorskip("normkit.triton.norm_fwd_staged", reason="the staged kernel needs Triton 3.6")
    from normkit.triton import ops

    x, w, b = make_inputs(4096, 65536, torch.bfloat16, torch.float32)
    first = ops.layer_norm_fwd(x, w, b, 1e-5)
    ops.layer_norm_fwd(x, w, b, 1e-5)
    made = mock.Mock(wraps=ops.STAGED_FWD.descriptor)
    with mock.patch.object(ops.STAGED_FWD, "descriptor", made):
        again = ops.layer_norm_fwd(x, w, b, 1e-5)
        assert made.call_count == 0
        other = ops.layer_norm_fwd(x.clone(), w, b, 1e-5)
        assert made.call_count == 1
    for a, c, d in zip(first, again, other):
        assert torch.equal(a, c) and torch.equal(a, d)
