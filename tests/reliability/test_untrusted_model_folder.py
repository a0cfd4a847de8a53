"""A model folder is untrusted input (downloaded or received): reading it never runs its code, never asks a
question, and never spends unbounded time or memory. Each hostile file ends in one clear error naming it.

Cases: tests/data/hostile_model_files.json (the yaml reader's limits).
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from cosydesk.model.config import ConfigError, read_yaml
from tests.support.paths import fixture_dir, load_test_data

CORPUS = load_test_data("hostile_model_files.json")
YAML_CASES = {case["id"]: case for case in CORPUS["yaml_cases"]}
REFUSE_WITHIN_S = 3.0  # the slowest case (200,000 '[') takes ~0.3 s on 2 CPU cores


def one_line(message: str) -> bool:
    return bool(message.strip()) and "\n" not in message.strip() and "Traceback" not in message


def within(limit_s: float, work):
    """work() on a helper thread; fail instead of hanging the suite when it runs past limit_s."""
    box: dict = {}

    def target():
        try:
            box["value"] = work()
        except BaseException as error:  # noqa: BLE001 - re-raised on the test thread
            box["error"] = error

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(limit_s)
    assert not thread.is_alive(), f"still running after {limit_s:.0f} s"
    if "error" in box:
        raise box["error"]
    return box["value"]


def yaml_bytes(case: dict) -> bytes:
    if "bytes_hex" in case:
        return bytes.fromhex(case["bytes_hex"])
    if "repeat" in case:
        spec = case["repeat"]
        body = "".join(spec["unit"].format(i=i, i_spaces=" " * i) for i in range(spec["count"]))
        return (spec["prefix"] + body).encode("utf-8")
    return case["text"].encode("utf-8")


@pytest.mark.parametrize("case_id", list(YAML_CASES))
def test_hostile_yaml_is_refused_quickly(case_id, tmp_path):
    case = YAML_CASES[case_id]
    path = tmp_path / "cosyvoice2.yaml"
    path.write_bytes(yaml_bytes(case))
    start = time.perf_counter()
    with pytest.raises(ConfigError) as caught:
        within(30.0, lambda: read_yaml(path))
    elapsed = time.perf_counter() - start
    message = str(caught.value)
    assert elapsed < REFUSE_WITHIN_S, f"{case_id}: refused only after {elapsed:.1f} s"
    assert one_line(message), message
    assert str(path) in message, f"{case_id}: the message does not name the file: {message!r}"
    assert case["message"].lower() in message.lower(), f"{case_id}: {message!r} does not say {case['message']!r}"


def test_yaml_that_is_a_fifo_is_refused_without_blocking(tmp_path):
    import os

    path = tmp_path / "cosyvoice2.yaml"
    os.mkfifo(path)
    with pytest.raises(ConfigError, match="not a regular file"):
        within(5.0, lambda: read_yaml(path))


@pytest.mark.parametrize("version,name", [("v1", "cosyvoice.yaml"), ("v2", "cosyvoice2.yaml"), ("v3", "cosyvoice3.yaml")])
def test_official_yaml_stays_within_the_limits(version, name):
    """The limits leave room: the official files (with their anchors, !ref arithmetic and deep nesting) load."""
    config = read_yaml(fixture_dir(version) / "model" / name)
    assert config["llm"].kind == "new"


# ------------------------------------------------------------------------------ custom code in CosyVoice-BlankEN
CUSTOM_CODE = '''
import pathlib
pathlib.Path({marker!r}).write_text("the model folder's code ran")  # transformers imports a copy: an absolute path
from transformers import Qwen2Tokenizer as EvilTokenizer, Qwen2Config as EvilConfig
'''

# a tiny script that opens the folder the way the Synthesizer does: the tokenizer, then the Qwen2 config
OPEN_FOLDER = '''
import sys
from pathlib import Path
from cosydesk.model.config import ConfigError
folder = Path(sys.argv[1])
try:
    from cosydesk.frontend.tokenizer import load_tokenizer
    load_tokenizer("v2", folder)
    from cosydesk.model.llm_qwen import read_qwen_config
    read_qwen_config(folder)
except ConfigError as err:
    print("REFUSED:", err)
    sys.exit(2)
print("LOADED")
'''


def _with_custom_code(tiny_v2_dir: Path, tmp_path: Path, which: str) -> Path:
    import shutil

    folder = Path(shutil.copytree(tiny_v2_dir, tmp_path / "model"))
    blanken = folder / "CosyVoice-BlankEN"
    (blanken / "evil_code.py").write_text(CUSTOM_CODE.format(marker=str(blanken / "RAN")), encoding="utf-8")
    path = blanken / which
    data = json.loads(path.read_text(encoding="utf-8"))
    # class names transformers does not know, so only the folder's code could provide them (what made the
    # official loader ask "Do you wish to run the custom code? [y/N]")
    if which == "tokenizer_config.json":
        data["auto_map"] = {"AutoTokenizer": ["evil_code.EvilTokenizer", None]}
        data["tokenizer_class"] = "EvilTokenizer"
    else:
        data["auto_map"] = {"AutoConfig": "evil_code.EvilConfig"}
        data.pop("model_type", None)
        # without a tokenizer_class AutoTokenizer asks config.json which class to use
        config = json.loads((blanken / "tokenizer_config.json").read_text(encoding="utf-8"))
        config.pop("tokenizer_class")
        (blanken / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    path.write_text(json.dumps(data), encoding="utf-8")
    return folder


@pytest.mark.parametrize("which", ["tokenizer_config.json", "config.json"])
def test_custom_code_in_blanken_is_refused_and_never_run(which, tiny_v2_dir, tmp_path):
    """Someone answering "y" (here: stdin already holds "y") must never get the chance: no prompt, no import."""
    import os
    import subprocess
    import sys

    from tests.support.paths import REPO_ROOT

    folder = _with_custom_code(tiny_v2_dir, tmp_path, which)
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf")}
    result = subprocess.run([sys.executable, "-c", OPEN_FOLDER, str(folder)], input="y\ny\n", capture_output=True,
                            text=True, env=env, timeout=120, cwd=REPO_ROOT)
    output = result.stdout + result.stderr
    assert not (folder / "CosyVoice-BlankEN" / "RAN").exists(), "the model folder's Python file was run"
    assert not list((tmp_path / "hf").rglob("evil_code.py")), "the custom code was copied into the module cache"
    assert "[y/N]" not in output and "trust_remote_code" not in output, output[-2000:]
    assert result.returncode == 2, output[-2000:]
    line = result.stdout.strip().removeprefix("REFUSED: ")
    assert one_line(line) and which in line and "custom code" in line, line


def test_custom_code_is_refused_in_process_as_one_config_error(tiny_v2_dir, tmp_path):
    from cosydesk.frontend.tokenizer import load_tokenizer

    folder = _with_custom_code(tiny_v2_dir, tmp_path, "tokenizer_config.json")
    with pytest.raises(ConfigError, match="custom code") as caught:
        load_tokenizer("v2", folder)
    assert str(folder / "CosyVoice-BlankEN" / "tokenizer_config.json") in str(caught.value)
    assert not (folder / "CosyVoice-BlankEN" / "RAN").exists()


# ------------------------------------------------------------------------------ NaN / inf / garbage never written
NAN_SENTENCE = "你好，世界。"


@pytest.fixture
def model_copy(tiny_v2_dir, tmp_path):
    import shutil

    return Path(shutil.copytree(tiny_v2_dir, tmp_path / "model"))


@pytest.mark.parametrize("name,value", [("flow.pt", float("nan")), ("llm.pt", float("inf")), ("hift.pt", float("-inf"))])
def test_non_finite_weights_are_refused_at_load(name, value, model_copy):
    import torch

    from cosydesk.model.checkpoint import CheckpointError
    from cosydesk.model.cosyvoice import load

    state = torch.load(model_copy / name, weights_only=True)
    key = next(k for k, v in state.items() if v.is_floating_point() and v.numel() > 1)
    state[key].view(-1)[1] = value
    torch.save(state, model_copy / name)
    with pytest.raises(CheckpointError) as caught:
        load(model_copy)
    message = str(caught.value)
    assert one_line(message) and str(model_copy / name) in message and key in message and "NaN" in message, message


def _cli_say(monkeypatch, capsys, *args: str) -> tuple[int, str]:
    from cosydesk import cli

    capsys.readouterr()
    code = within(120.0, lambda: cli.main(["say", *args]))
    return code, capsys.readouterr().err


def test_nan_speaker_embedding_is_one_line_and_no_wav(model_copy, tmp_path, monkeypatch, capsys):
    import torch

    table = torch.load(model_copy / "spk2info.pt", weights_only=True)
    table["中文女"]["embedding"][0, 3] = float("nan")
    torch.save(table, model_copy / "spk2info.pt")
    out = tmp_path / "out.wav"
    code, err = _cli_say(monkeypatch, capsys, NAN_SENTENCE, "--model", str(model_copy), "--speaker", "中文女",
                         "--device", "cpu", "-o", str(out))
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1 and lines[0].startswith("cosydesk: error:"), err
    assert "spk2info.pt" in lines[0] and "NaN" in lines[0]
    assert not out.exists() and not list(tmp_path.glob("*.part"))


def _voiced(path: Path, scale: float) -> Path:
    import numpy as np
    import soundfile as sf

    rate = 16000
    t = np.arange(3 * rate) / rate
    phase = 2 * np.pi * np.cumsum(140 + 20 * np.sin(2 * np.pi * 3 * t)) / rate
    wav = sum(np.sin(k * phase) / k for k in range(1, 6)) * 0.2 * scale
    sf.write(path, wav.astype(np.float32), rate, subtype="FLOAT")
    return path


@pytest.fixture(scope="module")
def synth(tiny_v2_dir):
    from cosydesk.runtime import Synthesizer

    return Synthesizer(tiny_v2_dir, device="cpu")


def test_prompt_scaled_by_1e30_is_a_prompt_error(synth, tmp_path):
    from cosydesk.runtime import Request
    from cosydesk.runtime.errors import SynthesisError

    prompt = _voiced(tmp_path / "loud.wav", 1e30)
    with pytest.raises(SynthesisError) as caught:
        synth.synthesize(Request(NAN_SENTENCE, prompt_wav=str(prompt), prompt_text="提示文本。", seed=1))
    assert one_line(str(caught.value)) and "loud.wav" in str(caught.value), caught.value


@pytest.mark.parametrize("garbage", ["nan", "inf", "full_scale"])
def test_a_model_producing_garbage_is_refused_before_anything_is_written(garbage, synth, tiny_v2_dir, tmp_path,
                                                                         monkeypatch, capsys):
    """Whatever the cause (here the vocoder's output is replaced), NaN/inf or pinned samples never reach a file."""
    import cosydesk.runtime
    import torch

    from cosydesk.runtime import Request
    from cosydesk.runtime.errors import InvalidAudioError
    from cosydesk.runtime.token2wav import Token2Wav

    real = Token2Wav._hift

    def broken(self, mel, cache_source):
        speech, source = real(self, mel, cache_source)
        if garbage == "full_scale":
            return torch.full_like(speech, -0.99), source
        speech = speech.clone()
        speech[..., ::7] = float(garbage)
        return speech, source

    monkeypatch.setattr(Token2Wav, "_hift", broken)
    with pytest.raises(InvalidAudioError) as caught:
        synth.synthesize(Request(NAN_SENTENCE, speaker="中文女", seed=1))
    assert one_line(str(caught.value))
    monkeypatch.setattr(cosydesk.runtime, "Synthesizer", lambda model_dir, **options: synth)
    out = tmp_path / "out.wav"
    for stream in ((), ("--no-stream",)):
        code, err = _cli_say(monkeypatch, capsys, NAN_SENTENCE, "--model", str(tiny_v2_dir), "--speaker", "中文女",
                             "-o", str(out), *stream)
        assert code == 2 and err.startswith("cosydesk: error:") and "invalid audio" in err, err
        assert not out.exists() and not list(tmp_path.glob("*.part"))
    monkeypatch.setattr(Token2Wav, "_hift", real)
    assert synth.synthesize(Request(NAN_SENTENCE, speaker="中文女", seed=1)).size > 0  # the model still works


def test_campplus_returning_nan_is_a_prompt_error(model_copy, tmp_path):
    import numpy as np
    import onnx
    from onnx import numpy_helper

    from cosydesk.runtime import Request, Synthesizer
    from cosydesk.runtime.errors import PromptError

    model = onnx.load(str(model_copy / "campplus.onnx"))
    for index, weights in enumerate(model.graph.initializer):
        array = numpy_helper.to_array(weights).copy()
        if array.dtype == np.float32:
            array.flat[0] = np.nan
            model.graph.initializer[index].CopyFrom(numpy_helper.from_array(array, weights.name))
    onnx.save(model, str(model_copy / "campplus.onnx"))
    synth = Synthesizer(model_copy, device="cpu")
    with pytest.raises(PromptError, match="campplus") as caught:
        synth.synthesize(Request(NAN_SENTENCE, prompt_wav=str(_voiced(tmp_path / "p.wav", 1.0)), prompt_text="提示文本。"))
    assert one_line(str(caught.value))
