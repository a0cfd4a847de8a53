"""zh_CN covers the messages built below the UI that the app shows (D15): every raise site and message builder of
runtime/ (tensorrt excepted: model.py's table), frontend/, audio/, hub.py, state_files.py, the file helpers,
the UI's own modules, the worker and the Diagnostics lines (doctor.py), found by an AST walk
(tests/support/raise_sites.py), translates into Chinese with no English word of its template left.

Messages that never reach the app are skipped below, each with its reason. cli.py and serve/ are not walked
and stay English: they talk to a terminal or an API client.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import cosydesk
from cosydesk.ui.error_text import FIELD, merged_table, translate_message
from tests.support.raise_sites import (MessageSite, assigned_sites, call_sites, literal_text, python_files,
                                       raise_sites, returned_sites, sample_of)

PACKAGE = Path(cosydesk.__file__).parent
CJK = re.compile(r"[\u4e00-\u9fff]")

RAISE_FILES = python_files(PACKAGE / "runtime", PACKAGE / "frontend", PACKAGE / "audio", PACKAGE / "ui",
                           *(PACKAGE / name for name in ("hub.py", "state_files.py", "atomic_file.py", "file_lock.py",
                                                          "voices_list.py")),
                           exclude=("tensorrt",))
BUILDER_FILES = python_files(PACKAGE / "audio", PACKAGE / "hub.py", PACKAGE / "ui" / "history.py",
                             PACKAGE / "runtime" / "request_inputs.py", PACKAGE / "doctor.py", PACKAGE / "qt_platform.py")
# Calls whose arguments are messages the app shows: name -> positions / keywords of the message arguments.
BUILDER_CALLS = {"append": (0,), "_report": (0,), "_set_aside": (0,), "_with_errno": (1,), "AudioInputError": (0,),
                 "ExportError": (0,), "PlatformReport": ("problem",)}
# Variables a message is built in before it is raised, emitted or shown: file -> variable names.
ASSIGNED = {
    "audio/player.py": ("last_error", "name"),
    "frontend/audio_io.py": ("where",),
    "runtime/request_inputs.py": ("what",),
    "state_files.py": ("note",),
    "ui/draft.py": ("problem",),
    "ui/worker.py": ("message",),
    "ui/engine_choices.py": ("reason", "trt_reason"),
    "doctor.py": ("where", "missing", "detail", "how", "label", "nvml_error", "cuda"),
    "qt_platform.py": ("what", "problem"),
}
RETURNED = {"doctor.py": ("_model_fix", "_weights_open"), "runtime/backends/__init__.py": ("measured_note",)}

# Never shown by the app, so never translated: file (relative to cosydesk/) -> why.
SKIPPED_FILES = {
    "runtime/buckets.py": "bucket sizes are chosen by the code, never by the user: an internal invariant",
    "runtime/backends/cudagraph/blocked_attention.py": "attention table shapes are the code's own buffers: an internal invariant",
    "runtime/backends/cudagraph/compile.py": "compile_blocks' arguments come from the code: an internal invariant",
    "runtime/backends/cudagraph/conv_kernels.py": "kernel shape checks (the code's own buffers): an internal invariant",
    "runtime/backends/cudagraph/dit_conv.py": "the kernel's load-time self-check: a failure is a RuntimeWarning in the log and the module stays",
    "runtime/backends/cudagraph/dit_prepared.py": "a released DiT is only ever called with its table by the code: an internal invariant",
    "runtime/backends/cudagraph/decode_kernels.py": "kernel launch parameters are constants of the code: an internal invariant",
    "runtime/backends/cudagraph/encoder.py": "which encoder is graphed is decided by the code: an internal invariant",
    "runtime/backends/cudagraph/flow_kernels.py": "mask shapes are the code's own buffers: an internal invariant",
    "runtime/backends/cudagraph/hift_padded.py": "padded vocoder buckets are the code's own buffers: an internal invariant",
    "runtime/backends/cudagraph/variants.py": "benchmark variant labels (cosydesk bench), not messages",
    "audio/ringbuffer.py": "the player's ring buffer size is a constant of the code: an internal invariant",
    "ui/single_instance.py": "printed to the terminal by app.claim_instance before any window exists",
    "voices_list.py": "`cosydesk voices` prints these to the terminal (CLI only); the app lists voices itself",
}
# Single templates never shown by the app: template -> why.
SKIPPED_TEMPLATES = {
    "stream() takes a cosydesk.runtime.Request": "a programming error of a caller of the Python API",
    "sample rates must be positive, got {0} -> {1}": "resample() is called with the code's own rates",
    "[{0}] {1}: {2}": "Check.line's layout for the terminal; the dialog lays out its lines itself (check_line)",
    "{0}\n       fix: {1}": "Check.line's layout for the terminal; the dialog lays out its lines itself (check_line)",
    "{0}\n{1} --> {2}\n{3}\n": "a subtitle cue (the file's content), not a message",
    "{0}\n{1} --> {2}\n{3}": "a subtitle cue (the file's content), not a message",
}
COMMAND = re.compile(r"^(pip|sudo|mkdir|cosydesk|winget) ")  # a fix that is a command to type stays verbatim

# Words that stay as they are in Chinese text: proper names, units, formats, options.
KEPT_WORDS = {
    "CUDA", "GPU", "GPUs", "CPU", "NVIDIA", "NVML", "ONNX", "TensorRT", "TensorRT-RTX", "CosyVoice", "CosyVoice3",
    "CosyDesk", "PortAudio", "PulseAudio", "PipeWire", "Python", "PySide6", "Qt", "torch", "RTX", "Turing", "Debian",
    "Ubuntu", "JSON", "UTF-8", "UTF", "WAV", "FLAC", "OGG", "MP3", "Opus", "LM", "LLM", "SFT", "BPE", "RMS", "NaN",
    "inf", "fp16", "fp32", "auto", "eager", "eager-fp16", "cudagraph", "tensorrt", "Hz", "kHz", "MB", "GB", "ms", "s",
    "cc", "VRAM", "CJK", "fc-list", "fontconfig", "nvidia-smi", "nvidia-ml-py", "sounddevice", "ulimit", "f", "v1",
    "v2", "v3", "id", "ids", "CosyVoice-BlankEN", "CosyVoice-300M-Instruct", "B", "T", "CIN", "COUT", "k", "flow",
    "cpu", "ok", "FOLDER", "eager-fp32", "token",
}
# Tokens removed before looking for words: file names, paths, options, keys, commands in backquotes.
NOT_WORDS = re.compile(r"`[^`]*`|(?<!\w)--?[a-z][\w-]*|[\w*.-]*\.(?:onnx|pt|yaml|json|txt|wav|srt|vtt|py)\b"
                       r"|\b[\w*]+_[\w*]+\b|\S+/\S*|“[^”]*”|\b\w+-\w+(?:-\w+)*\b|\b(?:apt|pip) install [^)）]+|\baplay -l\b")
WORD = re.compile(r"(?<![\w-])[A-Za-z][A-Za-z0-9']*")


def _relative(path: Path) -> str:
    return path.resolve().relative_to(PACKAGE.resolve()).as_posix()


def app_message_sites() -> list[MessageSite]:
    """Every message site of the modules the app shows messages from, skip-lists applied, one per template."""
    sites = list(raise_sites(RAISE_FILES)) + list(call_sites(BUILDER_FILES, BUILDER_CALLS))
    sites += call_sites([PACKAGE / "runtime" / "synthesizer.py"], {"progress": (0,)})
    sites += call_sites([PACKAGE / "doctor.py"], {"Check": (0, 2, 3, "detail", "fix")})
    sites += call_sites([PACKAGE / "ui" / "worker.py", PACKAGE / "ui" / "serve_switch.py"], {"emit": (0, 2)})
    for name, targets in ASSIGNED.items():
        sites += assigned_sites([PACKAGE / name], targets)
    for name, functions in RETURNED.items():
        sites += returned_sites([PACKAGE / name], functions)
    kept, seen = [], set()
    for site in sites:
        if _relative(site.file) in SKIPPED_FILES or site.template in SKIPPED_TEMPLATES or site.template in seen:
            continue
        seen.add(site.template)
        kept.append(site)
    return kept


def warmup_stage_samples() -> list[str]:
    """The load bar's stages of a GPU backend's warm-up, as the status bar shows them."""
    from cosydesk.runtime.synthesizer import WARMUP_STAGES

    return [f"{label} (3/12)" for _low, _high, label in WARMUP_STAGES.values()] + ["Warming up (1/4)"]


def english_words(template: str) -> list[str]:
    """The words of a template's literal text that a translation must not keep."""
    text = NOT_WORDS.sub(" ", literal_text(template))
    return [word for word in WORD.findall(text) if word not in KEPT_WORDS and word.strip("'") not in KEPT_WORDS]


def untranslated(sample: str, template: str) -> str | None:
    """Why the zh_CN translation of `sample` falls short (None when it is fine)."""
    words = english_words(template)
    if not words or COMMAND.match(template):
        return None
    translated = translate_message(sample, "zh_CN")
    if not CJK.search(translated):
        return f"no Chinese: {translated!r}"
    prose = NOT_WORDS.sub(" ", translated)
    left = [word for word in words if re.search(rf"(?<![A-Za-z]){re.escape(word)}(?![A-Za-z])", prose)]
    return f"English left {left}: {translated!r}" if left else None


def test_the_walk_finds_the_messages_the_app_shows():
    templates = {site.template for site in app_message_sites()}
    assert len(templates) > 200
    for expected in ("the text is empty: type something to say", "Cannot load {0}: {1}", "cannot import torch ({0})",
                     "{0} is missing (model weights)", "the recording is silent: check the microphone or pick "
                     "another file", "Loading model", "cannot open audio output on {0} at {1} Hz: {2}"):
        assert expected in templates


def test_every_message_the_app_shows_translates_into_chinese():
    problems = []
    for site in app_message_sites():
        why = untranslated(site.sample, site.template)
        if why:
            problems.append(f"{_relative(site.file)}:{site.line}: {site.template!r}: {why}")
    for sample in warmup_stage_samples():
        why = untranslated(sample, sample)
        if why:
            problems.append(f"runtime/synthesizer.py WARMUP_STAGES: {sample!r}: {why}")
    assert problems == [], ("messages without a zh_CN translation (add them to cosydesk/ui/message_tables/):\n"
                            + "\n".join(problems))


def test_the_check_can_fail():
    assert untranslated("a message no table knows", "a message no table knows")
    assert untranslated("Speed ‹0› is outside ‹1›-‹2› or so", "speed {0} is outside {1}-{2} or so")
    assert untranslated(sample_of("speed {0} is outside {1}-{2}"), "speed {0} is outside {1}-{2}") is None


def test_english_comes_back_byte_identical():
    for site in app_message_sites():
        assert translate_message(site.sample, "en") == site.sample
    assert translate_message("speed 3.0 is outside 0.5-2.0") == "speed 3.0 is outside 0.5-2.0"  # no language set


@pytest.mark.parametrize("language", ["zh_CN"])
def test_tables_keep_fields_and_format(language):
    table = merged_table(language)
    assert len(table) > 250
    for english, chinese in table.items():
        numbers = [int(n) for n in FIELD.findall(english)]
        assert numbers == list(range(len(numbers))), f"{english!r}: fields must be {{0}}, {{1}}, … in order"
        used = sorted(int(n) for n in FIELD.findall(chinese))
        dropped = set(numbers) - set(used)
        assert used == sorted(set(used)) and set(used) <= set(numbers), f"{english!r} -> {chinese!r}: fields differ"
        assert not dropped or english == "{0} entr{1} of {2} skipped ({3}{4})", f"{english!r}: drops {dropped}"
        if english_words(english):
            assert CJK.search(chinese), f"{english!r} -> {chinese!r} is not Chinese"
        assert chinese == chinese.strip() and english == english.strip(), f"{english!r}: stray spaces"


def test_matching_rules():
    zh = "zh_CN"
    assert translate_message("Speed 3.0 is outside 0.5-2.0", zh) == "语速 3.0 超出范围 0.5-2.0"  # sentence case
    # "<file>: <message>" and "Cannot load X: <message>" translate their tail, numbers and names verbatim
    assert translate_message("Cannot load Tiny: /m/a.wav: the text is empty: type something to say", zh) == \
        "无法加载 Tiny：/m/a.wav：文本为空：请输入要朗读的内容"
    assert translate_message("x.json is 1,234 bytes, more than the 1,000 it may hold", zh) == \
        "x.json 有 1,234 字节，超过了允许的 1,000 字节"
    # "; "-joined lists, nested phrases, several lines
    assert translate_message("llm.pt is missing (model weights); flow.pt is empty (an interrupted download?)", zh) \
        == "缺少 llm.pt（模型权重）；flow.pt 是空的（下载中断了？）"
    assert translate_message("not installed; not needed without an NVIDIA GPU", zh) == "未安装；没有 NVIDIA GPU 时不需要"
    assert translate_message("hift.pt is missing (model weights)\nflow.pt is missing (model weights)", zh) == \
        "缺少 hift.pt（模型权重）\n缺少 flow.pt（模型权重）"
    # a KeyError's quotes
    assert translate_message("'no history entry 42'", zh) == "没有历史条目 42"
    # unknown text, and joiners around unknown parts, come back unchanged
    for text in ("Something odd: really; twice", "RuntimeError: boom", "", "已经是中文：好"):
        assert translate_message(text, zh) == text
    assert translate_message("Cannot load X: RuntimeError: boom", zh) == "无法加载 X：RuntimeError: boom"
    assert translate_message("speed 3 is outside 1-2", "fr") == "speed 3 is outside 1-2"
