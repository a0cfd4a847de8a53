"""A fake NVML module with the functions NvmlSource calls; values are scripted by the test."""

from __future__ import annotations

from types import SimpleNamespace


class NVMLError(Exception):
    pass


class FakeNvml:
    NVML_TEMPERATURE_GPU = 0
    NVMLError = NVMLError

    def __init__(self, total_mb=24576, name=b"NVIDIA GeForce RTX 4090", power_supported=True, present=True):
        self.total = total_mb * 1024 * 1024
        self.used = 0
        self.util = 0
        self.temp = 40
        self.power_mw = 30000
        self.name = name
        self.power_supported = power_supported
        self.present = present
        self.initialised = False

    def nvmlInit(self):  # noqa: N802 - NVML's names
        if not self.present:
            raise NVMLError("NVML Shared Library Not Found")
        self.initialised = True

    def nvmlShutdown(self):  # noqa: N802
        self.initialised = False

    def nvmlDeviceGetHandleByIndex(self, index):  # noqa: N802
        return SimpleNamespace(index=index)

    def nvmlDeviceGetName(self, handle):  # noqa: N802
        return self.name

    def nvmlDeviceGetMemoryInfo(self, handle):  # noqa: N802
        return SimpleNamespace(total=self.total, used=self.used, free=self.total - self.used)

    def nvmlDeviceGetUtilizationRates(self, handle):  # noqa: N802
        return SimpleNamespace(gpu=self.util, memory=0)

    def nvmlDeviceGetTemperature(self, handle, sensor):  # noqa: N802
        return self.temp

    def nvmlDeviceGetPowerUsage(self, handle):  # noqa: N802
        if not self.power_supported:
            raise NVMLError("Not Supported")
        return self.power_mw
