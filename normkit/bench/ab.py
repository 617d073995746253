"""``python -m normkit.bench.ab REV``: the Triton kernels of git revision REV against the working tree's, one process.

A kernel change is judged by its speed before and after on the same GPU, inputs and minute: a machine's speed drifts
between runs (just after a start every provider has run 2-3x slower), so figures from two runs do not compare. This
command copies the ``normkit`` package of REV (``git archive``) beside the working tree's under another name, checks
both against ``normkit.reference`` on each case, then times them in turns, ``--rounds`` times each (each round starting
with the version that ended the round before), and prints GB/s (median of the rounds; every round in the CSV) and the
ratio now / before.

Example: ``python -m normkit.bench.ab HEAD~1 --M 32768 --N 1024 4096 --ops ln_bwd ln_relu_bwd --rep 20 --warmup 5``
"""

from __future__ import annotations

import argparse
import importlib
import io
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import types

import torch

from . import timing
from .__main__ import (
    _check,
    add_case_arguments,
    cases_from_args,
    copy_bandwidth_gbs,
    require_gpu,
    time_in_turns,
    write_csv,
)
from .cases import bytes_moved, make_inputs
from .providers import normkit_call


def load_revision(rev: str, repo: str = "."):
    """The ``triton`` ops module of the ``normkit`` package at git revision ``rev`` of ``repo``, imported as
    ``normkit_at_<commit>`` (its imports are relative, so the copy uses its own kernels, config and checks).
    ``rev`` may also be a folder holding a ``normkit`` package (``git archive REV normkit | tar -x -C FOLDER``), for
    a machine that has the working tree but not its git history."""
    if os.path.isdir(os.path.join(rev, "normkit")):
        return _import_as(os.path.join(rev, "normkit"), "normkit_in_" + _identifier(os.path.abspath(rev)))
    try:
        found = subprocess.run(
            ["git", "-C", repo, "rev-parse", "--short", f"{rev}^{{commit}}"], capture_output=True, text=True
        )
    except FileNotFoundError as error:
        raise RuntimeError("normkit.bench.ab reads other revisions with git, which is not installed here") from error
    if found.returncode != 0:
        raise ValueError(f"rev: {rev!r} is not a commit of the git repository at {os.path.abspath(repo)!r}")
    commit = found.stdout.strip()
    name = f"normkit_at_{commit}"
    if name not in sys.modules:
        archive = subprocess.run(["git", "-C", repo, "archive", commit, "normkit"], capture_output=True, check=True)
        root = tempfile.mkdtemp(prefix="normkit-ab-")
        with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
            tar.extractall(root, filter="data")
        return _import_as(os.path.join(root, "normkit"), name)
    return importlib.import_module(f"{name}.triton")


def _now_package() -> str:
    """The folder of the ``normkit`` package this command runs ("now"): the one Python imported, which under ``python
    -m`` is the current folder's before any on PYTHONPATH (GPU runs 378-379 timed the working tree against itself,
    their variants on PYTHONPATH unread)."""
    return os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _identifier(path: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in path.strip("/"))[-60:]


def _import_as(package: str, name: str):
    """The ``triton`` subpackage of the package folder ``package``, imported as ``name.triton`` (imported once). The
    package's own ``__init__`` is not run: it would register normkit's torch custom ops (``normkit::norm_fwd``, ...)
    a second time under the same names, which left later calls of them failing with ``std::bad_alloc`` in one
    process (the CI run of commit 450c441)."""
    if name not in sys.modules:
        stub = types.ModuleType(name)
        stub.__path__ = [package]  # a package whose submodules are the folder's modules
        sys.modules[name] = stub
    return importlib.import_module(f"{name}.triton")


def measure(before, cases, *, rounds=3, warmup=25, rep=100, timer="backlog", on_row=None) -> list[dict]:
    """For each case: check both versions, then time them in turns, each round starting with the version that
    ended the round before (``bench.__main__.time_in_turns``); one row per case."""
    require_gpu("normkit.bench.ab")
    from triton.testing import do_bench

    from .. import triton as now_ops

    time_ms = timing.timer(timer)
    copy = copy_bandwidth_gbs(do_bench)
    print(f"{torch.cuda.get_device_name()}: device-to-device copy {copy:.0f} GB/s", flush=True)
    rows = []
    for case in cases:
        inputs = make_inputs(case)
        nbytes = bytes_moved(case)
        fns = {"before": normkit_call(before, case, inputs), "now": normkit_call(now_ops, case, inputs)}
        row = {"op": case.op, "M": case.m, "N": case.n, "x_dtype": case.x_dtype, "w_dtype": case.w_dtype}
        wrong = None
        for version, fn in fns.items():  # a wrong result is reported as such, never timed
            try:
                _check(case, fn(), inputs.expected)
            except AssertionError as why:
                wrong = f"wrong ({version}): {why}"
                break
        if wrong:
            row.update(status=wrong[:160])
        else:
            errors = {version: {} for version in fns}  # a timing that raises is reported here, never retried
            timed = time_in_turns(fns, time_ms, rounds, errors, warmup=warmup, rep=rep)
            failed = [f"{version}: {error['status']}" for version, error in errors.items() if error]
            row.update({"status": "; ".join(failed)[:160]} if failed else _speeds(timed, nbytes, copy, timer))
        rows.append(row)
        if on_row:
            on_row(row)
        del inputs
        torch.cuda.empty_cache()
    return rows


def _speeds(timed: dict, nbytes: int, copy: float, timer: str) -> dict:
    """A row's columns from ``{version: [ms of each round]}``: GB/s of each version (median and every round), the
    ratio now / before and now's share of the copy's GB/s."""
    gbs = {version: [nbytes / ms / 1e6 for ms in times] for version, times in timed.items()}
    median = {version: statistics.median(values) for version, values in gbs.items()}
    row = {"status": "ok", "copy_gbs": round(copy, 1), "ratio": round(median["now"] / median["before"], 3)}
    row.update(timer=timer, now_pct_of_copy=round(100 * median["now"] / copy, 1))
    for version, values in gbs.items():
        row[f"{version}_gbs"] = round(median[version], 1)
        row[f"{version}_rounds"] = " ".join(f"{v:.0f}" for v in values)
    return row


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m normkit.bench.ab", description=__doc__.splitlines()[0])
    parser.add_argument(
        "rev",
        help="the git revision to compare with (a commit, branch or tag; HEAD for the last commit), or a folder "
        "holding a normkit package",
    )
    add_case_arguments(parser)
    parser.add_argument("--rounds", type=int, default=3, help="timings of each version, taken in turns")
    parser.add_argument("--out", default="benchmarks/results", help="folder for the CSV")
    parser.add_argument("--tag", default="ab", help="file name stem of the CSV")
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error(f"--rounds must be at least 1, got {args.rounds}")
    require_gpu("normkit.bench.ab")  # before the copy's import, which needs a GPU (or Triton's interpreter)
    before = load_revision(args.rev)
    print(f"before: {args.rev}; now: {_now_package()}", flush=True)
    os.makedirs(args.out, exist_ok=True)
    done = []

    def on_row(row):
        done.append(row)
        shape = f"{row['op']:<12}{row['M']:>7}{row['N']:>7} {row['x_dtype']}/{row['w_dtype']}"
        if row["status"] == "ok":
            print(f"{shape}  before {row['before_rounds']:<17} now {row['now_rounds']:<17} x{row['ratio']:.3f}"
                  f"  {row['now_pct_of_copy']:.0f}% of copy", flush=True)  # fmt: skip
        else:
            print(f"{shape}  {row['status']}", flush=True)
        write_csv(done, os.path.join(args.out, f"{args.tag}.csv"))

    cases = cases_from_args(args)
    measure(before, cases, rounds=args.rounds, warmup=args.warmup, rep=args.rep, timer=args.timer, on_row=on_row)
    print(f"wrote {args.out}/{args.tag}.csv (GB/s of {args.rev} and of {_now_package()})")


if __name__ == "__main__":
    main()
