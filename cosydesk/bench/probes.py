"""Memory probes (torch reserved, NVML process memory) and the stage-timing proxies of the fidelity pass."""

from __future__ import annotations

import os
import time

# --------------------------------------------------------------------------------------------------------
# memory probes
# --------------------------------------------------------------------------------------------------------
class MemoryProbe:
    """torch reserved bytes and NVML process memory (device-wide used memory when per-process is unavailable)."""

    def __init__(self, device) -> None:
        import torch

        self.cuda = device.type == "cuda" and torch.cuda.is_available()
        self.handle = None
        self.nvml_source = None
        if self.cuda:
            try:
                from cosydesk.telemetry import nvml

                lib = nvml.library()
                lib.nvmlInit()
                index = device.index if device.index is not None else torch.cuda.current_device()
                self.handle = lib.nvmlDeviceGetHandleByIndex(index)
                self.pynvml = lib
            except Exception:  # noqa: BLE001 - NVML is optional telemetry
                self.handle = None

    def reserved_gb(self) -> float:
        import torch

        return torch.cuda.memory_reserved() / 1e9 if self.cuda else 0.0

    def nvml_gb(self) -> float | None:
        if self.handle is None:
            return None
        nv = self.pynvml
        try:
            for proc in nv.nvmlDeviceGetComputeRunningProcesses(self.handle):
                if proc.pid == os.getpid() and proc.usedGpuMemory:
                    self.nvml_source = "process"
                    return proc.usedGpuMemory / 1e9
        except Exception:  # noqa: BLE001
            pass
        self.nvml_source = "device_used"  # pid namespaces can hide our pid: whole-device use is an upper bound
        return nv.nvmlDeviceGetMemoryInfo(self.handle).used / 1e9


# --------------------------------------------------------------------------------------------------------
# stage timing / recording proxies (fidelity pass only: they synchronise)
# --------------------------------------------------------------------------------------------------------
class _Recorder:
    """Times the wrapped part's calls (synchronised around each); explicit methods only, no attribute forwarding."""

    def __init__(self, inner, sync, log: dict, name: str):
        self._inner, self._sync, self._log, self._name = inner, sync, log, name

    def _timed(self, method: str, *args, **kwargs):
        self._sync()
        t0 = time.perf_counter()
        out = getattr(self._inner, method)(*args, **kwargs)
        self._sync()
        self._log.setdefault(f"{self._name}_ms", []).append(1e3 * (time.perf_counter() - t0))
        return out


class FlowRecorder(_Recorder):
    """A ``protocols.Flow`` that records each call's time and mel; incremental where the wrapped flow is."""

    @property
    def decoder(self):
        return self._inner.decoder

    def stream_state(self):
        from cosydesk.runtime.backends.protocols import IncrementalFlow

        return self._inner.stream_state() if isinstance(self._inner, IncrementalFlow) else None

    def _keep(self, mel):
        self._log.setdefault("mels", []).append(mel.detach().float().cpu())

    def inference(self, *args, **kwargs):
        mel = self._timed("inference", *args, **kwargs)
        self._keep(mel)
        return mel

    def inference_with_cache(self, *args, **kwargs):
        mel, cache = self._timed("inference_with_cache", *args, **kwargs)
        self._keep(mel)
        return mel, cache


class HiftRecorder(_Recorder):
    """A ``protocols.Vocoder`` (v1/v2) that records each call's time."""

    def inference_with_source(self, *args, **kwargs):
        return self._timed("inference_with_source", *args, **kwargs)

    def inference(self, *args, **kwargs):
        return self._timed("inference", *args, **kwargs)
