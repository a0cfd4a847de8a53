"""The tensorrt backend: backend choice (CPU), the estimator adapter's binding logic (CPU, fake contexts),
and the end-to-end flow against eager-fp32 (marked `gpu`: needs a GPU that an installed TensorRT supports).

The CPU adapter test drives the real EngineRunner.bind / enqueue code with recording fake execution contexts:
what it checks is which pointers and shapes reach TensorRT, not that an engine computes anything.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from cosydesk.runtime.errors import SynthesisError
from cosydesk.runtime.synthesizer import resolve_backend
from cosydesk.runtime.backends.tensorrt import flavour as flavour_mod
from cosydesk.runtime.backends.tensorrt.runner import EngineRunner, TensorSlot
from cosydesk.runtime.backends.tensorrt.torch_bridge import ENGINE_INPUTS, ENGINE_OUTPUT, TensorRTEstimator, unavailable_reason

# ------------------------------------------------------------------------------------------- backend choice


def _usable(monkeypatch, usable: bool, cc=(8, 9)):
    monkeypatch.setattr(flavour_mod, "current_compute_capability", lambda: cc)
    monkeypatch.setattr(flavour_mod, "usable_flavours", lambda cc=None: ["tensorrt_rtx"] if usable else [])


def test_auto_never_picks_the_experimental_tensorrt(monkeypatch):
    """Even with a usable TensorRT flavour, auto keeps the measured cudagraph backend: no TensorRT engine has
    run on a GPU here, and a default must be a path that has."""
    from cosydesk.runtime.backends import EXPERIMENTAL

    _usable(monkeypatch, True)
    assert "tensorrt" in EXPERIMENTAL
    assert resolve_backend("auto", "cuda") == "cudagraph"
    assert resolve_backend("auto", "cuda:0", "fp16") == "cudagraph"
    assert resolve_backend("auto", "cuda", "fp32") == "eager-fp32"  # fp32 asked: the reference path


def test_auto_is_cudagraph_without_usable_tensorrt(monkeypatch):
    _usable(monkeypatch, False, cc=(9, 0))
    assert resolve_backend("auto", "cuda") == "cudagraph"


def test_cpu_is_eager_fp32_even_with_tensorrt_usable(monkeypatch):
    _usable(monkeypatch, True)
    assert resolve_backend("auto", "cpu") == "eager-fp32"


def test_measured_note_says_what_ran_where():
    from cosydesk.runtime.backends import measured_note

    assert "experimental" in measured_note("tensorrt", (8, 9))
    assert "measured on this kind of GPU (NVIDIA H200)" in measured_note("cudagraph", (9, 0))
    other = measured_note("cudagraph", (8, 9))
    assert "NVIDIA H200 (cc 9.0)" in other and "not been measured" in other


def test_explicit_tensorrt(monkeypatch):
    _usable(monkeypatch, False)
    assert resolve_backend("tensorrt", "cuda") == "tensorrt"  # accepted; accelerate says what to install
    with pytest.raises(SynthesisError, match="tensorrt.*needs an NVIDIA GPU"):
        resolve_backend("tensorrt", "cpu")


def test_unavailable_reason_names_the_install(monkeypatch):
    monkeypatch.setattr(flavour_mod, "current_compute_capability", lambda: (8, 9))
    monkeypatch.setattr(flavour_mod, "usable_flavours", lambda cc=None: [])
    reason = unavailable_reason()
    assert "tensorrt-rtx" in reason and "tensorrt-cu13" in reason
    monkeypatch.setattr(flavour_mod, "current_compute_capability", lambda: (9, 0))
    reason = unavailable_reason()
    assert "tensorrt-cu13" in reason and "tensorrt-rtx" not in reason  # RTX does not run on Hopper
    monkeypatch.setattr(flavour_mod, "current_compute_capability", lambda: None)
    assert "cuda-python" in unavailable_reason()


def test_accelerate_tensorrt_refuses_cleanly_without_cuda():
    from types import SimpleNamespace

    from cosydesk.runtime.backends import accelerate

    with pytest.raises(ValueError, match="CUDA"):
        accelerate(SimpleNamespace(device=torch.device("cpu")), "tensorrt")


# ------------------------------------------------------------------------------------------- adapter binding


class RecordingContext:
    def __init__(self):
        self.calls: list[tuple] = []

    def set_tensor_address(self, name, ptr):
        self.calls.append(("address", name, int(ptr)))

    def set_input_shape(self, name, shape):
        self.calls.append(("shape", name, tuple(shape)))
        return True

    def execute_async_v3(self, stream):
        self.calls.append(("execute", int(stream)))
        return True


def fake_runner(max_frames: int = 64, channels: int = 80) -> tuple[EngineRunner, RecordingContext]:
    """A real EngineRunner object without an engine: float32 I/O slots, one recording context."""
    runner = EngineRunner.__new__(EngineRunner)
    context = RecordingContext()
    runner.contexts = [context]
    f32 = np.dtype(np.float32)
    shapes = {"x": (2, channels, max_frames), "mask": (2, 1, max_frames), "mu": (2, channels, max_frames),
              "t": (2,), "spks": (2, channels), "cond": (2, channels, max_frames)}
    runner.slots = {name: TensorSlot(name, True, f32, shapes[name], None, 0) for name in ENGINE_INPUTS}
    runner.slots[ENGINE_OUTPUT] = TensorSlot(ENGINE_OUTPUT, False, f32, (2, channels, max_frames), None, 0)
    return runner, context


def _inputs(frames: int, dtype=torch.float16):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(2, 80, frames, generator=g).to(dtype)
    mask = torch.ones(2, 1, frames, dtype=dtype)
    t = torch.tensor(0.3).reshape(1).expand(2).to(dtype)  # as the sampler builds it: an expanded view
    spks = torch.randn(2, 80, generator=g).to(dtype)
    return x, mask, x.clone(), t, spks, x.clone()


def test_adapter_binds_contiguous_engine_dtype_tensors_and_output_buffer():
    runner, context = fake_runner(max_frames=64)
    adapter = TensorRTEstimator({False: runner}, fallback=None, min_frames=16, device="cpu",
                                stream_handle=lambda: 1234)
    frames = 40
    out = adapter(*_inputs(frames), streaming=False)

    addresses = {name: ptr for kind, name, *rest in context.calls if kind == "address" for ptr in rest}
    shapes = {name: shape for kind, name, *rest in context.calls if kind == "shape" for shape in rest}
    assert set(addresses) == set(ENGINE_INPUTS) | {ENGINE_OUTPUT}
    assert shapes == {"x": (2, 80, frames), "mask": (2, 1, frames), "mu": (2, 80, frames), "t": (2,),
                      "spks": (2, 80), "cond": (2, 80, frames)}
    assert context.calls[-1] == ("execute", 1234)  # enqueued on the given stream, after binding and shapes
    kinds = [c[0] for c in context.calls]
    assert kinds.index("execute") == len(kinds) - 1 and kinds.count("execute") == 1
    # the output is the head of the preallocated buffer (dense [2, 80, T]); the result is a copy in x's dtype
    assert addresses[ENGINE_OUTPUT] == adapter.outputs[False].data_ptr()
    assert adapter.outputs[False].numel() == 2 * 80 * 64 and adapter.outputs[False].dtype == torch.float32
    assert out.shape == (2, 80, frames) and out.dtype == torch.float16
    assert out.data_ptr() != adapter.outputs[False].data_ptr()
    assert runner.slots["x"].address == addresses["x"]  # EngineRunner.bind also records it
    assert adapter.engine_calls == 1 and adapter.fallback_calls == 0


def test_adapter_addresses_are_the_bound_tensors_data_ptr(monkeypatch):
    """Capture the tensors actually bound: float32, contiguous, same values, pointer = data_ptr()."""
    runner, context = fake_runner(max_frames=64)
    seen = {}
    real_bind = EngineRunner.bind

    def spy(self, name, ptr):
        seen[name] = ptr
        real_bind(self, name, ptr)

    monkeypatch.setattr(EngineRunner, "bind", spy)
    captured = {}
    real_to = torch.Tensor.contiguous

    def keep(tensor, *a, **k):
        result = real_to(tensor, *a, **k)
        captured[result.data_ptr()] = result
        return result

    monkeypatch.setattr(torch.Tensor, "contiguous", keep)
    adapter = TensorRTEstimator({False: runner}, None, 16, "cpu", stream_handle=lambda: 7)
    args = _inputs(32)
    adapter(*args)
    monkeypatch.undo()
    for name, source in zip(ENGINE_INPUTS, args):
        bound = captured[seen[name]]
        assert bound.dtype == torch.float32 and bound.is_contiguous()
        assert torch.equal(bound, source.float())


def test_adapter_picks_the_engine_of_the_streaming_mode():
    offline, ctx_offline = fake_runner()
    streaming, ctx_streaming = fake_runner()
    adapter = TensorRTEstimator({False: offline, True: streaming}, None, 16, "cpu", stream_handle=lambda: 1)
    adapter(*_inputs(20), streaming=True)
    assert ctx_streaming.calls and not ctx_offline.calls
    adapter(*_inputs(20), streaming=False)
    assert ctx_offline.calls


def test_adapter_falls_back_to_torch_outside_the_profile():
    runner, context = fake_runner(max_frames=64)
    calls = []

    def fallback(x, mask, mu, t, spks, cond, streaming=False):
        calls.append((x.shape[-1], streaming))
        return x * 2

    adapter = TensorRTEstimator({False: runner}, fallback, 16, "cpu", stream_handle=lambda: 1)
    for frames in (8, 65):  # below the profile minimum, above its maximum
        out = adapter(*_inputs(frames))
        assert out.shape == (2, 80, frames)
    x1 = _inputs(20)
    adapter(x1[0][:1], x1[1][:1], x1[2][:1], x1[3][:1], x1[4][:1], x1[5][:1])  # batch 1: not the CFG pair
    adapter(*_inputs(20), streaming=True)  # no streaming engine
    assert calls == [(8, False), (65, False), (20, False), (20, True)] and not context.calls
    assert adapter.fallback_calls == 4 and adapter.engine_calls == 0
    no_fallback = TensorRTEstimator({False: runner}, None, 16, "cpu", stream_handle=lambda: 1)
    with pytest.raises(ValueError, match="outside the engine profile"):
        no_fallback(*_inputs(8))


# ------------------------------------------------------------------------------------------- on a GPU


def _gpu_skip_reason() -> str | None:
    if not torch.cuda.is_available():
        return "needs a CUDA GPU visible to torch"
    reason = unavailable_reason()
    return f"no usable TensorRT here: {reason}" if reason else None


@pytest.mark.gpu
@pytest.mark.slow
def test_tiny_v2_flow_tensorrt_matches_eager_fp32(tmp_path):
    reason = _gpu_skip_reason()
    if reason:
        pytest.skip(reason)
    from cosydesk.model import load
    from cosydesk.runtime.backends import accelerate
    from tests.support.paths import fixture_dir

    model_dir = fixture_dir("v2") / "model"
    reference = load(model_dir, device="cuda", dtype=torch.float32)
    fast = accelerate(load(model_dir, device="cuda", dtype=torch.float32), "tensorrt", engines_dir=tmp_path)
    adapter = fast.flow.decoder.estimator
    assert isinstance(adapter, TensorRTEstimator)

    g = torch.Generator().manual_seed(0)
    frames = 96
    z = torch.randn(1, 80, frames, generator=g).cuda()
    mu = torch.randn(1, 80, frames, generator=g).cuda()
    cond = torch.randn(1, 80, frames, generator=g).cuda()
    spks = torch.randn(1, 80, generator=g).cuda()
    mask = torch.ones(1, 1, frames, device="cuda")
    for streaming in (False, True):
        with torch.no_grad():
            ref = reference.flow.decoder(z, mask, mu, spks, cond, streaming=streaming)
            calls = adapter.engine_calls
            ours = fast.flow.decoder(z.half(), mask.half(), mu.half(), spks.half(), cond.half(), streaming=streaming)
        assert adapter.engine_calls == calls + fast.flow.decoder.n_steps  # the engine ran, not the fallback
        assert torch.isfinite(ours).all()
        rel = (ours.float() - ref).abs().max() / ref.abs().max()
        assert rel <= 1e-2, f"streaming={streaming}: mel rel err {rel:.2e}"


# ------------------------------------------------------------------------------------------- assembly (CPU, faked)


class FakeFlavour:
    name, version, tag = "tensorrt_rtx", "0.test", "tensorrt_rtx-0.test"

    def target_tag(self, target_cc=None):
        return "sm89"

    def malformed(self, plan):
        return False


def test_assembly_rebuilds_once_after_a_load_failure_and_reports_progress(monkeypatch, tmp_path):
    """build_tensorrt_model with fakes for everything GPU-bound: engine plan -> runner -> adapter in the sampler."""
    from cosydesk.model import load
    from cosydesk.runtime.backends.tensorrt import engines as engines_mod
    from cosydesk.runtime.backends.tensorrt import runner as runner_mod
    from cosydesk.runtime.backends.tensorrt import torch_bridge
    from cosydesk.runtime.backends.tensorrt.cache import EngineCache
    from tests.support.paths import fixture_dir

    monkeypatch.setattr(torch_bridge, "unavailable_reason", lambda: None)
    monkeypatch.setattr(flavour_mod, "usable_flavours", lambda cc=None: [FakeFlavour()])
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a, **k: None)
    monkeypatch.setattr(torch.cuda, "current_stream", lambda *a, **k: type("S", (), {"cuda_stream": 99})())
    builds, invalidated, loads = [], [], []

    def fake_ensure(req, cache, streaming=False, progress=None, stage=None, frames=None):
        stage("exporting flow_estimator (fp16) to ONNX")
        progress("Building engine", 1, 2)
        builds.append(streaming)
        path = tmp_path / f"plan{len(builds)}"
        path.write_bytes(b"plan")
        return path

    class FakeArea:
        allocated = False

        def allocate(self):
            FakeArea.allocated = True

    def fake_runner_class(plan, flavour, area, allocate_io=True, runtime_cache_path=None):
        loads.append((allocate_io, runtime_cache_path))
        if len(loads) == 1:
            raise runner_mod.EngineLoadError("corrupt")
        runner, _ = fake_runner(max_frames=3008)
        runner.save_runtime_cache = lambda: None
        return runner

    monkeypatch.setattr(engines_mod, "ensure_estimator_engine", fake_ensure)
    monkeypatch.setattr(EngineCache, "invalidate", lambda self, key: invalidated.append(key.module))
    monkeypatch.setattr(runner_mod, "EngineRunner", fake_runner_class)
    monkeypatch.setattr(runner_mod, "SharedActivationArea", FakeArea)

    model = load(fixture_dir("v1") / "model", device="cpu", dtype=torch.float32)  # v1: one (non-streaming) engine
    torch_estimator = model.flow.decoder.estimator
    reports = []
    fast = torch_bridge.build_tensorrt_model(model, progress=lambda *a: reports.append(a), engines_dir=tmp_path)

    assert builds == [False, False] and invalidated == ["flow_estimator"]  # failed load -> invalidate, rebuild once
    assert [io for io, _ in loads] == [False, False]  # I/O is bound to torch tensors, not runner buffers
    assert loads[-1][1] == tmp_path / "flow_estimator-fp16.rtcache"
    assert FakeArea.allocated
    adapter = fast.flow.decoder.estimator
    assert isinstance(adapter, TensorRTEstimator) and adapter.fallback is torch_estimator
    assert adapter.engine_calls == 1  # the warm-up call, enqueued on torch's current stream
    assert adapter.runners[False].contexts[0].calls[-1] == ("execute", 99)
    phases = [r[2] for r in reports]
    assert any("exporting" in p for p in phases) and any("building engine" in p for p in phases)
    assert any("warming up" in p for p in phases)


def test_default_engines_dir(monkeypatch, tmp_path):
    from cosydesk.runtime.backends.tensorrt.torch_bridge import ENGINES_DIR_ENV, default_engines_dir
    from tests.support.paths import REPO_ROOT

    monkeypatch.setenv(ENGINES_DIR_ENV, str(tmp_path / "e"))
    assert default_engines_dir() == tmp_path / "e"
    monkeypatch.delenv(ENGINES_DIR_ENV)
    assert default_engines_dir() == REPO_ROOT / "engines"  # running from this checkout: <repo>/engines
