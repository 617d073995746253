"""The Triton launcher's cache key (``normkit.triton.launch``): a call reuses a compiled kernel only where Triton
would have chosen the same one."""

import random

import pytest
import torch

pytest.importorskip("triton")

from triton._C.libtriton import native_specialize_impl  # noqa: E402
from triton.backends.compiler import BaseBackend  # noqa: E402
from triton.tools.tensor_descriptor import TensorDescriptor  # noqa: E402

from normkit import reference  # noqa: E402
from normkit.testing import compare  # noqa: E402
from normkit.triton import launch  # noqa: E402

INTS = [0, 1, 2, 15, 16, 17, 48, 768, 4097, -1, -16, 2**31 - 16, 2**31 - 1, 2**31, 2**32 + 16, 2**63 - 1, 2**63]
INTS += [2**63 + 16, 2**64 - 1, -(2**31), -(2**31) - 1, -(2**63)]


def _runtime_args():
    base = torch.zeros(64, dtype=torch.uint8)
    tensors = [base[i:].view(dtype) for i in (0, 16) for dtype in (torch.float32, torch.bfloat16, torch.uint8)]
    tensors += [base[i:] for i in (1, 2, 4, 8)]  # addresses that are not multiples of 16
    tensors += [base[2:].view(torch.float16), torch.nn.Parameter(torch.zeros(4)), torch.zeros(3, dtype=torch.float64)]
    return tensors + _descriptors() + _gluon_descriptors() + INTS + [0.0, 1.0, -2.5, 1e300, float("inf"), True, False]


def _descriptors() -> list:
    """Tensor descriptors of several dtypes, blocks, shapes and paddings (two share a dtype and block)."""
    found = []
    for dtype in (torch.float16, torch.bfloat16, torch.float32):
        rows = torch.zeros(8, 64, dtype=dtype)
        for block in ([1, 64], [2, 32], [8, 16]):
            found.append(TensorDescriptor(rows, [8, 64], [64, 1], block))
    found.append(TensorDescriptor(torch.zeros(4, 128, dtype=torch.float16), [4, 96], [128, 1], [1, 64], "nan"))
    return found


def _gluon_descriptors() -> list:
    """Gluon's tensor descriptors (``norm_bwd_staged.py``'s kind), where this Triton has Gluon: two dtypes, two
    blocks, two shared-memory layouts (Triton specializes on the layout too)."""
    if launch.GluonTensorDescriptor is None:
        return []
    from triton.experimental.gluon import language as gl

    found = []
    for dtype in (torch.float16, torch.bfloat16):
        rows = torch.zeros(8, 256, dtype=dtype)
        for swizzle in (0, 128):
            layout = gl.NVMMASharedLayout(swizzle_byte_width=swizzle, element_bitwidth=16, rank=2)
            for block in ([2, 256], [8, 256]):
                found.append(launch.GluonTensorDescriptor(rows, [8, 256], [256, 1], block, layout))
    return found


def _tritons_choice(arg):
    return native_specialize_impl(BaseBackend, arg, False, True, True)


def test_equal_keys_mean_equal_specializations():
    """Two arguments with one key must get one specialization from Triton (the key may be finer than Triton's)."""
    seen = {}
    for arg in _runtime_args():
        key = launch._key_of(arg)
        if key in seen:
            first = seen[key]
            assert _tritons_choice(arg) == _tritons_choice(first), (arg, first, key)
        else:
            seen[key] = arg
    # the key is not finer than it needs to be for tensors and ints: one entry per specialization
    # (and descriptors)
    gluon = [launch.GluonTensorDescriptor] if launch.GluonTensorDescriptor is not None else []
    kinds = (torch.Tensor, TensorDescriptor, *gluon)
    specialized = [a for a in _runtime_args() if isinstance(a, kinds) or type(a) is int]
    keys = {launch._key_of(a) for a in specialized}
    assert len(keys) == len({_tritons_choice(a) for a in specialized})


def test_an_unexpected_argument_type_is_named():
    with pytest.raises(TypeError, match="str"):
        launch._key_of("x")


def test_launch_hooks_are_seen():
    """A profiler's launch hook sends every call through Triton's path, which calls it. Triton 3.6's hook chains are
    truthy objects even when empty (a launcher that tested them so never took its own path: GPU run 61)."""
    from triton import knobs

    assert not launch._hooked()

    def hook(metadata):
        pass

    if hasattr(knobs.runtime.launch_enter_hook, "add"):
        knobs.runtime.launch_enter_hook.add(hook)
        try:
            assert launch._hooked()
        finally:
            knobs.runtime.launch_enter_hook.remove(hook)
    saved = knobs.runtime.launch_exit_hook
    knobs.runtime.launch_exit_hook = hook  # a callable in the chain's place
    try:
        assert launch._hooked()
    finally:
        knobs.runtime.launch_exit_hook = saved
    assert not launch._hooked()


def test_launcher_checks_its_arguments():
    from normkit.triton.norm_fwd import norm_fwd_kernel

    launcher = launch.Launcher(norm_fwd_kernel)
    assert launcher.runtime_count == 19 and launcher.constexpr_names[0] == "IS_RMS"
    with pytest.raises(TypeError, match="norm_fwd_kernel takes the constexprs"):
        launcher[(1,)](1, 2, num_warps=1, IS_RMS=True)
    values = tuple(range(len(launcher.constexpr_names)))
    with pytest.raises(TypeError, match="norm_fwd_kernel takes 19 runtime arguments; got 2"):
        launcher.launch((1,), (1, 2), 1, values)
    assert launcher.values(**dict(zip(reversed(launcher.constexpr_names), reversed(values)))) == values


def _some_args(seed: int) -> list:
    """Runtime arguments of every kind, in a fixed order of kinds, with values drawn by ``seed``."""
    pick = random.Random(seed).choice
    tensors = [a for a in _runtime_args() if isinstance(a, torch.Tensor)]
    floats = [a for a in _runtime_args() if type(a) is float]
    descriptors = _descriptors()
    return [pick(tensors), pick(INTS), pick(tensors), pick(floats), pick([True, False]), pick(INTS), pick(floats),
            pick(descriptors), pick(_gluon_descriptors() or descriptors)]  # fmt: skip


# the kinds of ``_some_args``; a Triton descriptor stands in for a Gluon one where this Triton has no Gluon
KINDS = ("tensor", "int", "tensor", "float", "bool", "int", "float", "descriptor")
KINDS += ("gluon_descriptor" if launch.GluonTensorDescriptor is not None else "descriptor",)


def test_binder_writes_each_arguments_key():
    """The written binder's key is (device, constexprs, warps) and each argument's ``_key_of``, and it hands the
    launcher each tensor's address in the tensor's place; without the lead, the arguments' parts alone. Its
    ``key_parts`` counts them."""
    bind, bind_tail = launch._binder(KINDS), launch._binder(KINDS[3:], lead=False)
    for seed in range(200):
        args = _some_args(seed)
        key, launch_args = bind(0, (16, True), 4, *args)
        assert key == (0, (16, True), 4, *[part for arg in args for part in launch._key_of(arg)])
        tail_parts = tuple(part for arg in args[3:] for part in launch._key_of(arg))  # without the lead
        assert bind.key_parts == len(key) - 3 and bind_tail.key_parts == len(tail_parts)
        assert bind_tail(*args[3:])[0] == tail_parts == key[len(key) - len(tail_parts) :]
        want = [a.data_ptr() if isinstance(a, torch.Tensor) else a for a in args]  # a descriptor whole
        assert list(launch_args) == want and all(type(a) is type(b) for a, b in zip(launch_args, want))


STRANGERS = [(0, None), (0, 3), (1, 2.0), (1, True), (3, 1), (4, 1), (5, None), (7, None), (0, "descriptor")]
STRANGERS += [(7, "tensor"), (8, "tensor"), (8, None)]
if launch.GluonTensorDescriptor is not None:  # one kind of descriptor where the other was
    STRANGERS += [(7, "gluon_descriptor"), (8, "descriptor")]


@pytest.mark.parametrize("position, stranger", STRANGERS)
def test_binder_refuses_arguments_of_another_kind(position, stranger):
    """An argument of another kind than the binder was written for raises (and the launch takes Triton's path):
    an int where a float was would otherwise reuse a kernel Triton specialized on another int's value; a tensor
    where a descriptor was would hand the launcher a tensor to encode as a tensor map; a Triton descriptor where a
    Gluon one was (or the other way) would share a key without a layout."""
    bind = launch._binder(KINDS)
    strangers = {"descriptor": _descriptors()[0], "tensor": torch.zeros(4)}
    if launch.GluonTensorDescriptor is not None:
        strangers["gluon_descriptor"] = _gluon_descriptors()[0]
    stranger = strangers.get(stranger, stranger)
    args = _some_args(0)
    args[position] = stranger
    with pytest.raises((TypeError, AttributeError)):
        bind(0, (), 1, *args)


@pytest.mark.skipif(
    not torch.cuda.is_available(), reason="the cached path needs a GPU (the interpreter takes Triton's)"
)
def test_cached_launch_keeps_alignment_apart():
    """Aligned and misaligned x share everything but their addresses: each gets its own compiled kernel, and the
    second call of each (the cached path) is right."""
    from normkit.triton import layer_norm_fwd
    from normkit.triton.ops import NORM_FWD

    wide = torch.randn(64, 1025, device="cuda", dtype=torch.bfloat16)
    weight = torch.randn(1024, device="cuda", dtype=torch.float32)
    bias = torch.randn(1024, device="cuda", dtype=torch.float32)
    for x in (wide[:, :1024], wide[:, 1:]):  # the second starts 2 bytes past a multiple of 16
        before = len(NORM_FWD.compiled)
        for _ in range(2):
            y = layer_norm_fwd(x, weight, bias, 1e-5)[0]
            compare(y, reference.layer_norm_fwd(x, weight, bias, 1e-5)[0], "y")
        assert len(NORM_FWD.compiled) <= before + 1
    # x's part of the key, after (device, constexprs, warps): (dtype, aligned, device); other tests' kernels of
    # other dtypes may be in the cache too (any order of the tests)
    keys = [k for k in NORM_FWD.compiled if k[1][6] == 1024 and k[3] == torch.bfloat16]  # BLOCK_N, x's dtype
    assert {k[3:6] for k in keys} == {(torch.bfloat16, True, 0), (torch.bfloat16, False, 0)}  # aligned, not


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU: the cached path")
def test_cached_launch_refuses_a_cpu_tensor():
    """The cached path hands the launcher addresses, which it cannot check; a CPU tensor's call has a key of its
    own (its device), so it takes Triton's path, which refuses it, rather than launching on a host address."""
    from normkit.triton.ops import NORM_FWD, forward_unchecked

    x = torch.randn(8, 256, device="cuda")
    weight = torch.randn(256, device="cuda")
    for _ in range(2):
        forward_unchecked("layer_norm", x, weight, None, 1e-5, False)  # the second call is a cached launch
    entries = len(NORM_FWD.compiled)
    with pytest.raises(ValueError, match="cpu tensor"):
        forward_unchecked("layer_norm", x, weight.cpu(), None, 1e-5, False)
    assert len(NORM_FWD.compiled) == entries


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU: the cached path")
def test_kept_tensor_maps_follow_address_shape_and_strides():
    """The TMA backward's tensor maps are kept per (argument, address, shape, strides) (``launch._TensorMaps``):
    matrices that differ from a kept one in any of these only (another tensor; the same address with another row
    stride; the same address with fewer, and an odd number of, rows: a kept map of more rows would load rows past
    M, whose dy adds to dB) each get their own, and every call is right; a repeated call reuses its maps."""
    from normkit.triton import config, ops
    from normkit.triton.config import LaunchConfig

    def backward(x, dy):
        weight = torch.randn(256, device="cuda")
        _, mean, rstd = reference.layer_norm_fwd(x, weight, None, 1e-5)
        for _ in range(2):  # the second call is a cached launch
            got = ops.layer_norm_bwd(dy, x, weight, mean, rstd)
            for name, g, e in zip(("dx", "dw", "db"), got, reference.layer_norm_bwd(dy, x, weight, mean, rstd)):
                compare(g, e, name)

    def kept_at(*tensors):  # the kept tensor maps of these tensors' addresses
        addresses = {t.data_ptr() for t in tensors}
        entries = [entry[2] for entry in ops.NORM_BWD_TMA.compiled.values() if entry[2] is not None]
        return sum(key[1] in addresses for maps in entries for key in maps.maps)

    x_buffer, dy_buffer = torch.randn(2, 64 * 320, device="cuda")
    contiguous = [buffer[: 64 * 256].view(64, 256) for buffer in (x_buffer, dy_buffer)]
    matrices = [
        contiguous,
        [torch.randn(64, 256, device="cuda") for _ in range(2)],  # another address
        [buffer.as_strided((64, 256), (320, 1)) for buffer in (x_buffer, dy_buffer)],  # another row stride
        [t[:33] for t in contiguous],  # fewer rows
    ]
    with config.forced(bwd=LaunchConfig(2, 256, 1, 4, 1, tma=True, tma_store=True)):
        for x, dy in matrices:
            backward(x, dy)
        # dy and x of the three layouts at the buffers' addresses, and of the other tensors
        kept = kept_at(*contiguous)
        assert kept >= 6 and kept_at(*matrices[1]) >= 2
        backward(*contiguous)
        assert kept_at(*contiguous) == kept  # a repeated call encodes nothing new


@pytest.mark.skipif(
    not torch.cuda.is_available() or torch.cuda.get_device_capability()[0] < 9,
    reason="needs a Hopper GPU: the TMA backward's kept descriptors",
)
@pytest.mark.parametrize("masked", [False, True])
def test_tma_backward_launches_from_its_kept_descriptors(monkeypatch, masked):
    """The TMA backward keeps its descriptors encoded per rows (``ops._rows_of``: dy's, x's, dx's and the mask's
    addresses and strides) from its second call of them, and launches its later calls from them: right at each call,
    for rows at other addresses, of another row stride and of the mask by the TMA, and with a launch hook set
    (Triton's path, the descriptors made again)."""
    from normkit.triton import config, ops
    from normkit.triton.config import LaunchConfig

    taken = []
    launch_encoded = ops.NORM_BWD_TMA.launch_encoded
    monkeypatch.setattr(
        ops.NORM_BWD_TMA, "launch_encoded", lambda *args: taken.append(launch_encoded(*args)) or taken[-1]
    )
    n = 1024
    weight = torch.randn(n, device="cuda")
    x_buffer, dy_buffer = torch.randn(2, 64 * (n + 64), device="cuda").bfloat16()
    layouts = [
        [buffer[: 64 * n].view(64, n) for buffer in (x_buffer, dy_buffer)],
        [torch.randn(64, n, device="cuda").bfloat16() for _ in range(2)],  # another address
        [buffer.as_strided((64, n), (n + 64, 1)) for buffer in (x_buffer, dy_buffer)],  # another row stride
    ]

    def backward(x, dy):
        if masked:
            _, mean, rstd, mask = reference.layer_norm_clamped_relu_fwd(x, weight, weight, 1e-5)
            got = ops.layer_norm_clamped_relu_bwd(dy, mask, x, weight, mean, rstd)
            want = reference.layer_norm_clamped_relu_bwd(dy, mask, x, weight, mean, rstd)
        else:
            _, mean, rstd = reference.layer_norm_fwd(x, weight, weight, 1e-5)
            got = ops.layer_norm_bwd(dy, x, weight, mean, rstd)
            want = reference.layer_norm_bwd(dy, x, weight, mean, rstd)
        for name, g, e in zip(("dx", "dw", "db"), got, want):
            compare(g, e, name)

    with config.forced(bwd=LaunchConfig(1, n, 1, 4, 1, tma=True, tma_store=True)):
        for x, dy in layouts:
            taken.clear()
            for _ in range(4):  # the first compiles or finds the kernel, the second keeps, the others take them
                backward(x, dy)
            assert taken and all(taken[-2:]), taken
        staged = not masked and ops._staged_capable(0)  # the plan's key as the calls made it
        plan = ops._backward_plan(
            64, n, torch.bfloat16, torch.float32, True, masked, False, False, 0, True, config.generation, 1, staged
        )  # fmt: skip
        assert plan.cfg.tma and plan.values[ops._MASK_TMA_AT] == masked and len(plan.encoded) >= 3
        monkeypatch.setattr(launch, "_hooked", lambda: True)
        taken.clear()
        backward(*layouts[0])
        assert taken == [False]


@pytest.mark.skipif(
    not torch.cuda.is_available() or torch.cuda.get_device_capability()[0] < 9,
    reason="programmatic dependent launches need a GPU of compute capability 9.0 or newer",
)
@pytest.mark.parametrize(
    "kind, m, n, dtype",
    [
        ("layer_norm", 4096, 1024, torch.float16),  # whole rows, then the sum of the partials
        ("rms_norm", 4096, 4608, torch.float16),  # by the TMA
        ("layer_norm_clamped_relu", 2048, 4097, torch.bfloat16),
        ("layer_norm", 300, 20000, torch.bfloat16),  # split rows: the fill of the sums, split rows, the sum
    ],
)
def test_dependent_launches_give_the_stream_ordered_bits(monkeypatch, kind, m, n, dtype):
    """The backward's kernels after its first launch as programmatic dependent launches on a Hopper GPU
    (``ops._pdl``): each may start while the one before still runs and waits for it in the kernel
    (``griddepcontrol.wait``). Without that wait the sum of the partials would read partials not yet written. dx,
    dW and dB are the bits of the same launches in stream order, and right; the compiled kernels that wait are the
    ones launched so (their ``launch_pdl``)."""
    from normkit.triton import ops

    x = torch.randn(m, n, device="cuda", dtype=dtype)
    weight, bias = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    dy = torch.randn_like(x)
    y, mean, rstd, mask = ops.forward_unchecked(kind, x, weight, bias, 1e-5, False, 0.0, 6.0)

    def backward():
        ops._backward_plan.cache_clear()
        return [ops.backward_unchecked(kind, dy, x, weight, mean, rstd, mask, False, True) for _ in range(3)]

    dependent = backward()
    monkeypatch.setattr(ops, "_pdl", lambda device: False)
    ordered = backward()
    for got in dependent[1:] + ordered:
        for name, a, b in zip(("dx", "dw", "db"), got, dependent[0]):
            assert torch.equal(a, b), name
    if kind == "layer_norm_clamped_relu":
        want = reference.layer_norm_clamped_relu_bwd(dy, mask, x, weight, mean, rstd)
    elif kind == "rms_norm":
        want = reference.rms_norm_bwd(dy, x, weight, rstd, has_dbias=True)
    else:
        want = reference.layer_norm_bwd(dy, x, weight, mean, rstd)
    for name, g, e in zip(("dx", "dw", "db"), dependent[0], want):
        compare(g, e, name)
    wait_at = ops.SUM_PARTIALS.constexpr_names.index("PDL_WAIT")
    entries = [(key[1][wait_at], entry[1][2]) for key, entry in ops.SUM_PARTIALS.compiled.items()]
    assert (True, True) in entries and (False, False) in entries and all(w == bool(p) for w, p in entries)


def test_a_dependent_launch_names_a_constexpr():
    """``Launcher(kernel, pdl=NAME)``: NAME must be one of the kernel's constexprs (its truth is the launch's)."""
    from normkit.triton.norm_bwd import sum_partials_kernel

    assert launch.Launcher(sum_partials_kernel, pdl="PDL_WAIT").pdl == "PDL_WAIT"
    with pytest.raises(TypeError, match="PDL"):
        launch.Launcher(sum_partials_kernel, pdl="PDL")


def test_tensor_maps_expand_each_descriptor_in_place_once_per_layout():
    """``launch._TensorMaps`` (no GPU needed: the encoding is stubbed): each descriptor is replaced in its place by
    its own metadata's expansion (Triton lists the metadata in the order of the positions, which it holds as a
    set), a repeated layout reuses the kept expansion, and one that differs in address, shape, strides or padding
    gets its own."""
    maps = launch._TensorMaps({5, 1}, ["meta of 1", "meta of 5"])
    encoded = []

    def encode(descriptor, meta):
        encoded.append(meta)
        return [f"map({meta})", *descriptor.shape, *descriptor.strides]

    maps.encode = encode
    rows = torch.zeros(8, 64)
    first, second = TensorDescriptor(rows, [8, 64], [64, 1], [1, 64]), TensorDescriptor(rows, [8, 64], [64, 1], [2, 64])
    args = ("a", first, "b", "c", "d", second, "e")
    want = ["a", "map(meta of 1)", 8, 64, 64, 1, "b", "c", "d", "map(meta of 5)", 8, 64, 64, 1, "e"]
    assert maps.expand(args) == want and encoded == ["meta of 5", "meta of 1"]
    assert maps.expand(args) == want and len(encoded) == 2  # kept
    others = [
        TensorDescriptor(torch.zeros(8, 64), [8, 64], [64, 1], [1, 64]),  # another address
        TensorDescriptor(rows, [4, 64], [64, 1], [1, 64]),  # fewer rows
        TensorDescriptor(rows, [4, 64], [128, 1], [1, 64]),  # another row stride
        TensorDescriptor(rows, [4, 64], [128, 1], [1, 64], "nan"),  # another padding
    ]
    for count, other in enumerate(others, start=3):
        maps.expand(("a", other, "b", "c", "d", second, "e"))
        assert len(encoded) == count and encoded[-1] == "meta of 1"


def test_programs_that_fit_compiled_compiles_before_the_first_launch(monkeypatch):
    """``Launcher.programs_that_fit_compiled`` (no GPU needed: the kernel's ``warmup`` is stubbed): where no kernel has
    been compiled for the constexprs and warps, it compiles one through ``warmup`` (the constexprs by name, and
    ``launch_pdl`` where the launcher's ``pdl`` constexpr is true, as Triton's launch takes them), keeps its registers
    and shared memory, and answers what fits; then it asks no compile again. Not on Triton's own path (``direct``)."""
    from normkit.triton.norm_bwd import sum_partials_kernel

    launcher = launch.Launcher(sum_partials_kernel, pdl="PDL_WAIT")
    compiles = []

    class Compiled:
        n_regs, metadata = 72, type("Metadata", (), {"shared": 0})

        def _init_handles(self):
            pass

    class Kernel:
        def warmup(self, *args, grid, num_warps, **keywords):
            compiles.append((args, grid, num_warps, keywords))
            return Compiled()

    monkeypatch.setattr(launcher, "kernel", Kernel())
    monkeypatch.setattr(launch, "_sm_limits", lambda device: (65536, 2048, 233472))
    names = launcher.constexpr_names
    for pdl in (True, False):
        values = tuple(pdl if name == "PDL_WAIT" else 16 for name in names)
        monkeypatch.setattr(launcher, "direct", False)
        assert launcher.programs_that_fit_compiled(("a",), 4, values, 0) is None and not compiles
        monkeypatch.setattr(launcher, "direct", True)
        assert launcher.programs_that_fit_compiled(("a",), 4, values, 0) == 7  # 72 registers, 4 warps: 7 a SM
        assert launcher.programs_that_fit_compiled(("a",), 4, values, 0) == 7 and len(compiles) == 1
        args, grid, warps, keywords = compiles.pop()
        assert (args, grid, warps) == (("a",), (1,), 4)
        assert keywords == dict(zip(names, values), **({"launch_pdl": True} if pdl else {}))
        assert launcher.resources[(values, 4, (None,))] == (72, 0)


def test_programs_that_fit_by_the_arguments_dtypes(monkeypatch):
    """The same constexprs and warps compile to other registers for other dtypes (read on the CPU for sm_90, round 125:
    RMSNorm's forward of 8 rows of 256 at 2 warps with a bias, 85 registers with fp16 x and weights and 80 with bf16;
    of 16 rows at 4 warps, 86 with fp16 and 80 with bf16 x and float32 weights), so ``Launcher.programs_that_fit``
    answers by the arguments' dtypes too (``launch._dtypes``: a tensor's, a descriptor's base's, None for numbers):
    each dtype set compiles once and is answered its own fit, whichever came first (the stubbed ``warmup`` holds the
    registers as the two kernels do). Before round 125 the first dtype's answer served both."""
    from normkit.triton.norm_fwd import norm_fwd_kernel

    launcher = launch.Launcher(norm_fwd_kernel)
    compiles = []

    class Kernel:
        def warmup(self, *args, grid, num_warps, **keywords):
            compiles.append(args[0].dtype)
            registers = 85 if args[0].dtype == torch.float16 else 80
            return type("Compiled", (), {"n_regs": registers, "metadata": None, "_init_handles": lambda self: None})()

    monkeypatch.setattr(launcher, "kernel", Kernel())
    monkeypatch.setattr(launcher, "direct", True)
    monkeypatch.setattr(launch, "_sm_limits", lambda device: (65536, 2048, 233472))
    values = tuple(range(len(launcher.constexpr_names)))
    fp16, bf16 = torch.zeros(4, dtype=torch.float16), torch.zeros(4, dtype=torch.bfloat16)
    descriptor = TensorDescriptor(torch.zeros(8, 64, dtype=torch.float16), [8, 64], [64, 1], [1, 64])
    assert launch._dtypes((fp16, 3, 1.5, descriptor)) == (torch.float16, None, None, torch.float16)
    for first, second in ((fp16, bf16), (bf16, fp16)):
        launcher.resources.clear()
        fits = {x.dtype: launcher.programs_that_fit_compiled((x, 8), 2, values, 0) for x in (first, second, first)}
        assert fits == {torch.float16: 11, torch.bfloat16: 12}  # 88 / 80 registers a thread at 2 warps
        assert compiles[-2:] == [first.dtype, second.dtype]
        assert launcher.programs_that_fit(values, 2, 0, (second.dtype, None)) == fits[second.dtype]


def test_launch_returns_its_descriptors_encoded_for_later_calls(monkeypatch):
    """``Launcher.launch(..., head=k)`` and ``launch_encoded`` (no GPU needed: the compiled kernel and the device are
    stubbed): a cached launch returns its first k arguments (tensor descriptors) as the key's part and the tensor maps
    they launched with; ``launch_encoded`` of them and other arguments after them hands the compiled launcher what
    ``launch`` of the descriptors and those arguments does. It launches nothing and answers False where the kept kernel
    is not the one those arguments would get (another alignment), an argument is of another kind, another device is
    current or a launch hook is set; ``launch`` returns nothing to keep without a kept kernel's tensor maps, or where a
    descriptor comes after the first k."""
    from normkit.triton.norm_bwd import norm_bwd_tma_kernel

    launcher = launch.Launcher(norm_bwd_tma_kernel)
    monkeypatch.setattr(launcher, "direct", True)
    current = [0]
    monkeypatch.setattr(torch._C, "_cuda_getDevice", lambda: current[0], raising=False)
    monkeypatch.setattr(torch._C, "_cuda_getCurrentRawStream", lambda device: 100 + device, raising=False)
    runs = []
    maps = launch._TensorMaps(set(range(8)), [f"meta {i}" for i in range(8)])
    maps.encode = lambda descriptor, meta: [f"map({meta})", *descriptor.shape, *descriptor.strides]
    rows = [torch.zeros(8, 64, dtype=torch.bfloat16) for _ in range(3)]
    descriptors = tuple(TensorDescriptor(rows[i % 3], [8, 64], [64, 1], [1, 64]) for i in range(8))
    buffer = torch.zeros(1024)

    def after(offset: int = 0, m: int = 8) -> tuple:  # W ... blocks_per_program: six tensors, six ints
        return (*(buffer[16 * i + offset :] for i in range(6)), m, 64, 0, 64, 132, 1)

    values = tuple(range(len(launcher.constexpr_names)))
    key = launch._binder(tuple(map(launch._kind, (*descriptors, *after()))))(0, values, 4, *descriptors, *after())[0]
    launcher.compiled[key] = (lambda *a: runs.append(a), ("front",), maps)

    assert launcher.launch((3,), (*descriptors, *after()), 4, values) is None and len(runs) == 1  # head=0
    encoded = launcher.launch((3,), (*descriptors, *after()), 4, values, head=8)
    full = runs[-1]
    assert encoded[0] == key[: 3 + 3 * 8] and encoded[1] == full[5 : 5 + 8 * 5]
    assert full[:5] == (3, 1, 1, 100, "front") and full[5] == "map(meta 0)" and full[-len(values) :] == values
    assert launcher.launch((3,), (*descriptors, *after(32)), 4, values, head=8)[2] is encoded[2]  # one binder a head
    for other in (after(32), after(0, m=9)):  # other tensors and ints of the same key
        assert launcher.launch_encoded((5,), encoded, other, 4, values)
        launcher.launch((5,), (*descriptors, *other), 4, values)
        assert runs[-1] == runs[-2]
    count = len(runs)
    assert not launcher.launch_encoded((5,), encoded, after(1), 4, values)  # misaligned: another kernel's key
    assert not launcher.launch_encoded((5,), encoded, (*after()[:6], 8.0, *after()[7:]), 4, values)  # a float
    current[0] = 1
    assert not launcher.launch_encoded((5,), encoded, after(), 4, values)
    current[0] = 0
    monkeypatch.setattr(launch, "_hooked", lambda: True)
    assert not launcher.launch_encoded((5,), encoded, after(), 4, values) and len(runs) == count
    monkeypatch.setattr(launch, "_hooked", lambda: False)
    assert launcher.launch((3,), (*descriptors, *after()), 4, values, head=4) is None  # descriptors after the head
    launcher.compiled[key] = (lambda *a: runs.append(a), ("front",), None)  # Triton's wrapper encodes them
    assert launcher.launch((3,), (*descriptors, *after()), 4, values, head=8) is None and len(runs) == count + 2


@pytest.mark.parametrize(
    "registers, shared, warps, fit",
    [
        (168, 0, 1, 12),  # 5376 registers a warp: 12 of the 64 that the threads allow
        (72, 0, 4, 7),  # 2304 a warp, 9216 a program
        (148, 0, 8, 1),  # 4736 a warp, allocated as 4864 (units of 256): 38912 a program
        (62, 0, 16, 2),  # 1984 -> 2048 a warp: exactly two 16-warp programs
        (72, 0, 16, 1),
        (16, 0, 1, 32),  # at most 32 programs a SM
        (32, 0, 4, 16),  # by threads: 2048 / 128
        (32, 50 * 1024, 1, 4),  # by shared memory: 228 KB / (50 KB + the driver's 1 KB)
        (255, 0, 32, 1),  # never below 1
    ],
)
def test_programs_that_fit_a_sm(monkeypatch, registers, shared, warps, fit):
    """``launch.programs_per_sm``: what fits one SM of an H100 or H200 (64 K registers, 2048 threads, 228 KB of shared
    memory) by a compiled kernel's registers, warps and shared memory; ``Launcher.programs_that_fit`` asks it for the
    first kernel compiled with those constexprs, warps and arguments' dtypes, None before."""
    from normkit.triton.norm_fwd import norm_fwd_kernel

    limits = (65536, 2048, 233472)
    assert launch.programs_per_sm(registers, shared, warps, limits) == fit
    launcher = launch.Launcher(norm_fwd_kernel)  # never launched here: its bookkeeping alone
    values = tuple(range(len(launcher.constexpr_names)))
    dtypes = (torch.bfloat16, None)
    assert launcher.programs_that_fit(values, warps, 0, dtypes) is None
    launcher.resources[(values, warps, dtypes)] = (registers, shared)
    monkeypatch.setattr(launch, "_sm_limits", lambda device: limits)
    assert launcher.programs_that_fit(values, warps, 0, dtypes) == fit
    assert launcher.programs_that_fit(values, warps, 0, (torch.float16, None)) is None  # another dtype's kernel
