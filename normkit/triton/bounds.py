"""The bounds of a tile's loads and stores, shared by the forward and backward kernels, and whether they run in
Triton's CPU interpreter.

A tile whose columns (or rows) all lie in the tensor needs no compare against its length: ``in_bounds`` then gives
a constant true, which the compiler folds out of every mask it joins. Masked loads and stores cost a compare and a
predicate per vector, and a masked load a zeroed register for each lane it leaves out; on a short row that is a
tenth of a program's instructions (``norm_fwd.py``: a LayerNorm program of two rows of 512 went from 520 to 461
sm_90 instructions without them).
"""

import triton
import triton.language as tl

# whether the kernels run in Triton's CPU interpreter, which has no inline assembly (decided as Triton decides it:
# when a kernel is defined, by TRITON_INTERPRET)
INTERPRETED = tl.constexpr(triton.knobs.runtime.interpret)


@triton.jit
def in_bounds(index, bound, EVEN: tl.constexpr):
    """``index < bound``; where every index is known to be in bounds (``EVEN``), a constant true of its shape."""
    if EVEN:
        return tl.full(index.shape, True, tl.int1)
    else:
        return index < bound
