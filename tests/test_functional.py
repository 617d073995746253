"""The autograd-aware functional API and the modules, on every backend available here."""

import pytest
import torch
from conftest import DEVICE, HAS_GPU, kernel_backends

import normkit as nk
from normkit import reference
from normkit.testing import compare

BACKENDS = kernel_backends() + ["torch"]
FUNCTIONS = {
    "layer_norm": nk.layer_norm,
    "rms_norm": nk.rms_norm,
    "layer_norm_clamped_relu": nk.layer_norm_clamped_relu,
}


@pytest.mark.parametrize("name", list(FUNCTIONS))
@pytest.mark.parametrize("backend", ["triton", "torch"])
def test_gradcheck_float64(name, backend):
    if backend == "triton" and HAS_GPU:
        pytest.skip("float64 gradcheck runs through the CPU interpreter")
    x = torch.randn(2, 3, 9, dtype=torch.float64, requires_grad=True)
    w = torch.randn(9, dtype=torch.float64, requires_grad=True)
    b = torch.randn(9, dtype=torch.float64, requires_grad=True)
    kwargs = {"lower": -0.4, "upper": 0.9} if name == "layer_norm_clamped_relu" else {}
    fn = FUNCTIONS[name]
    assert torch.autograd.gradcheck(lambda x, w, b: fn(x, w, b, zero_centered_gamma=True, backend=backend, **kwargs),
                                    (x, w, b))  # fmt: skip


@pytest.mark.parametrize("backend", BACKENDS)
def test_leading_dims_and_autograd_match_the_reference(backend):
    n = 256
    x = torch.randn(2, 3, n, device=DEVICE, dtype=torch.bfloat16, requires_grad=True)
    w = torch.randn(n, device=DEVICE, requires_grad=True)
    b = torch.randn(n, device=DEVICE, requires_grad=True)
    y = nk.layer_norm(x, w, b, backend=backend)
    dy = torch.randn_like(y)
    y.backward(dy)
    rows = x.detach().reshape(-1, n)
    y_ref, mean, rstd = reference.layer_norm_fwd(rows, w.detach(), b.detach(), 1e-5)
    compare(y.detach().reshape(-1, n), y_ref, "y")
    dx, dw, db = reference.layer_norm_bwd(dy.reshape(-1, n), rows, w.detach(), mean, rstd)
    compare(x.grad.reshape(-1, n), dx, "dx")
    compare(w.grad, dw, "dw")
    compare(b.grad, db, "db")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_two_dim_input_autograd_matches_the_reference(backend, name):
    """2-D x goes to the backend as it is, with no view of it in the autograd graph (the eager path checks the
    arguments once and calls the Triton kernels' unchecked entry points); bf16 x, float32 weight and bias."""
    if backend == "cudnn" and name == "layer_norm_clamped_relu":
        pytest.skip("cuDNN's fused LayerNorm + ReLU needs N % 64 == 0 and weight in x's dtype (test_kernels.py)")
    m, n = 7, 100
    x = torch.randn(m, n, device=DEVICE, dtype=torch.bfloat16, requires_grad=True)
    w = torch.randn(n, device=DEVICE, requires_grad=True)
    b = torch.randn(n, device=DEVICE, requires_grad=True)
    y = FUNCTIONS[name](x, w, b, backend=backend)
    assert type(y.grad_fn).__name__ == "_EagerNormBackward"  # the norm's own node, no view after it
    assert type(y.grad_fn.next_functions[0][0]).__name__ == "AccumulateGrad"  # nor between it and x
    dy = torch.randn_like(y)
    y.backward(dy)
    args = (x.detach(), w.detach(), b.detach(), 1e-5)
    if name == "rms_norm":
        y_ref, rstd = reference.rms_norm_fwd(*args)
        dx, dw, db = reference.rms_norm_bwd(dy, x.detach(), w.detach(), rstd, False, True)
    elif name == "layer_norm":
        y_ref, mean, rstd = reference.layer_norm_fwd(*args)
        dx, dw, db = reference.layer_norm_bwd(dy, x.detach(), w.detach(), mean, rstd)
    else:
        y_ref, mean, rstd, mask = reference.layer_norm_clamped_relu_fwd(*args)
        dx, dw, db = reference.layer_norm_clamped_relu_bwd(dy, mask, x.detach(), w.detach(), mean, rstd)
    compare(y.detach(), y_ref, "y")
    compare(x.grad, dx, "dx")
    compare(w.grad, dw, "dw")
    compare(b.grad, db, "db")
    with torch.no_grad():  # the forward alone, same arguments
        compare(FUNCTIONS[name](x, w, b, backend=backend), y_ref, "y without a graph")


def compare_with_the_reference_backend(name, y, dy, inputs, where=""):
    """y and the gradients that ``y.backward(dy)`` left on ``inputs`` (x, weight, bias) against the reference
    backend's, run through the functional API on contiguous copies of the inputs and of dy."""
    copies = [t.detach().contiguous().requires_grad_(True) for t in inputs]
    want = FUNCTIONS[name](*copies, backend="torch")
    want.backward(dy.contiguous())
    compare(y.detach(), want.detach(), f"{name} y{where}")
    for got, ref, what in zip(inputs, copies, ("dx", "dw", "db")):
        compare(got.grad, ref.grad, f"{name} {what}{where}")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_row_strided_input_and_a_gradient_of_one_row(backend, name):
    """x a view of every other row's first 256 columns (rows not packed) and the gradient one row seen by every row
    (row stride 0, ``y.backward(v.expand_as(y))``): each backend takes them as they come, cuDNN's too, whose graphs
    need packed rows (``_apply`` and ``_gradients`` copy them for it; its explicit kernels refuse them, naming the
    argument). bf16 x and weights: cuDNN's fused LayerNorm + ReLU takes no others."""
    m, n = 9, 256
    storage = torch.randn(2 * m, n + 64, device=DEVICE, dtype=torch.bfloat16)
    x = storage[::2, :n].requires_grad_(True)
    w = torch.randn(n, device=DEVICE, dtype=torch.bfloat16, requires_grad=True)
    b = torch.randn(n, device=DEVICE, dtype=torch.bfloat16, requires_grad=True)
    y = FUNCTIONS[name](x, w, b, backend=backend)
    dy = torch.randn(1, n, device=DEVICE, dtype=torch.bfloat16).expand(m, n)
    y.backward(dy)
    compare_with_the_reference_backend(name, y, dy, (x, w, b))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", list(FUNCTIONS))
@pytest.mark.parametrize("dtypes", [(torch.bfloat16, torch.float32), (torch.bfloat16, None), (torch.float32, None)])
def test_no_weight_scales_by_one(backend, name, dtypes):
    """``weight=None`` (``torch.nn.functional.layer_norm``'s and ``rms_norm``'s, and the modules' with
    ``elementwise_affine=False``): y, dx and db are those of a weight of ones, on 3-D x; bf16 x with a float32 bias
    (the ones then float32), with no bias, and float32 x. ``zero_centered_gamma`` scales by 1 too (there is no weight
    to center)."""
    x_dtype, b_dtype = dtypes
    if backend == "cudnn" and name == "layer_norm_clamped_relu" and b_dtype is torch.float32:
        pytest.skip("cuDNN's fused LayerNorm + ReLU takes weights in x's dtype alone (test_kernels.py)")
    n = 256
    x = torch.randn(3, 5, n, device=DEVICE, dtype=x_dtype).requires_grad_(True)
    b = None if b_dtype is None else torch.randn(n, device=DEVICE, dtype=b_dtype, requires_grad=True)
    y = FUNCTIONS[name](x, None, b, backend=backend)
    dy = torch.randn_like(y)
    y.backward(dy)
    ones = torch.ones(n, device=DEVICE, dtype=b_dtype or x_dtype)
    inputs = (x, b) if b is not None else (x,)
    copies = [t.detach().clone().requires_grad_(True) for t in inputs]
    want = FUNCTIONS[name](copies[0], ones, *copies[1:], backend="torch")
    want.backward(dy)
    compare(y.detach(), want.detach(), f"{name} y")
    for got, ref, what in zip(inputs, copies, ("dx", "db")):
        compare(got.grad, ref.grad, f"{name} {what}")
    with torch.no_grad():
        centered = FUNCTIONS[name](x, None, b, zero_centered_gamma=True, backend=backend)
    compare(centered, want.detach(), f"{name} y, zero-centered gamma without a weight")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", list(FUNCTIONS))
@pytest.mark.parametrize("frozen", ["weight", "bias", "weight and bias"])
def test_frozen_parameters_get_no_gradient_computed(backend, name, frozen, monkeypatch):
    """A weight or bias that needs no gradient (a frozen norm, LoRA's) gets none, and the backward is asked for
    only what is needed, as PyTorch's own norms: no dB of a frozen bias, and the Triton backend launches no sum of
    the partials where neither dW nor dB is needed. The gradients that are needed are those of the reference
    backend with every gradient. bf16 x, float32 weight and bias."""
    from normkit import functional
    from normkit.triton import ops

    if backend == "cudnn" and name == "layer_norm_clamped_relu":
        pytest.skip("cuDNN's fused LayerNorm + ReLU takes weights in x's dtype alone (test_kernels.py)")
    m, n = 6, 256
    x = torch.randn(m, n, device=DEVICE, dtype=torch.bfloat16, requires_grad=True)
    w = torch.randn(n, device=DEVICE, requires_grad="weight" not in frozen)
    b = torch.randn(n, device=DEVICE, requires_grad="bias" not in frozen)
    asked, sums = [], []
    eager_backward, launch_sum = functional._eager_backward, ops.SUM_PARTIALS.launch

    def backward_spy(*args):
        asked.append((args[8], args[10]))  # has_dbias, needs_dw
        return eager_backward(*args)

    def sum_spy(*args, **kwargs):
        sums.append(args[1][0].shape)
        return launch_sum(*args, **kwargs)

    monkeypatch.setattr(functional, "_eager_backward", backward_spy)
    monkeypatch.setattr(ops.SUM_PARTIALS, "launch", sum_spy)
    y = FUNCTIONS[name](x, w, b, backend=backend)
    dy = torch.randn_like(y)
    y.backward(dy)
    assert asked == [("bias" not in frozen, "weight" not in frozen)]
    if backend == "triton":
        assert len(sums) == (0 if frozen == "weight and bias" else 1)
    assert (w.grad is None) == ("weight" in frozen) and (b.grad is None) == ("bias" in frozen)
    copies = [t.detach().clone().requires_grad_(True) for t in (x, w, b)]
    want = FUNCTIONS[name](*copies, backend="torch")
    want.backward(dy)
    compare(y.detach(), want.detach(), f"{name} y")
    for got, ref, what in zip((x, w, b), copies, ("dx", "dw", "db")):
        if got.grad is not None:
            compare(got.grad, ref.grad, f"{name} {what}, {frozen} frozen")


@pytest.mark.parametrize("backend", BACKENDS)
def test_rms_norm_eps_none_is_the_machine_epsilon(backend):
    """``eps=None`` is x's dtype's machine epsilon, as in ``torch.nn.functional.rms_norm`` (bf16's is 2**-7: rows of
    small values show it)."""
    x = 0.05 * torch.randn(4, 128, device=DEVICE, dtype=torch.bfloat16)
    w = torch.randn(128, device=DEVICE, dtype=torch.bfloat16)
    eps = torch.finfo(torch.bfloat16).eps
    want = reference.rms_norm_fwd(x, w, None, eps)[0]
    compare(nk.rms_norm(x, w, eps=None, backend=backend), want, "y")
    assert not torch.allclose(nk.rms_norm(x, w, backend=backend).float(), want.float(), rtol=0.05)  # eps 1e-5


def test_transposed_input_and_expanded_gradient():
    x = torch.randn(16, 6, device=DEVICE).t().requires_grad_(True)  # last dim not contiguous: copied, then normed
    w = torch.randn(16, device=DEVICE, requires_grad=True)
    y = nk.rms_norm(x, w, backend="triton")
    y.sum().backward()  # the gradient arrives expanded (stride 0)
    compare(y.detach(), reference.rms_norm_fwd(x.detach().contiguous(), w.detach(), None, 1e-5)[0], "y")
    assert x.grad.shape == x.shape and torch.isfinite(x.grad).all()


def test_auto_backend_runs_triton_on_cuda_and_the_reference_on_cpu():
    from normkit.backends import resolve

    assert resolve("auto", torch.empty(1)) == "torch"
    if HAS_GPU:
        assert resolve("auto", torch.empty(1, device="cuda")) == "triton"


@pytest.mark.parametrize("backend", BACKENDS)
def test_n_equals_one_and_empty_batch(backend):
    w = torch.ones(1, device=DEVICE)
    y = nk.layer_norm(torch.randn(5, 1, device=DEVICE), w, backend=backend)
    assert torch.equal(y, torch.zeros_like(y))  # a single element is its own mean
    empty = nk.rms_norm(torch.randn(0, 4, 8, device=DEVICE), torch.ones(8, device=DEVICE), backend=backend)
    assert empty.shape == (0, 4, 8)


def test_modules_are_drop_in_and_state_dicts_load_both_ways():
    ours, theirs = nk.LayerNorm(32, backend="triton", device=DEVICE), torch.nn.LayerNorm(32, device=DEVICE)
    with torch.no_grad():
        theirs.weight.normal_()
        theirs.bias.normal_()
    ours.load_state_dict(theirs.state_dict())
    theirs.load_state_dict(ours.state_dict())
    x = torch.randn(4, 7, 32, device=DEVICE)
    compare(ours(x).detach(), theirs(x).detach(), "LayerNorm")
    rms, torch_rms = nk.RMSNorm(32, backend="triton", device=DEVICE), torch.nn.RMSNorm(32, eps=1e-5, device=DEVICE)
    rms.load_state_dict(torch_rms.state_dict())
    torch_rms.load_state_dict(rms.state_dict())
    compare(rms(x).detach(), torch_rms(x).detach(), "RMSNorm")
    assert nk.RMSNorm(8, bias=True).bias is not None and nk.LayerNorm(8, bias=False).bias is None
    assert torch.equal(nk.LayerNorm(8, zero_centered_gamma=True).weight, torch.zeros(8))


def test_modules_without_parameters_are_drop_in():
    """``elementwise_affine=False``: no weight and no bias (a bias asked for too, as PyTorch ignores it), an empty
    state_dict, and PyTorch's outputs and gradients; RMSNorm's ``eps=None`` as ``torch.nn.RMSNorm``'s default. The
    first call in inference mode: the ones kept for the weight are then read by a training call's backward."""
    x = torch.randn(4, 7, 32, device=DEVICE, dtype=torch.bfloat16)
    pairs = (
        (nk.LayerNorm(32, elementwise_affine=False, bias=True, backend="triton", device=DEVICE),
         torch.nn.LayerNorm(32, elementwise_affine=False, bias=True, device=DEVICE)),
        # PyTorch's runs on float32 x below, whose eps=None would be float32's: bf16's given (GPU run 833)
        (nk.RMSNorm(32, eps=None, elementwise_affine=False, backend="triton", device=DEVICE),
         torch.nn.RMSNorm(32, eps=torch.finfo(x.dtype).eps, elementwise_affine=False, device=DEVICE)),
    )  # fmt: skip
    for ours, theirs in pairs:
        name = type(ours).__name__
        assert ours.weight is None and ours.bias is None and not list(ours.parameters())
        assert "elementwise_affine=False" in repr(ours)
        ours.load_state_dict(theirs.state_dict())
        theirs.load_state_dict(ours.state_dict())
        with torch.inference_mode():
            compare(ours(x), theirs(x.float()).to(x.dtype), f"{name} in inference mode")
        x_ours, x_theirs = x.clone().requires_grad_(True), x.float().requires_grad_(True)
        y = ours(x_ours)
        dy = torch.randn_like(y)
        y.backward(dy)
        theirs(x_theirs).backward(dy.float())
        compare(y.detach(), theirs(x.float()).detach().to(x.dtype), name)
        compare(x_ours.grad, x_theirs.grad.to(x.dtype), f"{name} dx")


def test_torch_compile_fullgraph_matches_eager():
    model = torch.nn.Sequential(
        torch.nn.Linear(32, 32), nk.LayerNorm(32, backend="torch"), nk.RMSNorm(32, backend="torch"),
        nk.LayerNorm(32, elementwise_affine=False, backend="torch"),  # its ones made in the graph
    )  # fmt: skip
    x = torch.randn(4, 32, requires_grad=True)
    compiled = torch.compile(model, fullgraph=True, backend="eager")  # fullgraph: a graph break is an error
    torch.testing.assert_close(compiled(x), model(x))
    compiled(x).sum().backward()
    assert x.grad is not None


def test_torch_compile_with_a_frozen_bias(monkeypatch):
    """Under torch.compile the custom op's backward asks ``ctx.needs_input_grad`` too: a frozen bias gets no
    gradient and the backend is asked for no dB (``normkit::norm_bwd`` with ``has_dbias`` False), the weight and x
    get theirs, as in eager mode."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(32, 32), nk.LayerNorm(32, backend="torch"))
    model[1].bias.requires_grad_(False)
    x = torch.randn(4, 32, requires_grad=True)
    (gx_eager, gw_eager) = torch.autograd.grad(model(x).square().sum(), (x, model[1].weight))
    asked, backward = [], reference.layer_norm_bwd

    def backward_spy(*args):
        asked.append(args[-1])  # has_dbias
        return backward(*args)

    monkeypatch.setattr(reference, "layer_norm_bwd", backward_spy)  # the op's implementation looks it up each call
    compiled = torch.compile(model, fullgraph=True, backend="aot_eager")  # AOTAutograd: the custom op's backward
    compiled(x).square().sum().backward()
    assert asked and not any(asked) and model[1].bias.grad is None
    torch.testing.assert_close(x.grad, gx_eager)
    torch.testing.assert_close(model[1].weight.grad, gw_eager)


@pytest.mark.parametrize("kind", ["layer_norm", "rms_norm", "layer_norm_clamped_relu"])
def test_custom_ops_pass_opcheck(kind):
    """torch.library.opcheck: the schemas, the fake (shape) functions and the autograd registration agree with what
    the ops do (the reference backend, on this machine's device). Not its test_aot_dispatch_dynamic: it
    differentiates the backward op too, which has no backward (double backward raises, as asserted below);
    torch.compile is tested by the tests after this one."""
    from normkit import functional

    x = torch.randn(6, 40, device=DEVICE, requires_grad=True)
    w = torch.randn(40, device=DEVICE, requires_grad=True)
    b = torch.randn(40, device=DEVICE, requires_grad=True) if kind != "rms_norm" else None
    bounds = (-0.5, 0.5) if kind == "layer_norm_clamped_relu" else (0.0, 0.0)
    checks = ("test_schema", "test_autograd_registration", "test_faketensor")
    torch.library.opcheck(functional.norm_fwd, (x, w, b, 1e-5, kind, False, *bounds, "torch"), test_utils=checks)
    y, mean, rstd, mask = functional.norm_fwd(x.detach(), w.detach(), b, 1e-5, kind, False, *bounds, "torch")
    dy = torch.randn_like(y)
    args = (dy, x.detach(), w.detach(), mean, rstd, mask, kind, False, True, "torch")
    torch.library.opcheck(functional.norm_bwd, args, test_utils=checks)
    with pytest.raises(RuntimeError, match="double backward|once_differentiable"):
        y = FUNCTIONS[kind](x, w, b)
        (gx,) = torch.autograd.grad(y.square().sum(), x, create_graph=True)
        gx.sum().backward()


def test_backends_reports_each_backend():
    status = nk.backends()
    assert set(status) == {"triton", "cudnn", "torch"} and status["torch"] == "ok"
    assert status["triton"] == ("ok" if HAS_GPU else "interpreter")


@pytest.mark.gpu
def test_torch_compile_fullgraph_on_cuda_runs_the_triton_custom_ops():
    """Inductor over nk.LayerNorm/nk.RMSNorm (Triton backend): no graph break, same outputs and gradients."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(256, 256), nk.LayerNorm(256, backend="triton"), nk.RMSNorm(256, backend="triton")
    ).cuda()
    x = torch.randn(64, 256, device="cuda", requires_grad=True)
    compiled = torch.compile(model, fullgraph=True)  # the default (inductor) backend; a graph break is an error
    y_eager = model(x)
    (gx_eager,) = torch.autograd.grad(y_eager.square().sum(), x)
    y_compiled = compiled(x)
    (gx_compiled,) = torch.autograd.grad(y_compiled.square().sum(), x)
    torch.testing.assert_close(y_compiled, y_eager)
    torch.testing.assert_close(gx_compiled, gx_eager)


def _training_y(name, x, w, bias, **clamp):
    """y of the Triton backend's training forward, zero-centered gamma."""
    from normkit.triton import ops

    if name == "layer_norm":
        return ops.layer_norm_fwd(x, w, bias, 1e-5, True)[0]
    if name == "rms_norm":
        return ops.rms_norm_fwd(x, w, bias, 1e-5, True)[0]
    return ops.layer_norm_clamped_relu_fwd(x, w, bias, 1e-5, zero_centered_gamma=True, **clamp)[0]


def _torch_y(name, x, w, bias, **clamp):
    """y by PyTorch's own functions in float32, zero-centered gamma, in x's dtype."""
    rows, scale, n = x.float(), 1 + w, x.shape[-1]
    if name == "rms_norm":
        y = torch.nn.functional.rms_norm(rows, (n,), scale, 1e-5) + (bias if bias is not None else 0)
    else:
        y = torch.nn.functional.layer_norm(rows, (n,), scale, bias, 1e-5)
    return (y.clamp(clamp["lower"], clamp["upper"]) if clamp else y).to(x.dtype)


def _inference_only(forward):
    """``ops._forward`` that raises when asked for a training forward (statistics and mask stored)."""

    def inference_forward(*args, training=True, **kwargs):
        if training:
            raise AssertionError("the training forward was called")
        return forward(*args, training=training, **kwargs)

    return inference_forward


@pytest.mark.parametrize("name", list(FUNCTIONS))
@pytest.mark.parametrize("n", [1, 7, 100, 4097])
def test_inference_call_matches_the_training_forward_and_writes_no_statistics(name, n, monkeypatch):
    """Where nothing needs a gradient the functions run the Triton forward without its statistics and mask
    (``ops.infer_unchecked``; the training forward is not called): y as the training forward's, bit for bit for the
    plain norms (the same launch, the same arithmetic), and within the reference's tolerance for the clamped ReLU
    (which takes the plain forward's launch). Strided bf16 rows, float32 weights, zero-centered gamma, with and
    without bias."""
    from normkit.triton import ops

    torch.manual_seed(n)
    clamp = {"lower": -0.3, "upper": 0.8} if name == "layer_norm_clamped_relu" else {}
    x = torch.randn(5, n + 3, device=DEVICE, dtype=torch.bfloat16)[:, :n]  # rows of stride n + 3
    w = torch.randn(n, device=DEVICE) * 0.1
    for bias in (torch.randn(n, device=DEVICE), None):
        training = _training_y(name, x, w, bias, **clamp)
        with monkeypatch.context() as patched:
            patched.setattr(ops, "_forward", _inference_only(ops._forward))  # the training forward: not called
            y = FUNCTIONS[name](x, w, bias, zero_centered_gamma=True, backend="triton", **clamp)
            w.requires_grad_(True)
            with torch.no_grad():  # a weight that requires a gradient, under no_grad: an inference call too
                y_no_grad = FUNCTIONS[name](x, w, bias, zero_centered_gamma=True, backend="triton", **clamp)
            w.requires_grad_(False)
        assert torch.equal(y, y_no_grad) and y.grad_fn is None and y_no_grad.grad_fn is None
        if name == "layer_norm_clamped_relu":
            compare(y, training, "y")
        else:
            assert torch.equal(y, training)
        compare(y, _torch_y(name, x, w, bias, **clamp), "y")


def test_inference_op_under_torch_compile_and_opcheck():
    """torch.compile picks ``normkit::norm_infer`` where nothing needs a gradient and ``normkit::norm_fwd`` where
    something does; ``norm_infer`` passes opcheck and refuses a backward (it has none) instead of giving no gradient."""
    from normkit import functional

    graphs = []

    def record(gm, inputs):
        graphs.append({node.target for node in gm.graph.nodes if node.op == "call_function"})
        return gm

    w = torch.randn(32)
    x = torch.randn(4, 32)
    fn = torch.compile(lambda x, w: nk.layer_norm(x, w, backend="torch"), fullgraph=True, backend=record)
    compare(fn(x, w), torch.nn.functional.layer_norm(x, (32,), w), "y")
    fn(x.requires_grad_(True), w)
    assert functional.norm_infer in graphs[0] and functional.norm_fwd not in graphs[0]
    assert functional.norm_fwd in graphs[1] and functional.norm_infer not in graphs[1]
    args = (x.detach(), w, None, 1e-5, "layer_norm", False, 0.0, 0.0, "torch")
    torch.library.opcheck(functional.norm_infer, args, test_utils=("test_schema", "test_faketensor"))
    with pytest.raises(RuntimeError, match="no backward"):
        functional.norm_infer(x, w, None, 1e-5, "layer_norm", False, 0.0, 0.0, "torch").sum().backward()


@pytest.fixture
def stood_in_gpus(monkeypatch):
    """CUDA's device queries stood in for: ``(current, entered)``, the current device's index (cuda:0 to start) and
    the indices ``torch.cuda.device`` was entered with, in order; it makes its index current while entered."""
    import contextlib

    current, entered = [0], []

    @contextlib.contextmanager
    def device(index):
        entered.append(index)
        before, current[0] = current[0], index
        yield
        current[0] = before

    monkeypatch.setattr(torch._C, "_cuda_getDevice", lambda: current[0], raising=False)  # absent from CPU builds
    monkeypatch.setattr(torch.cuda, "device", device)
    return current, entered


def test_a_backend_call_runs_with_its_tensors_gpu_current(stood_in_gpus):
    """``backends.on_tensor_device`` (the cuDNN backend's forward and backward; the Triton backend's check the same
    inline) makes the tensors' GPU current for the call where another is and leaves the current one as it was; a
    CPU tensor, or one of the current GPU, runs as it is. On this machine with the device queries stood in for."""
    from normkit.backends import on_tensor_device

    current, entered = stood_in_gpus

    class OnGpu:  # a tensor's device index, all the wrapper reads of its first argument
        def __init__(self, index):
            self.index = index

        def get_device(self):
            return self.index

    seen = on_tensor_device(lambda t, scale, *, shift: (current[0], t.get_device() * scale + shift))
    assert seen(OnGpu(1), 10, shift=2) == (1, 12) and entered == [1] and current == [0]
    assert seen(OnGpu(0), 10, shift=2) == (0, 2) and entered == [1]  # the current GPU's: no switch
    assert seen(torch.empty(1), 1, shift=0) == (0, -1) and entered == [1]  # a CPU tensor's


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two GPUs")
@pytest.mark.parametrize("backend", [b for b in kernel_backends() if b != "torch"])
@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_tensors_of_a_gpu_that_is_not_current(backend, name):
    """Tensors on cuda:1 while cuda:0 is current (a model split over GPUs in one process): the backend runs on
    cuda:1, forward and backward (the Triton backend's TMA and staged launches among them), against the reference
    there, and cuda:0 stays current."""
    if backend == "cudnn" and name == "layer_norm_clamped_relu":
        pytest.skip("cuDNN's fused LayerNorm + ReLU: weights in x's dtype, N % 64 == 0 (the fp16 shapes run it)")
    torch.cuda.set_device(0)
    shapes = [(7, 100, torch.bfloat16, torch.float32), (16400, 2048, torch.float16, torch.float16)]
    shapes += [(4096, 13312, torch.float16, torch.float16)] if backend == "triton" else []
    for m, n, x_dtype, w_dtype in shapes:
        x = torch.randn(m, n, device="cuda:1").to(x_dtype).requires_grad_(True)
        w = (torch.randn(n, device="cuda:1") * 0.5 + 1).to(w_dtype).requires_grad_(True)
        b = torch.randn(n, device="cuda:1").to(w_dtype).requires_grad_(True)
        y = FUNCTIONS[name](x, w, b, backend=backend)
        dy = torch.randn_like(y)
        y.backward(dy)
        assert torch.cuda.current_device() == 0 and y.device == x.grad.device == torch.device("cuda:1")
        compare_with_the_reference_backend(name, y, dy, (x, w, b), f" at {m} x {n}")


@pytest.mark.skipif(HAS_GPU, reason="stands in for CUDA's device queries: the two-GPU test runs the real thing")
def test_triton_launches_with_the_tensors_gpu_current(monkeypatch, stood_in_gpus):
    """``ops._forward`` and ``_backward`` launch every kernel (the backward's dW / dB sum too) with x's GPU current
    where another is, and leave the current one as it was: here x claims cuda:1 (a subclass), cuda:0 is current, and
    the launchers record the current device at each launch instead of launching."""
    from normkit.triton import config, ops

    current, _ = stood_in_gpus
    launched = []

    class Recorder:
        def __init__(self, launcher):
            self.launcher = launcher

        def __getattr__(self, name):
            return getattr(self.launcher, name)

        def launch(self, grid, args, num_warps, values, head=0):
            launched.append((self.launcher.kernel.fn.__name__, current[0]))

        def launch_encoded(self, *args):
            return False

    class OnGpu1(torch.Tensor):
        def get_device(self):
            return 1

    for name in ("_staged_capable", "_tma_capable", "_pdl"):
        monkeypatch.setattr(ops, name, lambda index: False)
    monkeypatch.setattr(config, "multiprocessor_count", lambda index: 132)
    monkeypatch.setattr(config, "slower_dram", lambda index: False)
    monkeypatch.setattr(ops, "_persistent_grid", lambda plan, args, index: plan[:2])
    monkeypatch.setattr(ops, "_backward_grid", lambda plan, launcher, args, m, index: plan[1:3])
    for name in ("NORM_FWD", "NORM_BWD", "SUM_PARTIALS"):
        monkeypatch.setattr(ops, name, Recorder(getattr(ops, name)))
    x, dy = (torch.randn(8, 64).as_subclass(OnGpu1) for _ in range(2))
    w, b, mean, rstd = (torch.ones(n).as_subclass(OnGpu1) for n in (64, 64, 8, 8))
    try:
        ops._forward(x, w, b, 1e-5, is_rms=False, zero_centered_gamma=False)
        ops._backward(dy, x, w, mean, rstd, None, is_rms=False, zero_centered_gamma=False, has_dbias=True)
    finally:  # the plans of "cuda:1" worked out with the stand-ins
        for plan in (ops._forward_plan, ops._backward_plan, ops._sum_plan):
            plan.cache_clear()
    assert launched == [("norm_fwd_kernel", 1), ("norm_bwd_kernel", 1), ("sum_partials_kernel", 1)]
    assert current == [0]
