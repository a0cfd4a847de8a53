"""zh_CN covers every message of cosydesk/model/ and cosydesk/runtime/tensorrt/ (issue 29 item 7, defect D15).

Three ways in: every raise site of those packages rendered with placeholder fields; the sub-phrases the code passes
into its messages (config_values' rules, hf_files' ``what``) as the code builds them; and each load case of
tests/data/malformed_model_folders.json run through the real folder check, whose message must come out Chinese
with nothing English left but names (files, keys, classes, CUDA, ONNX, …).

The matcher here follows the rules of cosydesk/ui/message_tables (anchored full match, lazy fields, entries with
more literal text first, a field translated when it fully matches an entry) until ui/error_text.py is merged.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from cosydesk.ui.message_tables.model import FILE_MESSAGES, PHRASES, ZH_CN
from tests.reliability.malformed_folders import CASES, make_case_folder

REPO = Path(__file__).resolve().parents[2]
SOURCES = sorted((REPO / "cosydesk" / "model").glob("*.py")) + sorted((REPO / "cosydesk/runtime/tensorrt").glob("*.py"))
CJK = re.compile(r"[\u4e00-\u9fff]")
FIELD = re.compile(r"\{(\d+)\}")
# names a Chinese message keeps as they are (besides identifiers: words with digits, "_", "." or inner capitals)
NAMES = {"CUDA", "ONNX", "TensorRT", "CosyVoice", "CosyDesk", "JSON", "YAML", "NaN", "inf", "BPE", "FFT", "GPU",
         "NVIDIA", "LLM", "HiFT", "CFM", "SFT", "KB", "GB", "PyTorch", "Conformer", "Hugging", "Face", "None",
         "llm", "flow", "hift", "tensorrt", "cudagraph", "cuda-python", "str", "int", "float", "list", "dict", "bool",
         "tuple", "N", "L", "token", "id"}

# ------------------------------------------------------------------ local matcher (until ui/error_text.py lands)
GENERIC = {"{0}: {1}": "{0}：{1}", "Cannot load {0}: {1}": "无法加载 {0}：{1}"}  # entries of the app's own table


def _entries():
    entries = []
    for english, chinese in {**GENERIC, **ZH_CN}.items():
        parts, position = [], 0
        for match in FIELD.finditer(english):
            parts += [re.escape(english[position:match.start()]), "(.*?)"]
            position = match.end()
        parts.append(re.escape(english[position:]))
        literal = FIELD.sub("", english)
        entries.append((-len(literal), english, re.compile("".join(parts), re.DOTALL), chinese,
                        not re.search("[A-Za-z]", literal)))
    return sorted(entries)


ENTRIES = _entries()


def _translate(text: str, depth: int = 0) -> str | None:
    if depth > 6 or not text.strip():
        return None
    for _, _, pattern, chinese, needs_translated_field in ENTRIES:
        match = pattern.fullmatch(text) or pattern.fullmatch(text[:1].lower() + text[1:])
        if match is None:
            continue
        inner = [_translate(value, depth + 1) for value in match.groups()]
        if needs_translated_field and all(value is None for value in inner):
            continue
        fields = [new if new is not None else old for old, new in zip(match.groups(), inner)]
        return FIELD.sub(lambda m: fields[int(m.group(1))], chinese)
    return None


def translate_message(text: str, language: str = "zh_CN") -> str:
    translated = _translate(text)
    return text if translated is None else translated


# ---------------------------------------------------- local raise-site walker (until raise_sites.py lands)
def _template(node: ast.expr) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(part.value if isinstance(part, ast.Constant) else "\0" for part in node.values)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _template(node.left), _template(node.right)
        return None if left is None and right is None else (left or "\0") + (right or "\0")
    return None


def _alternatives(node: ast.expr) -> list[ast.expr]:
    if isinstance(node, ast.IfExp):
        return _alternatives(node.body) + _alternatives(node.orelse)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return [ast.BinOp(left, ast.Add(), right) for left in _alternatives(node.left)
                for right in _alternatives(node.right)]
    return [node]


def message_templates() -> list[tuple[str, str]]:
    """(where, template) for every message built in SOURCES: raised or returned exceptions, the right-hand
    text of config_values._bad and the reasons torch_bridge.unavailable_reason returns."""
    found = []
    for path in SOURCES:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            messages = []
            if isinstance(node, ast.Call) and node.args:
                name = getattr(node.func, "id", getattr(node.func, "attr", ""))
                if name.endswith("Error") or name == "_bad":
                    messages = [node.args[3] if name == "_bad" else node.args[0]]
            elif isinstance(node, ast.FunctionDef) and node.name == "unavailable_reason":
                messages = [n.value for n in ast.walk(node) if isinstance(n, ast.Return) and n.value is not None]
            for message in messages:
                for alternative in _alternatives(message):
                    template = _template(alternative)
                    if template is not None and re.search("[A-Za-z]", template.replace("\0", "")):
                        numbered = iter(range(99))
                        found.append((f"{path.relative_to(REPO)}:{node.lineno}",
                                      re.sub("\0", lambda _: "{%d}" % next(numbered), template)))
    return found


def sample_of(template: str) -> str:
    return FIELD.sub(lambda match: f"‹{match.group(1)}›", template)


# ------------------------------------------------------------------ what counts as English left over
def _words(text: str) -> list[str]:
    """English words of `text`, leaving out quoted values, `commands`, <keys>, !tags, --options and paths."""
    text = re.sub(r"pip install [^（）();]*|'[^']*'|\"[^\"]*\"|`[^`]*`|<[^<>]*>|![\w:]+|--[\w-]+|#\w*|\S*/\S*", " ", text)
    words = re.findall(r"(?<![A-Za-z0-9_.])[A-Za-z][A-Za-z0-9_.\-']*", text)
    return [word.rstrip(".'-") for word in words if not _is_name(word.rstrip(".'-"))]


def _is_name(word: str) -> bool:
    return (word in NAMES or bool(re.search(r"[0-9_.]", word)) or bool(re.search(r"[a-z][A-Z]", word))
            or (word.isupper() and len(word) > 1) or "-" in word and any(c.isupper() for c in word))


def english_left(template: str, translated: str) -> list[str]:
    """Words of the template's literal text still present in the translation."""
    return sorted(set(_words(FIELD.sub(" ", template))) & set(_words(translated)))


# ------------------------------------------------------------------ tests
def test_the_walker_finds_the_packages_messages():
    templates = {template for _, template in message_templates()}
    assert len(templates) > 150
    for known in ("{0}: speaker {1} has no 'embedding' (an SFT speaker holds its [1, 192] speaker vector there)",
                  "{0} (CosyVoice works on {1}-bin mels)", "{0} could not parse {1}: {2}",
                  "no TensorRT flavour supports this GPU (compute capability {0}.{1}); use --backend cudagraph",
                  "{0}: missing key {1} (and {2} more) - the file does not match the model described by the yaml"):
        assert known in templates, known


@pytest.mark.parametrize("where,template", message_templates(), ids=lambda value: str(value)[:60])
def test_every_message_of_model_and_tensorrt_is_chinese(where, template):
    sample = sample_of(template)
    translated = translate_message(sample, "zh_CN")
    assert CJK.search(translated), f"{where}: {sample!r} is not translated"
    left = english_left(template, translated)
    assert not left, f"{where}: {translated!r} still says {left}"
    for index in range(len(FIELD.findall(template))):  # every value the message carries is still shown
        assert f"‹{index}›" in translated or where.endswith(("validate.py:151", "config.py:291")), (where, translated)


def test_the_table_is_well_formed():
    source = ast.parse((REPO / "cosydesk/ui/message_tables/model.py").read_text(encoding="utf-8"))
    keys = [ast.literal_eval(key) for node in ast.walk(source) if isinstance(node, ast.Dict)
            for key in node.keys if key is not None]
    assert len(keys) == len(set(keys)), "an English template is listed twice"
    derived = [english for english in FILE_MESSAGES if not english.startswith("{")]
    assert len(ZH_CN) == len(PHRASES) + len(FILE_MESSAGES) + len(derived), "a '<file>: ' form is also listed by hand"
    for english, chinese in ZH_CN.items():
        fields = set(FIELD.findall(english))
        assert set(FIELD.findall(chinese)) <= fields, english
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


LOAD_CASES = [case for case in CASES if not case.get("prompt")]


@pytest.fixture(scope="module")
def malformed_messages(tiny_v1_dir, tiny_v2_dir, tmp_path_factory):
    """case id -> (message, folder) of every load case, from the check the app runs before it loads a folder."""
    from cosydesk.runtime.synthesizer import check_model_folder

    messages = {}
    for case in LOAD_CASES:
        root = tmp_path_factory.mktemp(case["id"])
        folder = make_case_folder(case, {"v1": tiny_v1_dir, "v2": tiny_v2_dir}, root)
        with pytest.raises(ValueError) as caught:
            check_model_folder(folder)
        messages[case["id"]] = (str(caught.value), folder, root)
    return messages


@pytest.mark.parametrize("case_id", [case["id"] for case in LOAD_CASES])
def test_malformed_folder_refusal_reads_in_chinese(case_id, malformed_messages):
    message, folder, root = malformed_messages[case_id]
    assert message.startswith(str(folder)), message
    translated = translate_message(message, "zh_CN")
    assert translated.startswith(str(folder)), translated  # the file it names stays in front
    tail = translated[len(str(folder)):].replace(str(root), "")
    assert CJK.search(tail), f"{case_id}: {translated!r}"
    assert not _words(tail), f"{case_id}: {translated!r} still says {_words(tail)}"
