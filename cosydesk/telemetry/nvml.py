"""The one place CosyDesk reaches NVML (nvidia-ml-py's ``pynvml``): the telemetry sampler, ``cosydesk doctor``
and ``cosydesk bench`` all open it through here.

    lib = nvml.library()              # ImportError when nvidia-ml-py is not installed
    lib.nvmlInit()                    # its errors reach the caller: no driver, no GPU, no libnvidia-ml
    print(nvml.driver_version(lib))
    nvml.shutdown(lib)                # a failing shutdown is ignored

``library(fake)`` returns the fake unchanged, so tests hand in an object with the same functions. NVML reports
names as bytes on older bindings and str on newer ones; ``as_text`` gives str either way.

What it must not do: import torch or Qt (the doctor runs it on machines without either working).
"""

from __future__ import annotations

from typing import Any


def library(nvml: Any | None = None) -> Any:
    """``nvml`` when given (a fake), else the pynvml module; ImportError when nvidia-ml-py is missing."""
    if nvml is not None:
        return nvml
    import pynvml  # nvidia-ml-py

    return pynvml


def shutdown(lib: Any) -> None:
    """nvmlShutdown, ignoring its errors (a driver that went away cannot be shut down either)."""
    try:
        lib.nvmlShutdown()
    except Exception:  # noqa: BLE001
        pass


def as_text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def driver_version(lib: Any) -> str:
    """The driver's version string, e.g. '580.65.06' (NVML initialised)."""
    return as_text(lib.nvmlSystemGetDriverVersion())


def driver_cuda_version(lib: Any) -> tuple[int, int] | None:
    """The highest CUDA version the driver supports, e.g. (13, 0); None where NVML is too old to say."""
    try:
        cuda = int(lib.nvmlSystemGetCudaDriverVersion())
    except Exception:  # noqa: BLE001 - older NVML
        return None
    return cuda // 1000, (cuda % 1000) // 10
