"""Model manager (folder validation, download through a faked hub), voice-profile dialog, telemetry dock, settings."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import soundfile as sf

from cosydesk import hub
from cosydesk.settings import Key, Settings
from cosydesk.telemetry.recorder import LatencyRecorder
from cosydesk.telemetry.sampler import CpuSource, NvmlSource, TelemetrySampler
from cosydesk.ui.model_manager import ModelManagerDialog, known_model_dirs
from cosydesk.ui.telemetry_dock import TelemetryDock
from cosydesk.ui.voice_dialog import VoiceProfileDialog
from cosydesk.audio.profiles import VoiceProfileStore
from tests.audio.fake_sd import FakeSoundDevice
from tests.telemetry.fake_nvml import FakeNvml


def _speech(seconds, rate=24000):
    t = np.arange(int(seconds * rate)) / rate
    return (0.3 * (0.5 + 0.5 * np.sin(2 * np.pi * 3 * t)) * np.sin(2 * np.pi * 200 * t)).astype(np.float32)


# ---------------------------------------------------------------------------------------------- model manager
def test_add_folder_explains_what_is_missing(qtbot, tmp_path, data_dir):
    settings = Settings.at(tmp_path / "s.ini")
    dialog = ModelManagerDialog(settings, tmp_path / "models")
    qtbot.addWidget(dialog)
    empty = tmp_path / "empty"
    empty.mkdir()
    assert not dialog.add_folder(empty)
    text = dialog.status.text()
    assert "cannot be used" in text and "llm.pt is missing" in text and "cosyvoice2.yaml" in text
    assert "campplus.onnx" in text
    assert settings.get(Key.EXTRA_MODEL_DIRS) == []


def test_add_good_folder_is_remembered(qtbot, tmp_path, fake_model_dir, data_dir):
    settings = Settings.at(tmp_path / "s.ini")
    dialog = ModelManagerDialog(settings, tmp_path / "models")
    qtbot.addWidget(dialog)
    (fake_model_dir / "campplus.onnx").unlink()
    with qtbot.waitSignal(dialog.modelChosen) as chosen:
        assert dialog.add_folder(fake_model_dir)
    assert chosen.args == [str(fake_model_dir)]
    assert "campplus.onnx" in dialog.status.text()  # works, but cloning is off
    assert Settings.at(tmp_path / "s.ini").get(Key.EXTRA_MODEL_DIRS) == [str(fake_model_dir)]
    assert known_model_dirs(settings, tmp_path / "models") == [fake_model_dir]


def test_download_progress_then_installed(qtbot, tmp_path, monkeypatch, data_dir):
    models = tmp_path / "models"
    release = threading.Event()

    def fake_snapshot_download(repo_id, local_dir, allow_patterns, tqdm_class):
        with tqdm_class(total=2_000_000_000, unit="B") as bar:
            bar.update(500_000_000)
            release.wait(5)
            bar.update(1_500_000_000)
        folder = Path(local_dir)
        (folder / "cosyvoice2.yaml").write_text("x")
        for name in ("llm.pt", "flow.pt", "hift.pt", "campplus.onnx", "speech_tokenizer_v2.onnx"):
            (folder / name).write_bytes(b"x")
        (folder / "CosyVoice-BlankEN").mkdir()
        (folder / "CosyVoice-BlankEN" / "config.json").write_text("{}")
        return local_dir

    monkeypatch.setattr(hub, "_snapshot_download", fake_snapshot_download)
    dialog = ModelManagerDialog(Settings.at(tmp_path / "s.ini"), models)
    qtbot.addWidget(dialog)
    assert dialog.selected_name() == "CosyVoice2-0.5B" and not dialog.use_button.isEnabled()
    dialog.start_download()
    qtbot.waitUntil(lambda: dialog.progress.value() == 250)
    assert "0.50 / 2.00 GB" in dialog.progress.format()
    release.set()
    qtbot.waitUntil(lambda: "Downloaded to" in dialog.status.text(), timeout=5000)
    assert dialog.use_button.isEnabled() and not dialog.download_button.isEnabled()
    with qtbot.waitSignal(dialog.modelChosen) as chosen:
        dialog.use_button.click()
    assert chosen.args == [str(models / "CosyVoice2-0.5B")]


def test_download_offline_and_cancel(qtbot, tmp_path, monkeypatch, data_dir):
    def offline(**kwargs):
        raise OSError("[Errno -3] Temporary failure in name resolution")

    monkeypatch.setattr(hub, "_snapshot_download", offline)
    dialog = ModelManagerDialog(Settings.at(tmp_path / "s.ini"), tmp_path / "models")
    qtbot.addWidget(dialog)
    dialog.start_download()
    qtbot.waitUntil(lambda: "no network" in dialog.status.text(), timeout=5000)
    assert dialog.download_button.isEnabled()

    def slow(repo_id, local_dir, allow_patterns, tqdm_class):
        with tqdm_class(total=100, unit="B") as bar:
            for _ in range(1000):
                bar.update(0)
                threading.Event().wait(0.01)

    monkeypatch.setattr(hub, "_snapshot_download", slow)
    dialog.start_download()
    dialog.cancel_download()
    qtbot.waitUntil(lambda: "resumes" in dialog.status.text() and dialog.download_button.isEnabled(), timeout=5000)


# ---------------------------------------------------------------------------------------------- voice dialog
def test_voice_dialog_validation_and_save(qtbot, tmp_path):
    store = VoiceProfileStore(tmp_path / "voices")
    dialog = VoiceProfileDialog(store, reserved_names=("中文女",))
    qtbot.addWidget(dialog)
    assert not dialog.save()
    assert "Choose a WAV file" in dialog.problems_label.text()
    (tmp_path / "bad.wav").write_bytes(b"not audio")
    assert not dialog.load_file(tmp_path / "bad.wav")
    assert "not an audio file" in dialog.problems_label.text()
    sf.write(tmp_path / "quiet.wav", np.zeros(24000 * 5, np.float32), 24000)
    assert dialog.load_file(tmp_path / "quiet.wav")
    assert "silent" in dialog.problems_label.text()
    sf.write(tmp_path / "low.wav", _speech(5, 8000), 8000)
    dialog.load_file(tmp_path / "low.wav")
    assert "8000 Hz is too low" in dialog.problems_label.text()
    sf.write(tmp_path / "good.wav", _speech(5), 24000)
    dialog.load_file(tmp_path / "good.wav")
    assert dialog.problems_label.text() == ""
    dialog.name_edit.setText("中文女")
    assert not dialog.save()
    assert "exists already" in dialog.problems_label.text() and "transcript is empty" in dialog.problems_label.text()
    dialog.name_edit.setText("Bob")
    dialog.transcript_edit.setPlainText("hello, this is Bob speaking")
    assert dialog.save()
    assert store.names() == ["Bob"] and dialog.profile.transcript == "hello, this is Bob speaking"


def test_voice_dialog_takes_a_dropped_recording(qtbot, tmp_path):
    """A recording dragged onto the dialog (or onto its transcript field) loads as "Choose WAV file…" would; a
    folder or two files at once are refused with a message and change nothing."""
    from tests.ui.helpers import drag_and_drop

    dialog = VoiceProfileDialog(VoiceProfileStore(tmp_path / "voices"))
    qtbot.addWidget(dialog)
    sf.write(tmp_path / "Carol.wav", _speech(5), 24000)
    drag_and_drop(dialog, [tmp_path, tmp_path / "Carol.wav"])
    assert dialog.pcm is None and "one recording" in dialog.problems_label.text()
    assert drag_and_drop(dialog.transcript_edit.viewport(), [tmp_path / "Carol.wav"]) == [True, True, True]
    assert dialog.pcm is not None and dialog.name_edit.text() == "Carol" and dialog.problems_label.text() == ""
    assert dialog.transcript_edit.toPlainText() == ""  # the path was not typed into the field


def test_voice_dialog_microphone_recording(qtbot, tmp_path):
    class FakeMic:
        def __init__(self, sample_rate, max_seconds):
            self.sample_rate, self.level, self.seconds = sample_rate, 0.5, 4.0

        def start(self):
            pass

        def stop(self):
            return _speech(4)

    dialog = VoiceProfileDialog(VoiceProfileStore(tmp_path), recorder_factory=FakeMic)
    qtbot.addWidget(dialog)
    dialog.record_button.click()
    assert dialog.record_button.isChecked()
    dialog.record_button.click()
    assert dialog.pcm is not None and len(dialog.pcm) == 96000 and dialog.problems_label.text() == ""


# ---------------------------------------------------------------------------------------------- telemetry dock
def test_telemetry_dock_follows_fake_nvml(qtbot):
    nvml = FakeNvml()
    sampler = TelemetrySampler(NvmlSource(nvml))
    recorder = LatencyRecorder()
    dock = TelemetryDock(sampler, recorder, refresh_ms=10_000)
    qtbot.addWidget(dock)
    for used_gb, util in ((1, 10), (3, 90)):
        nvml.used, nvml.util = used_gb * 1024**3, util
        sampler.sample_once()
    recorder.record_chunk(0.5, 0.1)
    recorder.record_utterance(first_audio_ms=180.0, rtf=0.25, audio_s=2.0, chunks=3)
    dock.refresh()
    assert dock.values["vram_used_mb"] == 3072 and dock.values["gpu_util_pct"] == 90
    assert dock.values["first_audio_ms"] == 180.0
    x, y = dock.memory_curve.getData()
    assert list(y) == [1024, 3072] and x[-1] == 0
    assert list(dock.util_curve.getData()[1]) == [10, 90]
    assert "VRAM 3.0 / 24.0 GB" in dock.summary.text() and "first audio 180 ms" in dock.summary.text()
    assert not dock.note.isVisibleTo(dock)
    sampler.stop()


def test_telemetry_dock_without_gpu_says_so(qtbot):
    sampler = TelemetrySampler(CpuSource(), note="No NVIDIA GPU found")
    dock = TelemetryDock(sampler, LatencyRecorder(), refresh_ms=10_000)
    qtbot.addWidget(dock)
    sampler.sample_once()
    dock.refresh()
    assert "RAM" in dock.summary.text() and dock.values["ram_used_mb"] > 0
    assert "No NVIDIA GPU" in dock.note.text()


# ---------------------------------------------------------------------------------------------- settings
def test_settings_round_trip_and_bad_values(tmp_path):
    settings = Settings.at(tmp_path / "s.ini")
    assert settings.get(Key.DEVICE) == "auto" and settings.get(Key.SPEED) == 1.0
    settings.set(Key.DEVICE, "cuda:1")
    settings.set(Key.SPEED, 1.25)
    settings.set(Key.EXTRA_MODEL_DIRS, ["/a", "/b"])
    settings.set(Key.LANGUAGE, "klingon")
    settings.sync()
    again = Settings.at(tmp_path / "s.ini")
    assert again.get(Key.DEVICE) == "cuda:1" and again.get(Key.SPEED) == 1.25
    assert again.get(Key.EXTRA_MODEL_DIRS) == ["/a", "/b"]
    assert again.get(Key.LANGUAGE) == "system"  # unknown value -> default


def test_fake_sd_device_listing():
    from cosydesk.audio.player import list_output_devices

    assert list_output_devices(FakeSoundDevice())[0][1] == "Fake Speakers"
