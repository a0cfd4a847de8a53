"""`cosydesk say` end to end: a WAV from a tiny model, playback through PortAudio, one-line errors for bad input."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from tests.support.paths import REPO_ROOT


def run_cli(*args: str, env: dict | None = None, timeout: int = 300) -> subprocess.CompletedProcess:
    full_env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "OMP_NUM_THREADS": "1", **(env or {})}
    return subprocess.run([sys.executable, "-m", "cosydesk", *args], capture_output=True, text=True, env=full_env,
                          timeout=timeout, cwd=REPO_ROOT)


def test_help_is_instant_and_lists_commands():
    result = run_cli("--help")
    assert result.returncode == 0 and "say" in result.stdout


def test_say_writes_a_wav(tiny_v2_dir, tmp_path):
    out = tmp_path / "hello.wav"
    result = run_cli("say", "你好，世界。", "--model", str(tiny_v2_dir), "--speaker", "英文女", "-o", str(out), "--seed", "1")
    assert result.returncode == 0, result.stderr
    audio, rate = sf.read(out, dtype="float32")
    assert rate == 24000 and audio.size > 0
    assert "first audio" in result.stderr and "real-time factor" in result.stderr


def test_say_play_reaches_the_sound_device(tiny_v2_dir, tmp_path):
    """--play through PortAudio into an ALSA file PCM: the played samples equal the returned audio."""
    try:
        import ctypes.util

        if not ctypes.util.find_library("portaudio"):
            pytest.skip("libportaudio2 is not installed")
    except Exception:  # noqa: BLE001
        pytest.skip("cannot look for PortAudio")
    capture = tmp_path / "capture.f32"
    conf = tmp_path / "alsa.conf"
    conf.write_text('pcm.!default { type plug; slave { pcm "rec"; format FLOAT_LE; } }\n'
                    f'pcm.rec {{ type file; slave.pcm "null"; file "{capture}"; format "raw" }}\n')
    out = tmp_path / "played.wav"
    result = run_cli("say", "今天天气很好。", "--model", str(tiny_v2_dir), "--play", "-o", str(out), "--float-wav", "--seed", "2",
                     env={"ALSA_CONFIG_PATH": f"/usr/share/alsa/alsa.conf:{conf}"})
    assert result.returncode == 0, result.stderr
    expected, _ = sf.read(out, dtype="float32")
    played = np.fromfile(capture, dtype=np.float32)
    # PortAudio primes the device with zeros (and plays silence on underruns); every sample arrives, bit-exact.
    np.testing.assert_array_equal(played[played != 0], expected[expected != 0])


def _broken_copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst, symlinks=True)
    return dst


@pytest.mark.parametrize("case", ["missing_file", "corrupt_pt", "unknown_version", "unknown_speaker", "empty_text",
                                  "whitespace_text", "prompt_not_audio", "missing_model_dir", "bad_output_suffix"])
def test_bad_input_is_one_clear_line(case, tiny_v2_dir, tmp_path):
    model = str(tiny_v2_dir)
    text, extra = "你好。", []
    if case == "missing_file":
        model = str(_broken_copy(tiny_v2_dir, tmp_path / "m"))
        (Path(model) / "flow.pt").unlink()
    elif case == "corrupt_pt":
        model = str(_broken_copy(tiny_v2_dir, tmp_path / "m"))
        (Path(model) / "hift.pt").write_bytes(b"\x00garbage" * 100)
    elif case == "unknown_version":
        model = str(tmp_path / "m")
        os.makedirs(model)
        (Path(model) / "cosyvoice2.yaml").write_text("sample_rate: 24000\nllm: !new:foo.NewLM\n  a: 1\nflow: !new:x.Y\nhift: !new:x.Z\n")
    elif case == "unknown_speaker":
        extra = ["--speaker", "nobody"]
    elif case == "empty_text":
        text = ""
    elif case == "whitespace_text":
        text = "   "
    elif case == "prompt_not_audio":
        bogus = tmp_path / "prompt.wav"
        bogus.write_text("not audio at all")
        extra = ["--prompt-wav", str(bogus), "--prompt-text", "你好"]
    elif case == "missing_model_dir":
        model = str(tmp_path / "does-not-exist")
    out = tmp_path / ("out.aiff" if case == "bad_output_suffix" else "out.wav")
    result = run_cli("say", text, "--model", model, "-o", str(out), *extra)
    assert result.returncode == 2, (case, result.stderr)
    lines = [line for line in result.stderr.strip().splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("cosydesk: error:"), result.stderr
    assert "Traceback" not in result.stderr
    assert not out.exists()
    assert not list(tmp_path.glob("*.tmp*")), "a partial output file was left behind"


def test_text_file_with_invalid_utf8(tiny_v2_dir, tmp_path):
    """--text-file decodes what it can and replaces undecodable bytes, so a damaged file still gives audio."""
    text_file = tmp_path / "script.txt"
    text_file.write_bytes("今天天气很好。".encode() + b"\xff\xfe broken \xc3 bytes.\n")
    out = tmp_path / "out.wav"
    result = run_cli("say", "--text-file", str(text_file), "--model", str(tiny_v2_dir), "-o", str(out), "--seed", "1")
    assert result.returncode == 0, result.stderr
    assert sf.read(out)[0].size > 0
    missing = run_cli("say", "--text-file", str(tmp_path / "nope.txt"), "--model", str(tiny_v2_dir))
    assert missing.returncode == 2 and missing.stderr.strip().startswith("cosydesk: error: cannot read")
    (tmp_path / "song.mp3").write_bytes(b"ID3\x04\x00\x00\x00\x00\x00\x00binary")
    binary = run_cli("say", "--text-file", str(tmp_path / "song.mp3"), "--model", str(tiny_v2_dir))
    assert binary.returncode == 2 and "song.mp3 does not look like a text file" in binary.stderr
