"""``normkit.bench.timing``: the backlog timer's order of GPU work, with a fake CUDA (its timing needs a GPU)."""

import functools
import time

import pytest

from normkit.bench import timing


class FakeCuda:
    """Records the calls ``gpu_time_ms`` makes; every timed interval is 0.5 ms, 1000 sleep cycles a millisecond."""

    def __init__(self):
        self.log = []

    def flush_buffer(self):
        log = self.log

        class Buffer:
            def zero_(self):
                log.append("flush")

        return Buffer()

    def event(self):
        log = self.log

        class Event:
            def record(self):
                log.append("record")

            def elapsed_time(self, end):
                return 0.5

        return Event()

    def sleep(self, cycles):
        self.log.append(("sleep", cycles))

    def synchronize(self):
        self.log.append("sync")

    def sleep_cycles_per_ms(self):
        return 1000.0


def test_backlog_timer_sleeps_longer_than_the_host_issues_the_call():
    cuda = FakeCuda()

    def fn():
        time.sleep(0.002)  # 2 ms of host time a call
        cuda.log.append("fn")

    ms = timing.gpu_time_ms(fn, warmup=2, rep=4, cuda=cuda)
    assert ms == 0.5
    log = cuda.log
    # every timed call: flush, sleep, start, fn, end; the untimed ones (warm-up) stand alone
    timed = [i for i, entry in enumerate(log) if entry == "flush"]
    assert len(timed) == 5 + 8  # the estimate's 5, then rep / estimate = 4 / 0.5
    for i in timed:
        assert log[i + 1][0] == "sleep" and log[i + 2 : i + 5] == ["record", "fn", "record"]
        assert log[i + 1][1] >= 1000 * 3 * 2  # 3x the host's 2 ms, in cycles
    # after every other timed call of each timing (the 2nd, 4th, ...) a settling sleep of SETTLE_US
    settle = ("sleep", int(1000 * timing.SETTLE_US / 1e3))
    assert settle[1] > 0
    for timing_calls in (timed[:5], timed[5:]):
        for rank, i in enumerate(timing_calls):
            assert (log[i + 5] == settle) == (rank % 2 == 1)
    warm_up = log[timed[4] + 5 :]
    assert warm_up[:5] == ["sync"] + ["fn"] * 4  # warmup / estimate = 2 / 0.5 calls, untimed


def test_timer_names():
    import triton.testing

    triton_timer = timing.timer("triton")
    assert isinstance(triton_timer, functools.partial) and triton_timer.func is triton.testing.do_bench
    assert triton_timer.keywords == {"return_mode": "median"}
    assert timing.timer("backlog") is timing.gpu_time_ms
    with pytest.raises(ValueError, match="timer must be"):
        timing.timer("wall")
