"""``python -m normkit.bench.overhead``: how much of a small call is the host's work, per provider.

For each case and provider it measures, in microseconds a call:

- ``gpu``: the device time (``timing.gpu_time_ms``: events around each call, the host's issuing time kept out,
  median), what the GB/s tables use;
- ``enqueue``: host time to issue one call (1000 calls in a row, no synchronization inside the loop);
- ``stream``: wall time a call when 1000 calls run back to back (the larger of host and device time);
- ``graph``: wall time a call when the same call is captured once in a CUDA graph and replayed 1000 times.

When ``stream`` is well above ``gpu``, the host is the bottleneck: the Python wrapper and the launch cost more than
the kernel, and a CUDA graph (or ``torch.compile``'s cudagraphs mode) is the remedy.

The providers' calls are the benchmark's (``providers.make``): a forward of PyTorch (eager or compiled) and Liger is
their training forward through autograd, on inputs that require a gradient, and normkit's the explicit training
kernel; the inference ops (``ln_infer``, ...) time each without autograd, normkit's through its functional API.

Example: ``python -m normkit.bench.overhead --M 4096 --N 768 --ops ln_fwd ln_bwd --providers triton cudnn eager``
"""

from __future__ import annotations

import argparse
import os
import time

import torch

from . import timing
from .__main__ import _check, require_gpu, write_csv
from .cases import OPS, Case, make_inputs
from .providers import PROVIDERS, SAME_SIZE_COPY, Unsupported, make

CALLS = 1000
TIMES = ("gpu", "enqueue", "stream", "graph")  # microseconds a call, see the module docstring


def _wall_us(fn, calls: int = CALLS) -> tuple[float, float]:
    """(enqueue, stream) microseconds a call."""
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    issued = time.perf_counter()
    torch.cuda.synchronize()
    done = time.perf_counter()
    return (issued - start) / calls * 1e6, (done - start) / calls * 1e6


def _graph_us(fn, calls: int = CALLS) -> float:
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):  # warm-up off the default stream, as capture requires
        fn()
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    return _wall_us(graph.replay, calls)[1]


def measure(case: Case, provider: str) -> dict:
    row = {"op": case.op, "M": case.m, "N": case.n, "x_dtype": case.x_dtype, "provider": provider}
    inputs = make_inputs(case)
    try:
        fn = make(provider, case, inputs)
        _check(case, fn(), inputs.expected)
    except Unsupported as reason:
        return {**row, "note": str(reason)[:80]}
    for _ in range(20):  # warm caches and compilers
        fn()
    row["gpu"] = timing.gpu_time_ms(fn, warmup=10, rep=50) * 1e3
    row["enqueue"], row["stream"] = _wall_us(fn)
    if case.direction == "bwd" and provider not in ("triton", "cudnn"):
        # an autograd backward cannot be captured, and a failed capture leaves the CUDA RNG unusable
        return {**row, "note": "no CUDA graph: autograd backward"}
    try:
        row["graph"] = _graph_us(fn)
    except Exception as error:  # a provider that cannot be captured (host synchronization inside)
        row["note"] = f"no CUDA graph: {type(error).__name__}"
    return row


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m normkit.bench.overhead", description=__doc__.splitlines()[0])
    parser.add_argument("--M", type=int, default=4096)
    parser.add_argument("--N", type=int, nargs="+", default=[768])
    parser.add_argument("--dtype", default="bf16", choices=["fp32", "fp16", "bf16"])
    parser.add_argument("--ops", nargs="+", default=["ln_fwd", "ln_bwd"], choices=list(OPS))
    parser.add_argument(
        "--providers",
        nargs="+",
        default=["triton", "cudnn", "eager", "compile"],
        choices=[p for p in PROVIDERS if p != SAME_SIZE_COPY],
    )
    parser.add_argument("--out", default="benchmarks/results/overhead.csv")
    args = parser.parse_args(argv)
    require_gpu("normkit.bench.overhead", "calls")
    print(f"{torch.cuda.get_device_name()}: microseconds a call ({CALLS} calls)")
    print(f"{'op':<12}{'M x N':>12}  {'provider':<9}" + "".join(f"{k:>9}" for k in TIMES))
    rows = []
    for n in args.N:
        for op in args.ops:
            case = Case(op, args.M, n, args.dtype, args.dtype)
            for provider in args.providers:
                row = measure(case, provider)
                rows.append(row)
                times = "".join(f"{row[k]:>9.1f}" if k in row else f"{'-':>9}" for k in TIMES)
                print(f"{op:<12}{f'{case.m}x{n}':>12}  {provider:<9}{times}  {row.get('note', '')}")
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    write_csv([{k: round(v, 2) if isinstance(v, float) else v for k, v in r.items()} for r in rows], args.out)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
