"""``python -m normkit.cudnn.support``: which (op, dtype, N) the cuDNN backend can build on this GPU."""

from __future__ import annotations

import torch

from .. import reference
from ..errors import BackendUnavailable
from . import ops

OPS = ("layer_norm_fwd", "layer_norm_bwd", "layer_norm_clamped_relu_fwd", "layer_norm_clamped_relu_bwd",
       "rms_norm_fwd", "rms_norm_bwd")  # fmt: skip


def try_op(name: str, n: int, dtype: torch.dtype, m: int = 64) -> str:
    """ "ok", or the first line of why the backend refused."""
    x = torch.randn(m, n, device="cuda", dtype=dtype)
    w = torch.randn(n, device="cuda", dtype=dtype)
    dy = torch.randn_like(x)
    _, mean, rstd, mask = reference.layer_norm_clamped_relu_fwd(x, w, w, 1e-5)
    calls = {
        "layer_norm_fwd": lambda: ops.layer_norm_fwd(x, w, w, 1e-5),
        "layer_norm_bwd": lambda: ops.layer_norm_bwd(dy, x, w, mean, rstd),
        "layer_norm_clamped_relu_fwd": lambda: ops.layer_norm_clamped_relu_fwd(x, w, w, 1e-5),
        "layer_norm_clamped_relu_bwd": lambda: ops.layer_norm_clamped_relu_bwd(dy, mask, x, w, mean, rstd),
        "rms_norm_fwd": lambda: ops.rms_norm_fwd(x, w, None, 1e-5),
        "rms_norm_bwd": lambda: ops.rms_norm_bwd(dy, x, w, rstd),
    }
    try:
        calls[name]()
        torch.cuda.synchronize()
        return "ok"
    except (BackendUnavailable, ValueError, TypeError) as why:
        return str(why).splitlines()[0][:160]


def main() -> None:
    for name in OPS:
        for dtype in (torch.float32, torch.float16, torch.bfloat16):
            for n in (8, 64, 128, 256, 264, 512, 520, 768, 1024, 4096):
                status = try_op(name, n, dtype)
                if status != "ok" or n in (768, 4096):
                    print(f"{name:<28} {str(dtype)[6:]:<9} N={n:<5} {status}")


if __name__ == "__main__":
    main()
