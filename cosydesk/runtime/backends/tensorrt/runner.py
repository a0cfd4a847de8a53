"""Run TensorRT engines with one shared activation area and pre-bound I/O buffers.

Why it looks like this (upstream's troubles, see issue 5):

* Each execution context normally owns device memory for its activations (the CosyVoice2 estimator costs
  +4.5 GB per context). Here contexts are created with the USER_MANAGED allocation strategy and all get the
  same `SharedActivationArea`: one cudaMalloc sized to the largest requirement among them. N contexts cost
  one area - valid because they are enqueued on one stream (the pipeline's vocoder stream), so never run at
  the same time. Contexts that may run concurrently need separate areas.
* Inputs/outputs live in device buffers allocated once for the profile's largest shapes
  (`set_tensor_address` once, `set_input_shape` per call), or in caller-provided buffers (`bind`).
* CUDA runtime calls (allocations, streams, events, memory info) go through cuda-python
  (`cuda.bindings.runtime`), so this path does not depend on torch's caching allocator.

This module cannot be exercised on a machine without a supported GPU: TensorRT for RTX builds engines on a
CPU but refuses to deserialize/run them there (and on compute capability 9.0). Its tests are marked `gpu`.

What this module must not do: build engines (builder.py), decide caching (cache.py), or import torch.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from cosydesk.runtime.backends.tensorrt.flavour import Flavour

log = logging.getLogger(__name__)

ALIGNMENT = 256  # TensorRT requires 256-byte aligned device memory for contexts


class CudaError(RuntimeError):
    pass


def _cudart():
    from cuda.bindings import runtime as cudart  # optional extra: cuda-python

    return cudart


def _check(result: Any, what: str) -> Any:
    """cuda-python returns (err, *values); raise on error, return the value(s)."""
    if isinstance(result, tuple):
        err, values = result[0], result[1:]
    else:
        err, values = result, ()
    if int(err) != 0:
        cudart = _cudart()
        _, name = cudart.cudaGetErrorName(err)
        raise CudaError(f"{what} failed: {name.decode() if isinstance(name, bytes) else name} ({int(err)})")
    if not values:
        return None
    return values[0] if len(values) == 1 else values


# ----------------------------------------------------------------------------------------------------------------
# Thin CUDA runtime helpers (cuda-python)
# ----------------------------------------------------------------------------------------------------------------


def mem_get_info() -> tuple[int, int]:
    """(free, total) bytes of the current device."""
    free, total = _check(_cudart().cudaMemGetInfo(), "cudaMemGetInfo")
    return int(free), int(total)


class DeviceBuffer:
    """One cudaMalloc'd block; freed explicitly or when garbage collected."""

    def __init__(self, nbytes: int):
        self.nbytes = max(int(nbytes), 1)
        self.ptr = int(_check(_cudart().cudaMalloc(self.nbytes), f"cudaMalloc({self.nbytes})"))

    def free(self) -> None:
        if self.ptr:
            _check(_cudart().cudaFree(self.ptr), "cudaFree")
            self.ptr = 0

    def __del__(self) -> None:  # best effort at interpreter shutdown
        try:
            self.free()
        except Exception:  # noqa: BLE001
            pass


class CudaStream:
    """A non-blocking CUDA stream (or a wrapper around an existing handle, e.g. torch's stream.cuda_stream)."""

    def __init__(self, handle: int | None = None):
        cudart = _cudart()
        self._owned = handle is None
        if handle is None:
            stream = _check(cudart.cudaStreamCreateWithFlags(cudart.cudaStreamNonBlocking), "cudaStreamCreate")
            self.handle = int(stream)
        else:
            self.handle = int(handle)

    def synchronize(self) -> None:
        _check(_cudart().cudaStreamSynchronize(self.handle), "cudaStreamSynchronize")

    def record_event(self) -> "CudaEvent":
        event = CudaEvent()
        _check(_cudart().cudaEventRecord(event.handle, self.handle), "cudaEventRecord")
        return event

    def destroy(self) -> None:
        if self._owned and self.handle:
            _check(_cudart().cudaStreamDestroy(self.handle), "cudaStreamDestroy")
            self.handle = 0


class CudaEvent:
    def __init__(self) -> None:
        cudart = _cudart()
        self.handle = int(_check(cudart.cudaEventCreateWithFlags(cudart.cudaEventDisableTiming), "cudaEventCreate"))

    def synchronize(self) -> None:
        _check(_cudart().cudaEventSynchronize(self.handle), "cudaEventSynchronize")

    def destroy(self) -> None:
        if self.handle:
            _check(_cudart().cudaEventDestroy(self.handle), "cudaEventDestroy")
            self.handle = 0


def copy_host_to_device(dst_ptr: int, array: np.ndarray, stream: CudaStream) -> None:
    """Async copy of a C-contiguous host array (keep it alive until the stream passes this point)."""
    cudart = _cudart()
    array = np.ascontiguousarray(array)
    _check(cudart.cudaMemcpyAsync(dst_ptr, array.ctypes.data, array.nbytes,
                                  cudart.cudaMemcpyKind.cudaMemcpyHostToDevice, stream.handle), "cudaMemcpyAsync H2D")


def copy_device_to_host(array: np.ndarray, src_ptr: int, stream: CudaStream) -> None:
    cudart = _cudart()
    _check(cudart.cudaMemcpyAsync(array.ctypes.data, src_ptr, array.nbytes,
                                  cudart.cudaMemcpyKind.cudaMemcpyDeviceToHost, stream.handle), "cudaMemcpyAsync D2H")


# ----------------------------------------------------------------------------------------------------------------
# Shared activation memory
# ----------------------------------------------------------------------------------------------------------------


class SharedActivationArea:
    """One device allocation that every attached execution context uses as its activation memory.

    Contexts are attached first (`attach`), then `allocate()` makes one cudaMalloc of the largest
    requirement and hands it to all of them. Attaching later grows the area if needed (reallocate + rebind).
    Only contexts enqueued on the same stream may share it.
    """

    def __init__(self) -> None:
        self.contexts: list[tuple[Any, int]] = []  # (context, bytes needed)
        self.buffer: DeviceBuffer | None = None

    @property
    def required_bytes(self) -> int:
        need = max((n for _, n in self.contexts), default=0)
        return (need + ALIGNMENT - 1) // ALIGNMENT * ALIGNMENT

    def attach(self, context: Any, needed_bytes: int) -> None:
        self.contexts.append((context, int(needed_bytes)))
        if self.buffer is not None:
            if self.required_bytes > self.buffer.nbytes:
                self.allocate()
            else:
                _set_device_memory(context, self.buffer.ptr, self.buffer.nbytes)

    def allocate(self) -> None:
        size = self.required_bytes
        if self.buffer is not None:
            self.buffer.free()
        self.buffer = DeviceBuffer(size)
        for context, _ in self.contexts:
            _set_device_memory(context, self.buffer.ptr, self.buffer.nbytes)
        log.info("shared activation area: %.1f MiB for %d context(s)", size / 2**20, len(self.contexts))

    def free(self) -> None:
        if self.buffer is not None:
            self.buffer.free()
            self.buffer = None


def _set_device_memory(context: Any, ptr: int, size: int) -> None:
    if hasattr(context, "set_device_memory"):  # TensorRT >= 10.1 and TensorRT for RTX (setDeviceMemoryV2)
        context.set_device_memory(ptr, size)
    else:  # TensorRT 10.0: property, size taken from the engine
        context.device_memory = ptr


def _engine_device_memory(engine: Any) -> int:
    if hasattr(engine, "device_memory_size_v2"):
        return int(engine.device_memory_size_v2)
    return int(engine.device_memory_size)


# ----------------------------------------------------------------------------------------------------------------
# Engine runner
# ----------------------------------------------------------------------------------------------------------------


@dataclass
class TensorSlot:
    name: str
    is_input: bool
    dtype: np.dtype
    max_shape: tuple[int, ...]
    buffer: DeviceBuffer | None
    address: int

    @property
    def max_bytes(self) -> int:
        return int(np.prod(self.max_shape)) * self.dtype.itemsize


class EngineLoadError(RuntimeError):
    """The plan could not be deserialized (corrupt, foreign, or this GPU is not supported)."""


MAX_RUNTIME_CACHE_BYTES = 1024 * 1024 * 1024  # JIT kernels of all shapes: tens of MB; larger is not read


def load_runtime_cache(config: Any, path: Path | None) -> Any:
    """A runtime cache from ``config`` filled from ``path`` when that holds a usable one, else a fresh one.
    Garbage (unreadable, oversized, or bytes TensorRT rejects by returning False or raising) is a cache miss: it
    must not make the engine look broken (that would rebuild the engine, and fail again on the same file)."""
    cache = config.create_runtime_cache()
    if path is None:
        return cache
    try:
        if not path.is_file() or path.stat().st_size > MAX_RUNTIME_CACHE_BYTES:
            return cache
        if cache.deserialize(path.read_bytes()):
            return cache
        log.info("runtime cache %s not usable here; starting fresh", path)
    except Exception as error:  # noqa: BLE001 - OSError, or TensorRT's own exception type for bad bytes
        log.info("runtime cache %s is unreadable (%s); starting fresh", path, error)
    return config.create_runtime_cache()  # a failed deserialize may have left the first one half-filled


class EngineRunner:
    """A deserialized engine with `n_contexts` contexts sharing one activation area, I/O bound to buffers.

    Typical use: ``runner = EngineRunner(plan, flavour, area)``; ``area.allocate()`` once all runners exist;
    then per call ``runner.run({"x": x, ...}, stream)`` (host arrays, copies included) or, on the hot path,
    write into ``runner.address(name)`` yourself and call ``runner.enqueue(shapes, stream)``.
    """

    def __init__(self, plan: bytes, flavour: Flavour, area: SharedActivationArea, n_contexts: int = 1,
                 runtime_cache_path: str | Path | None = None, allocate_io: bool = True):
        trt = flavour.module
        self.flavour = flavour
        self.logger = flavour.logger("WARNING")
        self.runtime = trt.Runtime(self.logger)
        self.engine = self.runtime.deserialize_cuda_engine(plan)
        if self.engine is None:
            raise EngineLoadError(f"{flavour.tag} could not deserialize the engine (corrupt, foreign or unsupported GPU)")
        self.runtime_cache_path = Path(runtime_cache_path) if runtime_cache_path else None
        self._runtime_cache = None
        self.contexts = [self._create_context() for _ in range(n_contexts)]
        need = _engine_device_memory(self.engine)
        for context in self.contexts:
            area.attach(context, need)
        self.area = area
        self.slots = self._make_slots(allocate_io)

    # --- creation ---------------------------------------------------------------------------------------------

    def _create_context(self) -> Any:
        trt = self.flavour.module
        strategy = trt.ExecutionContextAllocationStrategy.USER_MANAGED
        if self.flavour.has_runtime_cache():
            config = self.engine.create_runtime_config()
            config.set_execution_context_allocation_strategy(strategy)
            if self._runtime_cache is None:
                self._runtime_cache = load_runtime_cache(config, self.runtime_cache_path)
            config.set_runtime_cache(self._runtime_cache)
            context = self.engine.create_execution_context(config)
        else:
            context = self.engine.create_execution_context(strategy)
        if context is None:
            raise EngineLoadError("create_execution_context returned None")
        return context

    def _make_slots(self, allocate_io: bool) -> dict[str, TensorSlot]:
        trt = self.flavour.module
        slots = {}
        for index in range(self.engine.num_io_tensors):
            name = self.engine.get_tensor_name(index)
            is_input = self.engine.get_tensor_mode(name) == trt.TensorIOMode.INPUT
            dtype = np.dtype(trt.nptype(self.engine.get_tensor_dtype(name)))
            if is_input:
                max_shape = tuple(self.engine.get_tensor_profile_shape(name, 0)[2])
            else:
                max_shape = self._max_output_shape(name)
            slot = TensorSlot(name, is_input, dtype, max_shape, None, 0)
            if allocate_io:
                slot.buffer = DeviceBuffer(slot.max_bytes)
                slot.address = slot.buffer.ptr
            slots[name] = slot
        if allocate_io:
            for slot in slots.values():
                for context in self.contexts:
                    context.set_tensor_address(slot.name, slot.address)
        return slots

    def _max_output_shape(self, name: str) -> tuple[int, ...]:
        """Output shape at the profile's max input shapes (asked from a context, no GPU work)."""
        context = self.contexts[0]
        trt = self.flavour.module
        for index in range(self.engine.num_io_tensors):
            other = self.engine.get_tensor_name(index)
            if self.engine.get_tensor_mode(other) == trt.TensorIOMode.INPUT:
                context.set_input_shape(other, tuple(self.engine.get_tensor_profile_shape(other, 0)[2]))
        return tuple(context.get_tensor_shape(name))

    # --- binding and running ----------------------------------------------------------------------------------

    def address(self, name: str) -> int:
        return self.slots[name].address

    def bind(self, name: str, ptr: int) -> None:
        """Use a caller's device buffer (e.g. from the shared pool) for tensor `name` in every context."""
        self.slots[name].address = int(ptr)
        for context in self.contexts:
            context.set_tensor_address(name, int(ptr))

    def enqueue(self, shapes: Mapping[str, Sequence[int]], stream: CudaStream, context_index: int = 0) -> None:
        """Set input shapes and enqueue on `stream` (data must already be at the bound addresses)."""
        context = self.contexts[context_index]
        for name, shape in shapes.items():
            if not context.set_input_shape(name, tuple(int(s) for s in shape)):
                raise ValueError(f"shape {tuple(shape)} for {name!r} is outside the engine profile")
        if not context.execute_async_v3(stream.handle):
            raise RuntimeError("execute_async_v3 failed (see TensorRT log)")

    def output_shape(self, name: str, context_index: int = 0) -> tuple[int, ...]:
        return tuple(self.contexts[context_index].get_tensor_shape(name))

    def run(self, inputs: Mapping[str, np.ndarray], stream: CudaStream, context_index: int = 0) -> dict[str, np.ndarray]:
        """Convenience path for tests/warm-up: copy host inputs in, run, copy outputs out, synchronize."""
        held = []
        for name, array in inputs.items():
            slot = self.slots[name]
            array = np.ascontiguousarray(array, dtype=slot.dtype)
            if array.nbytes > slot.max_bytes:
                raise ValueError(f"{name}: {array.shape} exceeds the engine's max shape {slot.max_shape}")
            copy_host_to_device(slot.address, array, stream)
            held.append(array)
        self.enqueue({n: a.shape for n, a in inputs.items()}, stream, context_index)
        outputs = {}
        for slot in self.slots.values():
            if not slot.is_input:
                host = np.empty(self.output_shape(slot.name, context_index), dtype=slot.dtype)
                copy_device_to_host(host, slot.address, stream)
                outputs[slot.name] = host
        stream.synchronize()
        return outputs

    def warm_up(self, shapes: Mapping[str, Sequence[int]], stream: CudaStream) -> None:
        """Run each context once at the given shapes (first-run JIT/kernel loading happens here, not in a chunk)."""
        for index in range(len(self.contexts)):
            self.enqueue(shapes, stream, index)
        stream.synchronize()

    def save_runtime_cache(self) -> None:
        """Persist TensorRT-for-RTX JIT kernels so the next start skips compilation (atomic write)."""
        if self._runtime_cache is None or self.runtime_cache_path is None:
            return
        import os
        import tempfile

        data = bytes(memoryview(self._runtime_cache.serialize()))
        try:
            self.runtime_cache_path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".rtcache.", dir=self.runtime_cache_path.parent)
            try:
                with os.fdopen(fd, "wb") as handle:
                    handle.write(data)
                os.replace(tmp, self.runtime_cache_path)
            finally:
                if os.path.exists(tmp):
                    os.unlink(tmp)
        except OSError as error:  # a cache that cannot be saved costs the next start its JIT time, nothing more
            log.warning("could not save the runtime cache %s (%s)", self.runtime_cache_path, error)

    def close(self) -> None:
        for slot in self.slots.values():
            if slot.buffer is not None:
                slot.buffer.free()
        self.contexts.clear()
        self.engine = None
