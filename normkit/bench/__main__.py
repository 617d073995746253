"""``python -m normkit.bench``: GB/s of each provider, side by side in one run, against a plain copy.

Example: ``python -m normkit.bench --sweep genai --ops ln_bwd rms_fwd --out benchmarks/results``
Each provider's result is checked against normkit.reference before it is timed: a wrong result is reported as
"wrong", never as a speed. ``%copy`` is a share of a 1 GiB device-to-device copy timed at the start of the run;
``--providers ... copy`` adds, in each case's turns, a copy of as many bytes as the case's op moves, which says how
near that size of call can come to the long copy at all (it is timed, not checked). Output: a table on screen,
``<out>/bench.csv`` (with GPU, versions, date) and ``<out>/bench.png`` (GB/s against N, one panel per op).
"""

from __future__ import annotations

import argparse
import csv
import datetime
import os
import platform
import statistics
import sys

import torch

from ..testing import compare, compare_norm
from . import timing
from .cases import OPS, SWEEPS, Case, bytes_moved, make_inputs
from .providers import PROVIDERS, SAME_SIZE_COPY, Unsupported, make


def copy_bandwidth_gbs(do_bench) -> float:
    """GB/s of a plain device-to-device copy of 1 GiB (bytes read + bytes written)."""
    src = torch.empty(2**30, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    ms = do_bench(lambda: dst.copy_(src), warmup=50, rep=200, return_mode="median")
    return 2 * src.numel() / ms / 1e6


def _check(case: Case, outputs, expected) -> None:
    outputs = (outputs,) if isinstance(outputs, torch.Tensor) else tuple(outputs)
    if case.direction != "bwd":
        compare(outputs[0], expected[0], "y")
    else:
        compare(outputs[0], expected[0], "dx")
        compare_norm(outputs[1].to(expected[1].dtype), expected[1], "dw")  # a sum over all M rows


def versions() -> dict:
    info = {"torch": torch.__version__, "python": platform.python_version()}
    for name in ("triton", "cudnn", "liger_kernel", "quack"):
        try:
            module = __import__(name)
            info[name] = getattr(module, "__version__", "?")
            if name == "cudnn":
                info["cudnn_backend"] = str(module.backend_version())
        except Exception:
            info[name] = "-"
    return info


def add_case_arguments(parser: argparse.ArgumentParser) -> None:
    """The options that pick the cases (``cases_from_args``) and the timing, shared by the bench commands."""
    parser.add_argument("--sweep", nargs="*", choices=sorted(SWEEPS), help="named shape sweeps")
    parser.add_argument("--ops", nargs="+", default=list(OPS), choices=list(OPS))
    parser.add_argument("--M", type=int, help="custom shape: rows")
    parser.add_argument("--N", type=int, nargs="+", help="custom shape: hidden sizes")
    parser.add_argument("--dtype", default="bf16", choices=["fp32", "fp16", "bf16"])
    parser.add_argument("--wdtype", choices=["fp32", "fp16", "bf16"], help="weight dtype (default: --dtype)")
    parser.add_argument("--warmup", type=int, default=25, help="ms of warm-up per timing")
    parser.add_argument("--rep", type=int, default=100, help="ms of repetitions per timing")
    add_timer_argument(parser)


def add_timer_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--timer",
        default="backlog",
        choices=timing.TIMERS,
        help="backlog: the GPU time with the host's issuing time kept out (normkit/bench/timing.py); triton: "
        "triton.testing.do_bench, which timed the figures of rounds 1-9 in benchmarks/README.md",
    )


def cases_from_args(args) -> list[Case]:
    shapes = []
    for sweep in args.sweep or []:
        shapes += SWEEPS[sweep]
    if args.M and args.N:
        shapes += [(args.M, n, args.dtype, args.wdtype or args.dtype) for n in args.N]
    if not shapes:
        raise SystemExit("give --sweep NAME or --M and --N")
    return [Case(op, m, n, xd, wd) for (m, n, xd, wd) in shapes for op in args.ops]


def require_gpu(command: str, what: str = "kernels") -> None:
    """Exit with a message naming the command where no NVIDIA GPU is visible (the bench commands time on one)."""
    if not torch.cuda.is_available():
        raise SystemExit(f"{command} times {what} on an NVIDIA GPU; none is visible here")


def measure(cases, providers, *, warmup=25, rep=100, timer="backlog", rounds=1, on_row=None) -> list[dict]:
    """Check then time each provider on each case; one row per (case, provider).

    Every provider's call is made and checked first; then all are timed in turns, ``rounds`` times, each round
    starting one provider later than the one before (the first provider of round r is the r-th), so that no provider
    is always timed first after the inputs are made or always right after the same peer. ``us`` is the median of the
    rounds; ``us_rounds`` lists them where there are several."""
    require_gpu("normkit.bench")
    if rounds < 1:
        raise ValueError(f"rounds must be at least 1, got {rounds}")
    # tqdm's plain bar, not tqdm.auto's widget: the bar is shown on a terminal only (below), and in a notebook without
    # ipywidgets tqdm.auto warns as it is imported (lesson 05's output on the GPU machine, run 592)
    from tqdm import tqdm
    from triton.testing import do_bench

    time_ms = timing.timer(timer)
    meta = {"gpu": torch.cuda.get_device_name(), "date": datetime.date.today().isoformat(), "timer": timer}
    meta.update(versions())
    copy = copy_bandwidth_gbs(do_bench)
    print(f"{meta['gpu']}: device-to-device copy {copy:.0f} GB/s", flush=True)
    rows = []
    # the bar only on a terminal: piped into a log, its carriage returns put each case's first row on the bar's line
    for case in tqdm(cases, desc="cases", disable=not sys.stderr.isatty()):
        inputs = make_inputs(case)
        nbytes = bytes_moved(case)
        shape = {"op": case.op, "M": case.m, "N": case.n, "x_dtype": case.x_dtype, "w_dtype": case.w_dtype}
        case_rows = {
            p: {**meta, **shape, "provider": p, "bytes": nbytes, "copy_gbs": round(copy, 1)} for p in providers
        }
        fns = {}
        for provider, row in case_rows.items():
            try:
                fn = make(provider, case, inputs)
                outputs = fn()
                if provider != SAME_SIZE_COPY:  # the yardstick copies bytes; it computes nothing to check
                    _check(case, outputs, inputs.expected)
                fns[provider] = fn
            except Unsupported as why:
                row.update(status=f"unsupported: {why}"[:160])
            except AssertionError as why:
                row.update(status=f"wrong: {why}"[:160])
            except Exception as why:  # a provider that crashes on a shape is reported, the sweep goes on
                row.update(status=f"error: {type(why).__name__}: {why}"[:160])
        timed = time_in_turns(fns, time_ms, rounds, case_rows, warmup=warmup, rep=rep)
        results = {}
        for provider, times in timed.items():
            ms = statistics.median(times)
            row = case_rows[provider]
            row.update(status="ok", us=round(ms * 1e3, 2), gbs=round(nbytes / ms / 1e6, 1))
            row["pct_of_copy"] = round(100 * row["gbs"] / copy, 1)
            if rounds > 1:
                row["us_rounds"] = " ".join(f"{t * 1e3:.2f}" for t in times)
            results[provider] = ms
        for row in case_rows.values():
            if "eager" in results and row.get("us"):
                row["speedup_vs_eager"] = round(results["eager"] * 1e3 / row["us"], 2)
            rows.append(row)
            if on_row:
                on_row(row)
        del inputs, fns
        torch.cuda.empty_cache()
    return rows


def time_in_turns(fns: dict, time_ms, rounds: int, rows: dict, **timing_ms) -> dict:
    """``{provider: [ms of each round]}``: each callable of ``fns`` timed once a round, the round's order rotated by
    one provider from the round before. A provider whose timing raises gets its ``rows`` entry's status "error" and
    is not timed again."""
    order = list(fns)
    times = {provider: [] for provider in order}
    for turn in range(rounds if order else 0):
        start = turn % len(order)
        for provider in order[start:] + order[:start]:
            if provider not in times:
                continue
            try:
                times[provider].append(time_ms(fns[provider], **timing_ms))
            except Exception as why:
                rows[provider].update(status=f"error: {type(why).__name__}: {why}"[:160])
                del times[provider]
    return times


HEADER = f"{'op':<12}{'M':>7}{'N':>7} {'dtype':<10}{'provider':<9}{'us':>10}{'GB/s':>8}{'%copy':>7}{'xeager':>8}"


def print_table(rows: list[dict]) -> None:
    for r in rows:
        dtype = r["x_dtype"] + ("/" + r["w_dtype"] if r["w_dtype"] != r["x_dtype"] else "")
        if r["status"] == "ok":
            print(f"{r['op']:<12}{r['M']:>7}{r['N']:>7} {dtype:<10}{r['provider']:<9}{r['us']:>10.1f}{r['gbs']:>8.0f}"
                  f"{r['pct_of_copy']:>7.1f}{r.get('speedup_vs_eager', float('nan')):>8.2f}"
                  + (f"  rounds {r['us_rounds']}" if "us_rounds" in r else ""))  # fmt: skip
        else:
            print(f"{r['op']:<12}{r['M']:>7}{r['N']:>7} {dtype:<10}{r['provider']:<9}  {r['status'][:70]}")


def write_csv(rows: list[dict], path: str) -> None:
    fields = sorted(
        {k for r in rows for k in r}, key=lambda k: (k not in _FIRST, _FIRST.index(k) if k in _FIRST else k)
    )
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)


_FIRST = ["op", "M", "N", "x_dtype", "w_dtype", "provider", "status", "us", "gbs", "pct_of_copy", "speedup_vs_eager"]


def plot(rows: list[dict], path: str) -> None:
    """GB/s against N, one panel per (op, M, dtype), one line per provider, the copy bandwidth dashed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ok = [r for r in rows if r["status"] == "ok"]
    panels = sorted({(r["op"], r["M"], r["x_dtype"], r["w_dtype"]) for r in ok})
    if not panels:
        return
    cols = min(3, len(panels))
    nrows = (len(panels) + cols - 1) // cols
    fig, axes = plt.subplots(nrows, cols, figsize=(5 * cols, 3.6 * nrows), squeeze=False)
    for ax, (op, m, xd, wd) in zip(axes.flat, panels):
        sel = [r for r in ok if (r["op"], r["M"], r["x_dtype"], r["w_dtype"]) == (op, m, xd, wd)]
        for provider in dict.fromkeys(r["provider"] for r in sel):
            pts = sorted((r["N"], r["gbs"]) for r in sel if r["provider"] == provider)
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=provider)
        ax.axhline(sel[0]["copy_gbs"], linestyle="--", color="gray", label="1 GiB copy")
        ax.set_xscale("log", base=2)
        ax.set_title(f"{op}  M={m} {xd}" + (f"/{wd}" if wd != xd else ""))
        ax.set_xlabel("N")
        ax.set_ylabel("GB/s")
    for ax in list(axes.flat)[len(panels) :]:
        ax.axis("off")
    axes.flat[0].legend(fontsize=8)
    fig.suptitle(f"{ok[0]['gpu']}, {ok[0]['date']}")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m normkit.bench", description=__doc__.splitlines()[0])
    add_case_arguments(parser)
    parser.add_argument(
        "--providers",
        nargs="+",
        default=list(PROVIDERS),
        choices=list(PROVIDERS),
        help=f"{SAME_SIZE_COPY!r}: a plain copy of as many bytes as each case's op moves (the yardstick for its size)",
    )
    parser.add_argument("--out", default="benchmarks/results", help="folder for bench.csv and bench.png")
    parser.add_argument("--tag", default="bench", help="file name stem of the CSV and PNG")
    parser.add_argument(
        "--rounds", type=int, default=1, help="timings of each provider, taken in turns (the median is reported)"
    )
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error(f"--rounds must be at least 1, got {args.rounds}")
    os.makedirs(args.out, exist_ok=True)
    done = []

    def on_row(row):  # print and save each case as it finishes, so a cut-off run keeps what it measured
        done.append(row)
        print_table([row])
        write_csv(done, os.path.join(args.out, f"{args.tag}.csv"))

    print(HEADER)
    rows = measure(
        cases_from_args(args),
        args.providers,
        warmup=args.warmup,
        rep=args.rep,
        timer=args.timer,
        rounds=args.rounds,
        on_row=on_row,
    )
    plot(rows, os.path.join(args.out, f"{args.tag}.png"))
    print(f"wrote {args.out}/{args.tag}.csv and {args.tag}.png")


if __name__ == "__main__":
    main()
