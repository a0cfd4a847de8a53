"""Real NVML on a real GPU (skipped where there is none): VRAM follows a torch allocation."""

from __future__ import annotations

import json
import os

import pytest

from cosydesk.telemetry.sampler import NvmlSource, TelemetrySampler, open_source

pytestmark = pytest.mark.gpu


def test_real_nvml_sees_a_torch_allocation():
    source, note = open_source()
    if not isinstance(source, NvmlSource):
        pytest.skip(note)
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch sees no CUDA GPU")
    sampler = TelemetrySampler(source)
    torch.cuda.init()
    torch.zeros(1, device="cuda")
    before = sampler.sample_once()
    block = torch.empty(1024 * 1024 * 1024, dtype=torch.uint8, device="cuda")  # 1 GiB
    torch.cuda.synchronize()
    after = sampler.sample_once()
    report = {"device": after.device_name, "vram_used_mb_before": before.vram_used_mb,
              "vram_used_mb_after": after.vram_used_mb, "vram_total_mb": after.vram_total_mb,
              "gpu_util_pct": after.gpu_util_pct, "gpu_temp_c": after.gpu_temp_c, "gpu_power_w": after.gpu_power_w,
              "torch_allocated_mb": after.torch_allocated_mb, "torch_reserved_mb": after.torch_reserved_mb}
    print(json.dumps(report))
    if os.environ.get("OUT"):
        with open(os.path.join(os.environ["OUT"], "nvml.json"), "w") as handle:
            json.dump(report, handle, indent=1)
    del block
    sampler.stop()
    assert after.source == "nvml" and after.vram_total_mb > 0
    assert after.torch_allocated_mb >= before.torch_allocated_mb + 1000
    assert after.vram_used_mb >= before.vram_used_mb + 900
    assert after.gpu_temp_c is not None and after.gpu_util_pct is not None
