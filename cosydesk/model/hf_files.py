"""The Hugging Face json files of a model folder (CosyVoice-BlankEN's config.json, tokenizer_config.json) read
as untrusted data: size-limited, parsed as plain JSON, refused when they ask for custom code.

Why: transformers' Auto* classes follow an ``auto_map`` entry to Python files in the folder and, unless told
otherwise, ask on stdin "Do you wish to run the custom code? [y/N]" - answering y runs whatever the folder holds.
CosyDesk never runs code from a model folder, so such a file is refused before transformers sees it, and every
transformers call passes ``trust_remote_code=False`` as well. No heavy imports here.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cosydesk.model.config import ConfigError, read_regular_file

MAX_JSON_BYTES = 16 * 1024 * 1024  # tokenizer_config.json of a Qwen2 tokenizer: ~10 KB; tokenizer.json: ~7 MB
# keys through which a transformers json file names code to import
CUSTOM_CODE_KEYS = ("auto_map", "custom_pipelines")
# files of CosyVoice-BlankEN that AutoTokenizer / AutoConfig read
BLANKEN_JSON_FILES = ("config.json", "tokenizer_config.json")


def read_json_object(path: Path, what: str = "settings") -> dict[str, Any]:
    """A json file's top-level object. ConfigError (naming the file) for a non-regular file (a FIFO never
    blocks), one over MAX_JSON_BYTES, invalid or too deeply nested JSON, or anything but an object."""
    data = read_regular_file(path, MAX_JSON_BYTES, f"too large for {what}")
    if not data.strip():
        raise ConfigError(f"{path}: the file is empty: it should hold {what} as JSON")
    try:
        value = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as err:
        raise ConfigError(f"{path}: not valid JSON ({' '.join(str(err).split())[:200]})") from err
    except RecursionError as err:
        raise ConfigError(f"{path}: nested too deeply to be {what}") from err
    if not isinstance(value, dict):
        raise ConfigError(f"{path}: does not hold a JSON object of {what}")
    return value


def refuse_custom_code(path: Path, data: dict[str, Any]) -> None:
    """ConfigError if ``data`` (the contents of ``path``) asks transformers to import code from the folder."""
    asked = [key for key in CUSTOM_CODE_KEYS if key in data]
    if asked:
        raise ConfigError(f"{path}: asks to run custom code from the model folder ({', '.join(asked)}); CosyDesk "
                          "never runs a model folder's code: use the released CosyVoice-BlankEN files")


def check_blanken_folder(folder: Path) -> None:
    """Refuse a CosyVoice-BlankEN folder whose config.json or tokenizer_config.json names custom code."""
    for name in BLANKEN_JSON_FILES:
        path = Path(folder) / name
        if path.exists() or path.is_symlink():
            refuse_custom_code(path, read_json_object(path))


# CosyVoice-BlankEN/config.json: the Qwen2 backbone's sizes (Qwen2-0.5B: 896 wide, 14/2 heads, 24 layers,
# intermediate 4864, vocabulary 151,936), each a whole number in its range or the file is refused.
QWEN_SIZE_RULES = {
    "hidden_size": (1, 65_536), "num_attention_heads": (1, 1_024), "num_key_value_heads": (1, 1_024),
    "num_hidden_layers": (1, 1_000), "intermediate_size": (1, 262_144), "vocab_size": (1, 1_000_000),
    "head_dim": (1, 4_096), "max_position_embeddings": (1, 10_000_000),
}
QWEN_REQUIRED = ("hidden_size", "num_attention_heads", "num_hidden_layers", "intermediate_size", "vocab_size")


def check_qwen_config_values(path: Path, data: dict[str, Any]) -> None:
    """ConfigError naming ``path`` (a BlankEN config.json) when a backbone size is missing, not a whole number,
    out of range, or inconsistent (heads that do not divide the width; query heads not a multiple of kv heads)."""
    for key in QWEN_REQUIRED:
        if key not in data:
            raise ConfigError(f"{path}: {key} is missing: the Qwen2 backbone's size is read from it")
    for key, (low, high) in QWEN_SIZE_RULES.items():
        value = data.get(key)
        if value is None and key not in QWEN_REQUIRED:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise ConfigError(f"{path}: {key} is {value!r}: it must be a whole number from {low:,} to {high:,}")
    for key in ("rms_norm_eps", "rope_theta"):
        value = data.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0
                                  or value == float("inf")):
            raise ConfigError(f"{path}: {key} is {value!r}: it must be a positive number")
    heads = data["num_attention_heads"]
    kv_heads = data.get("num_key_value_heads") or heads
    if "head_dim" not in data and data["hidden_size"] % heads:
        raise ConfigError(f"{path}: hidden_size {data['hidden_size']} is not a multiple of num_attention_heads {heads}")
    if heads % kv_heads:
        raise ConfigError(f"{path}: num_attention_heads {heads} is not a multiple of num_key_value_heads {kv_heads}")


# Text tokenizer files of CosyVoice-BlankEN (Qwen2 byte-level BPE), parsed here before transformers sees them
# so that a damaged file is one line naming it, not a `tokenizers` exception.
TOKENIZER_JSON_FILES = ("vocab.json", "tokenizer.json", "tokenizer_config.json", "added_tokens.json",
                        "special_tokens_map.json")
MAX_MERGES_BYTES = 64 * 1024 * 1024


def _check_vocab(path: Path, vocab: dict[str, Any]) -> None:
    if not vocab:
        raise ConfigError(f"{path}: the vocabulary is empty")
    for token, index in vocab.items():
        if isinstance(index, bool) or not isinstance(index, int) or index < 0:
            raise ConfigError(f"{path}: token {token[:40]!r} has id {index!r}: ids are whole numbers from 0")


def _check_merges(path: Path) -> None:
    data = read_regular_file(path, MAX_MERGES_BYTES, "too large for BPE merges")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ConfigError(f"{path}: not UTF-8 text (byte {err.start}): not a BPE merges file") from err
    lines = [line for line in text.splitlines() if line.strip() and not line.startswith("#version")]
    if not lines:
        raise ConfigError(f"{path}: holds no merges (the file is empty)")
    for number, line in enumerate(lines[:1_000_000], start=1):
        if len(line.split(" ")) != 2 or "\x00" in line:
            raise ConfigError(f"{path}: merge {number} is {line[:40]!r}: each line is two tokens separated by a space")


def check_tokenizer_files(folder: Path) -> None:
    """Each tokenizer file present in ``folder`` (BlankEN) parsed as what it must be: JSON objects (vocab.json a
    token -> id map, tokenizer.json with a ``model``), merges.txt as UTF-8 pairs; none asks for custom code.
    Absent files are left to the tokenizer loader (which names the ones it needs)."""
    folder = Path(folder)
    for name in TOKENIZER_JSON_FILES:
        path = folder / name
        if not (path.exists() or path.is_symlink()):
            continue
        data = read_json_object(path, "tokenizer settings")
        refuse_custom_code(path, data)
        if name == "vocab.json":
            _check_vocab(path, data)
        if name == "tokenizer.json" and not isinstance(data.get("model"), dict):
            raise ConfigError(f"{path}: holds no tokenizer \"model\": not a Hugging Face tokenizer.json")
    merges = folder / "merges.txt"
    if merges.exists() or merges.is_symlink():
        _check_merges(merges)
