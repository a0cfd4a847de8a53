"""Faults from outside the program: the model folder changes under a loaded model, the audio device vanishes,
the GPU runs out of memory, a download breaks off, the disk fills up during an export.

Each must end in working audio or one clear message, leave nothing half-written, and leave the program usable.
Covered elsewhere (not repeated here): the Player alone losing and regaining its device
(tests/audio/test_player.py::test_device_vanishes_mid_playback_then_recovers), write_audio on a full disk
(tests/audio/test_ringbuffer_export.py::test_disk_full_leaves_no_partial_file), corrupt/stale/foreign
TensorRT engine cache entries (tests/runtime/backends/tensorrt/test_tensorrt_cache.py::test_corrupt_entries_are_rebuilt and
test_stale_and_foreign_entries_are_rebuilt_in_place).
"""

from __future__ import annotations

import errno
import shutil
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
import torch

from cosydesk.runtime import Request, Synthesizer
from cosydesk.runtime.errors import SynthesisError

torch.set_num_threads(1)

SENTENCE = "你好，世界。"


def voiced_wav(path: Path, seconds: float = 3.0, rate: int = 16000) -> Path:
    t = np.arange(int(seconds * rate)) / rate
    phase = 2 * np.pi * np.cumsum(140 + 20 * np.sin(2 * np.pi * 3 * t)) / rate
    wav = sum(np.sin(k * phase) / k for k in range(1, 6)) * 0.2
    sf.write(path, wav.astype(np.float32), rate)
    return path


def one_line(message: str) -> bool:
    return bool(message.strip()) and "\n" not in message.strip()


@pytest.fixture
def model_copy(tiny_v2_dir, tmp_path):
    return Path(shutil.copytree(tiny_v2_dir, tmp_path / "model"))


@pytest.fixture(scope="module")
def synth(tiny_v2_dir):
    return Synthesizer(tiny_v2_dir, device="cpu")


# ------------------------------------------------------------------------------- the model folder changes
def test_model_folder_removed_while_loaded(model_copy, tmp_path):
    synth = Synthesizer(model_copy, device="cpu")
    shutil.rmtree(model_copy)
    # the loaded weights live in memory: SFT synthesis carries on
    audio = synth.synthesize(Request(SENTENCE, speaker="中文女", seed=1))
    assert audio.size > 0 and np.isfinite(audio).all()
    # zero-shot needs the (lazily loaded) ONNX prompt models from the folder: a clear message, not a crash
    with pytest.raises(SynthesisError, match="campplus.onnx is missing") as caught:
        synth.synthesize(Request(SENTENCE, prompt_wav=str(voiced_wav(tmp_path / "p.wav")), prompt_text="提示。"))
    assert one_line(str(caught.value))
    # loading the vanished folder later: one clear message naming it
    with pytest.raises(ValueError, match="does not exist") as caught:
        Synthesizer(model_copy, device="cpu")
    assert str(model_copy) in str(caught.value) and one_line(str(caught.value))


def test_weights_corrupted_while_loaded_keep_working_from_memory(model_copy):
    synth = Synthesizer(model_copy, device="cpu")
    for name in ("llm.pt", "flow.pt", "hift.pt", "spk2info.pt"):
        (model_copy / name).write_bytes(b"\x00garbage" * 64)
    audio = synth.synthesize(Request(SENTENCE, speaker="中文女", seed=1))
    assert audio.size > 0 and np.isfinite(audio).all()


def test_corrupt_prompt_onnx_is_a_clear_message(model_copy, tmp_path):
    synth = Synthesizer(model_copy, device="cpu")
    (model_copy / "campplus.onnx").write_bytes(b"\x00garbage" * 64)
    with pytest.raises(SynthesisError, match="campplus.onnx") as caught:
        synth.synthesize(Request(SENTENCE, prompt_wav=str(voiced_wav(tmp_path / "p.wav")), prompt_text="提示。"))
    assert one_line(str(caught.value))
    # the SFT path is untouched by the broken prompt model
    assert synth.synthesize(Request(SENTENCE, speaker="中文女", seed=1)).size > 0


@pytest.mark.parametrize("name", [
    "llm.pt", "flow.pt", "hift.pt", "spk2info.pt",
    "cosyvoice2.yaml",
])
def test_loading_a_corrupted_folder_is_one_clear_message(name, model_copy):
    (model_copy / name).write_bytes(b"\x00garbage" * 64)
    with pytest.raises(ValueError) as caught:
        Synthesizer(model_copy, device="cpu")
    message = str(caught.value)
    assert name in message and one_line(message), message


# ---------------------------------------------------------------------------------------- out of memory
def _raise_cuda_oom(*args, **kwargs):
    raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 23.6 GiB total)")


OOM_SITES = [("llm", "prefill"), ("llm", "decode_step"), ("flow", "inference"), ("hift", "inference_with_source")]


@pytest.mark.parametrize("module,method", OOM_SITES, ids=[f"{m}.{f}" for m, f in OOM_SITES])
def test_out_of_memory_stops_cleanly_and_the_next_request_works(module, method, synth, monkeypatch):
    """Simulated CUDA OOM anywhere in the pipeline: no hang, no thread left, the next request succeeds."""
    before = threading.active_count()
    monkeypatch.setattr(getattr(synth.model, module), method, _raise_cuda_oom)
    start = time.perf_counter()
    with pytest.raises(Exception, match="out of memory"):
        list(synth.stream(Request(SENTENCE, speaker="中文女", seed=1)))
    assert time.perf_counter() - start < 30
    assert all(not t.is_alive() for t in synth.live_threads)
    assert threading.active_count() <= before
    monkeypatch.undo()
    assert synth.synthesize(Request(SENTENCE, speaker="中文女", seed=1)).size > 0


OOM_BUG = ("torch.cuda.OutOfMemoryError escapes Synthesizer.stream as it is: it is not a SynthesisError, so the "
           "CLI prints a traceback. cosydesk/runtime/synthesizer.py stream() should catch it, call "
           "torch.cuda.empty_cache() and raise a SynthesisError subclass (e.g. OutOfMemoryError in errors.py) "
           "saying what to do (shorter text, fp16, --device cpu) - or fall back to CPU")


def test_out_of_memory_is_a_clear_synthesis_error(synth, monkeypatch):
    monkeypatch.setattr(synth.model.flow, "inference", _raise_cuda_oom)
    with pytest.raises(SynthesisError, match="out of memory") as caught:
        synth.synthesize(Request(SENTENCE, speaker="中文女", seed=1))
    assert one_line(str(caught.value))


def test_out_of_memory_in_the_cli_is_one_line(synth, tiny_v2_dir, tmp_path, monkeypatch, capsys):
    import cosydesk.runtime
    from cosydesk import cli

    monkeypatch.setattr(cosydesk.runtime, "Synthesizer", lambda model_dir, **options: synth)
    monkeypatch.setattr(synth.model.flow, "inference", _raise_cuda_oom)
    out = tmp_path / "out.wav"
    code = cli.main(["say", SENTENCE, "--model", str(tiny_v2_dir), "-o", str(out)])
    err = capsys.readouterr().err
    assert code == 2 and err.strip().startswith("cosydesk: error:") and one_line(err) and "out of memory" in err
    assert not out.exists()


# ---------------------------------------------------------------------------------------- the disk fills
def test_disk_full_during_cli_export_leaves_no_partial_file(synth, tiny_v2_dir, tmp_path, monkeypatch, capsys):
    import cosydesk.runtime
    from cosydesk import cli
    from cosydesk.audio import export

    monkeypatch.setattr(cosydesk.runtime, "Synthesizer", lambda model_dir, **options: synth)
    out = tmp_path / "speech.wav"
    out.write_bytes(b"an earlier export")

    def full_disk(handle, *args, **kwargs):
        handle.write(b"RIFF\x00\x00partial")
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(export.sf, "write", full_disk)
    code = cli.main(["say", SENTENCE, "--model", str(tiny_v2_dir), "--speaker", "中文女", "-o", str(out)])
    err = capsys.readouterr().err
    assert code == 2, err
    assert one_line(err) and err.startswith("cosydesk: error:") and "disk space" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["speech.wav"], "a partial file was left behind"
    assert out.read_bytes() == b"an earlier export"


def test_disk_full_at_rename_leaves_no_partial_file(tmp_path, monkeypatch):
    from cosydesk.audio import export

    def no_space(src, dst):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(export.os, "replace", no_space)
    with pytest.raises(export.ExportError, match="disk space"):
        export.write_audio(tmp_path / "a.flac", np.zeros(2400, np.float32), 24000)
    assert list(tmp_path.iterdir()) == []


# ------------------------------------------------------------------------------ a download breaks off
def test_download_interrupted_then_resumed(tmp_path, monkeypatch):
    from cosydesk import hub
    from tests.test_hub import _write_full_v2

    target = tmp_path / "models" / "CosyVoice2-0.5B"
    calls: list[str] = []

    def flaky_snapshot_download(repo_id, local_dir, allow_patterns, tqdm_class):
        partial = Path(local_dir) / ".cache" / "huggingface" / "download" / "llm.pt.incomplete"
        if not calls:
            calls.append("first")
            partial.parent.mkdir(parents=True, exist_ok=True)
            with tqdm_class(total=1000, unit="B") as bar:
                partial.write_bytes(b"x" * 400)
                bar.update(400)
                raise ConnectionError("Connection broken: IncompleteRead(400 bytes read, 600 more expected)")
        # the second run finds what the first one left and continues from there
        calls.append(f"resumed from {partial.stat().st_size} bytes" if partial.exists() else "restarted from zero")
        with tqdm_class(total=1000, unit="B", initial=400) as bar:
            bar.update(600)
        partial.unlink()
        _write_full_v2(Path(local_dir))
        return local_dir

    monkeypatch.setattr(hub, "_snapshot_download", flaky_snapshot_download)
    with pytest.raises(hub.DownloadError) as caught:
        hub.download_model("CosyVoice2-0.5B", tmp_path / "models")
    assert one_line(str(caught.value)) and "Traceback" not in str(caught.value)
    assert hub.installed_models(tmp_path / "models") == []  # a broken download is not offered as a model
    seen = []
    path = hub.download_model("CosyVoice2-0.5B", tmp_path / "models", progress=lambda d, t, *rest: seen.append(d))
    assert path == target and calls == ["first", "resumed from 400 bytes"]
    assert not hub.check_model_dir(target).problems
    assert hub.installed_models(tmp_path / "models") == [target]


# ----------------------------------------------------------------------- the audio device vanishes (GUI)
def test_sound_device_unplugged_mid_speech_then_back(qtbot, synth, tiny_v2_dir, tmp_path, monkeypatch):
    """The app reports the lost device once, stays ready, and plays again once the device is back."""
    from cosydesk.audio.player import Player
    from tests.audio.fake_sd import FakeSoundDevice
    from tests.ui.helpers import make_window, wait_idle

    data = tmp_path / "userdata"
    data.mkdir()
    monkeypatch.setenv("COSYDESK_DATA_DIR", str(data))
    monkeypatch.setenv("COSYDESK_MODELS_DIR", str(tmp_path / "models"))
    fake = FakeSoundDevice(speed=1.0)
    window = make_window(qtbot, data, lambda model_dir, progress=None, **options: synth,
                         player=Player(sd_module=fake), model_dir=tiny_v2_dir)
    errors: list[str] = []
    finished_jobs: list = []
    window.controller.worker.audioError.connect(errors.append)
    window.controller.worker.jobFinished.connect(finished_jobs.append)
    window.text_edit.setPlainText("今天天气很好，我们一起去公园散步吧。然后去图书馆看书。")
    with qtbot.waitSignal(window.controller.worker.chunkReady, timeout=60000):
        window.speak()
    qtbot.waitUntil(lambda: len(fake.played) > 2, timeout=10000)
    fake.unplugged = True
    qtbot.waitUntil(lambda: bool(finished_jobs), timeout=60000)
    wait_idle(qtbot, window, timeout=60000)
    qtbot.waitUntil(lambda: bool(errors) or "Audio" in window.error_label.text(), timeout=10000)
    assert window.state == "ready" and window.speak_button.isEnabled()
    assert "Audio" in window.error_label.text() and one_line(window.error_label.text())
    # plugged back in: the next Speak plays again
    fake.unplugged = False
    played_before = sum(block.size for block in fake.played)
    errors.clear()
    window.text_edit.setPlainText("你好。")
    with qtbot.waitSignal(window.controller.worker.jobFinished, timeout=60000) as finished:
        window.speak()
    wait_idle(qtbot, window, timeout=60000)
    result = finished.args[0]
    assert result.error is None and result.pcm.size > 0
    assert sum(block.size for block in fake.played) - played_before >= result.pcm.size
    assert not errors
    window.shutdown()
    assert window.player.open_streams == 0
