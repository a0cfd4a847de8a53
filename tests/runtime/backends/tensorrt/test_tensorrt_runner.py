"""Engine runner on a real GPU: user-managed context memory from one shared area, pre-bound I/O, enqueue.

Marked `gpu`. What needs what:
* CUDA helper tests: an NVIDIA GPU + cuda-python.
* Runner tests: a GPU that an installed TensorRT flavour supports (TensorRT for RTX: cc 7.5/8.0/8.6/8.9/12.x;
  TensorRT 10: cc >= 7.5). They cannot run on a CPU-only machine, nor with only TensorRT for RTX on an H200
  (cc 9.0), which is why they skip there with that reason.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from cosydesk.runtime.buckets import BucketSet
from cosydesk.runtime.backends.tensorrt.builder import build_engine, estimator_profile
from cosydesk.runtime.backends.tensorrt.flavour import current_compute_capability, load_flavour, usable_flavours
from cosydesk.runtime.backends.tensorrt.onnx_export import ESTIMATOR_INPUTS, estimator_example_inputs, export_estimator

pytestmark = pytest.mark.gpu

CC = current_compute_capability()
needs_gpu = pytest.mark.skipif(CC is None, reason="no NVIDIA GPU visible to cuda-python (cuda.bindings.runtime)")
FLAVOURS = usable_flavours() if CC is not None else []
needs_runtime = pytest.mark.skipif(
    not FLAVOURS, reason=f"no installed TensorRT flavour supports this GPU (cc {CC}); TensorRT for RTX excludes 9.0")


@needs_gpu
def test_cuda_helpers_roundtrip_and_memory_info():
    from cosydesk.runtime.backends.tensorrt.runner import CudaStream, DeviceBuffer, copy_device_to_host, copy_host_to_device, mem_get_info

    free_before, total = mem_get_info()
    assert 0 < free_before <= total
    buffer = DeviceBuffer(64 << 20)
    free_after, _ = mem_get_info()
    assert free_before - free_after >= (60 << 20)  # the allocation is visible to the driver
    stream = CudaStream()
    data = np.arange(1 << 20, dtype=np.float32)
    back = np.empty_like(data)
    copy_host_to_device(buffer.ptr, data, stream)
    copy_device_to_host(back, buffer.ptr, stream)
    event = stream.record_event()
    event.synchronize()
    assert np.array_equal(back, data)
    event.destroy()
    stream.destroy()
    buffer.free()


@needs_gpu
def test_unsupported_gpu_is_refused_cleanly(tmp_path):
    """TensorRT for RTX on a GPU it does not support: loading fails with EngineLoadError, never a crash."""
    rtx = load_flavour("tensorrt_rtx")
    if rtx is None or CC in rtx.rtx_targets():
        pytest.skip("needs tensorrt_rtx on a GPU outside its targets (e.g. an H200, cc 9.0)")
    from cosydesk.runtime.backends.tensorrt.runner import EngineLoadError, EngineRunner, SharedActivationArea
    from tests.runtime.backends.tensorrt.test_tensorrt_export import StandInEstimator

    path = export_estimator(StandInEstimator().eval(), tmp_path / "e.onnx", "fp32", max_frames=256).path
    plan = build_engine(path, estimator_profile(BucketSet("f", (16, 64))), "fp32", rtx, target_cc=(8, 6))
    with pytest.raises(EngineLoadError):
        EngineRunner(plan, rtx, SharedActivationArea())


@needs_runtime
@pytest.mark.parametrize("precision", ["fp32", "fp16"])
def test_contexts_share_one_activation_area_and_match_onnxruntime(tmp_path, precision):
    import onnxruntime as ort

    from cosydesk.runtime.backends.tensorrt.runner import CudaStream, EngineRunner, SharedActivationArea, mem_get_info
    from tests.runtime.backends.tensorrt.test_tensorrt_export import StandInEstimator

    flavour = FLAVOURS[0]
    torch.manual_seed(0)
    path = export_estimator(StandInEstimator().eval(), tmp_path / "e.onnx", precision, max_frames=512).path
    plan = build_engine(path, estimator_profile(BucketSet("f", (16, 64, 256))), precision, flavour)

    area = SharedActivationArea()
    free_0, _ = mem_get_info()
    runner = EngineRunner(plan, flavour, area, n_contexts=3)
    area.allocate()
    free_1, _ = mem_get_info()
    per_context = runner.engine.device_memory_size_v2
    assert area.required_bytes >= per_context and area.buffer.nbytes == area.required_bytes
    # Three contexts, one activation area (not three): allow weights + I/O + driver slack on top.
    assert free_0 - free_1 < 2 * per_context + 256 * 2**20

    stream = CudaStream()
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    for index, frames in enumerate((16, 50, 256)):
        inputs = {n: a.numpy() for n, a in zip(ESTIMATOR_INPUTS, estimator_example_inputs(frames, seed=frames))}
        ours = runner.run(inputs, stream, context_index=index)["estimator_out"]
        ref = session.run(None, inputs)[0]
        tol = 1e-3 if precision == "fp32" else 2e-2
        assert ours.shape == ref.shape
        assert np.abs(ours - ref).max() <= tol * max(1.0, np.abs(ref).max())
    runner.warm_up({"x": (2, 80, 64), "mask": (2, 1, 64), "mu": (2, 80, 64), "t": (2,), "spks": (2, 80),
                    "cond": (2, 80, 64)}, stream)
    runner.save_runtime_cache()
    runner.close()
    area.free()
    stream.destroy()


@needs_runtime
def test_shape_outside_profile_is_rejected(tmp_path):
    from cosydesk.runtime.backends.tensorrt.runner import CudaStream, EngineRunner, SharedActivationArea
    from tests.runtime.backends.tensorrt.test_tensorrt_export import StandInEstimator

    flavour = FLAVOURS[0]
    path = export_estimator(StandInEstimator().eval(), tmp_path / "e.onnx", "fp32", max_frames=512).path
    plan = build_engine(path, estimator_profile(BucketSet("f", (16, 64))), "fp32", flavour)
    area = SharedActivationArea()
    runner = EngineRunner(plan, flavour, area)
    area.allocate()
    with pytest.raises(ValueError, match="outside the engine profile"):
        runner.enqueue({"x": (2, 80, 128)}, CudaStream())
