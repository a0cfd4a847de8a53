"""Every malformed model folder of tests/data/malformed_model_folders.json ends in one line naming the file and
what is wrong - `cosydesk: error: <file>: <what>`, exit status 2 - never a traceback, never an allocation
sized by a broken setting. The cases run through the real CLI path (`cosydesk.cli.main`, in process); two run
as real subprocesses to show the status and the single stderr line; the app's worker reports the same text and
keeps the model it had.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.reliability.malformed_folders import CASES, copy_folder, make_case_folder

CASE_BY_ID = {case["id"]: case for case in CASES}
LOAD_CASES = [case["id"] for case in CASES if not case.get("prompt")]
PROMPT_CASES = [case["id"] for case in CASES if case.get("prompt")]
SENTENCE = "你好，世界。"


@pytest.fixture(scope="module")
def originals(tiny_v1_dir, tiny_v2_dir):
    return {"v1": tiny_v1_dir, "v2": tiny_v2_dir}


@pytest.fixture(scope="module")
def prompt_wav(tmp_path_factory) -> Path:
    import soundfile as sf

    rate = 16000
    t = np.arange(3 * rate) / rate
    wav = 0.2 * np.sin(2 * np.pi * 150 * t) + 0.05 * np.sin(2 * np.pi * 450 * t)
    path = tmp_path_factory.mktemp("prompt") / "voice.wav"
    sf.write(path, wav.astype(np.float32), rate)
    return path


def say_in_process(capsys, folder: Path, out: Path, *extra: str) -> tuple[int, list[str]]:
    from cosydesk import cli

    capsys.readouterr()
    code = cli.main(["say", SENTENCE, "--model", str(folder), "--device", "cpu", "-o", str(out), *extra])
    return code, [line for line in capsys.readouterr().err.splitlines() if line.strip()]


def assert_one_line(case: dict, folder: Path, code: int, lines: list[str], out: Path) -> None:
    assert code == 2, f"{case['id']}: exit status {code}, stderr {lines}"
    assert len(lines) == 1, f"{case['id']}: {len(lines)} stderr lines: {lines}"
    prefix = f"cosydesk: error: {folder / case['file']}: "
    assert lines[0].startswith(prefix), f"{case['id']}: {lines[0]!r} does not start with {prefix!r}"
    assert case["message"] in lines[0], f"{case['id']}: {lines[0]!r} does not say {case['message']!r}"
    assert not out.exists() and not list(out.parent.glob("*.part")), f"{case['id']}: an output file was left"


def test_the_table_covers_the_issue():
    """Each kind the issue names has a case (ids are unique, each case names its file and a message)."""
    assert len(CASE_BY_ID) == len(CASES) >= 30
    for case in CASES:
        assert case["file"] and case["message"] and case["mutate"] and case.get("before"), case["id"]


@pytest.mark.parametrize("case_id", LOAD_CASES)
def test_malformed_folder_is_one_line_from_the_cli(case_id, originals, tmp_path, capsys):
    case = CASE_BY_ID[case_id]
    folder = make_case_folder(case, originals, tmp_path)
    out = tmp_path / "out.wav"
    code, lines = say_in_process(capsys, folder, out)
    assert_one_line(case, folder, code, lines, out)


ONNX_FILES = ("campplus.onnx", "speech_tokenizer_v2.onnx")


@pytest.fixture(scope="module")
def prompt_synth(tiny_v2_dir, tmp_path_factory):
    """One loaded copy of the tiny v2 model and its ONNX files' bytes; each ONNX case replaces a frontend file in
    it (the sessions are opened on first use) and puts the originals back first."""
    from cosydesk.runtime import Synthesizer

    folder = copy_folder(tiny_v2_dir, tmp_path_factory.mktemp("onnx") / "model")
    return Synthesizer(folder, device="cpu"), {name: (folder / name).read_bytes() for name in ONNX_FILES}


@pytest.mark.parametrize("case_id", PROMPT_CASES)
def test_broken_onnx_frontend_is_one_line_from_the_cli(case_id, prompt_synth, prompt_wav, tmp_path, capsys,
                                                       monkeypatch):
    import cosydesk.runtime
    from cosydesk.runtime.synthesizer import Synthesizer
    from tests.reliability.malformed_folders import apply_mutation

    case = CASE_BY_ID[case_id]
    synth, original = prompt_synth
    folder = synth.model_dir
    for name, data in original.items():  # the previous case's file back to the original
        (folder / name).unlink()
        (folder / name).write_bytes(data)
    for mutation in case["mutate"]:
        apply_mutation(folder, "v2", mutation, tmp_path / "outside")
    synth.frontend.__dict__.pop("_prompt_models", None)  # the ONNX sessions are opened again from the files
    synth.frontend._cached_prompt.cache_clear()
    monkeypatch.setattr(cosydesk.runtime, "Synthesizer", lambda model_dir, **options: synth)
    out = tmp_path / "out.wav"
    code, lines = say_in_process(capsys, folder, out, "--prompt-wav", str(prompt_wav), "--prompt-text", "提示文本。")
    assert_one_line(case, folder, code, lines, out)


def test_the_onnx_copy_still_clones_a_voice_after_the_cases(prompt_synth, prompt_wav):
    """The checks refuse only what is wrong: the released-format files still give finite audio."""
    from cosydesk.runtime import Request
    from cosydesk.runtime.synthesizer import Synthesizer

    synth, original = prompt_synth
    for name, data in original.items():
        (synth.model_dir / name).unlink()
        (synth.model_dir / name).write_bytes(data)
    synth.frontend.__dict__.pop("_prompt_models", None)  # the ONNX sessions are opened again from the files
    synth.frontend._cached_prompt.cache_clear()
    audio = synth.synthesize(Request(SENTENCE, prompt_wav=str(prompt_wav), prompt_text="提示文本。", seed=1))
    assert audio.size > 0 and np.isfinite(audio).all()


@pytest.mark.parametrize("case_id", ["zero_heads", "llm_pt_symlink_outside"])
def test_subprocess_exit_status_and_single_stderr_line(case_id, originals, tmp_path):
    from tests.support.paths import REPO_ROOT

    case = CASE_BY_ID[case_id]
    folder = make_case_folder(case, originals, tmp_path)
    out = tmp_path / "out.wav"
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "HF_HUB_OFFLINE": "1"}
    result = subprocess.run([sys.executable, "-m", "cosydesk", "say", SENTENCE, "--model", str(folder), "--device",
                             "cpu", "-o", str(out)], capture_output=True, text=True, env=env, timeout=180, cwd=REPO_ROOT)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert_one_line(case, folder, result.returncode, lines, out)
    assert result.stdout == ""


def test_serve_refuses_a_malformed_folder_at_startup(originals, tmp_path, capsys):
    """`cosydesk serve` stops before listening for requests: the same one line, status 2 (no HTTP error to see)."""
    from cosydesk import cli

    case = CASE_BY_ID["spk2info_wrong_embedding_shape"]
    folder = make_case_folder(case, originals, tmp_path)
    capsys.readouterr()
    code = cli.main(["serve", "--model", str(folder), "--device", "cpu", "--port", "0"])
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip() and not line.startswith("Loading")]
    assert code == 2 and len(lines) == 1, lines
    assert lines[0].startswith(f"cosydesk: error: {folder / 'spk2info.pt'}: ") and case["message"] in lines[0]
