"""zh_CN covers every message of cosydesk/model/ and cosydesk/runtime/backends/tensorrt/ (issue 29 item 7, defect D15).

Three ways in: every raise site of those packages rendered with placeholder fields; the sub-phrases the code passes
into its messages (config_values' rules, hf_files' ``what``, json / PyYAML errors) as the code builds them; and
each of the 55 cases of tests/data/malformed_model_folders.json, its message made by the app's own path (the
synthesis worker's refusal of the folder, or the ONNX frontend a voice-cloning request runs), which must come out
Chinese with nothing English left but names (files, keys, classes, CUDA, ONNX, …).

Translation is the app's (ui/error_text.translate_message over every table); the raise sites come from
tests/support/raise_sites.py.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from cosydesk.ui.error_text import translate_message
from cosydesk.ui.message_tables.model import FILE_MESSAGES, PHRASES, ZH_CN
from tests.reliability.malformed_folders import CASES, make_case_folder
from tests.support.paths import REPO_ROOT
from tests.support.raise_sites import call_sites, literal_text, python_files, raise_sites, returned_sites, sample_of

REPO = REPO_ROOT
# runtime/backends/tensorrt/cli.py is `cosydesk engines`: it talks to a terminal, never to the app
SOURCES = python_files(REPO / "cosydesk" / "model", REPO / "cosydesk" / "runtime" / "backends" / "tensorrt", exclude=("cli.py",))
CJK = re.compile(r"[\u4e00-\u9fff]")
FIELD = re.compile(r"\{(\d+)\}")
# names a Chinese message keeps as they are (besides identifiers: words with digits, "_", "." or inner capitals)
NAMES = {"CUDA", "ONNX", "TensorRT", "CosyVoice", "CosyDesk", "JSON", "YAML", "NaN", "inf", "BPE", "FFT", "GPU",
         "NVIDIA", "LLM", "HiFT", "CFM", "SFT", "KB", "GB", "PyTorch", "Conformer", "Hugging", "Face", "None",
         "llm", "flow", "hift", "tensorrt", "cudagraph", "cuda-python", "str", "int", "float", "list", "dict", "bool",
         "tuple", "N", "L", "token", "id", "Hz",
         "Fail", "Reshape"}  # ONNX Runtime's exception class and an ONNX operator, quoted from onnxruntime


# quoted values, `commands`, <keys>, !tags, --options, #x hex and paths (ending at CJK text or full-width marks)
NOT_WORDS = re.compile(r"pip install [^（）();]*|“[^”]*”|'[^']*'|\"[^\"]*\"|`[^`]*`|<[^<>]*>|![\w:]+|--[\w-]+|#\w*"
                       r"|[^\s\u3000-\uffff]*/[^\s\u3000-\uffff]*")


def message_templates() -> list[tuple[str, str]]:
    """(where, template) for every message built in SOURCES: raised, the ConfigError that config_values._bad
    returns (and its right-hand text), and the reasons torch_bridge.unavailable_reason returns; each template
    once, those without a letter in their literal text (``{0}: {1}``, a pass-through) left out."""
    sites = list(raise_sites(SOURCES))
    sites += call_sites(SOURCES, {"ConfigError": (0,), "CheckpointError": (0,), "_bad": (3,)})
    sites += returned_sites(SOURCES, ("unavailable_reason",))
    found, seen = [], set()
    for site in sites:
        if site.template not in seen and re.search("[A-Za-z]", literal_text(site.template)):
            seen.add(site.template)
            found.append((f"{site.file.relative_to(REPO)}:{site.line}", site.template))
    return found


# ------------------------------------------------------------------ what counts as English left over
def _words(text: str) -> list[str]:
    """English words of `text`, leaving out quoted values, `commands`, <keys>, !tags, --options and paths."""
    text = NOT_WORDS.sub(" ", text)
    words = re.findall(r"(?<![A-Za-z0-9_.])[A-Za-z][A-Za-z0-9_.\-']*", text)
    return [word.rstrip(".'-") for word in words if not _is_name(word.rstrip(".'-"))]


def _is_name(word: str) -> bool:
    return (word in NAMES or bool(re.search(r"[0-9_.]", word)) or bool(re.search(r"[a-z][A-Z]", word))
            or (word.isupper() and len(word) > 1) or "-" in word and any(c.isupper() for c in word))


def english_left(template: str, translated: str) -> list[str]:
    """Words of the template's literal text still present in the translation."""
    return sorted(set(_words(FIELD.sub(" ", template))) & set(_words(translated)))


# ------------------------------------------------------------------ tests
def test_the_checks_can_fail():
    assert _words("/m/flow.pt：the file is damaged") == ["the", "file", "is", "damaged"]
    assert _words("/m/flow.pt：键 'w.x' 的形状为 [1, 2]，float32，CosyVoice-BlankEN/config.json") == []
    assert english_left("{0}: the checkpoint is missing", "‹0›：the checkpoint 不存在") == ["checkpoint", "the"]
    assert translate_message("/m/flow.pt: a message no table knows", "zh_CN") == "/m/flow.pt: a message no table knows"


def test_the_walker_finds_the_packages_messages():
    templates = {template for _, template in message_templates()}
    assert len(templates) > 150
    for known in ("{0}: speaker {1} has no 'embedding' (an SFT speaker holds its [1, 192] speaker vector there)",
                  "{0} (CosyVoice works on {1}-bin mels)", "{0} could not parse {1}: {2}",
                  "no TensorRT flavour supports this GPU (compute capability {0}.{1}); use --backend cudagraph",
                  "{0}: missing key {1}{2} - the file does not match the model described by the yaml"):
        assert known in templates, known


@pytest.mark.parametrize("where,template", message_templates(), ids=lambda value: str(value)[:60])
def test_every_message_of_model_and_tensorrt_is_chinese(where, template):
    sample = sample_of(template)
    translated = translate_message(sample, "zh_CN")
    assert CJK.search(translated), f"{where}: {sample!r} is not translated"
    left = english_left(template, translated)
    assert not left, f"{where}: {translated!r} still says {left}"
    for index in range(len(FIELD.findall(template))):  # every value the message carries is still shown
        assert f"‹{index}›" in translated, (where, translated)


def test_the_table_is_well_formed():
    source = ast.parse((REPO / "cosydesk/ui/message_tables/model.py").read_text(encoding="utf-8"))
    keys = [ast.literal_eval(key) for node in ast.walk(source) if isinstance(node, ast.Dict)
            for key in node.keys if key is not None]
    assert len(keys) == len(set(keys)), "an English template is listed twice"
    derived = [english for english in FILE_MESSAGES if not english.startswith("{")]
    assert len(ZH_CN) == len(PHRASES) + len(FILE_MESSAGES) + len(derived), "a '<file>: ' form is also listed by hand"
    for english, chinese in ZH_CN.items():
        fields = set(FIELD.findall(english))
        assert set(FIELD.findall(chinese)) == fields, english  # every value is shown, none invented
        assert CJK.search(chinese), english
        assert chinese == chinese.strip(), english
        if english.startswith("{0}"):  # a "<file>: " prefix caught in the first field stays in front
            assert chinese.startswith("{0}"), english
        assert not english_left(english, chinese), (english, english_left(english, chinese))


def test_every_setting_rule_reads_in_chinese():
    """config_values' rules describe what a key may hold; the describe() text is a field of the message."""
    from cosydesk.model import config_values

    rules = {**config_values.RULES, **config_values.TOP_RULES}
    for key, rule in rules.items():
        message = f"/m/cosyvoice2.yaml: flow.{key} is -7: it must be {rule.describe()}"
        translated = translate_message(message, "zh_CN")
        assert CJK.search(translated) and not english_left(message, translated), (key, translated)
        assert f"flow.{key}" in translated and "-7" in translated


@pytest.mark.parametrize("what", ["settings", "tokenizer settings", "a Qwen2 config"])
def test_hf_files_json_messages_read_in_chinese(tmp_path, what):
    from cosydesk.model.config import ConfigError
    from cosydesk.model.hf_files import read_json_object

    path = tmp_path / "config.json"
    for content in ("", "{oops", "[1, 2]", "{\"a\": 1} trailing", "{\"a\": \"\\q\"}"):
        path.write_text(content)
        with pytest.raises(ConfigError) as caught:
            read_json_object(path, what)
        message = str(caught.value)
        translated = translate_message(message, "zh_CN")
        tail = translated.removeprefix(str(path))
        assert CJK.search(tail) and not _words(tail), (message, translated)


def test_yaml_parser_messages_read_in_chinese(tmp_path):
    from cosydesk.model.config import ConfigError, read_yaml

    path = tmp_path / "cosyvoice2.yaml"
    for content in ("a: b: c\n", "a: [1, 2\n", "a:\n  - 1\n b: 2\n", "a: *missing\n", "x: 'open\n", "a: {b: 1\n",
                    "a: &x 1\nb: &x 2\n", "\tA: 1\n", "a: !foo 1\n", "? [1]\n: 2\n", "a: 1\x01\n",
                    "n: " + "9" * 5000 + "\n"):
        path.write_bytes(content.encode())
        with pytest.raises(ConfigError) as caught:
            read_yaml(path)
        message = str(caught.value)
        translated = translate_message(message, "zh_CN")
        tail = translated.removeprefix(str(path))
        assert CJK.search(tail) and not _words(tail), (message, translated)


def test_checkpoint_key_lists_read_in_chinese():
    """check_state_dict names the first missing / unexpected key and how many more there are."""
    import torch

    from cosydesk.model.checkpoint import CheckpointError, check_state_dict

    expected = {name: torch.zeros(2) for name in ("a.weight", "b.weight", "c.weight")}
    for state in ({"a.weight": torch.zeros(2)}, {"b.weight": torch.zeros(2), "c.weight": torch.zeros(2)},
                  {**expected, "d.weight": torch.zeros(2)}, {**expected, "d.x": torch.zeros(2), "e.x": torch.zeros(2)}):
        with pytest.raises(CheckpointError) as caught:
            check_state_dict(expected, state, "/m/flow.pt")
        translated = translate_message(str(caught.value), "zh_CN")
        assert translated.startswith("/m/flow.pt：") and not _words(translated[10:]), (str(caught.value), translated)


PROMPT_TEXT = "提示文本。"


@pytest.fixture(scope="module")
def prompt_wav(tmp_path_factory) -> Path:
    import numpy as np
    import soundfile as sf

    rate = 16000
    t = np.arange(3 * rate) / rate
    path = tmp_path_factory.mktemp("prompt") / "voice.wav"
    sf.write(path, (0.2 * np.sin(2 * np.pi * 150 * t)).astype(np.float32), rate)
    return path


def _refusal(folder: Path) -> str:
    """What the app's synthesis worker says when it is asked to load ``folder`` while a model is loaded."""
    from cosydesk.ui.worker import SynthWorker

    worker = SynthWorker(warmup=False)  # the real folder check (runtime.synthesizer.check_model_folder)
    worker.synth = object()  # a model is loaded: the folder is checked before that model is dropped for it
    refused = []
    worker.loadRefused.connect(refused.append)
    worker.load(str(folder), {})
    assert len(refused) == 1, f"{folder}: not refused"
    return refused[0]


def _prompt_error(folder: Path, tokenizer, wav: Path) -> str:
    """The error a voice-cloning request meets on ``folder``'s ONNX frontend, as the synthesizer computes it."""
    from cosydesk.runtime.request_inputs import RequestFrontend

    frontend = RequestFrontend("v2", folder, 24000, tokenizer, {})
    with pytest.raises(ValueError) as caught:
        frontend.prompt_features(str(wav), PROMPT_TEXT)
    return str(caught.value)


@pytest.fixture(scope="module")
def malformed_messages(qapp, tiny_v1_dir, tiny_v2_dir, prompt_wav, tmp_path_factory):
    """case id -> (message as the app gets it, folder, case root) for all cases of malformed_model_folders.json."""
    from cosydesk.frontend.tokenizer import load_tokenizer

    tokenizer = load_tokenizer("v2", tiny_v2_dir)
    messages = {}
    for case in CASES:
        root = tmp_path_factory.mktemp(case["id"])
        folder = make_case_folder(case, {"v1": tiny_v1_dir, "v2": tiny_v2_dir}, root)
        if case.get("prompt"):
            messages[case["id"]] = (_prompt_error(folder, tokenizer, prompt_wav), folder, root)
        else:
            messages[case["id"]] = (_refusal(folder), folder, root)
    return messages


@pytest.mark.parametrize("case_id", [case["id"] for case in CASES])
def test_malformed_folder_message_reads_in_chinese(case_id, malformed_messages):
    message, folder, root = malformed_messages[case_id]
    case = next(case for case in CASES if case["id"] == case_id)
    assert case["message"] in message, message  # the case's own message, not another failure
    translated = translate_message(message, "zh_CN")
    if not case.get("prompt"):
        assert message.startswith(f"Cannot load {folder.name}: {folder}/"), message
        assert translated.startswith(f"无法加载 {folder.name}：{folder}/"), translated
    assert str(folder / case["file"]) in translated, translated  # the file it names is still named
    tail = translated.removeprefix(f"无法加载 {folder.name}：").replace(str(folder / case["file"]), "")
    tail = tail.replace(str(root), "")
    assert CJK.search(tail), f"{case_id}: {translated!r}"
    assert not _words(tail), f"{case_id}: {translated!r} still says {_words(tail)}"
    assert translate_message(message, "en") == message
