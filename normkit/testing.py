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


def compare(actual: torch.Tensor, expected: torch.Tensor, name: str = "tensor", tol: Tolerance | None = None):
    """Compare two tensors elementwise; raise ``AssertionError`` naming the worst element if out of tolerance.

    NaN must sit at the same places in both (and Inf must match exactly). Returns a ``Comparison``.
    """
    if actual.shape != expected.shape:
        raise AssertionError(f"{name}: shape {tuple(actual.shape)} != expected {tuple(expected.shape)}")
    if actual.dtype != expected.dtype:
        raise AssertionError(f"{name}: dtype {actual.dtype} != expected {expected.dtype}")
    tol = tol or TOLERANCES.get(actual.dtype, Tolerance(0.0, 0.0))
    a = actual.detach().to("cpu", torch.float64)
    e = expected.detach().to("cpu", torch.float64)
    if a.numel() == 0:
        return Comparison(name, 0.0, 0.0, (), float("nan"), float("nan"))
    nan_a, nan_e = a.isnan(), e.isnan()
    if not torch.equal(nan_a, nan_e):
        idx = tuple(int(i) for i in (nan_a != nan_e).nonzero()[0])
        raise AssertionError(f"{name}: NaN mismatch at {idx}: {a[idx].item()} vs expected {e[idx].item()}")
    both_inf = a.isinf() & (a == e)
    err = torch.where(nan_a | both_inf, torch.zeros_like(a), (a - e).abs())
    excess = err - (tol.atol + tol.rtol * e.abs().nan_to_num(0.0, 0.0, 0.0))
    flat = int(excess.argmax())
    idx = tuple(int(i) for i in torch.unravel_index(torch.tensor(flat), a.shape))
    rel = (err / e.abs().clamp_min(1e-30)).nan_to_num(0.0)
    result = Comparison(name, float(err.max()), float(rel.max()), idx, a[idx].item(), e[idx].item())
    if excess[idx] > 0:
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
