"""cosydesk.telemetry.nvml is the one place NVML is opened; the sampler, doctor and bench go through it."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import cosydesk
from cosydesk import doctor
from cosydesk.telemetry import nvml
from tests.telemetry.fake_nvml import FakeNvml


class FakeDriverNvml(FakeNvml):
    """FakeNvml plus the system-wide queries the doctor makes."""

    def nvmlSystemGetDriverVersion(self):  # noqa: N802 - NVML's names
        return b"580.65.06"

    def nvmlSystemGetCudaDriverVersion(self):  # noqa: N802
        return 13000

    def nvmlDeviceGetCount(self):  # noqa: N802
        return 1

    def nvmlDeviceGetCudaComputeCapability(self, handle):  # noqa: N802
        return 9, 0


def test_no_other_module_imports_pynvml():
    package = Path(cosydesk.__file__).parent
    offenders = [str(p.relative_to(package)) for p in package.rglob("*.py")
                 if p != Path(nvml.__file__) and re.search(r"^\s*(import|from) pynvml", p.read_text("utf-8"), re.M)]
    assert offenders == []


def test_the_helpers_read_a_driver_whichever_way_its_binding_spells_names():
    fake = FakeDriverNvml()
    assert nvml.library(fake) is fake
    assert nvml.as_text(b"NVIDIA H200") == nvml.as_text("NVIDIA H200") == "NVIDIA H200"
    assert nvml.driver_version(fake) == "580.65.06" and nvml.driver_cuda_version(fake) == (13, 0)
    assert nvml.driver_cuda_version(FakeNvml()) is None  # an NVML too old to say
    fake.nvmlInit()
    nvml.shutdown(fake)
    assert not fake.initialised


def test_doctor_probes_the_gpu_through_it(monkeypatch):
    fake = FakeDriverNvml(total_mb=140 * 1024, name=b"NVIDIA H200")
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    probe = doctor._probe_nvml()
    assert probe.nvml_error is None and probe.driver_version == "580.65.06" and probe.driver_cuda == (13, 0)
    (gpu,) = probe.gpus
    assert gpu.name == "NVIDIA H200" and gpu.compute_capability == (9, 0) and not fake.initialised
    monkeypatch.setitem(sys.modules, "pynvml", FakeDriverNvml(present=False))
    assert "NVML unavailable" in doctor._probe_nvml().nvml_error
    monkeypatch.setitem(sys.modules, "pynvml", None)
    assert doctor._probe_nvml().nvml_error == "nvidia-ml-py is not installed"
