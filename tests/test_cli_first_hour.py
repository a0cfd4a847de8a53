"""What a newcomer types in the first hour (issue 26): --version, --help, an unknown model name,
`say --list-speakers`, and `say --play -o` on a machine without a sound card — one line on a mistake, never a
traceback, and the requested file always written."""

from __future__ import annotations

import json
import sys
import time
import importlib.metadata
import tomllib
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

import cosydesk
from cosydesk import hub
from tests.support.paths import REPO_ROOT
from tests.test_cli import run_cli


def test_version_matches_the_package_metadata():
    result = run_cli("--version")
    assert result.returncode == 0 and result.stdout.strip() == f"cosydesk {cosydesk.__version__}"
    # pyproject takes its version from cosydesk.__version__ (one place); the installed metadata agrees
    pyproject = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert pyproject["project"]["dynamic"] == ["version"]
    assert pyproject["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "cosydesk.__version__"}
    assert importlib.metadata.version("cosydesk") == cosydesk.__version__


def test_help_says_that_no_command_opens_the_app():
    result = run_cli("--help")
    assert result.returncode == 0
    text = " ".join(result.stdout.split())
    assert "Without a command, `cosydesk` opens the desktop app" in text and "--version" in text


def test_downloading_an_unknown_model_is_one_line_naming_the_known_ones(tmp_path):
    result = run_cli("models", "--download", "nonsense", env={"COSYDESK_MODELS_DIR": str(tmp_path / "models")})
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("cosydesk: error: unknown model 'nonsense'; known models: ")
    assert all(info.name in lines[0] for info in hub.CATALOGUE)
    assert not (tmp_path / "models").exists()


def _save_profile(data_dir: Path, name: str, transcript: str) -> Path:
    """A voice profile as the app saves it: <data>/voices/<slug>/profile.json + prompt.wav."""
    folder = data_dir / "voices" / name.lower()
    folder.mkdir(parents=True)
    sf.write(folder / "prompt.wav", np.zeros(16000, dtype=np.float32), 16000)
    (folder / "profile.json").write_text(json.dumps({"name": name, "transcript": transcript, "sample_rate": 16000,
                                                     "duration_s": 1.0, "created": time.time()}), encoding="utf-8")
    return folder / "prompt.wav"


def test_say_help_points_at_list_speakers_and_it_lists_speakers_profiles_and_styles(tiny_v2_dir, tiny_v1_dir,
                                                                                     tmp_path):
    help_text = run_cli("say", "--help").stdout
    assert "cosydesk say --list-speakers" in help_text
    wav = _save_profile(tmp_path / "data", "Grandma", "今天天气很好。")
    env = {"COSYDESK_DATA_DIR": str(tmp_path / "data")}
    v2 = run_cli("say", "--list-speakers", "--model", str(tiny_v2_dir), env=env)
    assert v2.returncode == 0, v2.stderr
    speakers = v2.stdout.split("Built-in speakers")[1].split("Saved voice profiles")[0]
    for name in ("中文女", "英文女"):
        assert f"  {name}\n" in speakers
    assert f'Grandma: --prompt-wav "{wav}" --prompt-text "今天天气很好。"' in v2.stdout
    assert "Happy (开心)" in v2.stdout.split("Styles")[1]
    v1 = run_cli("say", "--list-speakers", "--model", str(tiny_v1_dir), env={"COSYDESK_DATA_DIR": str(tmp_path / "none")})
    assert v1.returncode == 0 and "中文女" in v1.stdout and "none: this model takes no style instruction" in v1.stdout
    assert "none saved in" in v1.stdout and not (tmp_path / "none" / "voices").exists()


def test_list_speakers_without_an_installed_model_says_how_to_get_one(tmp_path):
    result = run_cli("say", "--list-speakers", env={"COSYDESK_MODELS_DIR": str(tmp_path / "models"),
                                                   "COSYDESK_DATA_DIR": str(tmp_path / "data")})
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"cosydesk: error: {hub.DEFAULT_MODEL} is not installed in {tmp_path / 'models'}: run `cosydesk models "
        f"--download {hub.DEFAULT_MODEL}` first, or pass --model FOLDER"]
    assert not (tmp_path / "models").exists(), "listing must never start a download"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="an ALSA config with no device is Linux only")
def test_play_without_an_output_device_still_writes_the_whole_file(tiny_v2_dir, tmp_path):
    pytest.importorskip("sounddevice", exc_type=OSError)  # PortAudio (libportaudio2) must load to reach the device
    no_device = tmp_path / "no-device.conf"
    no_device.write_text("pcm.!default { type hw; card 99 }\nctl.!default { type hw; card 99 }\n")
    text = "今天天气很好。我们去公园散步吧。"
    played = tmp_path / "played.wav"
    result = run_cli("say", text, "--model", str(tiny_v2_dir), "--speaker", "英文女", "--seed", "3", "--float-wav",
                     "--play", "-o", str(played), env={"ALSA_CONFIG_PATH": f"/usr/share/alsa/alsa.conf:{no_device}"})
    assert result.returncode == 2, result.stderr
    error = result.stderr.strip().splitlines()[-1]
    assert error.startswith("cosydesk: error: playback failed: ") and f"the audio is in {played}" in error
    assert "Traceback" not in result.stderr
    audio, rate = sf.read(played, dtype="float32")
    reported = result.stdout.split(f"wrote {played} (")[1].split(" s of audio)")[0]
    assert rate == 24000 and audio.size > 0 and f"{audio.size / rate:.2f}" == reported


def test_a_device_failing_mid_utterance_still_gives_the_whole_file(tiny_v2_dir, tmp_path, monkeypatch, capsys):
    """The device dies after the first chunk: the rest is synthesised silently and every chunk lands in the file."""
    from cosydesk.audio import player
    from cosydesk.cli import main

    def dies_after_one_chunk(chunks, sample_rate, device=None, **kwargs):
        next(iter(chunks))
        raise player.AudioDeviceError("audio device stopped during playback (unplugged?)")

    from cosydesk.runtime import Synthesizer

    produced = []
    original_stream = Synthesizer.stream

    def recording_stream(self, request):
        for chunk in original_stream(self, request):
            produced.append(chunk.pcm.copy())
            yield chunk

    monkeypatch.setattr(Synthesizer, "stream", recording_stream)
    monkeypatch.setattr(player, "play_stream", dies_after_one_chunk)
    out = tmp_path / "played.wav"
    assert main(["say", "今天天气很好，我们去公园散步吧。明天会下雨，记得带伞。", "--model", str(tiny_v2_dir), "--speaker", "中文女",
                 "--float-wav", "--device", "cpu", "--play", "-o", str(out)]) == 2
    assert "playback failed: audio device stopped" in capsys.readouterr().err
    assert len(produced) > 1, "the utterance must have more than the one chunk that was played"
    np.testing.assert_array_equal(sf.read(out, dtype="float32")[0], np.concatenate(produced))
