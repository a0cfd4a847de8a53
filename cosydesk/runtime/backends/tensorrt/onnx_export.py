"""ONNX export of the hot modules (flow estimator, HiFT decode) with dynamic length axes, fp32 or fp16.

The exported graphs are what TensorRT (or TensorRT for RTX) builds engines from. Two precisions:

* ``fp32``: the module as is.
* ``fp16``: a half-precision copy of the module, with graph inputs and outputs kept float32 (engine I/O does not
  depend on the precision) and every numerically sensitive op kept in float32 *by explicit Cast nodes*: norm
  statistics (LayerNormalization, GroupNormalization, InstanceNormalization), Softmax and sum-type reductions.
  TensorRT for RTX only builds strongly typed networks, where each layer runs in the type the graph says, so
  the casts are the only thing that keeps those ops out of fp16 (the overflow upstream reports as NaN/noise
  from fp16 LayerNorm engines). Two layers do this: norm modules are swapped for fp32-statistics versions
  before tracing (a no-op for our own model code, which already does ``.float()`` around norms), and a graph
  pass (`keep_sensitive_ops_fp32`) wraps whatever sensitive op is still fp16 after export, e.g. the softmax
  inside ``scaled_dot_product_attention``. `fp16_sensitive_nodes` checks the result.

What this module must not do: change the model objects it is given (it exports a copy), or import TensorRT.
"""

from __future__ import annotations

import copy
import logging
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import onnx
import torch
import torch.nn.functional as F
from onnx import TensorProto, helper
from torch import nn

log = logging.getLogger(__name__)

OPSET = 18
PRECISIONS = ("fp32", "fp16")
MIN_DYNAMIC_LENGTH = 4

ESTIMATOR_INPUTS = ("x", "mask", "mu", "t", "spks", "cond")
ESTIMATOR_OUTPUT = "estimator_out"
HIFT_INPUTS = ("mel", "source_spec")
HIFT_OUTPUT = "hift_head"

# Ops whose statistics / accumulations must not run in fp16.
NORM_OPS = frozenset({"LayerNormalization", "GroupNormalization", "InstanceNormalization"})
SOFTMAX_OPS = frozenset({"Softmax", "LogSoftmax"})
REDUCE_OPS = frozenset({"ReduceMean", "ReduceSum", "ReduceSumSquare", "ReduceL2", "ReduceLogSumExp", "ReduceProd"})
SENSITIVE_OPS = NORM_OPS | SOFTMAX_OPS | REDUCE_OPS

# Which inputs of each sensitive op carry data to be computed in fp32 (others are axes / shapes, left alone).
_FLOAT_INPUT_SLOTS = {"LayerNormalization": (0, 1, 2), "GroupNormalization": (0, 1, 2), "InstanceNormalization": (0, 1, 2)}


@dataclass(frozen=True)
class ExportedGraph:
    """What an export wrote: the file, its precision and I/O names (the engine's tensor names)."""

    path: Path
    precision: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    dynamic_axis: str


# ----------------------------------------------------------------------------------------------------------------
# fp32-statistics replacements for norm modules (used on the fp16 copy before tracing)
# ----------------------------------------------------------------------------------------------------------------


class _Fp32Norm(nn.Module):
    """Runs a norm module's math in float32 and returns the input dtype; holds the original module."""

    def __init__(self, inner: nn.Module):
        super().__init__()
        self.inner = inner

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        inner = self.inner
        weight = inner.weight.float() if getattr(inner, "weight", None) is not None else None
        bias = inner.bias.float() if getattr(inner, "bias", None) is not None else None
        if isinstance(inner, nn.GroupNorm):
            out = F.group_norm(x.float(), inner.num_groups, weight, bias, inner.eps)
        elif isinstance(inner, nn.LayerNorm):
            out = F.layer_norm(x.float(), inner.normalized_shape, weight, bias, inner.eps)
        else:  # nn.RMSNorm
            out = F.rms_norm(x.float(), inner.normalized_shape, weight, inner.eps)
        return out.to(x.dtype)


def _norm_types() -> tuple[type, ...]:
    types: list[type] = [nn.LayerNorm, nn.GroupNorm]
    if hasattr(nn, "RMSNorm"):
        types.append(nn.RMSNorm)
    return tuple(types)


def wrap_norms_fp32(module: nn.Module) -> int:
    """Replace every LayerNorm/GroupNorm/RMSNorm child (in place) by an fp32-statistics wrapper; returns the count."""
    count = 0
    for name, child in list(module.named_children()):
        if isinstance(child, _norm_types()):
            setattr(module, name, _Fp32Norm(child))
            count += 1
        elif not isinstance(child, _Fp32Norm):
            count += wrap_norms_fp32(child)
    return count


# ----------------------------------------------------------------------------------------------------------------
# Export wrappers: fixed I/O dtypes (float32), keyword flags frozen
# ----------------------------------------------------------------------------------------------------------------


class EstimatorForExport(nn.Module):
    """``(x, mask, mu, t, spks, cond) -> estimator_out`` with float32 I/O around an estimator of any dtype."""

    def __init__(self, estimator: nn.Module, dtype: torch.dtype, streaming: bool = False):
        super().__init__()
        self.estimator = estimator
        self.dtype = dtype
        self.streaming = streaming

    def forward(self, x, mask, mu, t, spks, cond):  # noqa: ANN001 - traced, names are the graph input names
        d = self.dtype
        out = self.estimator(x.to(d), mask.to(d), mu.to(d), t.to(d), spks.to(d), cond.to(d), streaming=self.streaming)
        return out.float()


class HiftHeadForExport(nn.Module):
    """The HiFT conv stack: ``(mel, source_spec) -> head`` with float32 I/O.

    The heavy part of HiFT (conv_pre, upsampling with the source spectrum fused in, resblocks, conv_post).
    The f0 predictor + harmonic source, the source STFT and the iSTFT stay in torch: they are cheap, need
    float32/float64 and complex numbers, and TensorRT has no STFT op. `hift_head_to_wave` finishes the job.
    """

    def __init__(self, hift: nn.Module, dtype: torch.dtype):
        super().__init__()
        self.hift = hift
        self.dtype = dtype

    def forward(self, mel, source_spec):  # noqa: ANN001
        hift = self.hift
        x = hift.conv_pre(mel.to(self.dtype))
        return hift._fused_upsampling(x, source_spec.to(self.dtype)).float()


def estimator_example_inputs(frames: int = 64, mel_channels: int = 80, spk_dim: int = 80, seed: int = 0,
                             scale: float = 1.0) -> tuple[torch.Tensor, ...]:
    """Batch-2 CFG inputs as the sampler builds them (row 1: mu/spks/cond zero), float32."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(2, mel_channels, frames, generator=g) * scale
    mu = torch.randn(2, mel_channels, frames, generator=g) * scale
    mu[1] = 0
    cond = torch.randn(2, mel_channels, frames, generator=g) * scale
    cond[1] = 0
    spks = torch.randn(2, spk_dim, generator=g)
    spks[1] = 0
    mask = torch.ones(2, 1, frames)
    t = torch.tensor([0.3, 0.3])
    return x, mask, mu, t, spks, cond


# ----------------------------------------------------------------------------------------------------------------
# Export
# ----------------------------------------------------------------------------------------------------------------


def _prepare_copy(module: nn.Module, precision: str) -> tuple[nn.Module, torch.dtype]:
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {PRECISIONS}, not {precision!r}")
    work = copy.deepcopy(module).eval().cpu()
    if precision == "fp16":
        work = work.half()
        wrap_norms_fp32(work)
        return work, torch.float16
    return work.float(), torch.float32


def _export(wrapper: nn.Module, example: tuple[torch.Tensor, ...], path: Path, input_names: Sequence[str],
            output_names: Sequence[str], dynamic: dict[str, dict[int, str]], max_len: int) -> None:
    """torch.onnx.export (the torch.export based exporter) with one shared dynamic length axis.

    Slow-ish (~30 s for a tiny estimator on 2 CPU cores, minutes at full size) but it is the maintained
    exporter; the older TorchScript tracer produced an ill-typed fp16 graph for the v1 U-Net.
    """
    # min 4: the U-Nets' stride-2 mask slicing makes torch.export guard T >= 3; 4 is the profile minimum too.
    length = torch.export.Dim("frames", min=MIN_DYNAMIC_LENGTH, max=max_len)
    dynamic_shapes = {name: ({axis: length for axis in dynamic[name]} if name in dynamic else None)
                      for name in input_names}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # exporter chatter (deprecations inside torch), not ours to fix
        program = torch.onnx.export(
            wrapper, example, dynamo=True, input_names=list(input_names), output_names=list(output_names),
            dynamic_shapes=dynamic_shapes, opset_version=OPSET, optimize=True, verbose=False,
        )
    program.save(str(path), external_data=False)


def export_estimator(estimator: nn.Module, path: str | Path, precision: str = "fp32", streaming: bool = False,
                     example_frames: int = 64, max_frames: int = 4096, mel_channels: int = 80,
                     spk_dim: int = 80) -> ExportedGraph:
    """Export a flow estimator to ONNX: inputs x, mask, mu, t, spks, cond -> estimator_out; batch 2, frames dynamic.

    ``streaming`` is frozen into the graph (chunked attention of the v2/v3 estimators), so a streaming engine
    is a separate export. The module itself is not modified.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    work, dtype = _prepare_copy(estimator, precision)
    wrapper = EstimatorForExport(work, dtype, streaming=streaming).eval()
    example = estimator_example_inputs(example_frames, mel_channels, spk_dim)
    dynamic = {"x": {2: "frames"}, "mask": {2: "frames"}, "mu": {2: "frames"}, "cond": {2: "frames"}}
    with torch.no_grad():
        _export(wrapper, example, path, ESTIMATOR_INPUTS, (ESTIMATOR_OUTPUT,), dynamic, max_frames)
    _finish(path, precision)
    return ExportedGraph(path, precision, ESTIMATOR_INPUTS, (ESTIMATOR_OUTPUT,), "frames")


def hift_source_spectrum(hift: nn.Module, mel: torch.Tensor, source: torch.Tensor | None = None) -> torch.Tensor:
    """The second engine input for a mel: STFT of the harmonic source (zero-noise draws if none given)."""
    if source is None:
        with torch.no_grad():
            source = hift.make_source(hift.predict_f0(mel), hift.zero_draws(mel))
    return hift._source_spectrum(source)


def hift_head_to_wave(hift: nn.Module, head: torch.Tensor) -> torch.Tensor:
    """Engine output (conv_post activations) -> waveform, as HiFT's own decode finishes it."""
    return hift._spectrum_to_wave(head).clamp(-hift.audio_limit, hift.audio_limit)


def export_hift_head(hift: nn.Module, path: str | Path, precision: str = "fp32", example_frames: int = 64,
                     max_frames: int = 4096, mel_channels: int = 80) -> ExportedGraph:
    """Export the v1/v2 HiFT conv stack: inputs mel [1, 80, T], source_spec [1, n_fft+2, T*spf/hop + 1];
    output hift_head [1, n_fft+2, T*spf/hop + 1]; T dynamic (the spectrum length is derived from it)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    work, dtype = _prepare_copy(hift, precision)
    wrapper = HiftHeadForExport(work, dtype).eval()
    mel = torch.randn(1, mel_channels, example_frames, generator=torch.Generator().manual_seed(0))
    spec = hift_source_spectrum(hift, mel)
    frames_per_spec = hift.samples_per_frame // hift.hop_len
    frames = torch.export.Dim("frames", min=MIN_DYNAMIC_LENGTH, max=max_frames)
    shapes = {"mel": {2: frames}, "source_spec": {2: frames * frames_per_spec + 1}}
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        program = torch.onnx.export(wrapper, (mel, spec), dynamo=True, input_names=list(HIFT_INPUTS),
                                    output_names=[HIFT_OUTPUT], dynamic_shapes=shapes, opset_version=OPSET,
                                    optimize=True, verbose=False)
    program.save(str(path), external_data=False)
    _finish(path, precision)
    return ExportedGraph(path, precision, HIFT_INPUTS, (HIFT_OUTPUT,), "frames")


def _finish(path: Path, precision: str) -> None:
    model = onnx.load(str(path))
    if precision == "fp16":
        wrapped = keep_sensitive_ops_fp32(model)
        log.info("fp16 export %s: %d sensitive ops wrapped in fp32 casts", path.name, wrapped)
        left = fp16_sensitive_nodes(model)
        if left:
            raise RuntimeError(f"fp16 export left sensitive ops in fp16: {left[:5]}")
    onnx.checker.check_model(model)
    onnx.save(model, str(path))


# ----------------------------------------------------------------------------------------------------------------
# Graph pass: keep sensitive ops in fp32
# ----------------------------------------------------------------------------------------------------------------


def tensor_types(model: onnx.ModelProto) -> dict[str, int]:
    """Element type of every named tensor (inputs, initializers, value_info after shape inference, outputs)."""
    inferred = onnx.shape_inference.infer_shapes(model, strict_mode=False)
    types: dict[str, int] = {}
    graph = inferred.graph
    for vi in list(graph.input) + list(graph.value_info) + list(graph.output):
        if vi.type.HasField("tensor_type"):
            types[vi.name] = vi.type.tensor_type.elem_type
    for init in graph.initializer:
        types[init.name] = init.data_type
    for node in graph.node:  # Constant nodes are not always in value_info
        if node.op_type == "Constant":
            for attr in node.attribute:
                if attr.name == "value":
                    types[node.output[0]] = attr.t.data_type
    return types


def _data_slots(node: onnx.NodeProto) -> tuple[int, ...]:
    return _FLOAT_INPUT_SLOTS.get(node.op_type, (0,))


def fp16_sensitive_nodes(model: onnx.ModelProto) -> list[str]:
    """Names (op_type:name) of sensitive ops that still take an fp16 data input. Empty = safe for fp16."""
    types = tensor_types(model)
    bad = []
    for node in model.graph.node:
        if node.op_type not in SENSITIVE_OPS:
            continue
        for slot in _data_slots(node):
            if slot < len(node.input) and node.input[slot] and types.get(node.input[slot]) == TensorProto.FLOAT16:
                bad.append(f"{node.op_type}:{node.name}")
                break
    return bad


def keep_sensitive_ops_fp32(model: onnx.ModelProto) -> int:
    """In place: wrap every fp16 sensitive op as Cast(fp32) -> op -> Cast(fp16). Returns how many were wrapped."""
    types = tensor_types(model)
    graph = model.graph
    new_nodes: list[onnx.NodeProto] = []
    upcast: dict[str, str] = {}
    wrapped = 0
    for index, node in enumerate(graph.node):
        fp16_slots = [
            s for s in _data_slots(node)
            if s < len(node.input) and node.input[s] and types.get(node.input[s]) == TensorProto.FLOAT16
        ]
        if node.op_type not in SENSITIVE_OPS or not fp16_slots:
            new_nodes.append(node)
            continue
        wrapped += 1
        tag = node.name or f"{node.op_type}_{index}"
        for slot in fp16_slots:
            source = node.input[slot]
            if source not in upcast:
                upcast[source] = f"{source}__as_fp32"
                new_nodes.append(helper.make_node("Cast", [source], [upcast[source]], to=TensorProto.FLOAT,
                                                  name=f"{tag}__up{slot}"))
            node.input[slot] = upcast[source]
        downcasts = []
        for slot, out in enumerate(node.output):
            if not out:
                continue
            if slot > 0:  # secondary outputs (mean / inv std) stay fp32 for anyone reading them: rare, keep simple
                raise NotImplementedError(f"{node.op_type} {tag}: extra outputs are not supported by the fp32 pass")
            wide = f"{out}__fp32_result"
            node.output[slot] = wide
            downcasts.append(helper.make_node("Cast", [wide], [out], to=TensorProto.FLOAT16, name=f"{tag}__down"))
        new_nodes.append(node)
        new_nodes.extend(downcasts)
    if wrapped:
        # value_info of renamed tensors would now be wrong; shape inference recreates what is needed.
        del graph.value_info[:]
        del graph.node[:]
        graph.node.extend(new_nodes)
    return wrapped
