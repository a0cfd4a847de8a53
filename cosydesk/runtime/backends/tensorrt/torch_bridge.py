"""The TensorRT backend inside the torch runtime: flow estimator engines behind the sampler's estimator call.

`build_tensorrt_model(model, progress, engines_dir)` takes a float16 CUDA model (``backends.cast_model``) and returns
it with ``flow.decoder.estimator`` replaced by `TensorRTEstimator`: the sampler keeps calling
``estimator(x, mask, mu, t, spks, cond, streaming=...)`` on [2, 80, T] CUDA tensors, and the adapter binds those
tensors' device pointers to an engine (``set_tensor_address``), sets the input shapes and enqueues on torch's
current stream - no copies through host memory, no second stream to synchronise with. v2/v3 build one engine
per streaming mode (chunked attention is frozen into the export); v1's flow never streams, so one engine.
The LLM runs as in the cudagraph backend (`StaticQwenLM` for v2/v3, `StaticTransformerLM` for v1), composed in by
``backends.accelerate`` (this module imports nothing of the cudagraph backend); HiFT as in eager-fp16.

Lengths outside the engine profile (or a batch other than the CFG pair) fall back to the torch estimator,
which the adapter keeps (float16), so a very short or very long utterance still synthesises.

Never executed on a GPU so far: only the binding logic is tested on the CPU against fake contexts
(tests/runtime/backends/tensorrt/test_tensorrt_backend.py); the end-to-end test is marked `gpu`.

What this module must not do: build or cache engines itself (engines.py / cache.py), or pick the backend.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from cosydesk.paths import engines_dir as default_engines_dir  # noqa: F401 - the folders live in cosydesk.paths

log = logging.getLogger(__name__)

ENGINE_INPUTS = ("x", "mask", "mu", "t", "spks", "cond")  # = onnx_export.ESTIMATOR_INPUTS (kept import-light)
ENGINE_OUTPUT = "estimator_out"
ENGINES_DIR_ENV = "COSYDESK_ENGINES_DIR"
INSTALL_RTX = 'pip install "cosydesk[tensorrt-rtx]"  (or from a checkout: pip install -e ".[tensorrt-rtx]")'
INSTALL_TRT = 'pip install "cosydesk[tensorrt]" "tensorrt-cu13>=10.13"'
Progress = Callable[..., None] | None


class _StreamHandle:
    """What EngineRunner.enqueue needs from a stream: the raw handle (here: torch's current stream)."""

    def __init__(self, handle: int):
        self.handle = int(handle)


def torch_dtype(np_dtype: np.dtype) -> torch.dtype:
    return torch.from_numpy(np.empty(0, dtype=np_dtype)).dtype


class TensorRTEstimator(nn.Module):
    """Drop-in for the flow estimator: one engine runner per streaming mode, torch tensors bound zero-copy.

    ``runners`` maps the streaming flag to an EngineRunner (or anything with its ``slots`` / ``bind`` /
    ``enqueue``). Engine inputs are bound to contiguous copies in the engine's dtype (float32 for our
    exports) and the output to a preallocated buffer sized for the profile's largest length, of which the
    first 2*80*T elements are the [2, 80, T] result (TensorRT writes outputs densely).
    """

    def __init__(self, runners: Mapping[bool, Any], fallback: nn.Module | None, min_frames: int,
                 device: torch.device | str, stream_handle: Callable[[], int] | None = None):
        super().__init__()
        self.runners = dict(runners)
        self.fallback = fallback
        self.min_frames = int(min_frames)
        self._stream_handle = stream_handle or (lambda: torch.cuda.current_stream().cuda_stream)
        self.outputs: dict[bool, torch.Tensor] = {}
        for mode, runner in self.runners.items():
            slot = runner.slots[ENGINE_OUTPUT]
            self.outputs[mode] = torch.empty(int(np.prod(slot.max_shape)), dtype=torch_dtype(slot.dtype),
                                             device=device)
        self.engine_calls = 0
        self.fallback_calls = 0

    def max_frames(self, streaming: bool) -> int:
        return int(self.runners[bool(streaming)].slots["x"].max_shape[-1])

    def _fits(self, x: torch.Tensor, streaming: bool) -> bool:
        runner = self.runners.get(bool(streaming))
        if runner is None:
            return False
        batch = runner.slots["x"].max_shape[0]
        return x.shape[0] == batch and self.min_frames <= x.shape[-1] <= self.max_frames(streaming)

    def forward(self, x, mask, mu, t, spks, cond, streaming: bool = False):  # noqa: ANN001 - estimator signature
        streaming = bool(streaming)
        if not self._fits(x, streaming):
            if self.fallback is None:
                raise ValueError(f"estimator input {tuple(x.shape)} is outside the engine profile and no torch "
                                 "fallback is kept")
            self.fallback_calls += 1
            return self.fallback(x, mask, mu, t, spks, cond, streaming=streaming)
        runner = self.runners[streaming]
        # The casts/contiguous copies are torch temporaries freed when this returns: safe, because the caching
        # allocator only hands their memory to later work on the same stream, which runs after the engine.
        bound = {}
        for name, tensor in zip(ENGINE_INPUTS, (x, mask, mu, t, spks, cond)):
            value = tensor.to(dtype=torch_dtype(runner.slots[name].dtype)).contiguous()
            runner.bind(name, value.data_ptr())
            bound[name] = value
        out_shape = tuple(runner.slots[ENGINE_OUTPUT].max_shape[:-1]) + (x.shape[-1],)
        out = self.outputs[streaming][: int(np.prod(out_shape))].view(out_shape)
        runner.bind(ENGINE_OUTPUT, out.data_ptr())
        runner.enqueue({name: tuple(value.shape) for name, value in bound.items()},
                       _StreamHandle(self._stream_handle()))
        self.engine_calls += 1
        # A copy: the buffer is overwritten by the next call, the sampler's result must not be.
        return out.to(dtype=x.dtype, copy=True)


# ----------------------------------------------------------------------------------------------------------------
# Assembly
# ----------------------------------------------------------------------------------------------------------------


def unavailable_reason() -> str | None:
    """None when a TensorRT flavour is installed and supports this GPU, else what to install (doctor's fix lines)."""
    from cosydesk.runtime.backends.tensorrt.flavour import current_compute_capability, supported_flavours, usable_flavours

    cc = current_compute_capability()
    if cc is None:
        return ("the tensorrt backend needs an NVIDIA GPU visible to cuda-python; none was found "
                "(install the CUDA bindings with `pip install cuda-python`, run `cosydesk doctor`)")
    if usable_flavours(cc):
        return None
    could = supported_flavours(cc)
    if not could:
        return f"no TensorRT flavour supports this GPU (compute capability {cc[0]}.{cc[1]}); use --backend cudagraph"
    fixes = [INSTALL_RTX if name == "tensorrt_rtx" else INSTALL_TRT for name in could]
    return (f"TensorRT is not installed for this GPU (compute capability {cc[0]}.{cc[1]}): install "
            + " or ".join(f"`{fix}`" for fix in fixes) + "; `cosydesk doctor` checks the result")


def _report(progress: Progress, done: int, total: int, what: str) -> None:
    if progress is not None:
        progress(done, total, what)


def _load_runner(req, cache, streaming: bool, area, progress: Progress, runtime_cache: Path):
    """Build-or-load the estimator engine and deserialise it; a plan that fails to load is rebuilt once."""
    from cosydesk.runtime.backends.tensorrt.engines import ensure_estimator_engine, estimator_key
    from cosydesk.runtime.backends.tensorrt.runner import EngineRunner

    def stage(text: str) -> None:
        _report(progress, 0, 1, text)

    def build_progress(phase: str, step: int, total: int) -> None:
        _report(progress, step, total, f"building engine: {phase}")

    for attempt in (1, 2):
        path = ensure_estimator_engine(req, cache, streaming, progress=build_progress, stage=stage)
        try:
            return EngineRunner(path.read_bytes(), req.flavour, area, allocate_io=False,
                                runtime_cache_path=runtime_cache)
        except Exception as error:  # noqa: BLE001 - EngineLoadError, OSError, a TensorRT exception ...
            if attempt == 2:
                raise RuntimeError(f"the rebuilt TensorRT engine {path} still fails to load: {error}") from error
            log.warning("engine %s failed to load (%s); invalidating and rebuilding once", path, error)
            cache.invalidate(estimator_key(req, streaming))
    raise AssertionError("unreachable")


def build_tensorrt_model(model, progress: Progress = None, engines_dir: str | Path | None = None,
                         precision: str = "fp16"):
    """``model``: float16 on CUDA (see backends.cast_model). Returns the dataclass copy with its flow estimator run
    by TensorRT engines; the LLM is left as it is (``backends.accelerate`` gives it the cudagraph backend's)."""
    reason = unavailable_reason()
    if reason is not None:
        raise ValueError(reason)
    try:
        from cosydesk.runtime.buckets import FLOW_FRAME_BUCKETS
        from cosydesk.runtime.backends.tensorrt.cache import EngineCache
        from cosydesk.runtime.backends.tensorrt.engines import EngineRequest
        from cosydesk.runtime.backends.tensorrt.flavour import current_compute_capability, usable_flavours
        from cosydesk.runtime.backends.tensorrt.runner import SharedActivationArea
    except ImportError as error:
        raise ValueError(f"the tensorrt backend is missing a package ({error}): {INSTALL_RTX} or {INSTALL_TRT}") \
            from error

    flavour = usable_flavours(current_compute_capability())[0]
    root = Path(engines_dir).expanduser() if engines_dir is not None else default_engines_dir()
    cache = EngineCache(root, validate=lambda plan: flavour.malformed(plan) is not True)
    req = EngineRequest(Path(model.model_dir), flavour, precision)
    area = SharedActivationArea()  # both modes run on the flow's stream, never at once: one activation area
    modes = (False,) if model.version == "v1" else (False, True)
    runners = {}
    for streaming in modes:
        suffix = "-streaming" if streaming else ""
        runners[streaming] = _load_runner(req, cache, streaming, area, progress,
                                          root / f"flow_estimator{suffix}-{precision}.rtcache")
    area.allocate()

    sampler = model.flow.decoder
    adapter = TensorRTEstimator(runners, sampler.estimator, FLOW_FRAME_BUCKETS.smallest, model.device)
    adapter.area = area  # keep the shared activation memory alive as long as the adapter
    _warm_up(adapter, model, modes, FLOW_FRAME_BUCKETS.profile()[1], progress)
    for runner in runners.values():
        runner.save_runtime_cache()
    sampler.estimator = adapter
    torch.cuda.synchronize()
    return dataclasses.replace(model)


def _warm_up(adapter: TensorRTEstimator, model, modes, frames: int, progress: Progress) -> None:
    """One engine call per mode at load, so first-use kernel loading / JIT does not land in the first chunk."""
    _report(progress, 0, len(modes), "warming up TensorRT engines")
    kw = {"device": model.device, "dtype": model.dtype}
    x = torch.zeros(2, 80, frames, **kw)
    mask = torch.ones(2, 1, frames, **kw)
    t = torch.full((2,), 0.5, **kw)
    spks = torch.zeros(2, 80, **kw)
    for done, streaming in enumerate(modes, 1):
        adapter(x, mask, x, t, spks, x, streaming=streaming)
        _report(progress, done, len(modes), "warming up TensorRT engines")
    torch.cuda.synchronize()
