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

The key holds everything Triton specializes a runtime argument on, so two calls that share it would get the
same compiled kernel from Triton too: a tensor's dtype and whether its address is a multiple of 16; an integer's
type (int32, int64 or uint64 by its value), whether it is 1 and whether it is a multiple of 16; a float is a
float32 whatever its value. ``tests/test_launch.py`` checks this against Triton's own specialization. Plus the
constexpr values, ``num_warps`` and the current device; compile options Triton reads from its knobs (debug,
instrumentation) are those of a key's first call. Triton's interpreter (no GPU), launch hooks (profilers such as
proton set them) and Triton versions other than 3.6 take Triton's own path on every call.
"""

from __future__ import annotations

import inspect

import torch
import triton
import triton.language as tl
from triton import knobs


def _tensor_key(arg: torch.Tensor):
    return arg.dtype, not arg.data_ptr() & 15


def _int_key(arg: int):
    return -(2**31) <= arg < 2**31, arg < 2**63, arg == 1, not arg & 15


# type -> what Triton's specialization of a runtime argument of that type depends on (a dict: one lookup a call)
_KEYS = {torch.Tensor: _tensor_key, torch.nn.Parameter: _tensor_key, int: _int_key, float: lambda arg: float}


def _key_of(arg):
    key = _KEYS.get(type(arg))
    if key is not None:
        return key(arg)
    if isinstance(arg, torch.Tensor):  # another subclass
        return _tensor_key(arg)
    if isinstance(arg, bool):  # before int: bool is an int
        return bool, arg
    if isinstance(arg, int):
        return _int_key(arg)
    if isinstance(arg, float):
        return float
    raise TypeError(f"Launcher: a runtime argument of type {type(arg).__name__}")


def _direct_launch_supported() -> bool:
    """The compiled kernel's launcher is called as Triton 3.6's ``JITFunction.run`` calls it (every argument of the
    signature, constexprs included, after the grid, stream, function, metadata and hooks); other versions of Triton
    (3.3-3.5 are supported too) take Triton's own path on every call."""
    return triton.__version__.startswith("3.6.")


def _hooked() -> bool:
    """A launch hook is set (a profiler's, such as proton's): Triton's own path calls it. The hooks are chains in
    Triton 3.6, which are always truthy objects (so ask for their calls), or a callable set in their place."""
    hooks = (knobs.runtime.launch_enter_hook, knobs.runtime.launch_exit_hook)
    return any(getattr(hook, "calls", hook) for hook in hooks)


class Launcher:
    """``Launcher(kernel)[grid](*args, num_warps=w, **constexprs)`` does what ``kernel[grid](*args, num_warps=w,
    **constexprs)`` does, with less host work from the second call of a key on: ``args`` are the runtime arguments,
    in the order of the signature, the constexprs are named (every one of them; the kernel's signature must list
    them after the runtime arguments)."""

    def __init__(self, kernel):
        self.kernel = kernel
        params = list(inspect.signature(kernel.fn).parameters.values())
        is_constexpr = [p.annotation in (tl.constexpr, "tl.constexpr") for p in params]
        self.runtime_count = is_constexpr.index(True) if True in is_constexpr else len(params)
        if not all(is_constexpr[self.runtime_count :]):
            raise TypeError(f"Launcher: {kernel.fn.__name__} lists a runtime argument after a constexpr")
        self.constexpr_names = tuple(p.name for p in params[self.runtime_count :])
        # the interpreter (an InterpretedFunction, not a JITFunction) has nothing compiled to call
        self.direct = isinstance(kernel, triton.runtime.JITFunction) and _direct_launch_supported()
        self.compiled: dict = {}

    def __getitem__(self, grid: tuple):
        return lambda *args, num_warps, **constexprs: self.run(grid, args, num_warps, constexprs)

    def run(self, grid: tuple, args: tuple, num_warps: int, constexprs: dict) -> None:
        if len(args) != self.runtime_count or len(constexprs) != len(self.constexpr_names):
            raise TypeError(
                f"Launcher: {self.kernel.fn.__name__} takes {self.runtime_count} runtime arguments and the constexprs "
                f"{self.constexpr_names}; got {len(args)} and {tuple(constexprs)}"
            )
        if not self.direct or _hooked():
            self.kernel[grid](*args, num_warps=num_warps, **constexprs)
            return
        device = torch._C._cuda_getDevice()
        values = tuple([constexprs[name] for name in self.constexpr_names])
        key = (device, values, num_warps, *[_key_of(arg) for arg in args])
        compiled = self.compiled.get(key)
        if compiled is None:  # Triton's path: binds, specializes, compiles or finds the kernel
            compiled = self.kernel[grid](*args, num_warps=num_warps, **constexprs)
            if compiled is not None:
                compiled._init_handles()  # loads the module: compiled.run and .function are set from here on
                self.compiled[key] = compiled
            return
        grid = (*grid, 1, 1)
        stream = torch._C._cuda_getCurrentRawStream(device)
        compiled.run(grid[0], grid[1], grid[2], stream, compiled.function, compiled.packed_metadata, None, None, None,
                     *args, *values)  # fmt: skip
