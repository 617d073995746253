"""Small helpers that keep the notebooks' cells short: where to run, what to skip and why, show, check, plot."""

from __future__ import annotations

import inspect

import torch

from .backends import backends, cudnn_status
from .testing import compare


def on_gpu() -> bool:
    return torch.cuda.is_available()


def device() -> str:
    return "cuda" if on_gpu() else "cpu"


def cudnn_skip_reason(recipe: str | None = None) -> str | None:
    """None when the cuDNN cells can run here, else the reason they are skipped."""
    status = cudnn_status(recipe)
    return None if status == "ok" else f"cuDNN cells skipped: {status}"


def describe() -> None:
    """Print where this notebook runs and which backends it can use."""
    where = torch.cuda.get_device_name() if on_gpu() else "CPU (Triton runs in its interpreter; small sizes)"
    print(f"device: {where}; torch {torch.__version__}")
    for name, status in backends().items():
        print(f"  {name:<7} {status}")


def show_source(obj) -> None:
    """Display the source of a normkit function or kernel, so the shown code is the tested code."""
    fn = getattr(obj, "fn", obj)  # a @triton.jit kernel keeps its Python function in .fn
    source = inspect.getsource(fn)
    try:
        from IPython.display import Markdown, display

        display(Markdown(f"```python\n{source}\n```"))
    except ImportError:
        print(source)


def check(name: str, actual: torch.Tensor, expected: torch.Tensor) -> None:
    """Compare with the reference (per-dtype tolerance) and print one line; raises if out of tolerance."""
    print(f"ok  {compare(actual, expected, name)}")


def _print_rate(row: dict) -> None:
    """A measured provider's line: GB/s and its share of the copy, or why it has none."""
    ok = row["status"] == "ok"
    rate = f"{row['gbs']:.0f} GB/s ({row['pct_of_copy']:.0f}% of copy)" if ok else row["status"][:80]
    print(f"{row['op']:<12} N={row['N']:<6} {row['provider']:<8} {rate}", flush=True)


def bandwidth_plot(ops, m: int, ns, x_dtype="bf16", w_dtype=None, providers=("triton", "cudnn", "eager")):
    """On a GPU: measure GB/s of each provider over ``ns`` and plot it against the copy bandwidth. Each case's lines
    are printed as soon as it is timed: at full size such a cell takes minutes (lesson 05's about six on an H200)."""
    if not on_gpu():
        print("plot skipped: GB/s is measured on an NVIDIA GPU only")
        return None
    from .bench.__main__ import measure, plot
    from .bench.cases import Case

    cases = [Case(op, m, n, x_dtype, w_dtype or x_dtype) for op in ops for n in ns]
    rows = measure(cases, list(providers), warmup=10, rep=40, on_row=_print_rate)
    plot(rows, "bandwidth.png")
    from IPython.display import Image, display

    display(Image("bandwidth.png"))
    return rows
