"""cuDNN frontend graph builders for the seed recipes (``cudnn.pygraph`` binding style).

Each builder takes template tensors (for shape, stride and dtype only; the data is bound at execution) in the
``[M, N, 1, 1]`` layout cuDNN's norm nodes want, builds the graph, and returns a ``BuiltGraph``: the graph and
its named tensors, so a notebook can print and inspect it. ``normkit.cudnn.ops`` caches and runs them.

- LayerNorm training forward; zero-centered gamma is a pointwise ``add(gamma, 1)`` feeding the scale.
- LayerNorm + clamped ReLU forward emitting the BOOLEAN bitmask: ``relu(lower_clip, upper_clip)`` then
  ``logical_and(cmp_gt(out, lower), cmp_lt(out, upper))``; cuDNN stores it bit-packed, 8 columns a byte.
- LayerNorm backward, optionally fed by ``mul(dy, bitmask)`` (the masked dReLU).
- RMSNorm forward and backward (with or without dbias).
- The forwards' inference phase (``training=False``, cuDNN's ``norm_forward_phase.INFERENCE``): y alone, no
  statistics; with the clamp, the clamp without its mask.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import cudnn
import torch

_FLOAT = cudnn.data_type.FLOAT


@dataclass
class BuiltGraph:
    graph: object  # cudnn.pygraph
    tensors: dict = field(default_factory=dict)  # name -> cudnn tensor
    workspace_size: int = 0

    def __repr__(self) -> str:
        return f"BuiltGraph(tensors={sorted(self.tensors)}, workspace_size={self.workspace_size})\n{self.graph}"


def as_nchw(t: torch.Tensor) -> torch.Tensor:
    """View a 2-D ``[M, N]`` (row stride s) as ``[M, N, 1, 1]`` channels-last, or ``[N]`` as ``[1, N, 1, 1]``.

    No copy: the storage is shared, only the view's shape and strides change.
    """
    if t.dim() == 1:
        return t.as_strided((1, t.shape[0], 1, 1), (t.shape[0], 1, t.shape[0], t.shape[0]))
    m, n = t.shape
    return t.as_strided((m, n, 1, 1), (t.stride(0), 1, n, n))


def _new_graph(handle):
    return cudnn.pygraph(handle=handle, intermediate_data_type=_FLOAT, compute_data_type=_FLOAT)


def _input(graph, name: str, template: torch.Tensor, data_type=None):
    return graph.tensor(
        name=name,
        dim=list(template.shape),
        stride=list(template.stride()),
        data_type=data_type if data_type is not None else template.dtype,
    )


def _scalar(graph, name: str):
    """A float32 scalar passed by value from the host at execution (epsilon, 1, the clip bounds)."""
    return graph.tensor(name=name, dim=[1, 1, 1, 1], stride=[1, 1, 1, 1], data_type=_FLOAT, is_pass_by_value=True)


def _scale(graph, built: BuiltGraph, weight: torch.Tensor, zero_centered_gamma: bool):
    built.tensors["weight"] = gamma = _input(graph, "weight", weight)
    if not zero_centered_gamma:
        return gamma
    built.tensors["one"] = one = _scalar(graph, "one")
    return graph.add(name="gamma_plus_one", a=gamma, b=one)


def _finish(graph, built: BuiltGraph) -> BuiltGraph:
    graph.build([cudnn.heur_mode.A, cudnn.heur_mode.FALLBACK])
    built.workspace_size = graph.get_workspace_size()
    return built


def _phase(training: bool):
    return cudnn.norm_forward_phase.TRAINING if training else cudnn.norm_forward_phase.INFERENCE


def build_layer_norm_fwd(
    x, weight, bias, *, zero_centered_gamma=False, clamp=None, training=True, handle=None
) -> BuiltGraph:
    """LayerNorm forward (+ clamped ReLU and bitmask when ``clamp=(lower, upper)``).

    Templates: x ``[M, N, 1, 1]``, weight/bias ``[1, N, 1, 1]``. Tensors: x, weight, bias, eps, [one], y, mean,
    rstd, and with clamp: lower, upper, mask (``[M, N, 1, 1]`` BOOLEAN, stored as ``uint8 [M, N/8]``).
    ``training=False``: the inference phase, y alone (with clamp, the clamp and no mask).
    """
    graph = _new_graph(handle)
    built = BuiltGraph(graph)
    t = built.tensors
    t["x"] = _input(graph, "x", x)
    scale = _scale(graph, built, weight, zero_centered_gamma)
    t["bias"] = _input(graph, "bias", bias)
    t["eps"] = _scalar(graph, "eps")
    y, mean, rstd = graph.layernorm(  # mean and rstd are None in the inference phase
        name="layer_norm",
        norm_forward_phase=_phase(training),
        input=t["x"],
        scale=scale,
        bias=t["bias"],
        epsilon=t["eps"],
    )
    if clamp is not None:
        lower, upper = clamp
        y = graph.relu(name="clamped_relu", input=y, lower_clip=float(lower), upper_clip=float(upper))
    if clamp is not None and training:
        t["lower"], t["upper"] = _scalar(graph, "lower"), _scalar(graph, "upper")
        above = graph.cmp_gt(name="above_lower", input=y, comparison=t["lower"])
        below = graph.cmp_lt(name="below_upper", input=y, comparison=t["upper"])
        above.set_data_type(cudnn.data_type.BOOLEAN)
        below.set_data_type(cudnn.data_type.BOOLEAN)
        t["mask"] = graph.logical_and(name="relu_bitmask", a=above, b=below)
        t["mask"].set_name("mask").set_output(True).set_data_type(cudnn.data_type.BOOLEAN)
    t["y"] = y.set_name("y").set_output(True).set_data_type(x.dtype)
    if training:
        t["mean"] = mean.set_name("mean").set_output(True).set_data_type(_FLOAT)
        t["rstd"] = rstd.set_name("rstd").set_output(True).set_data_type(_FLOAT)
    return _finish(graph, built)


def build_layer_norm_bwd(dy, x, weight, mean, rstd, *, zero_centered_gamma=False, masked=False, handle=None):
    """LayerNorm backward; with ``masked`` the incoming gradient is ``mul(dy, mask)`` first (the dReLU).

    Templates: dy, x ``[M, N, 1, 1]``, weight ``[1, N, 1, 1]``, mean/rstd ``[M, 1, 1, 1]``.
    Tensors: dy, [mask], x, weight, [one], mean, rstd, dx, dw, db.
    """
    graph = _new_graph(handle)
    built = BuiltGraph(graph)
    t = built.tensors
    t["dy"] = grad = _input(graph, "dy", dy)
    if masked:
        t["mask"] = _input(graph, "mask", dy, data_type=cudnn.data_type.BOOLEAN)
        grad = graph.mul(name="drelu_bitmask_mul", a=t["dy"], b=t["mask"])
        grad.set_data_type(dy.dtype)  # the norm backward wants its gradient in x's dtype, not the fp32 default
    t["x"] = _input(graph, "x", x)
    scale = _scale(graph, built, weight, zero_centered_gamma)
    t["mean"] = _input(graph, "mean", mean)
    t["rstd"] = _input(graph, "rstd", rstd)
    dx, dw, db = graph.layernorm_backward(
        name="layer_norm_bwd", grad=grad, input=t["x"], scale=scale, mean=t["mean"], inv_variance=t["rstd"]
    )
    t["dx"] = dx.set_name("dx").set_output(True).set_data_type(x.dtype)
    t["dw"] = dw.set_name("dw").set_output(True).set_data_type(weight.dtype)
    t["db"] = db.set_name("db").set_output(True).set_data_type(weight.dtype)
    return _finish(graph, built)


def build_rms_norm_fwd(x, weight, bias, *, zero_centered_gamma=False, training=True, handle=None) -> BuiltGraph:
    """RMSNorm forward. Tensors: x, weight, [bias], eps, [one], y, rstd (``training=False``: y alone)."""
    graph = _new_graph(handle)
    built = BuiltGraph(graph)
    t = built.tensors
    t["x"] = _input(graph, "x", x)
    scale = _scale(graph, built, weight, zero_centered_gamma)
    if bias is not None:
        t["bias"] = _input(graph, "bias", bias)
    t["eps"] = _scalar(graph, "eps")
    y, rstd = graph.rmsnorm(  # rstd is None in the inference phase
        name="rms_norm",
        norm_forward_phase=_phase(training),
        input=t["x"],
        scale=scale,
        bias=t.get("bias"),
        epsilon=t["eps"],
    )
    t["y"] = y.set_name("y").set_output(True).set_data_type(x.dtype)
    if training:
        t["rstd"] = rstd.set_name("rstd").set_output(True).set_data_type(_FLOAT)
    return _finish(graph, built)


def build_rms_norm_bwd(dy, x, weight, rstd, *, zero_centered_gamma=False, has_dbias=False, handle=None):
    """RMSNorm backward. Tensors: dy, x, weight, [one], rstd, dx, dw, [db]."""
    graph = _new_graph(handle)
    built = BuiltGraph(graph)
    t = built.tensors
    t["dy"] = _input(graph, "dy", dy)
    t["x"] = _input(graph, "x", x)
    scale = _scale(graph, built, weight, zero_centered_gamma)
    t["rstd"] = _input(graph, "rstd", rstd)
    outs = graph.rmsnorm_backward(
        name="rms_norm_bwd", grad=t["dy"], input=t["x"], scale=scale, inv_variance=t["rstd"], has_dbias=has_dbias
    )
    t["dx"] = outs[0].set_name("dx").set_output(True).set_data_type(x.dtype)
    t["dw"] = outs[1].set_name("dw").set_output(True).set_data_type(weight.dtype)
    if has_dbias:
        t["db"] = outs[2].set_name("db").set_output(True).set_data_type(weight.dtype)
    return _finish(graph, built)
