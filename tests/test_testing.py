"""``normkit.testing.compare``, which every test, notebook and benchmark check goes through: what it lets pass, what it
names when it fails, and that comparing in chunks (``COMPARE_CHUNK``) names the same element as comparing whole."""

import pytest
import torch
from conftest import DEVICE

from normkit import testing
from normkit.testing import Tolerance, compare


def _close_pair(shape, dtype):
    """A tensor and a copy of it off by less than a quarter of its dtype's tolerance, the worst element random."""
    expected = (torch.randn(shape, dtype=torch.float64) * 3).to(dtype)
    tol = testing.TOLERANCES[dtype]
    nudge = (torch.rand(shape, dtype=torch.float64) - 0.5) * 0.5 * (tol.atol + tol.rtol * expected.double().abs())
    return (expected.double() + nudge).to(dtype), expected


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_within_tolerance_passes_and_reports_the_worst_element(dtype):
    actual, expected = _close_pair((5, 37), dtype)
    result = compare(actual, expected, "y")
    err = (actual.double() - expected.double()).abs()
    excess = err - (testing.TOLERANCES[dtype].atol + testing.TOLERANCES[dtype].rtol * expected.double().abs())
    worst = tuple(int(i) for i in torch.unravel_index(excess.argmax(), excess.shape))
    assert result.worst_index == worst and result.max_abs_err == err.max().item()
    assert (result.actual, result.expected) == (actual[worst].item(), expected[worst].item())


def test_out_of_tolerance_names_the_element_and_the_budget():
    expected = torch.zeros(4, 6)
    actual = expected.clone()
    actual[2, 3] = 1e-3  # over float32's atol of 1e-4
    actual[1, 1] = 5e-5  # within it
    with pytest.raises(AssertionError, match=r"y: max \|err\| 0\.001 .* at \(2, 3\).*allowed atol=0\.0001"):
        compare(actual, expected, "y")
    compare(actual, expected, "y", tol=Tolerance(atol=2e-3, rtol=0.0))  # a wider budget given explicitly


def test_nan_and_inf_must_sit_where_the_expected_ones_do():
    expected = torch.tensor([[1.0, float("nan"), float("inf")], [-float("inf"), 2.0, 3.0]])
    assert compare(expected.clone(), expected).max_abs_err == 0.0  # NaN where NaN, the same infinities
    for spot, value in (((0, 1), 1.0), ((1, 1), float("nan"))):
        actual = expected.clone()
        actual[spot] = value
        with pytest.raises(AssertionError, match=rf"NaN mismatch at \({spot[0]}, {spot[1]}\)"):
            compare(actual, expected)
    actual = expected.clone()
    actual[0, 2] = -float("inf")  # the other infinity
    with pytest.raises(AssertionError, match=r"at \(0, 2\)"):
        compare(actual, expected)


def test_shape_and_dtype_must_match():
    with pytest.raises(AssertionError, match=r"dx: shape \(2, 3\) != expected \(3, 2\)"):
        compare(torch.zeros(2, 3), torch.zeros(3, 2), "dx")
    with pytest.raises(AssertionError, match="dtype torch.float16 != expected torch.float32"):
        compare(torch.zeros(2, 3, dtype=torch.float16), torch.zeros(2, 3))
    assert compare(torch.zeros(0, 3), torch.zeros(0, 3)).worst_index == ()


@pytest.mark.parametrize("chunk", [1, 7, 64, 1 << 24])
def test_chunks_name_what_the_whole_names(monkeypatch, chunk):
    """Every chunk size gives the same ``Comparison`` as one chunk, on the tensors' device (the GPU where there is
    one): the worst element past the first chunk, the first of two equal worst elements, the first NaN mismatch, a
    strided view."""
    actual, expected = _close_pair((9, 40), torch.bfloat16)
    actual, expected = actual.to(DEVICE), expected.to(DEVICE)
    whole = compare(actual, expected)
    monkeypatch.setattr(testing, "COMPARE_CHUNK", chunk)
    assert compare(actual, expected) == whole
    expected = torch.zeros(9, 40, device=DEVICE)
    actual = expected.clone()
    actual[5, 7] = actual[6, 2] = 1.0  # two equal worst elements: the first in row-major order is named
    with pytest.raises(AssertionError, match=r"at \(5, 7\): 1\.0 vs 0\.0"):
        compare(actual, expected)
    actual[3, 1] = float("nan")
    actual[8, 0] = float("nan")
    with pytest.raises(AssertionError, match=r"NaN mismatch at \(3, 1\): nan vs expected 0\.0"):
        compare(actual, expected)
    wide = torch.randn(9, 48, device=DEVICE)
    view = wide[:, :40]  # rows with a stride of 48
    result = compare(view, view.clone())
    assert result.max_abs_err == 0.0 and result == compare(view.contiguous(), view.clone())
    assert result.worst_index == tuple(int(i) for i in torch.unravel_index(view.abs().argmin().cpu(), view.shape))
