"""ONNX export for the TensorRT backend, on a small stand-in estimator (fast) and hand-made graphs.

Checks: fp32 export == torch (onnxruntime CPU); the fp16 export keeps norms/softmax/reductions in fp32
through explicit casts; a naive fp16 LayerNorm overflows on the constructed inputs while our export stays
finite and close. The real estimators (v1/v2/v3 fixtures, full-size v2) are in test_tensorrt_fixtures.py.
"""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch
import torch.nn.functional as F
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator
from torch import nn

from cosydesk.runtime.backends.tensorrt.onnx_export import (
    ESTIMATOR_INPUTS,
    ESTIMATOR_OUTPUT,
    estimator_example_inputs,
    export_estimator,
    fp16_sensitive_nodes,
    keep_sensitive_ops_fp32,
    tensor_types,
    wrap_norms_fp32,
)

FP16_LIMIT = 65504.0


class StandInEstimator(nn.Module):
    """Estimator-shaped toy with the op mix of the real ones, using PLAIN (not fp32-safe) norm modules."""

    def __init__(self, channels: int = 48, heads: int = 2):
        super().__init__()
        self.inp = nn.Conv1d(320, channels, 3, padding=1)
        self.group_norm = nn.GroupNorm(8, channels)
        self.layer_norm = nn.LayerNorm(channels)
        self.qkv = nn.Linear(channels, 3 * channels)
        self.time = nn.Linear(1, channels)
        self.out = nn.Conv1d(channels, 80, 1)
        self.heads = heads

    def forward(self, x, mask, mu, t, spks, cond, streaming: bool = False):
        frames = x.shape[-1]
        h = self.inp(torch.cat([x, mu, spks.unsqueeze(-1).expand(-1, -1, frames), cond], 1) * mask)
        # LayerNorm straight on the conv output (large inputs reach it unnormalised), GroupNorm branch beside it.
        seq = self.layer_norm(h.transpose(1, 2))
        side = F.mish(self.group_norm(h)) + self.time(t.reshape(-1, 1)).unsqueeze(-1)
        seq = seq + side.transpose(1, 2)
        b, n, c = seq.shape
        q, k, v = (p.view(b, n, self.heads, c // self.heads).transpose(1, 2) for p in self.qkv(seq).chunk(3, -1))
        allowed = mask.bool().unsqueeze(1).expand(b, 1, n, n)
        att = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed).transpose(1, 2).reshape(b, n, c)
        return self.out((seq + att).transpose(1, 2)) * mask


def _rel_err(ours: np.ndarray, ref: np.ndarray) -> float:
    return float(np.abs(ours - ref).max() / max(np.abs(ref).max(), 1e-12))


def _run_onnx(path, inputs) -> np.ndarray:
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return session.run(None, {n: a.numpy() for n, a in zip(ESTIMATOR_INPUTS, inputs)})[0]


@pytest.fixture(scope="module")
def standin():
    torch.manual_seed(0)
    return StandInEstimator().eval()


@pytest.fixture(scope="module")
def exported(standin, tmp_path_factory):
    folder = tmp_path_factory.mktemp("onnx")
    return {p: export_estimator(standin, folder / f"standin_{p}.onnx", p, max_frames=512) for p in ("fp32", "fp16")}


def test_graph_interface(exported):
    model = onnx.load(str(exported["fp32"].path))
    assert [i.name for i in model.graph.input] == list(ESTIMATOR_INPUTS)
    assert [o.name for o in model.graph.output] == [ESTIMATOR_OUTPUT]
    dims = {i.name: [d.dim_param or d.dim_value for d in i.type.tensor_type.shape.dim] for i in model.graph.input}
    assert dims["x"][0] == 2 and isinstance(dims["x"][2], str)  # batch fixed, frames symbolic
    assert dims["x"][2] == dims["mask"][2] == dims["mu"][2] == dims["cond"][2]
    assert model.opset_import[0].version == 18 or any(o.domain == "" and o.version == 18 for o in model.opset_import)
    # Engine I/O stays float32 in both precisions.
    for graph in (exported["fp32"], exported["fp16"]):
        m = onnx.load(str(graph.path))
        assert all(i.type.tensor_type.elem_type == TensorProto.FLOAT for i in m.graph.input)
        assert m.graph.output[0].type.tensor_type.elem_type == TensorProto.FLOAT


@pytest.mark.parametrize("frames", [4, 37, 160])
def test_fp32_export_matches_torch(standin, exported, frames):
    inputs = list(estimator_example_inputs(frames, seed=frames))
    inputs[1][1, :, frames * 3 // 4:] = 0  # partial mask in row 1
    with torch.no_grad():
        ref = standin(*inputs).numpy()
    assert _rel_err(_run_onnx(exported["fp32"].path, inputs), ref) <= 1e-4


def test_fp16_export_keeps_sensitive_ops_fp32(exported):
    model = onnx.load(str(exported["fp16"].path))
    types = tensor_types(model)
    assert fp16_sensitive_nodes(model) == []
    ops = {n.op_type for n in model.graph.node}
    assert "Softmax" in ops and "LayerNormalization" in ops  # the ops we protect are really there
    for node in model.graph.node:
        if node.op_type in ("Softmax", "LayerNormalization"):
            assert types[node.input[0]] == TensorProto.FLOAT, node.name
    # ...while the bulk of the graph is half precision (weights of convs/linears).
    halves = [i for i in model.graph.initializer if i.data_type == TensorProto.FLOAT16]
    assert len(halves) >= 6


def test_fp16_export_survives_inputs_that_overflow_naive_layer_norm(standin, exported):
    """Inputs scaled so the LayerNorm sees |h| >> 256: squares overflow fp16 (max 65504) when done naively."""
    inputs = list(estimator_example_inputs(64, seed=1, scale=400.0))
    captured = {}
    hook = standin.layer_norm.register_forward_pre_hook(lambda m, a: captured.setdefault("h", a[0].detach()))
    with torch.no_grad():
        ref = standin(*inputs).numpy()
    hook.remove()
    h16 = captured["h"].half()
    centred = h16 - h16.float().mean(-1, keepdim=True).half()
    naive_var = (centred * centred).mean(-1)  # fp16 multiply: overflows to inf
    assert float(captured["h"].abs().max()) > 256 and np.isfinite(float(captured["h"].abs().max()))
    assert torch.isinf(centred * centred).any() and torch.isinf(naive_var).any()

    ours = _run_onnx(exported["fp16"].path, inputs)
    assert np.isfinite(ours).all()
    assert _rel_err(ours, ref) <= 1e-2


def test_fp16_export_matches_torch_fp32(standin, exported):
    inputs = estimator_example_inputs(96, seed=2)
    with torch.no_grad():
        ref = standin(*inputs).numpy()
    assert _rel_err(_run_onnx(exported["fp16"].path, inputs), ref) <= 1e-2


def test_wrap_norms_counts_and_preserves_values(standin):
    import copy

    work = copy.deepcopy(standin)
    assert wrap_norms_fp32(work) == 2
    inputs = estimator_example_inputs(20)
    with torch.no_grad():
        assert torch.equal(work(*inputs), standin(*inputs))


def _layer_norm_softmax_graph(channels: int = 64) -> onnx.ModelProto:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT16, [1, 10, channels])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT16, [1, 10, channels])
    ones = helper.make_tensor("w", TensorProto.FLOAT16, [channels], np.ones(channels, np.float16).tobytes(), raw=True)
    zeros = helper.make_tensor("b", TensorProto.FLOAT16, [channels], np.zeros(channels, np.float16).tobytes(), raw=True)
    nodes = [helper.make_node("LayerNormalization", ["x", "w", "b"], ["h"], axis=-1, epsilon=1e-5),
             helper.make_node("Softmax", ["h"], ["y"], axis=-1)]
    graph = helper.make_graph(nodes, "ln_softmax", [x], [y], [ones, zeros])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


def test_cast_pass_fixes_a_naive_fp16_graph():
    """onnx's reference evaluator computes each op in its declared dtype (as a strongly typed engine does):
    the unprotected fp16 LayerNorm overflows, the protected graph matches the fp32 math."""
    model = _layer_norm_softmax_graph()
    x = (np.random.RandomState(0).randn(1, 10, 64) * 1000).astype(np.float16)
    xf = x.astype(np.float32)
    normed = (xf - xf.mean(-1, keepdims=True)) / np.sqrt(xf.var(-1, keepdims=True) + 1e-5)
    expected = np.exp(normed - normed.max(-1, keepdims=True))
    expected /= expected.sum(-1, keepdims=True)

    assert fp16_sensitive_nodes(model) == ["LayerNormalization:", "Softmax:"]
    with np.errstate(all="ignore"):
        naive = ReferenceEvaluator(model).run(None, {"x": x})[0].astype(np.float32)
    assert np.abs(naive - expected).max() > 0.05  # overflowed variance -> all-zero norm -> uniform softmax

    assert keep_sensitive_ops_fp32(model) == 2
    onnx.checker.check_model(model)
    assert fp16_sensitive_nodes(model) == []
    with np.errstate(all="raise"):
        fixed = ReferenceEvaluator(model).run(None, {"x": x})[0].astype(np.float32)
    assert np.abs(fixed - expected).max() < 2e-3
    assert keep_sensitive_ops_fp32(model) == 0  # idempotent
