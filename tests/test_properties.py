"""Property tests: random shapes, dtypes, strides, flags and eps; every kernel backend agrees with the reference.

Hypothesis draws the cases (derandomized, so CI sees the same ones every run); a failing example is shrunk to
its smallest form, and every such example found is kept below as an ``@example`` so it stays a regular test.
On the CPU the Triton kernels run in the interpreter, so sizes stay small; on a GPU the same properties run there.
"""

import pytest
import torch
from conftest import DEVICE
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from test_kernels import BACKENDS, FORWARDS, check_backward, check_forward, make_inputs, skip_unsupported

from normkit.triton import config

PRIMES = [2, 3, 5, 7, 13, 31, 61, 97, 127, 257, 509]
DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}

cases = st.fixed_dictionaries(
    {
        "op": st.sampled_from(sorted(FORWARDS)),
        "m": st.integers(1, 9) | st.sampled_from([16, 33]),
        "n": st.sampled_from([1, 8, 64, 100, 128, 520]) | st.sampled_from(PRIMES) | st.integers(1, 300),
        "x_dtype": st.sampled_from(sorted(DTYPES)),
        "fp32_weight": st.booleans(),
        "row_pad": st.sampled_from([0, 0, 3, 17]),
        "bias": st.booleans(),
        "zero_centered_gamma": st.booleans(),
        "has_dbias": st.booleans(),
        "eps": st.sampled_from([1e-5, 1e-6, 1e-3]) | st.floats(1e-6, 0.5),
    }
)


def run_case(backend, case):
    x_dtype = DTYPES[case["x_dtype"]]
    w_dtype = torch.float32 if case["fp32_weight"] else x_dtype
    row_pad = case["row_pad"]
    if backend == "cudnn":
        skip_unsupported(backend, case["op"], case["n"], x_dtype, w_dtype)
        row_pad = 0  # cuDNN's norms need packed rows (normkit.cudnn raises a ValueError naming x otherwise)
    x, w, b = make_inputs(case["m"], case["n"], x_dtype, w_dtype, bias=case["bias"], row_pad=row_pad)
    flags = {"zero_centered_gamma": case["zero_centered_gamma"], "eps": case["eps"]}
    check_forward(backend, case["op"], x, w, b, **flags)
    check_backward(backend, case["op"], x, w, b, has_dbias=case["has_dbias"], **flags)


@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(case=cases)
@example(  # a single column: variance 0, so rstd = 1/sqrt(eps) and xhat = 0 for LayerNorm
    case={
        "op": "layer_norm",
        "m": 3,
        "n": 1,
        "x_dtype": "bf16",
        "fp32_weight": True,
        "row_pad": 3,
        "bias": True,
        "zero_centered_gamma": True,
        "has_dbias": True,
        "eps": 1e-5,
    }  # fmt: skip
)
def test_kernels_agree_with_the_reference(backend, case):
    run_case(backend, case)


@pytest.mark.parametrize("backend", ["triton"] if "triton" in BACKENDS else [])
@settings(max_examples=15, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(case=cases.filter(lambda c: c["n"] > 16))
def test_chunked_rows_agree_with_the_reference(backend, case):
    """The same properties through the chunked (two-pass) path, forced with short chunks."""
    with config.limits(fwd_max_block_n=16, bwd_max_block_n=16, chunk_n=16):
        run_case(backend, case)


def test_the_properties_run_on_this_device():
    assert DEVICE in ("cpu", "cuda") and BACKENDS, "no kernel backend to test"
