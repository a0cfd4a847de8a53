"""ONNX exports of the real flow estimators (official-format fixtures v1/v2/v3 and a full-size random v2)
run with onnxruntime CPU against torch, and built into engines by TensorRT for RTX on the CPU.

Slow (the torch.export based exporter takes ~30 s per tiny graph on 2 cores). Tolerances, relative to max|ref|:
fp32 <= 1e-4. fp16: <= 1e-2 against the same module run in torch fp16 (what the export adds; measured ~2e-3),
and against torch fp32 <= 1e-2 where fp16 arithmetic allows it (full-size v2, tiny v3). On the tiny v1/v2
fixtures plain torch fp16 is itself 1.1-2.9e-2 off fp32 at the worst sample (each of ~80 layers adds ~5e-4;
no single layer dominates), so there the bound is "no worse than torch fp16 + 5e-3".
"""

from __future__ import annotations

import copy
import time

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch

from cosydesk.model.checkpoint import load_strict, read_state_dict
from cosydesk.model.config import read_yaml
from cosydesk.runtime.buckets import FLOW_FRAME_BUCKETS
from cosydesk.runtime.backends.tensorrt.builder import build_engine, estimator_profile
from cosydesk.runtime.backends.tensorrt.flavour import load_flavour
from cosydesk.runtime.backends.tensorrt.onnx_export import (
    ESTIMATOR_INPUTS,
    estimator_example_inputs,
    export_estimator,
    fp16_sensitive_nodes,
)
from tests.support.paths import fixture_dir

pytestmark = pytest.mark.slow

YAML = {"v1": "cosyvoice.yaml", "v2": "cosyvoice2.yaml", "v3": "cosyvoice3.yaml"}
PREFIX = "decoder.estimator."
RTX = load_flavour("tensorrt_rtx")


def _build_estimator(node):
    if node.class_name == "DiT":
        from cosydesk.model.dit import DiT

        return DiT.from_config(node)
    from cosydesk.model.unet import build_estimator

    return build_estimator(node)


def fixture_estimator(version: str) -> torch.nn.Module:
    node = read_yaml(fixture_dir(version) / "model" / YAML[version])["flow"]["decoder"]["estimator"]
    estimator = _build_estimator(node).eval()
    state = read_state_dict(fixture_dir(version) / "model" / "flow.pt")
    load_strict(estimator, {k: v for k, v in state.items() if k.startswith(PREFIX)}, "flow.pt", strip_prefix=PREFIX)
    return estimator


def full_size_v2_estimator() -> torch.nn.Module:
    from cosydesk.model.unet import CausalConditionalDecoder

    torch.manual_seed(0)
    return CausalConditionalDecoder(in_channels=320, out_channels=80, channels=[256], attention_head_dim=64,
                                    n_blocks=4, num_mid_blocks=12, num_heads=8, act_fn="gelu").eval()


def _errors(ours: np.ndarray, ref: np.ndarray) -> tuple[float, float]:
    scale = max(float(np.abs(ref).max()), 1e-12)
    max_rel = float(np.abs(ours - ref).max()) / scale
    rms_rel = float(np.sqrt(np.mean((ours - ref) ** 2)) / max(np.sqrt(np.mean(ref**2)), 1e-12))
    return max_rel, rms_rel


def _inputs(frames: int, seed: int, scale: float = 1.0) -> list[torch.Tensor]:
    inputs = list(estimator_example_inputs(frames, seed=seed, scale=scale))
    inputs[1][1, :, frames * 4 // 5:] = 0  # row 1 partially masked
    return inputs


# The default run (CI) exports two cases; the rest repeat the same code on other graphs and take minutes each on
# 2 CPU cores, so they carry the `heavy` marker (run them with `python -m pytest -q -m heavy`).
HEAVY = pytest.mark.heavy
CASES = [pytest.param("v1", False, marks=HEAVY), ("v2", False), pytest.param("v2", True, marks=HEAVY),
         pytest.param("v3", False, marks=HEAVY), ("v3", True)]


@pytest.fixture(scope="module")
def exports(tmp_path_factory):
    """(version, streaming) -> (estimator, {precision: onnx path}), exported lazily and shared."""
    folder = tmp_path_factory.mktemp("fixture_onnx")
    store: dict = {}

    def get(version: str, streaming: bool):
        if (version, streaming) not in store:
            model = fixture_estimator(version) if version != "v2-full" else full_size_v2_estimator()
            paths = {}
            for precision in ("fp32", "fp16"):
                start = time.perf_counter()
                paths[precision] = export_estimator(model, folder / f"{version}_{streaming}_{precision}.onnx",
                                                    precision, streaming=streaming).path
                print(f"\nexport {version} streaming={streaming} {precision}: {time.perf_counter() - start:.1f} s")
            store[(version, streaming)] = (model, paths)
        return store[(version, streaming)]

    return get


def _run(path, inputs) -> np.ndarray:
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return session.run(None, {n: a.numpy() for n, a in zip(ESTIMATOR_INPUTS, inputs)})[0]


@pytest.mark.parametrize("version,streaming", CASES)
def test_fixture_estimator_onnx_matches_torch(exports, version, streaming):
    model, paths = exports(version, streaming)
    half = copy.deepcopy(model).half()
    assert fp16_sensitive_nodes(onnx.load(str(paths["fp16"]))) == []
    for frames in (16, 37, 75, 200):
        inputs = _inputs(frames, seed=frames)
        with torch.no_grad():
            ref = model(*inputs, streaming=streaming).numpy()
            ref_half = half(*[a.half() for a in inputs], streaming=streaming).float().numpy()
        fp32_max, _ = _errors(_run(paths["fp32"], inputs), ref)
        ours16 = _run(paths["fp16"], inputs)
        fp16_max, fp16_rms = _errors(ours16, ref)
        fidelity, _ = _errors(ours16, ref_half)
        torch_half_max, _ = _errors(ref_half, ref)
        print(f"\n{version} streaming={streaming} T={frames}: fp32 {fp32_max:.2g} | fp16 vs fp32 max {fp16_max:.2g} "
              f"rms {fp16_rms:.2g} | vs torch-fp16 {fidelity:.2g} | torch fp16 vs fp32 {torch_half_max:.2g}")
        assert fp32_max <= 1e-4
        assert np.isfinite(ours16).all()
        assert fidelity <= 1e-2  # what the export itself adds
        assert fp16_max <= max(1e-2, torch_half_max + 5e-3)  # vs fp32: no worse than fp16 arithmetic itself


def _first_norm_input(model, inputs, streaming) -> torch.Tensor:
    """Input of the first normalisation the estimator applies (captured with a hook)."""
    from cosydesk.model.unet import ConditionalDecoder

    captured = []
    if isinstance(model, ConditionalDecoder):
        norm = model.down_blocks[0][0].block1.block[1 if not model.causal else 2]
        handle = norm.register_forward_pre_hook(lambda m, a: captured.append(a[0].detach()))
    else:  # DiT: the first block's pre-attention LayerNorm reads the block input
        handle = model.transformer_blocks[0].register_forward_pre_hook(lambda m, a: captured.append(a[0].detach()))
    with torch.no_grad():
        model(*inputs, streaming=streaming)
    handle.remove()
    return captured[0]


@pytest.mark.parametrize("version,streaming", [pytest.param("v1", False, marks=HEAVY), ("v2", False),
                                               pytest.param("v3", True, marks=HEAVY)])
def test_fp16_export_survives_norm_overflow_inputs(exports, version, streaming):
    """Inputs scaled until the first norm sees |h| > 256: a naive fp16 LayerNorm/GroupNorm squares to inf."""
    model, paths = exports(version, streaming)
    inputs = _inputs(64, seed=5, scale={"v1": 120.0, "v2": 200.0, "v3": 400.0}[version])
    h = _first_norm_input(model, inputs, streaming)
    assert 256 < float(h.abs().max()) < 65504, float(h.abs().max())
    h16 = h.half()
    centred = h16 - h.mean(dim=-1 if version != "v1" else 1, keepdim=True).half()
    assert torch.isinf(centred * centred).any()  # naive fp16 variance overflows
    with torch.no_grad():
        ref = model(*inputs, streaming=streaming).numpy()
    ours = _run(paths["fp16"], inputs)
    assert np.isfinite(ours).all()
    max_rel, rms_rel = _errors(ours, ref)
    print(f"\n{version} overflow case: |h|max {float(h.abs().max()):.0f}, fp16 export max {max_rel:.2g} rms {rms_rel:.2g}")
    assert max_rel <= 3.5e-2


@pytest.mark.skipif(RTX is None, reason="tensorrt_rtx not installed (pip install tensorrt-rtx-cu13)")
@pytest.mark.parametrize("version,streaming", CASES)
@pytest.mark.parametrize("precision", ["fp32", "fp16"])
def test_rtx_builds_fixture_engines(exports, version, streaming, precision):
    _, paths = exports(version, streaming)
    phases = set()
    start = time.perf_counter()
    plan = build_engine(paths[precision], estimator_profile(FLOW_FRAME_BUCKETS), precision, RTX,
                        progress=lambda phase, step, total: phases.add(phase))
    print(f"\nRTX CPU build {version} streaming={streaming} {precision}: {time.perf_counter() - start:.2f} s, "
          f"{len(plan) / 1e6:.1f} MB")
    assert RTX.malformed(plan) is False and phases


@HEAVY
def test_full_size_v2_estimator_onnx_and_rtx_build(exports):
    model, paths = exports("v2-full", False)
    assert sum(p.numel() for p in model.parameters()) > 50_000_000
    half = copy.deepcopy(model).half()
    for frames, scale in ((75, 1.0), (200, 1.0), (64, 60.0)):
        inputs = _inputs(frames, seed=frames, scale=scale)
        with torch.no_grad():
            ref = model(*inputs).numpy()
            ref_half = half(*[a.half() for a in inputs]).float().numpy()
        fp32_max, _ = _errors(_run(paths["fp32"], inputs), ref)
        ours16 = _run(paths["fp16"], inputs)
        fp16_max, fp16_rms = _errors(ours16, ref)
        fidelity, _ = _errors(ours16, ref_half)
        print(f"\nv2 full-size T={frames} scale={scale}: fp32 {fp32_max:.2g} | fp16 max {fp16_max:.2g} "
              f"rms {fp16_rms:.2g} | vs torch-fp16 {fidelity:.2g} | torch-fp16 has non-finite: "
              f"{not np.isfinite(ref_half).all()}")
        assert fp32_max <= 1e-4
        assert np.isfinite(ours16).all() and fp16_max <= 1e-2
    if RTX is not None:
        for precision in ("fp32", "fp16"):
            start = time.perf_counter()
            plan = build_engine(paths[precision], estimator_profile(FLOW_FRAME_BUCKETS), precision, RTX)
            print(f"\nRTX CPU build v2 full-size {precision}: {time.perf_counter() - start:.1f} s, {len(plan) / 1e6:.0f} MB")
            assert RTX.malformed(plan) is False


@pytest.mark.parametrize("version", [pytest.param("v1", marks=HEAVY), "v2"])
def test_hift_head_export_matches_torch_and_builds(tmp_path, version):
    """HiFT conv stack as ONNX; torch does f0/source/STFT before and the iSTFT after (zero-noise source)."""
    from cosydesk.model.hift import build_hift
    from cosydesk.runtime.buckets import HIFT_MEL_BUCKETS
    from cosydesk.runtime.backends.tensorrt.builder import hift_head_profile
    from cosydesk.runtime.backends.tensorrt.onnx_export import export_hift_head, hift_head_to_wave, hift_source_spectrum

    hift = build_hift(read_yaml(fixture_dir(version) / "model" / YAML[version])["hift"]).eval()
    load_strict(hift, read_state_dict(fixture_dir(version) / "model" / "hift.pt"), "hift.pt")
    mel = torch.from_numpy(np.random.RandomState(0).randn(1, 80, 57).astype(np.float32)) * 2 - 4
    with torch.no_grad():
        ref = hift.inference(mel, zero_noise=True)
        spec = hift_source_spectrum(hift, mel)
    for precision, tol in (("fp32", 1e-3), ("fp16", None)):
        path = export_hift_head(hift, tmp_path / f"hift_{precision}.onnx", precision).path
        session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        head = session.run(None, {"mel": mel.numpy(), "source_spec": spec.numpy()})[0]
        wave = hift_head_to_wave(hift, torch.from_numpy(head))
        err = float((wave - ref).abs().max())
        print(f"\nHiFT {version} {precision}: max |wave - torch| {err:.2g}")
        assert torch.isfinite(wave).all()
        if tol is not None:
            assert err <= tol
        if RTX is not None and precision == "fp16":  # the engine the backend builds (an fp32 build adds ~20 s)
            profile = hift_head_profile(HIFT_MEL_BUCKETS, hift.samples_per_frame, hift.hop_len, hift.n_fft)
            assert RTX.malformed(build_engine(path, profile, precision, RTX)) is False
