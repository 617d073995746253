"""``python -m normkit.bench.tune``: time every launch config of the Triton kernels on the benchmark's shapes.

For each case it enumerates candidate ``LaunchConfig`` s (tile shape, warps, persistent programs per SM), compiles
them in parallel worker processes (each checks its result against ``normkit.reference`` on a small M), then times
each one on the full shape (``--timer``, as for ``python -m normkit.bench``), next to the heuristic's own choice.
The table it prints is what ``normkit/triton/config.py``'s heuristic is fitted to; the CSV keeps every timing.

Example: ``python -m normkit.bench.tune --sweep genai small --ops ln_fwd ln_bwd --out benchmarks/tuning``; a shape of
no sweep as ``python -m normkit.bench`` takes it: ``--M 32768 --N 2048 4096 --dtype bf16 --ops rms_bias_bwd``.
"""

from __future__ import annotations

import argparse
import concurrent.futures as futures
import contextlib
import dataclasses
import multiprocessing
import os

import torch

from ..triton import config, ops
from ..triton.config import LaunchConfig
from . import timing
from .__main__ import _check, add_timer_argument, copy_bandwidth_gbs, require_gpu, write_csv
from .cases import _DTYPES, OPS, SWEEPS, Case, bytes_moved, make_inputs
from .providers import make

SMALL_M = 128  # rows of the compile-and-check pass: every kernel sees several row blocks


def _warp_options(elements: int, per_thread=(4, 8, 16, 32)) -> list[int]:
    return sorted({min(32, max(1, config.next_power_of_2(max(1, elements // (32 * p))))) for p in per_thread})


def candidates(case: Case, whole_rows: bool = False) -> list[LaunchConfig]:
    """The launches the tuner times beside the heuristic's: ``_grid``'s, or with ``whole_rows`` only those of one
    program a row block, no chunks and no split rows (at 32768 x 8192 LayerNorm's backward 12 launches of 3 kernels,
    against 62 of 24; none for rows with no one-program launch): a grid that compiles in a GPU call's few minutes,
    where the full one at 8192 columns did not (round 122)."""
    grid = _grid(case)
    if whole_rows:
        return [cfg for cfg in grid if cfg.num_chunks == 1 and cfg.parts == 1]
    return grid


def _grid(case: Case) -> list[LaunchConfig]:
    """The grid: whole-row tiles up to 8192 elements (from 256 in the forward, from 1024 in the backward; in the forward
    a row that is a power of two and at most half of one again also as a head and a tail tile (in the forward also with
    the tail in a tile of twice its width, up to half the head's; from a head of 4096 longer rows too, as two heads),
    in the backward from a head of 1024, also at 32 elements a thread with a tail of at least a quarter of the head; the
    forward's one-tile programs of at most 4 warps also on a persistent grid of 4, 8 or 16 programs a SM, its head +
    tail tiles on one of 2), and for rows that do not fit, chunks of 1024-4096 (8192 too for the forward's rows above
    16384 columns; several rows a step for the shorter chunks in the forward; the backward's chunks keep the whole
    row's dW/dB partials in registers, up to ``config.chunked_max_n`` columns; the forward's chunks with and without
    ``ahead``); warps for 4-32 elements a thread in the forward's whole rows (Inductor's persistent reductions hold
    4-8), 8-32 in the backward's, 4-32 in forward chunks, 4-16 in backward chunks; backward also 1-8 programs per SM.
    Rows longer than half the widest tile also get the split-row backward's grid (``_split_candidates``)."""
    n = case.n
    full = config.row_block_n(n)
    fwd = case.direction != "bwd"
    is_rms = case.kind == "rms_norm"
    split = _split_candidates(case) if not fwd and 2 * n > config.LIMITS["bwd_max_block_n"] else []
    if not fwd and full > config.chunked_max_n(is_rms):  # no one-program row
        return split
    per_thread = (4, 8, 16, 32) if fwd else (8, 16, 32)
    out = []
    for tile in (256, 512, 1024, 2048, 4096, 8192) if fwd else (1024, 2048, 4096, 8192):
        if tile < full or tile // full > config.next_power_of_2(case.m):
            continue
        for warps in _warp_options(tile, per_thread):
            out.append(LaunchConfig(tile // full, full, 1, warps))
    head = full // 2
    # a head tile and a tail tile (``tail_n``); in the forward from a head of 4096 also rows past one and a half heads,
    # as two tiles of a head (LayerNorm's 6145-8192 with a bias)
    if head >= (256 if fwd else 1024) and (n <= head + head // 2 or (fwd and head >= 4096)):
        tail = config.row_block_n(n - head)
        warp_choices = (tail // 256, head // 1024, 4, 8, 16) if fwd else (head // 512, head // 256)
        for warps in sorted({max(1, min(32, w)) for w in warp_choices}):
            out.append(LaunchConfig(1, head, 1, warps, tail_n=tail))
        if not fwd:  # 32 elements a thread in the head, a tail of at least a quarter of it (RMSNorm's rule)
            out.append(LaunchConfig(1, head, 1, head // 1024, tail_n=max(tail, head // 4)))
        elif tail < head // 2:  # the tail in a tile twice its width (RMSNorm's 2560 as 2048 + 1024 at 4 warps)
            for warps in sorted({max(1, min(32, w)) for w in (2 * tail // 256, 4)}):
                out.append(LaunchConfig(1, head, 1, warps, tail_n=2 * tail))
    if fwd:  # one tile a step of a persistent grid: programs of at most 4 warps (the rule's at 256 columns) 4-16 a
        # SM, head + tail tiles 2 a SM too (the rules' 513-1024 rows of 8705-12288 columns)
        out += [
            dataclasses.replace(cfg, programs_per_sm=k)
            for cfg in out
            if cfg.num_chunks == 1
            for k in ((4, 8, 16) if cfg.num_warps <= 4 else ()) + ((2,) if cfg.tail_n else ())
        ]
    if not fwd and full == 16384:  # one whole-row tile at 16 elements a thread, against the chunked rows below
        out.append(LaunchConfig(1, full, 1, 32))
    if full >= 8192:
        row_chunks = ((1, 1024), (1, 2048), (1, 4096), (2, 1024), (2, 2048), (4, 1024))
        for block_m, chunk in row_chunks + (((1, 8192),) if fwd and full > 16384 else ()):
            chunks = config.cdiv(n, chunk)
            if fwd:
                for warps in _warp_options(block_m * chunk, (4, 8, 16, 32)):
                    out.append(LaunchConfig(block_m, chunk, chunks, warps))
            elif block_m == 1:  # the whole row's partials in registers: 4-16 elements a thread, so they fit
                for warps in _warp_options(chunk, (4, 8, 16)):
                    out.append(LaunchConfig(1, chunk, chunks, warps))
    if fwd:  # chunked rows' second pass also with the next chunk's x loaded ahead (``config._second_pass_ahead``)
        out += [dataclasses.replace(cfg, ahead=True) for cfg in out if cfg.num_chunks > 1]
    if not fwd:  # programs per SM is a launch argument only: no extra compile
        per_sm = {cfg: (1, 2, 4, 8) if cfg.num_chunks == 1 else (1, 2, 4) for cfg in out}
        out = [dataclasses.replace(cfg, programs_per_sm=k) for cfg in out for k in per_sm[cfg]]
    return out + split


def heuristic_config(case: Case, slower_dram: bool | None = None, as_launched: bool = True) -> LaunchConfig:
    """The launch config the heuristic gives the case's op (the benchmark's backward ops compute dB where the op has
    a bias: LayerNorm's but ``ln_nobias_bwd``, as the providers call them), on the GPU the tuner runs on
    (``config.slower_dram``), or with ``slower_dram`` as given. ``as_launched`` (on a GPU): the backward's as its call
    launches it, by the TMA or the staged kernel where the GPU and the rules take them (``ops._backward_plan``), as
    the tuner times it (its rules those of the GPU's own DRAM, whatever ``slower_dram`` says); else the pointer
    kernel's launch alone, the kind the grid holds. Until round 84 the tuner
    printed the latter beside the time of the former (RMSNorm's backward at 4096 x 10240: the staged kernel's 75.7
    us under the pointer kernel's launch, which the grid timed at 73.3)."""
    is_rms = case.kind == "rms_norm"
    has_mask = case.kind == "layer_norm_clamped_relu"
    x_bytes, w_bytes = _DTYPES[case.x_dtype].itemsize, _DTYPES[case.w_dtype].itemsize
    x_fp16 = _DTYPES[case.x_dtype] == torch.float16
    if slower_dram is None:
        slower_dram = torch.cuda.is_available() and config.slower_dram(torch.cuda.current_device())
    rule_inputs = dict(
        w_bytes=w_bytes,
        x_fp16=x_fp16,
        slower_dram=slower_dram,
        has_bias=case.has_bias,
        zero_centered=case.zero_centered_gamma,
    )
    if case.direction == "infer":
        return config.infer_config(case.m, case.n, is_rms, x_bytes=x_bytes, **rule_inputs)
    if case.direction != "bwd":
        return config.fwd_config(case.m, case.n, is_rms, has_mask=has_mask, x_bytes=x_bytes, **rule_inputs)
    if not (as_launched and torch.cuda.is_available()):
        # the pointer kernel's launch: the DRAM's speed picks only among the staged and the TMA's launches
        # (``config._staged_bwd``, ``config._slower_dram_bwd``), neither asked for here
        return config.bwd_config(
            case.m, case.n, case.has_bias, has_mask, is_rms, x_bytes=x_bytes, w_bytes=w_bytes, x_fp16=x_fp16
        )
    device = torch.cuda.current_device()
    x_dtype, w_dtype = _DTYPES[case.x_dtype], _DTYPES[case.w_dtype]
    staged = ops._staged_capable(device)  # as ``ops._backward`` (masked too); the bench's rows: ``_staged_rows``
    plan = ops._backward_plan(
        case.m, case.n, x_dtype, w_dtype, case.has_bias, has_mask, is_rms, case.zero_centered_gamma, device,
        ops._tma_capable(device), config.generation, 1, staged,
    )  # fmt: skip
    return plan.cfg


def _split_candidates(case: Case) -> list[LaunchConfig]:
    """The split-row backward: parts of 1024-8192 columns, 16 or 32 elements a thread, 1 or 2 rows a step, 8 or 16
    warps a SM (the heuristic's own choice included)."""
    is_rms = case.kind == "rms_norm"
    has_mask = case.kind == "layer_norm_clamped_relu"
    out = [config.split_rows_config(case.n, is_rms, has_mask)]
    for part_n in (1024, 2048, 4096, 8192):
        for per_thread in (16, 32):
            for block_m in (1, 2):
                for warps_per_sm in (8, 16):
                    out.append(config.split_rows_config(
                        case.n, is_rms, has_mask, part_n=part_n, per_thread=per_thread, block_m=block_m,
                        warps_per_sm=warps_per_sm,
                    ))  # fmt: skip
    return list(dict.fromkeys(out))


def _compile_key(cfg: LaunchConfig) -> LaunchConfig:
    """Configs that differ only in programs per SM (a launch argument) share one compiled kernel; a forward's 0
    (one program a row block) is a kernel of its own."""
    return dataclasses.replace(cfg, programs_per_sm=min(cfg.programs_per_sm, 1))


def _forced(case: Case, cfg: LaunchConfig):
    return config.forced(fwd=cfg) if case.direction != "bwd" else config.forced(bwd=cfg)


def _compile_and_check(case: Case, cfgs: list[LaunchConfig]) -> list[tuple[LaunchConfig, str]]:
    """Worker: run each config once on SMALL_M rows (compiles it into Triton's disk cache) and check it."""
    small = dataclasses.replace(case, m=SMALL_M)
    inputs = make_inputs(small)
    results = []
    for cfg in cfgs:
        try:
            with _forced(small, cfg):
                _check(small, make("triton", small, inputs)(), inputs.expected)
            results.append((cfg, "ok"))
        except Exception as error:  # a config that does not fit (registers, shared memory) is dropped
            results.append((cfg, f"{type(error).__name__}: {error}"[:200]))
    return results


def _compile_all(cases, workers: int, whole_rows: bool = False) -> dict:
    """(case, cfg) -> "ok" or the reason it failed; one task per (case, compile-distinct configs)."""
    tasks = {}
    for case in cases:
        distinct = list(dict.fromkeys(_compile_key(c) for c in candidates(case, whole_rows)))
        tasks[case] = distinct
    status = {}
    ctx = multiprocessing.get_context("spawn")
    with futures.ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
        jobs = {}
        for case, cfgs in tasks.items():
            for i in range(0, len(cfgs), 4):
                jobs[pool.submit(_compile_and_check, case, cfgs[i : i + 4])] = case
        for job in futures.as_completed(jobs):
            for cfg, result in job.result():
                status[(jobs[job], cfg)] = result
    return status


def tune(
    cases, *, workers: int, rep: int, out_csv: str, timer: str = "backlog", whole_rows: bool = False
) -> list[dict]:
    from triton.testing import do_bench

    time_ms = timing.timer(timer)
    copy = copy_bandwidth_gbs(do_bench)
    print(f"{torch.cuda.get_device_name()}: copy {copy:.0f} GB/s; compiling on {workers} workers", flush=True)
    status = _compile_all(cases, workers, whole_rows)
    rows = []
    for case in cases:
        inputs = make_inputs(case)
        nbytes = bytes_moved(case)
        timed = []
        heuristic = heuristic_config(case)
        for cfg in [None] + candidates(case, whole_rows):  # None: the heuristic's own choice
            if cfg is not None and status.get((case, _compile_key(cfg))) != "ok":
                continue
            try:
                with _forced(case, cfg) if cfg is not None else contextlib.nullcontext():
                    fn = make("triton", case, inputs)
                    _check(case, fn(), inputs.expected)
                    ms = time_ms(fn, warmup=5, rep=rep)
            except Exception as error:
                print(f"  {case.op} {case.m}x{case.n} {cfg}: {type(error).__name__}: {str(error)[:120]}")
                continue
            gbs = nbytes / ms / 1e6
            shape = {"op": case.op, "M": case.m, "N": case.n, "x_dtype": case.x_dtype, "w_dtype": case.w_dtype}
            launch = dataclasses.asdict(cfg if cfg is not None else heuristic)
            speed = {"us": round(ms * 1e3, 2), "gbs": round(gbs, 1), "pct_of_copy": round(100 * gbs / copy, 1)}
            timed.append({**shape, "config": "heuristic" if cfg is None else "candidate", **launch, **speed})
        rows += timed
        write_csv(rows, out_csv)
        best = max(timed, key=lambda r: r["gbs"])
        heur = timed[0] if timed and timed[0]["config"] == "heuristic" else None
        ranked = sorted(timed[1:], key=lambda r: -r["gbs"])[:3]
        heur_gbs = heur["gbs"] if heur else float("nan")
        print(f"{case.op:<8}{case.m:>6}x{case.n:<6}{case.x_dtype:<5} heuristic {heur_gbs:>7} GB/s {_short(heur)}"
              f" | best {best['gbs']:>7} ({best['pct_of_copy']}%) {_short(best)}", flush=True)  # fmt: skip
        for r in ranked:
            print(f"{'':>26}{r['gbs']:>7} {_short(r)}")
        del inputs
        torch.cuda.empty_cache()
    return rows


def _short(r) -> str:
    if not r:
        return "-"
    parts = f" parts {r['parts']}" if r["parts"] > 1 else ""
    parts += f" tail {r['tail_n']}" if r.get("tail_n") else ""
    parts += "".join(f" {kernel}" for kernel in ("tma", "staged") if r.get(kernel))
    return f"m{r['block_m']} n{r['block_n']}x{r['num_chunks']} w{r['num_warps']} p{r['programs_per_sm']}{parts}"


def tune_cases(args: argparse.Namespace) -> list[Case]:
    """The cases ``main`` tunes: the named sweeps' shapes (only those of ``--N``'s hidden sizes where it is given), and
    with ``--M`` the custom shapes ``--M`` x each ``--N`` in ``--dtype`` (weights ``--wdtype``, else ``--dtype``), as
    ``python -m normkit.bench`` takes them; each shape once, for every op."""
    shapes = [s for sweep in args.sweep or [] for s in SWEEPS[sweep] if not args.N or s[1] in args.N]
    if args.M is not None:
        if not args.N:
            raise SystemExit("--M needs --N: the hidden sizes of the custom shapes")
        if args.M < 1 or min(args.N) < 1:
            raise SystemExit(f"--M and --N must be positive, got --M {args.M} --N {' '.join(map(str, args.N))}")
        shapes += [(args.M, n, args.dtype, args.wdtype or args.dtype) for n in args.N]
    if not shapes:
        raise SystemExit("give --sweep NAME or --M and --N")
    return [Case(op, m, n, xd, wd) for (m, n, xd, wd) in dict.fromkeys(shapes) for op in args.ops]


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m normkit.bench.tune", description=__doc__.splitlines()[0])
    parser.add_argument("--sweep", nargs="*", choices=sorted(SWEEPS), help="named shape sweeps")
    parser.add_argument("--ops", nargs="+", default=["ln_fwd", "ln_bwd"], choices=list(OPS))
    parser.add_argument("--N", type=int, nargs="*", help="keep only these hidden sizes of the sweeps; with --M: the "
                        "custom shapes' hidden sizes")  # fmt: skip
    parser.add_argument("--M", type=int, help="custom shape: rows (with --N)")
    parser.add_argument("--dtype", default="bf16", choices=["fp32", "fp16", "bf16"], help="custom shape: x's dtype")
    parser.add_argument(
        "--wdtype", choices=["fp32", "fp16", "bf16"], help="custom shape: the weights' (default --dtype)"
    )
    parser.add_argument("--workers", type=int, default=min(16, os.cpu_count() or 1))
    parser.add_argument("--rep", type=int, default=15, help="ms of repetitions per timing")
    parser.add_argument("--out", default="benchmarks/tuning")
    parser.add_argument(
        "--whole-rows", action="store_true", help="time only launches of one program a row block (no chunks, no split "
        "rows): a grid that compiles in minutes where the full one does not (8192 columns)"
    )  # fmt: skip
    add_timer_argument(parser)
    args = parser.parse_args(argv)
    cases = tune_cases(args)
    require_gpu("normkit.bench.tune")
    os.makedirs(args.out, exist_ok=True)
    out_csv = os.path.join(args.out, "tune.csv")
    tune(cases, workers=args.workers, rep=args.rep, out_csv=out_csv, timer=args.timer, whole_rows=args.whole_rows)


if __name__ == "__main__":
    main()
