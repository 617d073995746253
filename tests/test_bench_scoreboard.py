"""``python -m normkit.bench.scoreboard``: normkit against the best peer, read from the bench's CSVs (no GPU)."""

from pathlib import Path

import pytest

from normkit.bench import __main__ as bench
from normkit.bench import scoreboard
from normkit.bench.cases import SWEEPS


def _row(op, m, n, provider, us=None, status="ok", nbytes=10**6, copy_gbs=4000.0, dtypes=("bf16", "bf16")):
    row = {"op": op, "M": m, "N": n, "x_dtype": dtypes[0], "w_dtype": dtypes[1], "provider": provider}
    row.update(status=status, bytes=nbytes, copy_gbs=copy_gbs, gpu="fake GPU", date="2026-11-29")
    if status == "ok":
        gbs = nbytes / (us / 1e3) / 1e6
        row.update(us=us, gbs=round(gbs, 1), pct_of_copy=round(100 * gbs / copy_gbs, 1))
    return row


def _csv(tmp_path, name, rows):
    path = tmp_path / name
    bench.write_csv(rows, str(path))
    return str(path)


def test_the_best_peer_is_the_fastest_correct_one_and_never_normkit_or_the_copy(tmp_path):
    path = _csv(
        tmp_path,
        "a.csv",
        [
            _row("ln_fwd", 4096, 768, "triton", 10.0),
            _row("ln_fwd", 4096, 768, "copy", 5.0),  # the yardstick is faster, but it is no peer
            _row("ln_fwd", 4096, 768, "cudnn", 12.0),
            _row("ln_fwd", 4096, 768, "liger", status="wrong: dw: relative error"),
            _row("ln_fwd", 4096, 768, "compile", 9.0),
        ],
    )
    (s,) = scoreboard.standings(scoreboard.read_rows([path]))
    assert (s.best_peer, s.peer_us) == ("compile", 9.0)
    assert s.speed_over_best_peer == pytest.approx(0.9)
    assert s.failed_peers == ("liger: wrong",)
    line = scoreboard.table([s]).splitlines()[-1]
    assert "**0.900**" in line and "liger: wrong" in line  # a peer ahead is shown in bold


def test_a_case_without_a_timed_normkit_row_or_without_peers(tmp_path):
    path = _csv(
        tmp_path,
        "a.csv",
        [
            _row("ln_bwd", 1024, 512, "triton", status="error: RuntimeError: boom"),
            _row("ln_bwd", 1024, 512, "cudnn", 3.0),
            _row("rms_bwd", 1024, 512, "triton", 4.0),
        ],
    )
    (s,) = scoreboard.standings(scoreboard.read_rows([path]))
    assert (s.op, s.best_peer, s.speed_over_best_peer) == ("rms_bwd", None, None)
    assert "no peer" in scoreboard.table([s])
    assert "| rms_bwd" not in scoreboard.summary([s])  # no ratio to sum up


def test_target_two_counts_only_calls_of_128_mb_or_more(tmp_path, capsys):
    big = scoreboard.LARGE_CALL_BYTES
    rows = [
        _row("ln_bwd", 32768, 1024, "triton", us=big / 3.2e3 / 1e3, nbytes=big),  # 3200 GB/s: 80% of 4000
        _row("ln_bwd", 32768, 1024, "cudnn", us=big / 3.0e3 / 1e3, nbytes=big),
        _row("ln_fwd", 32768, 1024, "triton", us=big / 3.6e3 / 1e3, nbytes=big),  # 90%
        _row("ln_fwd", 4096, 128, "triton", us=1.0, nbytes=big - 1),  # small: not counted, whatever its share
    ]
    got = scoreboard.standings(scoreboard.read_rows([_csv(tmp_path, "a.csv", rows)]))
    assert [s.large for s in got] == [True, True, False]
    assert "Calls of at least 128 MB: 2, at 85% of copy or more: 1." in scoreboard.summary(got)
    (short,) = scoreboard.short_of_copy(got)
    assert (short.op, short.pct_of_copy, short.peer_pct_of_copy) == ("ln_bwd", 80.0, 75.0)
    assert [line.split("|")[-3].strip() for line in scoreboard.table(got).splitlines()[2:]] == ["**no**", "yes", "-"]
    scoreboard.main([str(tmp_path / "a.csv")])
    below = capsys.readouterr().out.split("Below 85% of copy at 128 MB or more:")[1].split("Every case:")[0]
    assert [line.split(" | ")[:2] for line in below.strip().splitlines()[2:]] == [["| ln_bwd", "32768 x 1024"]]


def test_summary_counts_fastest_and_within_two_percent_per_op(tmp_path):
    rows = []
    for n, ours, peer in ((256, 10.0, 11.0), (512, 10.0, 9.9), (1024, 10.0, 9.0)):  # ahead, 0.99, 0.90
        rows += [_row("rms_fwd", 32768, n, "triton", ours), _row("rms_fwd", 32768, n, "cudnn", peer)]
    got = scoreboard.standings(scoreboard.read_rows([_csv(tmp_path, "a.csv", rows)]))
    line = next(ln for ln in scoreboard.summary(got).splitlines() if ln.startswith("| rms_fwd"))
    assert line.startswith("| rms_fwd | 3 | 1 | 2 | 0.900 (32768 x 1024 bf16, cudnn) | 0.990 |")


def test_a_later_csv_replaces_the_same_case_and_provider(tmp_path):
    first = _csv(tmp_path, "a.csv", [_row("ln_fwd", 8, 8, "triton", 2.0), _row("ln_fwd", 8, 8, "cudnn", 1.0)])
    second = _csv(tmp_path, "b.csv", [_row("ln_fwd", 8, 8, "triton", 0.5)])
    (s,) = scoreboard.standings(scoreboard.read_rows([first, second]))
    assert (s.us, s.peer_us) == (0.5, 1.0)


def test_the_command_lists_the_sweeps_cases_it_was_not_given(tmp_path, capsys):
    m, n, xd, wd = SWEEPS["small"][0]
    path = _csv(tmp_path, "a.csv", [_row("ln_fwd", m, n, "triton", 1.0, dtypes=(xd, wd))])
    out = tmp_path / "board.md"
    scoreboard.main([path, "--sweep", "small", "--ops", "ln_fwd", "rms_fwd", "--out", str(out)])
    printed = capsys.readouterr().out
    assert out.read_text() == printed
    assert "Below 85% of copy" not in printed  # no call of 128 MB: no such table
    expected = 2 * len(SWEEPS["small"]) - 1
    assert f"Not measured ({expected} of the sweeps' cases)" in printed
    assert f"rms_fwd {m} x {n}" in printed and f"ln_fwd {m} x {n}," not in printed


def test_the_command_names_what_it_did_not_find(tmp_path):
    path = _csv(tmp_path, "a.csv", [_row("ln_fwd", 8, 8, "cudnn", 1.0)])
    with pytest.raises(SystemExit, match="no timed triton row"):
        scoreboard.main([path])


def test_the_command_draws_the_csvs_gb_per_s(tmp_path, capsys):
    rows = [_row("ln_fwd", 4096, n, p, us) for n in (1024, 2048) for p, us in (("triton", 2.0), ("cudnn", 3.0))]
    rows.append(_row("ln_fwd", 4096, 4096, "liger", status="wrong: y"))  # not drawn, and no error for it
    out = tmp_path / "board.png"
    scoreboard.main([_csv(tmp_path, "a.csv", rows), "--plot", str(out)])
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_file_that_is_not_a_bench_csv_is_named(tmp_path, capsys):
    path = tmp_path / "notes.csv"
    path.write_text("op,M,N\nln_fwd,8,8\n")
    with pytest.raises(SystemExit):
        scoreboard.main([str(path)])
    assert f"{path} is not a CSV of python -m normkit.bench: no column x_dtype" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        scoreboard.main([str(tmp_path / "absent.csv")])
    assert "absent.csv" in capsys.readouterr().err


def test_a_round_folder_reads_the_round_it_builds_on_first(tmp_path, capsys):
    full, later = tmp_path / "round1", tmp_path / "round2"
    (later / "ab").mkdir(parents=True)
    full.mkdir()
    _csv(full, "a.csv", [_row("ln_fwd", 4096, 768, "triton", 10.0), _row("ln_fwd", 4096, 768, "cudnn", 9.0)])
    _csv(full, "b.csv", [_row("rms_fwd", 4096, 768, "triton", 8.0), _row("rms_fwd", 4096, 768, "cudnn", 9.0)])
    _csv(later, "c.csv", [_row("ln_fwd", 4096, 768, "triton", 8.5), _row("ln_fwd", 4096, 768, "cudnn", 9.1)])
    (later / "ab" / "ab.csv").write_text("op,M,N\nln_fwd,8,8\n")  # bench.ab's CSVs, in a subfolder, are not read
    (later / "builds_on.txt").write_text("round1\n")
    paths = scoreboard.round_csvs(str(later))
    assert [Path(p).parts[-2:] for p in paths] == [("round1", "a.csv"), ("round1", "b.csv"), ("round2", "c.csv")]
    board = {s.op: s for s in scoreboard.standings(scoreboard.read_rows(paths))}
    assert (board["ln_fwd"].us, board["ln_fwd"].peer_us) == (8.5, 9.1)  # round 2's rows of the case it timed again
    assert board["rms_fwd"].us == 8.0  # and round 1's of the others
    scoreboard.main([str(later)])  # a folder given to the command reads the same CSVs
    out = capsys.readouterr().out
    assert "| ln_fwd | 1 | 1 | 1 | 1.071 (4096 x 768 bf16, cudnn)" in out and "| rms_fwd | 1 | 1 | 1 | 1.125" in out
    (later / "builds_on.txt").write_text("round0\n")
    with pytest.raises(ValueError, match="names 'round0', which is no folder"):
        scoreboard.round_csvs(str(later))
    (later / "builds_on.txt").write_text("round1\n")
    (full / "builds_on.txt").write_text("round2\n")
    with pytest.raises(ValueError, match="builds_on.txt of .*round2 leads back to it"):
        scoreboard.round_csvs(str(later))
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="empty holds no CSV"):
        scoreboard.round_csvs(str(tmp_path / "empty"))
