"""Engine builds with TensorRT for RTX on a CPU-only machine (ahead-of-time build needs no GPU).

Needs `tensorrt_rtx` (pip install tensorrt-rtx-cu13); skipped with that reason otherwise. Running the built
engines needs a supported GPU: see test_tensorrt_runner.py (marked gpu).
"""

from __future__ import annotations

import time

import numpy as np
import onnx
import pytest
import torch
from onnx import TensorProto, helper

from cosydesk.runtime.buckets import BucketSet, FLOW_FRAME_BUCKETS
from cosydesk.runtime.backends.tensorrt.builder import (
    BuildCancelled,
    BuildError,
    ShapeProfile,
    build_engine,
    estimator_profile,
    graph_precision,
)
from cosydesk.runtime.backends.tensorrt.flavour import load_flavour
from cosydesk.runtime.backends.tensorrt.onnx_export import export_estimator
from tests.runtime.backends.tensorrt.test_tensorrt_export import StandInEstimator

RTX = load_flavour("tensorrt_rtx")
needs_rtx = pytest.mark.skipif(RTX is None, reason="tensorrt_rtx not installed (pip install tensorrt-rtx-cu13)")

BUILD_TIMES: dict[str, float] = {}


@pytest.fixture(scope="module")
def standin_onnx(tmp_path_factory):
    torch.manual_seed(0)
    model = StandInEstimator().eval()
    folder = tmp_path_factory.mktemp("build")
    return {p: export_estimator(model, folder / f"standin_{p}.onnx", p, max_frames=4096).path for p in ("fp32", "fp16")}


def test_graph_precision(standin_onnx):
    assert graph_precision(standin_onnx["fp32"]) == "fp32"
    assert graph_precision(standin_onnx["fp16"]) == "fp16"


def test_estimator_profile_covers_buckets():
    profile = estimator_profile(FLOW_FRAME_BUCKETS)
    lo, opt, hi = profile.shapes["x"]
    assert lo == (2, 80, FLOW_FRAME_BUCKETS.smallest) and hi == (2, 80, FLOW_FRAME_BUCKETS.largest)
    assert profile.shapes["t"] == ((2,), (2,), (2,)) and profile.shapes["spks"][0] == (2, 80)
    assert "x:2x80x16/" in profile.ranges_tag()


@needs_rtx
@pytest.mark.parametrize("precision", ["fp32", "fp16"])
def test_rtx_builds_standin_with_profile_and_reports_progress(standin_onnx, precision):
    events: list[tuple[str, int, int]] = []
    start = time.perf_counter()
    plan = build_engine(standin_onnx[precision], estimator_profile(FLOW_FRAME_BUCKETS), precision, RTX,
                        progress=lambda phase, step, total: events.append((phase, step, total)))
    BUILD_TIMES[precision] = time.perf_counter() - start
    print(f"\nTensorRT-RTX {RTX.version} CPU build of stand-in {precision}: {BUILD_TIMES[precision]:.2f} s, "
          f"{len(plan) / 1e6:.2f} MB, {len(events)} progress events")
    assert isinstance(plan, bytes) and len(plan) > 10_000
    assert RTX.malformed(plan) is False
    # Progress: several phases, each reported from 0 up to its total.
    phases = {phase for phase, _, _ in events}
    assert len(phases) >= 2
    for phase in phases:
        steps = [(s, t) for p, s, t in events if p == phase]
        assert all(0 <= s <= t for s, t in steps if t > 0)
        assert steps[-1][0] == steps[-1][1]  # phase finished


@needs_rtx
def test_rtx_build_for_a_named_target(standin_onnx):
    plan = build_engine(standin_onnx["fp32"], estimator_profile(BucketSet("b", (16, 64))), "fp32", RTX,
                        target_cc=(8, 6))
    assert len(plan) > 10_000 and RTX.target_tag((8, 6)) == "sm86"
    with pytest.raises(RuntimeError, match="9.0"):
        build_engine(standin_onnx["fp32"], estimator_profile(BucketSet("b", (16, 64))), "fp32", RTX, target_cc=(9, 0))


@needs_rtx
def test_malformed_plans_are_recognised():
    assert RTX.malformed(b"\0" * 4096) is True
    assert RTX.malformed(b"not an engine") is True


@needs_rtx
def test_build_refuses_precision_mismatch_and_missing_profile_inputs(standin_onnx):
    with pytest.raises(BuildError, match="fp32 graph"):
        build_engine(standin_onnx["fp32"], estimator_profile(FLOW_FRAME_BUCKETS), "fp16", RTX)
    partial = ShapeProfile({"x": ((2, 80, 16),) * 3})
    with pytest.raises(BuildError, match="no shapes"):
        build_engine(standin_onnx["fp32"], partial, "fp32", RTX)


@needs_rtx
def test_build_refuses_fp16_graph_with_fp16_norms(tmp_path):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT16, [1, "n", 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT16, [1, "n", 8])
    w = helper.make_tensor("w", TensorProto.FLOAT16, [8], np.ones(8, np.float16).tobytes(), raw=True)
    b = helper.make_tensor("b", TensorProto.FLOAT16, [8], np.zeros(8, np.float16).tobytes(), raw=True)
    node = helper.make_node("LayerNormalization", ["x", "w", "b"], ["y"], axis=-1)
    model = helper.make_model(helper.make_graph([node], "g", [x], [y], [w, b]), opset_imports=[helper.make_opsetid("", 18)])
    path = tmp_path / "naive.onnx"
    onnx.save(model, str(path))
    with pytest.raises(BuildError, match="overflow"):
        build_engine(path, ShapeProfile({"x": ((1, 1, 8), (1, 4, 8), (1, 16, 8))}), "fp16", RTX)


@needs_rtx
def test_progress_callback_can_cancel(standin_onnx):
    def stop(phase, step, total):
        if step >= 1:
            raise BuildCancelled("user pressed cancel")

    with pytest.raises(BuildCancelled):
        build_engine(standin_onnx["fp32"], estimator_profile(FLOW_FRAME_BUCKETS), "fp32", RTX, progress=stop)


@needs_rtx
def test_unparsable_onnx_is_a_build_error(tmp_path):
    path = tmp_path / "broken.onnx"
    path.write_bytes(b"definitely not protobuf")
    with pytest.raises(BuildError):
        build_engine(path, ShapeProfile({}), "fp32", RTX)
