"""Launching a Triton kernel with less host work a call than ``kernel[grid](...)``.

A 4096 x 768 forward takes about 8 microseconds on an H200, and Triton's launch path about 22 of host time (GPU run
60, against 6 for the compiled kernel's own launcher): on every call it binds the arguments to the signature,
specializes each of them (dtype, 16-byte alignment, the integers 1 and multiples of 16), builds a cache key from
them and the options, and looks the compiled kernel up. ``Launcher`` does that lookup once per key of its own, built
from the same properties of the arguments, and then calls the compiled kernel's launcher itself, as
``JITFunction.run`` does after its lookup (Inductor's generated code also calls compiled kernels directly). The
first call of a key goes through ``kernel[grid](...)`` (compiling if need be), so what runs is always what Triton
chose for those arguments. Host time of normkit's launchers at 4096 x 768 (GPU run 63, before and after in turns in
one process): forward 37 -> 26 microseconds, backward (two kernels) 72 -> 46.

The key holds everything Triton specializes a runtime argument on, so two calls that share it would get the same
compiled kernel from Triton too: a tensor's dtype and whether its address is a multiple of 16; an integer's type
(int32, int64 or uint64 by its value), whether it is 1 and whether it is a multiple of 16; a float is a float32
whatever its value; a tensor descriptor (``TensorDescriptor``) its base's dtype and its block's shape, a Gluon one
its shared-memory layout too (``_key_of``; ``tests/test_launch.py`` checks it against Triton's own
specialization). Plus the constexpr values, ``num_warps``, the current device and each tensor's device (a CPU
tensor's address is never launched: its key is new, and Triton's own path rejects it). Compile options Triton
reads from its knobs (debug, instrumentation) are those of a key's first call.

The key is built by a function written for the kernel's arguments (``_binder``: one expression per property, no loop
over the arguments), which also hands the compiled launcher the tensors' addresses rather than the
tensors: given a tensor, the launcher asks it for ``data_ptr()`` and the CUDA driver whether that address is a
device's (``cuPointerGetAttribute``), once per tensor and call. On the GPU machine (run 124, the forward's 19
arguments): the key 2.9 microseconds, the compiled launcher 4.1 given addresses and 5.2 given the tensors; with the
launch plans of ``ops.py`` the forward's host time went from 39 to 28 microseconds, the backward's from 59 to 42.

A tensor descriptor's tensor map (``cuTensorMapEncodeTiled``, 1.4 microseconds a descriptor in Triton's wrapper,
which encodes every descriptor on every call) is encoded once per address, shape and strides and kept
(``_TensorMaps``), and the compiled launcher's C function is called with it directly. The TMA backward's host time
a call at 4096 x 4608: 102 microseconds through Triton's path (GPU run 151), 56-61 with the descriptors on this
path (run 153), 66.3 -> 51.0 with the maps kept (run 163, in turns in one process; the pointer kernel 35).
A caller can keep a launch's descriptors encoded (``Launcher.launch(..., head=k)``) and launch its later calls of
the same rows from them (``launch_encoded``): no descriptor made, bound or encoded. The TMA backward's host time a
small call above the pointer kernel's: 20-41 microseconds, 4-12 with them kept (GPU run 488, round 59). Triton's
interpreter (no GPU), launch hooks (profilers such as proton set them) and Triton versions other than 3.6 take
Triton's own path on every call.

The launcher also keeps each compiled kernel's registers a thread and shared memory, so that a persistent grid can ask
no more programs a SM than fit on one (``Launcher.programs_that_fit``), the kernel compiled before its first launch
(``Launcher.programs_that_fit_compiled``; ``ops._persistent_grid``, ``ops._backward_grid``). They are kept by the
constexprs, the warps and the arguments' dtypes (``_dtypes``): the same constexprs compile to other registers for other
dtypes (read on the CPU for sm_90, round 125: RMSNorm's forward of 16 rows of 256 at 4 warps holds 80 registers with
bf16 x and float32 weights, 6 programs a SM, and 86 with fp16, 5; LayerNorm's of one row of 1536 at one warp 127-128
with 16-bit x and weights, 16 a SM, and 146 with float32, 13).
"""

from __future__ import annotations

import functools
import inspect

import torch
import triton
import triton.language as tl
from triton import knobs
from triton.tools.tensor_descriptor import TensorDescriptor

try:  # Gluon's descriptor, where this Triton has Gluon (``norm_bwd_staged.py``): a layout beside the block
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor as GluonTensorDescriptor
except ImportError:  # pragma: no cover (an older Triton)
    GluonTensorDescriptor = None


def _kind(arg) -> str:
    if isinstance(arg, torch.Tensor):
        return "tensor"
    if isinstance(arg, TensorDescriptor):
        return "descriptor"
    if GluonTensorDescriptor is not None and isinstance(arg, GluonTensorDescriptor):
        return "gluon_descriptor"
    for kind in (bool, int, float):  # bool before int: bool is an int
        if isinstance(arg, kind):
            return kind.__name__
    raise TypeError(f"Launcher: a runtime argument of type {type(arg).__name__}")


def _dtypes(args: tuple) -> tuple:
    """The dtype of each of a launch's runtime arguments, in order: a tensor's, a tensor descriptor's base's, None for
    the others (integers, floats). Kernels compiled for the same constexprs and warps hold other registers for other
    dtypes, so ``Launcher.programs_that_fit`` answers by them too."""
    dtypes = []
    for arg in args:
        holder = arg if isinstance(arg, torch.Tensor) else getattr(arg, "base", None)  # a descriptor's tensor
        dtypes.append(getattr(holder, "dtype", None))
    return tuple(dtypes)


def _key_of(arg) -> tuple:
    """The part of a launch's key an argument adds, argument by argument: what ``_binder``'s function writes for it
    in one expression (the tests hold the two to each other, and this one to Triton's own specialization)."""
    kind = _kind(arg)
    if kind == "tensor":
        return arg.dtype, not arg.data_ptr() & 15, arg.get_device()
    if kind == "descriptor":  # Triton compiles a descriptor's loads for its dtype and block (its base is aligned)
        return arg.base.dtype, tuple(arg.block_shape), arg.base.get_device()
    if kind == "gluon_descriptor":  # and a Gluon descriptor's for its shared-memory layout too
        return arg.base.dtype, tuple(arg.block_shape), arg.layout, arg.base.get_device()
    if kind == "int":
        return -(2**31) <= arg < 2**31, arg < 2**63, arg == 1, not arg & 15
    return (arg,) if kind == "bool" else ()


def _binder(kinds: tuple[str, ...], lead: bool = True):
    """``bind(device, values, num_warps, *args) -> (key, launch_args)`` for arguments of these kinds: the key is
    ``(device, values, num_warps)`` and then each argument's ``_key_of``, flat; ``launch_args`` the arguments with
    each tensor's address in its place (a descriptor whole). An argument of another kind than the binder's raises
    TypeError or AttributeError (a float where an int was, an int or None where a tensor was, a tensor where a
    descriptor was), and the launch takes Triton's path. A float is checked to be one: an int there would be
    specialized by Triton on its value, which the key ignores. Not ``lead``: ``bind(*args)``, the key the arguments'
    parts alone, so that a launch's key is its first arguments' (with the lead) and then its others'
    (``Launcher.launch_encoded``). ``bind.key_parts``: the count of the arguments' parts of its key."""
    lines, key, launch_args = [], ["device", "values", "num_warps"] if lead else [], []
    for i, kind in enumerate(kinds):
        a = f"a{i}"
        if kind == "tensor":
            lines.append(f"p{i} = {a}.data_ptr()")
            key += [f"{a}.dtype", f"not p{i} & 15", f"{a}.get_device()"]
            launch_args.append(f"p{i}")
            continue
        if kind in ("descriptor", "gluon_descriptor"):  # handed on whole: the compiled launcher encodes its tensor
            # map (launch.py)
            gluon = kind == "gluon_descriptor"
            lines.append(f"if type({a}) is not {'Gluon' * gluon}TensorDescriptor: raise TypeError({a})")
            key += [f"{a}.base.dtype", f"tuple({a}.block_shape)", *[f"{a}.layout"] * gluon, f"{a}.base.get_device()"]
            launch_args.append(a)
            continue
        lines.append(f"if type({a}) is not {kind}: raise TypeError({a})")
        if kind == "int":
            key += [f"-2147483648 <= {a} < 2147483648", f"{a} < 9223372036854775808", f"{a} == 1", f"not {a} & 15"]
        elif kind == "bool":
            key.append(a)
        launch_args.append(a)
    params = ", ".join(["device", "values", "num_warps"] * lead + [f"a{i}" for i in range(len(kinds))])
    body = "".join(f"    {line}\n" for line in lines)
    result = f"({', '.join(key)},), ({', '.join(launch_args)},)"
    source = f"def bind({params}):\n{body}    return {result}\n"
    scope: dict = {"TensorDescriptor": TensorDescriptor, "GluonTensorDescriptor": GluonTensorDescriptor}
    exec(compile(source, f"<normkit launch binder {kinds}>", "exec"), scope)  # noqa: S102 (source built above)
    bind = scope["bind"]
    bind.key_parts = len(key) - 3 * lead
    return bind


def _direct_launch_supported() -> bool:
    """The compiled kernel's launcher is called as Triton 3.6's ``JITFunction.run`` calls it (every argument of the
    signature, constexprs included, after the grid, stream, function, metadata and hooks); other versions of Triton
    (3.4 and 3.5 are supported too) take Triton's own path on every call."""
    return triton.__version__.startswith("3.6.")


def _hooked() -> bool:
    """A launch hook is set (a profiler's, such as proton's): Triton's own path calls it. The hooks are chains in
    Triton 3.6, which are always truthy objects (so ask for their calls), or a callable set in their place."""
    hooks = (knobs.runtime.launch_enter_hook, knobs.runtime.launch_exit_hook)
    return any(getattr(hook, "calls", hook) for hook in hooks)


class _TensorMaps:
    """A compiled kernel's tensor-descriptor arguments as its C launcher takes them (``expand``): each descriptor
    in its place replaced by Triton's ``make_tensordesc_arg`` of it, ``[tensor map, *shape, *strides]``, kept per
    (argument, base address, shape, strides, padding). A tensor map (``cuTensorMapEncodeTiled``) is a function of
    these and of the kernel's metadata for the argument (swizzle, element type, block), which is fixed per compiled
    kernel, so a kept one is the one Triton would encode again for the same inputs. Triton 3.6's Python wrapper
    (``wrap_handle_tensordesc``) encodes each on every call: 1.4 microseconds a descriptor, plus its loop over every
    argument (GPU run 153)."""

    LIMIT = 1024  # kept tensor maps, all forgotten when full (a new address of a tensor is a new map)

    def __init__(self, positions, metas):
        from triton.backends.nvidia.driver import make_tensordesc_arg  # the CUDA backend's (a GPU's launch only)

        self.encode = make_tensordesc_arg
        # Triton's metadata lists the descriptors in the order of their positions; spliced from the back, so the
        # positions before each splice stand
        self.placed = list(zip(sorted(positions), metas))[::-1]
        self.maps: dict = {}

    def expand(self, args: tuple) -> list:
        expanded = list(args)
        for position, meta in self.placed:
            d = args[position]
            key = (position, d.base.data_ptr(), *d.shape, *d.strides, d.padding)
            parts = self.maps.get(key)
            if parts is None:
                if len(self.maps) >= self.LIMIT:
                    self.maps.clear()
                parts = self.maps[key] = self.encode(d, meta)
            expanded[position : position + 1] = parts
        return expanded


def _unwrapped(launch):
    """``(C launcher, _TensorMaps)`` where ``launch`` is Triton 3.6's wrapper of a kernel with tensor-descriptor
    arguments (``wrap_handle_tensordesc``'s ``inner``, whose closure holds the C launcher, the descriptors'
    positions and their metadata); ``(launch, None)`` otherwise, and where a descriptor has no metadata."""
    code, closure = getattr(launch, "__code__", None), getattr(launch, "__closure__", None)
    cells = dict(zip(getattr(code, "co_freevars", ()), closure or ()))
    if set(cells) != {"launcher", "tensordesc_indices", "tensordesc_meta"}:
        return launch, None
    metas = cells["tensordesc_meta"].cell_contents
    if not metas or any(meta is None for meta in metas):
        return launch, None
    return cells["launcher"].cell_contents, _TensorMaps(cells["tensordesc_indices"].cell_contents, metas)


def _entry(compiled):
    """``(launch, head, maps)``: what a cached launch calls, ``launch(grid_x, grid_y, grid_z, stream, *head, *args,
    *constexprs)``, args with their descriptors expanded by ``maps`` (``_TensorMaps``, None without descriptors).
    Where the kernel needs no scratch memory, the compiled launcher's C function itself with the arguments Triton
    3.6's Python wrapper (``CudaLauncher.__call__``) would add; otherwise that wrapper (which expands them)."""
    run = compiled.run
    plain = getattr(run, "global_scratch_size", 1) == 0 and getattr(run, "profile_scratch_size", 1) == 0
    if plain and hasattr(run, "launch"):
        head = (compiled.function, run.launch_cooperative_grid, run.launch_pdl, None, None, compiled.packed_metadata)
        launch, maps = _unwrapped(run.launch)
        return launch, (*head, None, None, None), maps
    return run, (compiled.function, compiled.packed_metadata, None, None, None), None


def programs_per_sm(registers: int, shared: int, num_warps: int, limits: tuple[int, int, int]) -> int:
    """Programs of ``num_warps`` warps, each thread holding ``registers`` registers and each program ``shared`` bytes
    of shared memory, that fit on one SM of ``limits`` (its 32-bit registers, threads and shared memory bytes) at once,
    at least 1. A warp's registers are allocated in units of 256 (8 a thread); a program also takes 1 KB of shared
    memory that the driver keeps for itself (sm_80 and newer); at most 32 programs a SM."""
    regs_limit, threads_limit, shared_limit = limits
    per_warp = -(-max(registers, 1) * 32 // 256) * 256
    by_registers = regs_limit // (per_warp * num_warps)
    by_threads = threads_limit // (32 * num_warps)
    by_shared = shared_limit // (shared + 1024)
    return max(1, min(by_registers, by_threads, by_shared, 32))


@functools.cache
def _sm_limits(device: int) -> tuple[int, int, int]:
    """One SM's 32-bit registers, threads and shared memory bytes on the GPU ``device`` (as torch reports them; an
    H100's or H200's where it does not)."""
    props = torch.cuda.get_device_properties(device)
    return (
        getattr(props, "regs_per_multiprocessor", 65536),
        getattr(props, "max_threads_per_multi_processor", 2048),
        getattr(props, "shared_memory_per_multiprocessor", 233472),
    )


class Launcher:
    """``Launcher(kernel)[grid](*args, num_warps=w, **constexprs)`` does what ``kernel[grid](*args, num_warps=w,
    **constexprs)`` does, with less host work from the second call of a key on: ``args`` are the runtime arguments,
    in the order of the signature, the constexprs are named (every one of them; the kernel's signature must list
    them after the runtime arguments). ``launch(grid, args, num_warps, values)`` takes the constexprs as a tuple in
    the signature's order (``values(**constexprs)`` makes one), for callers that keep it from call to call.
    ``Launcher(kernel, pdl="NAME")``: where the constexpr NAME is true, the launch is a programmatic dependent one
    (``kernel[grid](..., launch_pdl=True)``; the kernel waits for the launch before it in the stream itself)."""

    def __init__(self, kernel, pdl: str | None = None):
        self.kernel = kernel
        # the constexpr (by name) whose truth launches the kernel as a programmatic dependent launch (Triton's
        # ``launch_pdl`` option): a compile option, so a key's compiled kernel carries it (``_entry``'s head)
        self.pdl = pdl
        params = list(inspect.signature(kernel.fn).parameters.values())
        is_constexpr = [p.annotation in (tl.constexpr, "tl.constexpr", "gl.constexpr") for p in params]
        self.runtime_count = is_constexpr.index(True) if True in is_constexpr else len(params)
        if not all(is_constexpr[self.runtime_count :]):
            raise TypeError(f"Launcher: {kernel.fn.__name__} lists a runtime argument after a constexpr")
        self.constexpr_names = tuple(p.name for p in params[self.runtime_count :])
        if pdl is not None and pdl not in self.constexpr_names:
            raise TypeError(f"Launcher: {kernel.fn.__name__} has no constexpr {pdl!r} (pdl)")
        # the interpreter (an InterpretedFunction, not a JITFunction) has nothing compiled to call
        self.direct = isinstance(kernel, triton.runtime.JITFunction) and _direct_launch_supported()
        self.compiled: dict = {}  # key -> (launch, head, maps) (``_entry``)
        # (constexprs, num_warps, the arguments' dtypes) -> (registers a thread, shared memory bytes) of the first
        # kernel compiled for them (``programs_that_fit``)
        self.resources: dict = {}
        self.kinds = None  # the first cached call's argument kinds: those of every call ``bind`` binds
        self.bind = None  # ``_binder`` of ``kinds``
        self.tails: dict = {}  # head -> ``_binder`` (without the lead) of ``kinds`` after the first ``head``

    def __getitem__(self, grid: tuple):
        return lambda *args, num_warps, **constexprs: self.launch(grid, args, num_warps, self.values(**constexprs))

    def values(self, **constexprs) -> tuple:
        """The constexprs in the signature's order; every one must be given."""
        if set(constexprs) != set(self.constexpr_names):
            raise TypeError(
                f"Launcher: {self.kernel.fn.__name__} takes the constexprs {self.constexpr_names}; got "
                f"{tuple(constexprs)}"
            )
        return tuple([constexprs[name] for name in self.constexpr_names])

    def programs_that_fit(self, values: tuple, num_warps: int, device: int, dtypes: tuple) -> int | None:
        """How many programs of the kernel compiled for these constexprs and warps and arguments of these dtypes
        (``_dtypes``) fit on one SM of the GPU ``device`` at once (``programs_per_sm``); None before one has been
        compiled on this path (the first call, the interpreter, Triton's own path)."""
        resources = self.resources.get((values, num_warps, dtypes))
        if resources is None:
            return None
        return programs_per_sm(*resources, num_warps, _sm_limits(device))

    def programs_that_fit_compiled(self, args: tuple, num_warps: int, values: tuple, device: int) -> int | None:
        """``programs_that_fit``, the kernel compiled for these arguments first where none has been for these
        constexprs and warps (Triton's ``warmup``: compiled, not launched), so that a grid can be sized before its
        first launch: a persistent backward's grid is the order in which dW and dB are summed, the same from the
        first call on (``ops._backward_grid``), and a persistent forward's first call runs on the grid of its later
        ones (``ops._persistent_grid``). None where the launch is not this class's own (the interpreter,
        Triton versions other than 3.6: ``direct``)."""
        dtypes = _dtypes(args)
        fit = self.programs_that_fit(values, num_warps, device, dtypes)
        if fit is not None or not self.direct:
            return fit
        compiled = self.kernel.warmup(*args, grid=(1,), num_warps=num_warps, **self._keywords(values))
        compiled._init_handles()  # loads the module: its registers a thread are known from here on
        self._keep_resources(compiled, values, num_warps, dtypes)
        return self.programs_that_fit(values, num_warps, device, dtypes)

    def launch_encoded(self, grid: tuple, encoded: tuple, args: tuple, num_warps: int, values: tuple) -> bool:
        """``launch`` of its first arguments as it returned them encoded (``encoded``) and then ``args``; False, and
        nothing launched, where it cannot be: a launch hook is set (Triton's path calls it), another device is
        current than the one they were encoded on, or no kernel is kept for these arguments (the caller launches them
        through ``launch``). ``num_warps`` and ``values`` are those of the call that returned ``encoded`` (its key holds
        them)."""
        key, expanded, bind_tail = encoded
        device = key[0]
        if _hooked() or torch._C._cuda_getDevice() != device:
            return False
        try:
            tail_key, launch_args = bind_tail(*args)
        except (TypeError, AttributeError):
            return False
        entry = self.compiled.get(key + tail_key)
        if entry is None:
            return False
        run, head, _ = entry
        grid = (*grid, 1, 1)
        stream = torch._C._cuda_getCurrentRawStream(device)
        run(grid[0], grid[1], grid[2], stream, *head, *expanded, *launch_args, *values)
        return True

    def _keywords(self, values: tuple) -> dict:
        """The constexprs by name, and ``launch_pdl`` where the ``pdl`` constexpr is true: what Triton's launch and its
        ``warmup`` take after the runtime arguments."""
        constexprs = dict(zip(self.constexpr_names, values))
        if self.pdl is not None and constexprs[self.pdl]:
            constexprs["launch_pdl"] = True
        return constexprs

    def _keep_resources(self, compiled, values: tuple, num_warps: int, dtypes: tuple) -> None:
        """The registers a thread and shared memory of the first kernel compiled for these constexprs and warps and
        arguments of these dtypes (``programs_that_fit``); ``compiled``'s module loaded."""
        resources = (compiled.n_regs, getattr(compiled.metadata, "shared", 0))
        self.resources.setdefault((values, num_warps, dtypes), resources)

    def _tritons_launch(self, grid: tuple, args: tuple, num_warps: int, values: tuple):
        """``kernel[grid](...)``: Triton binds, specializes, compiles or finds the kernel and launches it."""
        return self.kernel[grid](*args, num_warps=num_warps, **self._keywords(values))

    def launch(self, grid: tuple, args: tuple, num_warps: int, values: tuple, head: int = 0) -> tuple | None:
        """Launches the kernel. ``head``: the count of its first runtime arguments, tensor descriptors, to return as
        ``launch_encoded`` takes them in their place: ``(key, arguments, binder)``, the launch key's part they and
        the lead make, their tensor maps as the compiled launcher takes them (``_TensorMaps``) and the binder of the
        arguments after them. A caller that keeps these, keyed by what made the descriptors (their tensors'
        addresses and strides, the blocks), makes, binds and encodes no descriptor at its later calls
        (``ops._backward``). None where there is nothing to keep: the launch is not this class's own (``direct``, a
        hook) or not of a kernel kept before this call (its first call compiles it)."""
        if len(args) != self.runtime_count:
            raise TypeError(
                f"Launcher: {self.kernel.fn.__name__} takes {self.runtime_count} runtime arguments; got {len(args)}"
            )
        if not self.direct or _hooked():
            self._tritons_launch(grid, args, num_warps, values)
            return None
        device = torch._C._cuda_getDevice()
        try:
            if self.bind is None:
                self.kinds = tuple(map(_kind, args))
                self.bind = _binder(self.kinds)
            key, launch_args = self.bind(device, values, num_warps, *args)
        except (TypeError, AttributeError):  # arguments of other kinds than the binder's: Triton's path, uncached
            key = None
        entry = self.compiled.get(key)
        if entry is None:
            compiled = self._tritons_launch(grid, args, num_warps, values)
            if compiled is not None and key is not None:
                compiled._init_handles()  # loads the module: compiled.run and .function are set from here on
                self.compiled[key] = _entry(compiled)
                self._keep_resources(compiled, values, num_warps, _dtypes(args))
            return None
        run, front, maps = entry
        if maps is not None:
            launch_args = maps.expand(launch_args)
        grid = (*grid, 1, 1)
        run(grid[0], grid[1], grid[2], torch._C._cuda_getCurrentRawStream(device), *front, *launch_args, *values)
        if not head or maps is None or maps.placed[0][0] >= head:  # placed from the last descriptor
            return None
        return self._encoded(key, launch_args, head)

    def _encoded(self, key: tuple, launch_args: list, head: int) -> tuple:
        """``launch``'s ``(key, arguments, binder)`` of its first ``head`` arguments, from its key and its arguments
        as launched (``launch_args``, the descriptors expanded: the others one for one at its end). A call ``bind``
        bound has ``kinds``, so the binder of the others and their count of key parts are those of ``kinds``."""
        bind_tail = self.tails.get(head)
        if bind_tail is None:
            bind_tail = self.tails[head] = _binder(self.kinds[head:], lead=False)
        others = self.runtime_count - head
        return key[: len(key) - bind_tail.key_parts], tuple(launch_args[: len(launch_args) - others]), bind_tail
