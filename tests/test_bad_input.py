"""Every argument of every public function, given a wrong shape, dtype, device or value, raises a clear
TypeError/ValueError that names it, before any kernel launches."""

import pytest
import torch
from conftest import DEVICE, kernel_backends

import normkit as nk

M, N = 4, 16
BACKENDS = ["reference"] + [b for b in kernel_backends() if b == "triton"]


def ok():
    x = torch.randn(M, N)
    w = torch.randn(N)
    stats = torch.randn(M)
    mask = torch.zeros(M, 2, dtype=torch.uint8)
    return {"x": x, "weight": w, "bias": torch.randn(N), "dy": torch.randn(M, N), "mean": stats,
            "rstd": stats.abs(), "mask": mask, "eps": 1e-5}  # fmt: skip


# (argument, bad value factory, error type)
BAD = [
    ("x", lambda a: a["x"].int(), TypeError),
    ("x", lambda a: a["x"][0], ValueError),  # 1-D where 2-D is needed
    ("x", lambda a: a["x"].t().contiguous().t(), ValueError),  # last dim not stride 1
    ("x", lambda a: [[1.0]], TypeError),
    ("x", lambda a: torch.randn(M, 0), ValueError),
    ("weight", lambda a: torch.randn(N + 1), ValueError),
    ("weight", lambda a: torch.randn(1, N), ValueError),
    ("weight", lambda a: torch.randn(N).half(), TypeError),  # neither x's dtype nor float32
    ("weight", lambda a: torch.arange(N), TypeError),
    ("weight", lambda a: torch.randn(2 * N)[::2], ValueError),
    ("bias", lambda a: torch.randn(N - 1), ValueError),
    ("bias", lambda a: torch.randn(N).double(), TypeError),
    ("eps", lambda a: 0.0, ValueError),
    ("eps", lambda a: -1e-5, ValueError),
    ("eps", lambda a: float("nan"), ValueError),
    ("eps", lambda a: "1e-5", TypeError),
    ("dy", lambda a: torch.randn(M, N + 1), ValueError),
    ("dy", lambda a: torch.randn(M, N).half(), TypeError),
    ("mean", lambda a: torch.randn(M + 1), ValueError),
    ("mean", lambda a: torch.randn(M).half(), TypeError),
    ("rstd", lambda a: torch.randn(M, 1), ValueError),
    ("mask", lambda a: torch.zeros(M, 3, dtype=torch.uint8), ValueError),
    ("mask", lambda a: torch.zeros(M, 2, dtype=torch.bool), TypeError),
]
SIGNATURES = {
    "layer_norm_fwd": ["x", "weight", "bias", "eps"],
    "rms_norm_fwd": ["x", "weight", "bias", "eps"],
    "layer_norm_clamped_relu_fwd": ["x", "weight", "bias", "eps"],
    "layer_norm_bwd": ["dy", "x", "weight", "mean", "rstd"],
    "rms_norm_bwd": ["dy", "x", "weight", "rstd"],
    "layer_norm_clamped_relu_bwd": ["dy", "mask", "x", "weight", "mean", "rstd"],
}
CASES = [(fn, arg, make, err) for fn, args in SIGNATURES.items() for (arg, make, err) in BAD if arg in args]


def _module(backend):
    return getattr(nk, backend)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn, arg, make, error", CASES, ids=[f"{c[0]}-{c[1]}-{i}" for i, c in enumerate(CASES)])
def test_explicit_kernels_name_the_bad_argument(backend, fn, arg, make, error):
    args = ok()
    args[arg] = make(args)
    call = [args[name] for name in SIGNATURES[fn]]
    with pytest.raises(error, match=arg):
        getattr(_module(backend), fn)(*call)


def _fast_check(fn: str, args: dict, **options) -> bool:
    """The checks' fast path (``checks.valid_fwd_args`` / ``valid_bwd_args``) on ``fn``'s arguments."""
    from normkit import checks

    a = {"mean": None, "mask": None, "bias": None, **{k: args[k] for k in SIGNATURES[fn]}}
    if fn.endswith("_fwd"):
        clamp = options.get("clamp", (0.0, 6.0)) if "clamped" in fn else None
        return checks.valid_fwd_args(a["x"], a["weight"], a["bias"], a["eps"], options.get("zcg", False), clamp)
    flags = options.get("zcg", False), options.get("has_dbias", True)
    return checks.valid_bwd_args(a["dy"], a["x"], a["weight"], a["mean"], a["rstd"], a["mask"], *flags)


_TAKES = {"mask": "layer_norm_clamped_relu_bwd", "bias": "layer_norm_fwd"}  # a function taking the argument


def test_fast_checks_accept_only_what_the_checks_accept():
    """The checks' fast path (each attribute read once; a call's host time, ``normkit/checks.py``) takes good
    arguments, so a call does not run the checks one by one, and refuses every bad argument above, a bool eps,
    flags that are not bools, a clamp that is not ``lower < upper``, strided statistics, weights and masks, so
    those get the checks that name them."""
    for fn in SIGNATURES:
        assert _fast_check(fn, ok()), fn
    for fn, arg, make, _ in CASES:
        args = ok()
        args[arg] = make(args)
        assert not _fast_check(fn, args), (fn, arg)
    a = ok()
    assert not _fast_check("layer_norm_fwd", {**a, "eps": True})
    assert not _fast_check("layer_norm_fwd", a, zcg=1)
    assert not _fast_check("rms_norm_bwd", a, has_dbias=None)
    for clamp in [(1.0, 1.0), (0.0, float("nan")), (True, 6.0), (0.0, "6")]:
        assert not _fast_check("layer_norm_clamped_relu_fwd", a, clamp=clamp), clamp
    strided = {"rstd": torch.randn(2 * M)[::2], "weight": torch.randn(2 * N)[::2], "bias": torch.randn(2 * N)[::2]}
    strided["mask"] = torch.zeros(M, 4, dtype=torch.uint8)[:, ::2]
    for name, bad in strided.items():
        fn = _TAKES.get(name, "layer_norm_bwd")
        assert not _fast_check(fn, {**a, name: bad}), name
    half = {k: a[k].half() for k in ("x", "dy", "bias")}  # bias in x's dtype where the weight is float32
    assert not _fast_check("layer_norm_fwd", {**a, **half})
    for name in ("weight", "bias", "dy", "mean", "rstd", "mask"):  # another device than x's ("meta": no data)
        fn = _TAKES.get(name, "layer_norm_bwd")
        assert not _fast_check(fn, {**a, name: a[name].to("meta")}), name


@pytest.mark.parametrize("backend", BACKENDS)
def test_clamp_bounds_and_flags(backend):
    a = ok()
    fwd = _module(backend).layer_norm_clamped_relu_fwd
    with pytest.raises(ValueError, match="lower"):
        fwd(a["x"], a["weight"], None, 1e-5, lower=1.0, upper=1.0)
    with pytest.raises(ValueError, match="upper"):
        fwd(a["x"], a["weight"], None, 1e-5, lower=0.0, upper=float("nan"))
    with pytest.raises(TypeError, match="zero_centered_gamma"):
        _module(backend).layer_norm_fwd(a["x"], a["weight"], None, 1e-5, zero_centered_gamma="yes")
    with pytest.raises(TypeError, match="has_dbias"):
        _module(backend).rms_norm_bwd(a["dy"], a["x"], a["weight"], a["rstd"], False, 1)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU for a second device")
def test_mismatched_devices_name_the_argument():
    a = ok()
    with pytest.raises(ValueError, match="weight"):
        nk.reference.layer_norm_fwd(a["x"].cuda(), a["weight"], None, 1e-5)


def test_functional_api_and_modules():
    x, w = torch.randn(3, N), torch.randn(N)
    with pytest.raises(ValueError, match="backend"):
        nk.layer_norm(x, w, backend="cuda")
    with pytest.raises(TypeError, match="weight"):
        nk.rms_norm(x, w.numpy())
    with pytest.raises(ValueError, match="weight"):
        nk.layer_norm(x, torch.randn(N + 2))
    with pytest.raises(ValueError, match="eps"):
        nk.rms_norm(x, w, eps=0)
    with pytest.raises(ValueError, match="lower"):
        nk.layer_norm_clamped_relu(x, w, lower=2.0, upper=1.0)
    with pytest.raises(ValueError, match="normalized_shape"):
        nk.LayerNorm((4, 4))
    with pytest.raises(ValueError, match="eps"):
        nk.RMSNorm(8, eps=-1.0)
    with pytest.raises(TypeError, match="eps"):  # RMSNorm's None is the machine epsilon, LayerNorm has none such
        nk.LayerNorm(8, eps=None)
    with pytest.raises(TypeError, match="eps"):
        nk.layer_norm(x, w, eps=None)
    with pytest.raises(TypeError, match="elementwise_affine"):
        nk.LayerNorm(8, elementwise_affine="no")
    with pytest.raises(ValueError, match="zero_centered_gamma.*elementwise_affine"):
        nk.RMSNorm(8, elementwise_affine=False, zero_centered_gamma=True)
    with pytest.raises(nk.BackendUnavailable):
        nk.layer_norm(x, w, backend="cudnn")  # CPU tensors (and here perhaps no cuDNN at all)


FUNCTIONAL_BAD = [  # x may have any number of dims and any strides here; the rest as for the explicit kernels
    ("x", lambda a: a["x"].int(), TypeError),
    ("weight", lambda a: torch.randn(N + 1), ValueError),
    ("weight", lambda a: torch.randn(N).half(), TypeError),
    ("weight", lambda a: torch.randn(2 * N)[::2], ValueError),
    ("bias", lambda a: torch.randn(N - 1), ValueError),
    ("bias", lambda a: torch.randn(N).double(), TypeError),
    ("eps", lambda a: 0.0, ValueError),
    ("eps", lambda a: "1e-5", TypeError),
]


@pytest.mark.parametrize("backend", ["torch"] + [b for b in kernel_backends() if b == "triton"])
@pytest.mark.parametrize("name", ["layer_norm", "rms_norm", "layer_norm_clamped_relu"])
@pytest.mark.parametrize("arg, make, error", FUNCTIONAL_BAD, ids=[f"{c[0]}-{i}" for i, c in enumerate(FUNCTIONAL_BAD)])
def test_functional_api_names_the_bad_argument_on_each_backend(backend, name, arg, make, error):
    """The functional API checks every argument itself, once (its Triton path skips the kernels' own checks)."""
    args = ok()
    args[arg] = make(args)
    with pytest.raises(error, match=arg):
        getattr(nk, name)(args["x"], args["weight"], args["bias"], args["eps"], backend=backend)


NO_WEIGHT_BAD = [  # weight=None: the ones that stand for it never take the blame
    ("x", lambda a: a["x"].int(), TypeError),
    ("x", lambda a: a["x"].tolist(), TypeError),
    ("bias", lambda a: a["bias"][1:], ValueError),
    ("bias", lambda a: a["bias"].double(), TypeError),
    ("bias", lambda a: a["bias"].half(), TypeError),  # neither x's dtype nor float32 (on x's device: GPU run 833)
    ("zero_centered_gamma", lambda a: 1, TypeError),
]


@pytest.mark.parametrize("backend", ["torch"] + [b for b in kernel_backends() if b == "triton"])
@pytest.mark.parametrize("name", ["layer_norm", "rms_norm", "layer_norm_clamped_relu"])
@pytest.mark.parametrize("arg, make, error", NO_WEIGHT_BAD, ids=[f"{c[0]}-{i}" for i, c in enumerate(NO_WEIGHT_BAD)])
def test_functional_api_without_a_weight_names_the_bad_argument(backend, name, arg, make, error):
    args = {"x": torch.randn(M, N, device=DEVICE), "bias": torch.randn(N, device=DEVICE), "zero_centered_gamma": False}
    args[arg] = make(args)
    with pytest.raises(error, match=arg):
        getattr(nk, name)(args["x"], None, args["bias"], zero_centered_gamma=args["zero_centered_gamma"],
                          backend=backend)  # fmt: skip


@pytest.mark.parametrize("backend", ["torch"] + [b for b in kernel_backends() if b == "triton"])
@pytest.mark.parametrize("shape", [(M, 0), (2, M, 0)])
def test_functional_api_refuses_an_empty_normalized_dim(backend, shape):
    with pytest.raises(ValueError, match="x must have at least one element"):
        nk.layer_norm(torch.randn(shape, device=DEVICE), torch.randn(0, device=DEVICE), backend=backend)


def test_cudnn_unavailable_here_says_why():
    status = nk.backends()["cudnn"]
    if status == "ok":
        pytest.skip("cuDNN runs here")
    assert status.startswith("needs") or "could not" in status
    with pytest.raises(nk.BackendUnavailable, match="cudnn"):
        nk.rms_norm(torch.randn(2, 8), torch.ones(8), backend="cudnn")


def test_cudnn_fused_forward_refuses_2_to_the_31_elements():
    """cuDNN 9.19's fused LayerNorm + ReLU forward fails from 2**31 elements with an illegal memory access, which
    ends the process's CUDA context (GPU run 101): the backend refuses such an x before it builds anything. An
    expanded x of one stored row: no memory needed."""
    pytest.importorskip("cudnn")
    import normkit.cudnn

    x = torch.empty(1, 65536, dtype=torch.bfloat16).expand(32768, 65536)
    w = torch.ones(65536, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match=r"x: .* fewer than 2\*\*31 elements"):
        normkit.cudnn.layer_norm_clamped_relu_fwd(x, w, w, 1e-5)
    with pytest.raises(nk.BackendUnavailable):  # one row fewer passes that check (CPU tensors fail the next)
        normkit.cudnn.layer_norm_clamped_relu_fwd(x[:-1], w, w, 1e-5)


@pytest.mark.skipif("triton" not in kernel_backends(), reason="Triton cannot run here")
def test_triton_backend_names_a_device_it_cannot_run_on():
    """A tensor the Triton backend has no kernels for here (a meta tensor: no data on the CPU nor the GPU) is refused
    with its device named, through the functional API and the explicit kernels alike, before any launch."""
    a = {k: v.to("meta") if isinstance(v, torch.Tensor) else v for k, v in ok().items()}
    x, w, b, dy, mean, rstd = a["x"], a["weight"], a["bias"], a["dy"], a["mean"], a["rstd"]
    calls = [
        lambda: nk.layer_norm(x, w, b, backend="triton"),
        lambda: nk.rms_norm(x, w, backend="triton"),
        lambda: nk.triton.layer_norm_fwd(x, w, b, 1e-5),
        lambda: nk.triton.rms_norm_bwd(dy, x, w, rstd),
        lambda: nk.triton.layer_norm_clamped_relu_bwd(dy, a["mask"], x, w, mean, rstd),
    ]
    for call in calls:
        with pytest.raises(nk.BackendUnavailable, match="triton backend: .*x is on meta"):
            call()
    assert nk.layer_norm(x, w, b).device.type == "meta"  # "auto" picks the reference, which runs on any device
