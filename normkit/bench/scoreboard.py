"""``python -m normkit.bench.scoreboard``: where normkit stands against its peers, from ``normkit.bench`` CSVs.

For each case (op, shape, dtypes) of the CSVs it reads normkit's row (provider ``triton``) and the peers' (every
provider but ``triton`` and the yardstick ``copy``; a peer whose result was wrong or that could not run is listed,
never counted as a speed) and reports:

- the best peer: the one of least time, and normkit's speed over it (its time / normkit's; at least 1 where normkit
  is as fast or faster: target 1 of issue #8);
- normkit's share of the 1 GiB copy's bandwidth measured in the same run, and for calls that move at least
  ``LARGE_CALL_BYTES`` whether that share reaches ``COPY_SHARE_TARGET`` (target 2);
- with ``--sweep``, the cases of those sweeps (``cases.SWEEPS``, the ops given) that no CSV holds: not measured.

A case's rows (normkit's, its peers', the copy's share) are only compared with each other, so each case's rows should
come from one run; where a case and provider come twice, the row of the last CSV given is kept.

A folder given in place of a CSV stands for its CSVs (``round_csvs``): a round of ``benchmarks/results/`` that timed
again only the cases its change touched names the round it builds on in a ``builds_on.txt``, whose CSVs come first.

Example: ``python -m normkit.bench.scoreboard benchmarks/results/round63 --sweep genai small tutorial --plot
board.png``
"""

from __future__ import annotations

import argparse
import csv
import glob
import os
import statistics
from dataclasses import dataclass

from .__main__ import plot
from .cases import OPS, SWEEPS
from .providers import SAME_SIZE_COPY

NORMKIT = "triton"
LARGE_CALL_BYTES = 128 * 10**6  # target 2's "calls that move 128 MB or more" (GB/s here are 1e9 bytes a second too)
COPY_SHARE_TARGET = 85.0  # % of the copy's bandwidth
LEVEL = 0.98  # "within 2%" in the summary
_COLUMNS = ("op", "M", "N", "x_dtype", "w_dtype", "provider", "status", "bytes")  # every row has these, timed or not
BUILDS_ON = "builds_on.txt"


@dataclass(frozen=True)
class Standing:
    """One case: normkit's row against the best peer's."""

    op: str
    m: int
    n: int
    x_dtype: str
    w_dtype: str
    us: float
    gbs: float
    pct_of_copy: float
    nbytes: int
    best_peer: str | None  # None: no peer ran correctly on this case
    peer_us: float | None
    peer_pct_of_copy: float | None
    failed_peers: tuple[str, ...]  # "liger: wrong", ...

    @property
    def speed_over_best_peer(self) -> float | None:
        """The best peer's time over normkit's: above 1 where normkit is faster."""
        return None if self.peer_us is None else self.peer_us / self.us

    @property
    def large(self) -> bool:
        return self.nbytes >= LARGE_CALL_BYTES

    @property
    def dtype(self) -> str:
        return self.x_dtype if self.w_dtype == self.x_dtype else f"{self.x_dtype}/{self.w_dtype}"


def round_csvs(folder: str, _within: tuple[str, ...] = ()) -> list[str]:
    """The CSVs a results folder's scoreboard reads, in ``read_rows``' order: first those of the folders its
    ``builds_on.txt`` names (one a line, beside this folder; theirs in turn), then its own ``*.csv`` (not its
    subfolders', where ``bench.ab``'s CSVs go), so that its rows replace the older ones of the same case."""
    here = os.path.realpath(folder)
    if here in _within:
        raise ValueError(f"{BUILDS_ON} of {folder} leads back to it")
    paths = []
    listing = os.path.join(folder, BUILDS_ON)
    if os.path.exists(listing):
        with open(listing) as f:
            names = [line.strip() for line in f if line.strip()]
        for name in names:
            base = os.path.join(os.path.dirname(os.path.abspath(folder)), name)
            if not os.path.isdir(base):
                raise ValueError(f"{listing} names {name!r}, which is no folder beside {folder}")
            paths += round_csvs(base, (*_within, here))
    own = sorted(glob.glob(os.path.join(folder, "*.csv")))
    if not own and not paths:
        raise ValueError(f"{folder} holds no CSV of python -m normkit.bench")
    return paths + own


def read_rows(paths: list[str]) -> dict[tuple, dict[str, dict]]:
    """``{(op, M, N, x_dtype, w_dtype): {provider: row}}`` from bench CSVs; a later file's row replaces an earlier."""
    cases: dict[tuple, dict[str, dict]] = {}
    for path in paths:
        with open(path, newline="") as f:
            reader = csv.DictReader(f)
            lacking = [c for c in _COLUMNS if c not in (reader.fieldnames or ())]
            if lacking:
                raise ValueError(f"{path} is not a CSV of python -m normkit.bench: no column {', '.join(lacking)}")
            for row in reader:
                key = (row["op"], int(row["M"]), int(row["N"]), row["x_dtype"], row["w_dtype"])
                cases.setdefault(key, {})[row["provider"]] = row
    return cases


def _typed(rows: list[dict]) -> list[dict]:
    """CSV rows with the numbers ``bench.plot`` draws as numbers."""
    out = []
    for row in rows:
        row = {**row, "M": int(row["M"]), "N": int(row["N"])}
        if row.get("status") == "ok":
            row.update(gbs=float(row["gbs"]), copy_gbs=float(row["copy_gbs"]))
        out.append(row)
    return out


def standings(cases: dict[tuple, dict[str, dict]]) -> list[Standing]:
    """One ``Standing`` per case where normkit's row has a time, in the order the cases were read."""
    out = []
    for key, rows in cases.items():
        ours = rows.get(NORMKIT)
        if not ours or ours.get("status") != "ok":
            continue
        peers = {p: r for p, r in rows.items() if p not in (NORMKIT, SAME_SIZE_COPY)}
        timed = {p: float(r["us"]) for p, r in peers.items() if r.get("status") == "ok"}
        failed = tuple(f"{p}: {r.get('status', '').split(':')[0]}" for p, r in peers.items() if p not in timed)
        best = min(timed, key=timed.get) if timed else None
        out.append(
            Standing(
                *key,
                us=float(ours["us"]),
                gbs=float(ours["gbs"]),
                pct_of_copy=float(ours["pct_of_copy"]),
                nbytes=int(ours["bytes"]),
                best_peer=best,
                peer_us=timed.get(best),
                peer_pct_of_copy=float(peers[best]["pct_of_copy"]) if best else None,
                failed_peers=failed,
            )
        )
    return out


def missing_cases(cases: dict[tuple, dict[str, dict]], sweeps: list[str], ops: list[str]) -> list[tuple]:
    """The (op, M, N, x_dtype, w_dtype) of ``sweeps`` x ``ops`` that have no timed normkit row."""
    timed = {k for k, rows in cases.items() if rows.get(NORMKIT, {}).get("status") == "ok"}
    return [
        (op, m, n, xd, wd)
        for sweep in sweeps
        for (m, n, xd, wd) in SWEEPS[sweep]
        for op in ops
        if (op, m, n, xd, wd) not in timed
    ]


def _ratio(s: Standing) -> str:
    r = s.speed_over_best_peer
    return "no peer" if r is None else f"**{r:.3f}**" if r < 1 else f"{r:.3f}"


def short_of_copy(rows: list[Standing]) -> list[Standing]:
    """The calls of at least ``LARGE_CALL_BYTES`` whose share of the copy is below ``COPY_SHARE_TARGET``."""
    return [s for s in rows if s.large and s.pct_of_copy < COPY_SHARE_TARGET]


def table(rows: list[Standing]) -> str:
    """A markdown table, one line a case; ratios below 1 (a peer faster) in bold."""
    lines = [
        "| op | M x N | dtype | normkit us | GB/s | % of copy | best peer | its us | its % of copy | "
        f"normkit's speed over it | >= {LARGE_CALL_BYTES // 10**6} MB: >= {COPY_SHARE_TARGET:.0f}% of copy | "
        "peers not timed |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for s in rows:
        target2 = ("yes" if s.pct_of_copy >= COPY_SHARE_TARGET else "**no**") if s.large else "-"
        peer = "- | -" if s.peer_us is None else f"{s.peer_us:.1f} | {s.peer_pct_of_copy:.1f}"
        lines.append(
            f"| {s.op} | {s.m} x {s.n} | {s.dtype} | {s.us:.1f} | {s.gbs:.0f} | {s.pct_of_copy:.1f} | "
            f"{s.best_peer or '-'} | {peer} | {_ratio(s)} | {target2} | {', '.join(s.failed_peers) or '-'} |"
        )
    return "\n".join(lines)


def summary(rows: list[Standing]) -> str:
    """Per op: cases, ahead of or level with the best peer, within 2%, the lowest ratio; then target 2's count."""
    lines = [
        "| op | cases | normkit fastest | within 2% of the best peer | lowest speed over the best peer | median |",
        "|---|---|---|---|---|---|",
    ]
    for op in dict.fromkeys(s.op for s in rows):
        mine = [s for s in rows if s.op == op and s.speed_over_best_peer is not None]
        if not mine:
            continue
        ratios = [s.speed_over_best_peer for s in mine]
        low = min(mine, key=lambda s: s.speed_over_best_peer)
        lines.append(
            f"| {op} | {len(mine)} | {sum(r >= 1 for r in ratios)} | {sum(r >= LEVEL for r in ratios)} | "
            f"{low.speed_over_best_peer:.3f} ({low.m} x {low.n} {low.dtype}, {low.best_peer}) | "
            f"{statistics.median(ratios):.3f} |"
        )
    large = sum(s.large for s in rows)
    lines.append("")
    lines.append(
        f"Calls of at least {LARGE_CALL_BYTES // 10**6} MB: {large}, at {COPY_SHARE_TARGET:.0f}% of copy or more: "
        f"{large - len(short_of_copy(rows))}."
    )
    return "\n".join(lines)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m normkit.bench.scoreboard", description=__doc__.splitlines()[0])
    parser.add_argument("csv", nargs="+", help="CSVs of python -m normkit.bench, or folders of them (round_csvs)")
    parser.add_argument("--sweep", nargs="*", default=[], choices=sorted(SWEEPS), help="list these sweeps' gaps")
    parser.add_argument("--ops", nargs="+", default=["ln_fwd", "ln_bwd", "rms_fwd", "rms_bwd"], choices=list(OPS))
    parser.add_argument("--out", help="also write the tables to this markdown file")
    parser.add_argument("--plot", help="also draw the ops' GB/s against N (a panel per op, rows, dtype) to this file")
    args = parser.parse_args(argv)
    try:
        cases = read_rows([path for arg in args.csv for path in (round_csvs(arg) if os.path.isdir(arg) else [arg])])
    except (OSError, ValueError) as why:
        parser.error(str(why))
    if args.plot:
        plot(_typed([row for key, rows in cases.items() if key[0] in args.ops for row in rows.values()]), args.plot)
    rows = [s for s in standings(cases) if s.op in args.ops]
    if not rows:
        raise SystemExit(f"no timed {NORMKIT} row of the ops {args.ops} in {args.csv}")
    short = short_of_copy(rows)
    parts = [summary(rows)]
    if short:
        parts.append(
            f"Below {COPY_SHARE_TARGET:.0f}% of copy at {LARGE_CALL_BYTES // 10**6} MB or more:\n\n{table(short)}"
        )
    parts.append(f"Every case:\n\n{table(rows)}")
    missing = missing_cases(cases, args.sweep, args.ops)
    if args.sweep:
        listed = ", ".join(f"{op} {m} x {n}" for op, m, n, _, _ in missing) or "none"
        parts.append(f"Not measured ({len(missing)} of the sweeps' cases): {listed}")
    text = "\n\n".join(parts)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
