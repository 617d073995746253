"""Checks against the reference, shared by the tests, the notebooks and the benchmark.

``TOLERANCES`` gives, per output dtype, the largest allowed ``|actual - expected| <= atol + rtol * |expected|``.
The kernels and the reference both compute in float32 and round once to the output dtype, so the budget is
about two units in the last place of that dtype (rtol) plus float32 reduction-order noise near zero (atol).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from . import bitmask


@dataclass(frozen=True)
class Tolerance:
    atol: float
    rtol: float


TOLERANCES: dict[torch.dtype, Tolerance] = {
    torch.float64: Tolerance(atol=1e-9, rtol=1e-7),
    torch.float32: Tolerance(atol=1e-4, rtol=1e-4),
    # one fp16 ulp is 2**-10 relative, one bf16 ulp 2**-7; allow two
    torch.float16: Tolerance(atol=2e-3, rtol=2e-3),
    torch.bfloat16: Tolerance(atol=1.6e-2, rtol=1.6e-2),
}


@dataclass(frozen=True)
class Comparison:
    name: str
    max_abs_err: float
    max_rel_err: float
    worst_index: tuple
    actual: float
    expected: float

    def __str__(self) -> str:
        return (
            f"{self.name}: max |err| {self.max_abs_err:.3g} (rel {self.max_rel_err:.3g}) at {self.worst_index}: "
            f"{self.actual!r} vs {self.expected!r}"
        )


# Elements of each tensor that ``compare`` takes at once in float64, on the tensors' own device: a benchmark call's
# outputs reach 2**31 elements (32768 x 65536), which whole in float64 on the CPU took minutes a case.
COMPARE_CHUNK = 1 << 24


def compare(actual: torch.Tensor, expected: torch.Tensor, name: str = "tensor", tol: Tolerance | None = None):
    """Compare two tensors elementwise; raise ``AssertionError`` naming the worst element if out of tolerance.

    NaN must sit at the same places in both (and Inf must match exactly). Returns a ``Comparison``. The work runs in
    float64 on ``actual``'s device, ``COMPARE_CHUNK`` elements at a time (row-major order, so the first NaN mismatch
    and, among equal excesses, the first worst element are the ones named).
    """
    if actual.shape != expected.shape:
        raise AssertionError(f"{name}: shape {tuple(actual.shape)} != expected {tuple(expected.shape)}")
    if actual.dtype != expected.dtype:
        raise AssertionError(f"{name}: dtype {actual.dtype} != expected {expected.dtype}")
    tol = tol or TOLERANCES.get(actual.dtype, Tolerance(0.0, 0.0))
    if actual.numel() == 0:
        return Comparison(name, 0.0, 0.0, (), float("nan"), float("nan"))
    flat_a = actual.detach().reshape(-1)
    flat_e = expected.detach().to(actual.device).reshape(-1)

    def index(flat: int) -> tuple:
        return tuple(int(i) for i in torch.unravel_index(torch.tensor(flat), actual.shape))

    worst_excess, worst, max_err, max_rel = None, 0, 0.0, 0.0
    for start in range(0, flat_a.numel(), COMPARE_CHUNK):
        a = flat_a[start : start + COMPARE_CHUNK].to(torch.float64)
        e = flat_e[start : start + COMPARE_CHUNK].to(torch.float64)
        nan_a, nan_e = a.isnan(), e.isnan()
        if not torch.equal(nan_a, nan_e):
            at = start + int((nan_a != nan_e).nonzero()[0])
            got, want = flat_a[at].double().item(), flat_e[at].double().item()
            raise AssertionError(f"{name}: NaN mismatch at {index(at)}: {got} vs expected {want}")
        both_inf = a.isinf() & (a == e)
        err = torch.where(nan_a | both_inf, torch.zeros_like(a), (a - e).abs())
        excess = err - (tol.atol + tol.rtol * e.abs().nan_to_num(0.0, 0.0, 0.0))
        at = int(excess.argmax())
        if worst_excess is None or excess[at].item() > worst_excess:
            worst_excess, worst = excess[at].item(), start + at
        max_err = max(max_err, err.max().item())
        max_rel = max(max_rel, (err / e.abs().clamp_min(1e-30)).nan_to_num(0.0).max().item())
    got, want = flat_a[worst].double().item(), flat_e[worst].double().item()
    result = Comparison(name, max_err, max_rel, index(worst), got, want)
    if worst_excess > 0:
        raise AssertionError(f"{result} (allowed atol={tol.atol}, rtol={tol.rtol})")
    return result


def compare_masks(mask, expected_mask, n: int, y_expected: torch.Tensor, lower: float, upper: float, name="mask"):
    """Compare two packed masks over ``n`` columns.

    ``y_expected`` is the reference's norm output *before* the clamp, in the output dtype. A bit may differ only
    where it lies within its dtype's tolerance of ``lower`` or ``upper``: there two implementations may round the
    same value to either side of the bound. Returns the
    count of such tolerated differences; raises ``AssertionError`` on any other difference or on set padding bits.
    """
    if mask.shape != expected_mask.shape or mask.dtype != torch.uint8:
        raise AssertionError(
            f"{name}: got {mask.dtype} {tuple(mask.shape)}, expected uint8 {tuple(expected_mask.shape)}"
        )
    got = bitmask.unpack(mask.cpu(), mask.shape[-1] * 8)
    if n % 8 and got[..., n:].any():
        raise AssertionError(f"{name}: padding bits past column {n - 1} are set")
    diff = got[..., :n] != bitmask.unpack(expected_mask.cpu(), n)
    tol = TOLERANCES[y_expected.dtype]
    y = y_expected.detach().cpu().double()
    near_bound = torch.minimum((y - lower).abs(), (y - upper).abs()) <= tol.atol + tol.rtol * y.abs()
    bad = diff & ~near_bound
    if bad.any():
        idx = tuple(int(i) for i in bad.nonzero()[0])
        raise AssertionError(f"{name}: bit differs at {idx}; reference output there is {y[idx].item()!r}")
    return int(diff.sum())


def compare_norm(actual: torch.Tensor, expected: torch.Tensor, name: str = "tensor") -> float:
    """Check ``||actual - expected|| / ||expected|| <= rtol`` of the dtype; return that relative error.

    For sums over many rows (dw, db): one element of such a sum can cancel to nearly 0, leaving only the rounding
    of its large terms, so its error is bounded relative to the whole vector, not to the element.
    """
    if actual.shape != expected.shape:
        raise AssertionError(f"{name}: shape {tuple(actual.shape)} != expected {tuple(expected.shape)}")
    a, e = actual.detach().double().cpu(), expected.detach().double().cpu()
    rel = float((a - e).norm() / e.norm().clamp_min(1e-30))
    tol = TOLERANCES.get(expected.dtype, Tolerance(0.0, 0.0)).rtol
    if not rel <= tol:
        raise AssertionError(f"{name}: relative error {rel:.3g} over the whole vector > {tol}")
    return rel
