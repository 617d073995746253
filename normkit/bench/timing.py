"""The GPU time of a call, with the host's time to issue it kept out: the default timer of the bench commands.

``triton.testing.do_bench``, which timed the figures of rounds 1-9 in benchmarks/README.md, repeats: write a 256 MB
buffer (to flush L2), record a start event, call ``fn``, record an end event. The interval holds only ``fn``'s GPU
work while the GPU is still busy with the flush when the host has issued ``fn``. A call whose host time is longer
than the flush (about 70 microseconds on an H200) leaves the GPU waiting for the host between the two events, and
the "GPU time" becomes partly host time.

``gpu_time_ms`` does what ``do_bench`` does, plus a GPU sleep (``torch.cuda._sleep``) queued between the flush
and the start event, longer than the host takes to issue ``fn`` (three times a measured call, and 50 us more): the
GPU is still sleeping when ``fn``'s work arrives, so the interval is that work alone. The sleep's cycles a
millisecond are measured once per device.

Both timers side by side on the same callables, in turns (GPU run 67, H200, three timings each): where a call's
host time stays under the flush they agree within 1-2% (normkit's forwards: 15.2/14.8/15.4 against 15.1/15.1/15.1
us at 32768 x 256); above it ``do_bench`` swung 2-4x from one timing to the next while this timer did not (cuDNN's
LayerNorm backward at 32768 x 256, 168 us of host time: 156/64/138 against 35.6/36.0/35.6 us; torch.compile's: 165/
263/211 against 38.5/38.3/38.4), so the small calls' 2-10x swings of runs 53-65 were the timer's.

After every other timed call the GPU sleeps ``SETTLE_US`` more (outside the interval, before the next call's flush).
Without it the median of one timing could sit 2-7% from the next one's, the whole timing's reps moving together
(round 80, H200 runs 624-630; gpu_time_ms's steps, 8 timings a setting in turns, spread = slowest median over
fastest - 1): normkit's staged RMSNorm backward at 3072 x 5632 fp16 spread 3-6.5%, cuDNN's 1.5-3%, a copy of the
same bytes up to 14%. Which calls swung followed the steps more than the kernel: most backwards and copies swung with
no sleep after the call and held with 20 us after each; the forwards held with none and swung with 20 us after each,
or a random 0-40 us; a random 0-100 us more before the call changed nothing. With 20 us after every other call, 37
of 40 series held within 0.8%, each where its steadier setting had held it (normkit's LayerNorm forward at 4096 x
6656 35.41 against 35.43 us with none; its RMSNorm backward at 4096 x 4608 40.48 against 40.54 with 20 us after
each); the other three: cuDNN's forwards at 4096 x 2048 / 2560 with one slow timing each (as with none),
torch.compile's RMSNorm forward at 32768 x 256 5.6% (2.1% with none). The bench with it (run 631, 72 rows of 3
rounds) kept each row's rounds within 1% but for two (cuDNN's RMSNorm forward at 4096 x 4608 / 6656, one round 7% /
4% slower). What the sleep settles is not read; it costs 10 us a call on average.
"""

from __future__ import annotations

import functools
import statistics
import time

import torch

FLUSH_BYTES = 256 * 2**20  # as triton.testing.do_bench: more than any GPU's L2
SETTLE_US = 20  # the GPU sleep after every other timed call (see above)
TIMERS = ("triton", "backlog")  # the names ``timer`` takes (``--timer``)


class _Cuda:
    """The CUDA calls ``gpu_time_ms`` makes (tests give it a fake)."""

    def flush_buffer(self):
        return torch.empty(FLUSH_BYTES // 4, dtype=torch.int, device="cuda")

    def event(self):
        return torch.cuda.Event(enable_timing=True)

    def sleep(self, cycles: int) -> None:
        torch.cuda._sleep(cycles)

    def synchronize(self) -> None:
        torch.cuda.synchronize()

    def sleep_cycles_per_ms(self) -> float:
        return _sleep_cycles_per_ms(torch.cuda.current_device())


@functools.cache
def _sleep_cycles_per_ms(device: int) -> float:
    cycles = 10_000_000
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda._sleep(cycles)  # once untimed: the first call loads the kernel
    start.record()
    torch.cuda._sleep(cycles)
    end.record()
    torch.cuda.synchronize()
    return cycles / start.elapsed_time(end)


def gpu_time_ms(fn, *, warmup: int = 25, rep: int = 100, cuda: _Cuda | None = None) -> float:
    """Median GPU time of ``fn`` in ms, L2 flushed before each call and the host's issuing time kept out. ``warmup``
    and ``rep`` are milliseconds of calls, as for ``do_bench``."""
    cuda = cuda or _Cuda()
    fn()
    cuda.synchronize()
    cache = cuda.flush_buffer()
    host_ms = []
    for _ in range(5):
        began = time.perf_counter()
        fn()
        host_ms.append((time.perf_counter() - began) * 1e3)
        cuda.synchronize()
    cycles_per_ms = cuda.sleep_cycles_per_ms()
    cycles = int(cycles_per_ms * (3 * statistics.median(host_ms) + 0.05))
    settle = int(cycles_per_ms * SETTLE_US / 1e3)

    def timed(count: int) -> list[float]:
        events = [(cuda.event(), cuda.event()) for _ in range(count)]
        for i, (start, end) in enumerate(events):
            cache.zero_()
            cuda.sleep(cycles)
            start.record()
            fn()
            end.record()
            if i % 2:
                cuda.sleep(settle)
        cuda.synchronize()
        return [start.elapsed_time(end) for start, end in events]

    estimate = statistics.median(timed(5))
    for _ in range(max(1, int(warmup / max(estimate, 1e-3)))):
        fn()
    return statistics.median(timed(max(1, int(rep / max(estimate, 1e-3)))))


def timer(name: str):
    """The timing function named by ``--timer``: ``triton`` (``triton.testing.do_bench``, median) or ``backlog``
    (``gpu_time_ms``); each is called as ``timer(fn, warmup=ms, rep=ms)`` and returns milliseconds."""
    if name == "triton":
        from triton.testing import do_bench

        return functools.partial(do_bench, return_mode="median")
    if name == "backlog":
        return gpu_time_ms
    raise ValueError(f"timer must be one of {TIMERS}, got {name!r}")
