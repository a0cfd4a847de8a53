"""Telemetry sampling from a fake NVML, the CPU fallback and the latency recorder."""

from __future__ import annotations

import time

import pytest

from cosydesk.telemetry.recorder import LatencyRecorder
from cosydesk.telemetry.sampler import CpuSource, NvmlSource, TelemetrySampler, open_source
from tests.telemetry.fake_nvml import FakeNvml


def test_nvml_values_are_converted_to_units():
    nvml = FakeNvml()
    nvml.used, nvml.util, nvml.temp, nvml.power_mw = 3 * 1024**3, 87, 66, 245500
    sampler = TelemetrySampler(NvmlSource(nvml))
    sample = sampler.sample_once()
    assert sample.source == "nvml" and sample.device_name == "NVIDIA GeForce RTX 4090"
    assert sample.vram_used_mb == 3072 and sample.vram_total_mb == 24576
    assert (sample.gpu_util_pct, sample.gpu_temp_c, sample.gpu_power_w) == (87, 66, 245.5)
    sampler.stop()
    assert not nvml.initialised


def test_unsupported_power_reads_as_none():
    sample = TelemetrySampler(NvmlSource(FakeNvml(power_supported=False))).sample_once()
    assert sample.gpu_power_w is None and sample.gpu_temp_c == 40


def test_without_gpu_falls_back_to_cpu_and_says_so():
    source, note = open_source(FakeNvml(present=False))
    assert isinstance(source, CpuSource) and "No NVIDIA GPU" in note
    sample = TelemetrySampler(source).sample_once()
    assert sample.source == "cpu" and sample.vram_used_mb is None
    assert sample.ram_total_mb > 0 and 0 <= sample.cpu_pct <= 100 * 64


def test_background_thread_follows_changes_and_keeps_60s():
    nvml = FakeNvml()
    sampler = TelemetrySampler(NvmlSource(nvml), interval_s=0.01, history_s=0.5)
    sampler.start()
    try:
        nvml.used = 1024**3
        deadline = time.monotonic() + 2
        while time.monotonic() < deadline and (sampler.latest() is None or sampler.latest().vram_used_mb != 1024):
            time.sleep(0.01)
        assert sampler.latest().vram_used_mb == 1024
        time.sleep(0.8)
        history = sampler.history()
        assert len(history) <= int(0.5 / 0.01) + 2
        assert history[-1].time_s - history[0].time_s <= 0.6
        assert len(sampler.history(seconds=0.1)) < len(history)
    finally:
        sampler.stop()


def test_recorder_snapshots():
    recorder = LatencyRecorder(keep=3)
    for i in range(5):
        recorder.record_chunk(audio_s=0.5, compute_s=0.1 * (i + 1))
        recorder.record_utterance(first_audio_ms=100 + i, rtf=0.2, audio_s=2.0, chunks=4)
    assert [u.first_audio_ms for u in recorder.utterances()] == [102, 103, 104]
    assert recorder.chunks()[-1].rtf == pytest.approx(1.0)
    assert recorder.version == 10
