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
    try:
        value = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as err:
        raise ConfigError(f"{path} is not valid JSON ({' '.join(str(err).split())})") from err
    except RecursionError as err:
        raise ConfigError(f"{path} is nested too deeply to be {what}") from err
    if not isinstance(value, dict):
        raise ConfigError(f"{path} does not hold a JSON object of {what}")
    return value


def refuse_custom_code(path: Path, data: dict[str, Any]) -> None:
    """ConfigError if ``data`` (the contents of ``path``) asks transformers to import code from the folder."""
    asked = [key for key in CUSTOM_CODE_KEYS if key in data]
    if asked:
        raise ConfigError(f"{path} asks to run custom code from the model folder ({', '.join(asked)}); CosyDesk "
                          "never runs a model folder's code: use the released CosyVoice-BlankEN files")


def check_blanken_folder(folder: Path) -> None:
    """Refuse a CosyVoice-BlankEN folder whose config.json or tokenizer_config.json names custom code."""
    for name in BLANKEN_JSON_FILES:
        path = Path(folder) / name
        if path.exists() or path.is_symlink():
            refuse_custom_code(path, read_json_object(path))
