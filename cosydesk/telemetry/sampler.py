"""GPU / system sampling for the telemetry dock and `cosydesk doctor`.

What it is for: one SystemSample every few hundred milliseconds from NVML (VRAM, utilisation, temperature,
power, plus torch's allocated/reserved memory when torch.cuda is already initialised) or, without an NVIDIA
GPU, from psutil (CPU and RAM). The NVML module is a parameter so tests can pass a fake.

What it must not do: import Qt, or import/initialise torch (it only reads torch if the app already uses CUDA).
"""

from __future__ import annotations

import sys
import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import Any, Protocol

import psutil

from cosydesk.telemetry import nvml as nvml_library

MB = 1024 * 1024


@dataclass(frozen=True)
class SystemSample:
    time_s: float  # time.monotonic()
    source: str  # "nvml" or "cpu"
    device_name: str
    vram_used_mb: float | None = None
    vram_total_mb: float | None = None
    gpu_util_pct: float | None = None
    gpu_temp_c: float | None = None
    gpu_power_w: float | None = None
    torch_allocated_mb: float | None = None
    torch_reserved_mb: float | None = None
    cpu_pct: float | None = None
    ram_used_mb: float | None = None
    ram_total_mb: float | None = None


class Source(Protocol):
    kind: str
    device_name: str

    def read(self) -> dict[str, float | None]: ...

    def close(self) -> None: ...


class NvmlSource:
    """Reads one GPU through an NVML module (pynvml from nvidia-ml-py, or a fake with the same functions)."""

    kind = "nvml"

    def __init__(self, nvml: Any | None = None, index: int = 0) -> None:
        nvml = nvml_library.library(nvml)
        self._nvml = nvml
        nvml.nvmlInit()
        try:
            self._handle = nvml.nvmlDeviceGetHandleByIndex(index)
            name = nvml.nvmlDeviceGetName(self._handle)
        except Exception:
            nvml.nvmlShutdown()
            raise
        self.device_name = nvml_library.as_text(name)
        self.index = index

    def _try(self, read):
        try:
            return read()
        except Exception:  # noqa: BLE001 - some boards do not report power or temperature
            return None

    def read(self) -> dict[str, float | None]:
        nvml, handle = self._nvml, self._handle
        memory = self._try(lambda: nvml.nvmlDeviceGetMemoryInfo(handle))
        util = self._try(lambda: nvml.nvmlDeviceGetUtilizationRates(handle))
        temp = self._try(lambda: nvml.nvmlDeviceGetTemperature(handle, nvml.NVML_TEMPERATURE_GPU))
        power_mw = self._try(lambda: nvml.nvmlDeviceGetPowerUsage(handle))
        return {
            "vram_used_mb": memory.used / MB if memory is not None else None,
            "vram_total_mb": memory.total / MB if memory is not None else None,
            "gpu_util_pct": float(util.gpu) if util is not None else None,
            "gpu_temp_c": float(temp) if temp is not None else None,
            "gpu_power_w": power_mw / 1000.0 if power_mw is not None else None,
        }

    def close(self) -> None:
        nvml_library.shutdown(self._nvml)


class CpuSource:
    kind = "cpu"

    def __init__(self) -> None:
        import platform

        self.device_name = platform.processor() or platform.machine() or "CPU"
        psutil.cpu_percent(interval=None)  # primes the counter; the next call measures since now

    def read(self) -> dict[str, float | None]:
        memory = psutil.virtual_memory()
        return {"cpu_pct": psutil.cpu_percent(interval=None), "ram_used_mb": (memory.total - memory.available) / MB,
                "ram_total_mb": memory.total / MB}

    def close(self) -> None:
        pass


def open_source(nvml: Any | None = None, index: int = 0) -> tuple[Source, str]:
    """The best available source and a sentence for the UI ('' when a GPU is being read)."""
    try:
        return NvmlSource(nvml, index), ""
    except Exception as error:  # noqa: BLE001 - ImportError, NVMLError_LibraryNotFound, no device...
        reason = type(error).__name__
        return CpuSource(), f"No NVIDIA GPU found ({reason}): showing CPU and RAM instead"


def torch_cuda_memory_mb() -> tuple[float | None, float | None]:
    """(allocated, reserved) MB from torch if the app already initialised CUDA, else (None, None)."""
    torch = sys.modules.get("torch")
    if torch is None:
        return None, None
    try:
        if not torch.cuda.is_initialized():
            return None, None
        return torch.cuda.memory_allocated() / MB, torch.cuda.memory_reserved() / MB
    except Exception:  # noqa: BLE001
        return None, None


class TelemetrySampler:
    """Samples `source` on a daemon thread every `interval_s` and keeps `history_s` of samples."""

    def __init__(self, source: Source | None = None, interval_s: float = 0.25, history_s: float = 60.0,
                 note: str = "") -> None:
        if source is None:
            source, note = open_source()
        self.source = source
        self.note = note
        self.interval_s = interval_s
        self._history: deque[SystemSample] = deque(maxlen=max(2, int(history_s / interval_s) + 2))
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._wake = threading.Event()  # set_interval() cuts the current wait short
        self._thread: threading.Thread | None = None
        self._process = psutil.Process()

    @property
    def kind(self) -> str:
        return self.source.kind

    def sample_once(self) -> SystemSample:
        values = self.source.read()
        allocated, reserved = torch_cuda_memory_mb()
        sample = SystemSample(time_s=time.monotonic(), source=self.source.kind, device_name=self.source.device_name,
                              torch_allocated_mb=allocated, torch_reserved_mb=reserved, **values)
        with self._lock:
            self._history.append(sample)
        return sample

    def set_interval(self, seconds: float) -> None:
        """Sample every `seconds` from now on (the telemetry dock slows down while nothing happens)."""
        seconds = max(0.05, float(seconds))
        if seconds != self.interval_s:
            self.interval_s = seconds
            self._wake.set()

    def latest(self) -> SystemSample | None:
        with self._lock:
            return self._history[-1] if self._history else None

    def history(self, seconds: float | None = None) -> list[SystemSample]:
        with self._lock:
            samples = list(self._history)
        if seconds is not None and samples:
            cutoff = samples[-1].time_s - seconds
            samples = [s for s in samples if s.time_s >= cutoff]
        return samples

    def start(self) -> None:
        if self._thread is not None:
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="cosydesk-telemetry", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.join(timeout=2.0)
        self.source.close()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.sample_once()
            except Exception:  # noqa: BLE001 - a flaky driver read must not kill the sampler
                pass
            self._wake.wait(self.interval_s)
            self._wake.clear()
