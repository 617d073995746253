"""What the benchmark measures: the ops, their bytes model, the named sweeps, and the inputs of one case."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .. import reference

# op name -> (norm kind, direction, zero-centered gamma, bias): LayerNorm with a bias (dB in its backward) but for
# the ``*_nobias_*`` ops, RMSNorm without one but for the ``rms_bias_*`` ops
OPS = {
    "ln_fwd": ("layer_norm", "fwd", False, True),
    "ln_bwd": ("layer_norm", "bwd", False, True),
    "rms_fwd": ("rms_norm", "fwd", False, False),
    "rms_bwd": ("rms_norm", "bwd", False, False),
    "ln_relu_fwd": ("layer_norm_clamped_relu", "fwd", False, True),
    "ln_relu_bwd": ("layer_norm_clamped_relu", "bwd", False, True),
    "ln_zc_fwd": ("layer_norm", "fwd", True, True),
    "ln_zc_bwd": ("layer_norm", "bwd", True, True),
    # LayerNorm without a bias (``bias=None``; its backward computes no dB)
    "ln_nobias_fwd": ("layer_norm", "fwd", False, False),
    "ln_nobias_bwd": ("layer_norm", "bwd", False, False),
    # LayerNorm + clamped ReLU without a bias (its backward computes no dB)
    "ln_relu_nobias_fwd": ("layer_norm_clamped_relu", "fwd", False, False),
    "ln_relu_nobias_bwd": ("layer_norm_clamped_relu", "bwd", False, False),
    # RMSNorm with a bias (its backward computes dB)
    "rms_bias_fwd": ("rms_norm", "fwd", False, True),
    "rms_bias_bwd": ("rms_norm", "bwd", False, True),
    # inference calls (nothing needs a gradient): y alone, no statistics or mask stored
    "ln_infer": ("layer_norm", "infer", False, True),
    "rms_infer": ("rms_norm", "infer", False, False),
    "rms_bias_infer": ("rms_norm", "infer", False, True),
    "ln_relu_infer": ("layer_norm_clamped_relu", "infer", False, True),
}
LOWER, UPPER = 0.0, 6.0
EPS = 1e-5

_DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}

# name -> list of (M, N, x dtype, weight dtype)
SWEEPS = {
    # the Triton tutorial's LayerNorm benchmark: M = 4096, fp16, N = 1024 ... 15872
    "tutorial": [(4096, 512 * i, "fp16", "fp16") for i in range(2, 32)],
    # PyTorch's genai_layers benchmark: M = 32768, bf16 activations with fp32 weights, N = 256 ... 65536
    "genai": [(32768, 256 << i, "bf16", "fp32") for i in range(9)],
    # small calls, where launch overhead shows
    "small": [(1024, 12288, "bf16", "bf16"), (4096, 768, "bf16", "bf16"), (4096, 128, "bf16", "bf16")],
}


@dataclass(frozen=True)
class Case:
    op: str
    m: int
    n: int
    x_dtype: str
    w_dtype: str

    @property
    def kind(self):
        return OPS[self.op][0]

    @property
    def direction(self):
        return OPS[self.op][1]

    @property
    def zero_centered_gamma(self):
        return OPS[self.op][2]

    @property
    def has_bias(self):
        return OPS[self.op][3]


def bytes_moved(case: Case) -> int:
    """The fewest bytes the op must move: each input read once, each output written once.

    Forward: read x, weight [, bias]; write y, the float32 stats (mean and rstd, or rstd) [, the packed mask].
    Backward: read x, dy, weight, the stats [, the mask]; write dx, dw [, db]. Inference: read x, weight [, bias];
    write y.
    """
    m, n = case.m, case.n
    xs = _DTYPES[case.x_dtype].itemsize
    ws = _DTYPES[case.w_dtype].itemsize
    params = (2 if case.has_bias else 1) * n * ws
    stats = (1 if case.kind == "rms_norm" else 2) * m * 4
    mask = m * ((n + 7) // 8) if case.kind == "layer_norm_clamped_relu" else 0
    if case.direction == "infer":
        return 2 * m * n * xs + params
    if case.direction == "fwd":
        return 2 * m * n * xs + params + stats + mask
    return 3 * m * n * xs + params + n * ws + stats + mask  # weight read, dw [+ db] written


@dataclass
class Inputs:
    x: torch.Tensor
    weight: torch.Tensor
    bias: torch.Tensor | None
    dy: torch.Tensor
    mean: torch.Tensor | None
    rstd: torch.Tensor
    mask: torch.Tensor | None
    expected: tuple  # the reference's outputs for this op: fwd (y, ...), bwd (dx, dw, db)


def make_inputs(case: Case, device="cuda") -> Inputs:
    x_dtype, w_dtype = _DTYPES[case.x_dtype], _DTYPES[case.w_dtype]
    x = torch.randn(case.m, case.n, device=device, dtype=x_dtype)
    weight = (torch.randn(case.n, device=device) * 0.1 + (0 if case.zero_centered_gamma else 1)).to(w_dtype)
    bias = (torch.randn(case.n, device=device) * 0.1).to(w_dtype) if case.has_bias else None
    dy = torch.randn(case.m, case.n, device=device, dtype=x_dtype)
    zc = case.zero_centered_gamma
    mean = mask = None
    if case.kind == "rms_norm":
        fwd = reference.rms_norm_fwd(x, weight, bias, EPS, zc)
        rstd = fwd[1]
    elif case.kind == "layer_norm":
        fwd = reference.layer_norm_fwd(x, weight, bias, EPS, zc)
        mean, rstd = fwd[1], fwd[2]
    else:
        fwd = reference.layer_norm_clamped_relu_fwd(x, weight, bias, EPS, LOWER, UPPER, zc)
        mean, rstd, mask = fwd[1], fwd[2], fwd[3]
    if case.direction == "fwd":
        expected = fwd
    elif case.direction == "infer":
        expected = fwd[:1]
    elif case.kind == "rms_norm":
        expected = reference.rms_norm_bwd(dy, x, weight, rstd, zc, case.has_bias)
    elif case.kind == "layer_norm":
        expected = reference.layer_norm_bwd(dy, x, weight, mean, rstd, zc, case.has_bias)
    else:
        expected = reference.layer_norm_clamped_relu_bwd(dy, mask, x, weight, mean, rstd, zc, case.has_bias)
    return Inputs(x, weight, bias, dy, mean, rstd, mask, expected)
