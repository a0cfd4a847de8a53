"""The app's persistent settings: one QSettings wrapper with an enum of keys (no string keys elsewhere).

What it is for: model folder, device, backend, audio output device, UI language and a few UI choices,
stored in an INI file under the user's config dir (or under COSYDESK_DATA_DIR when that is set, so tests
and portable installs stay self-contained).

What it must not do: hold runtime state or import the runtime.
"""

from __future__ import annotations

import json
import math
import os
from enum import Enum
from pathlib import Path
from typing import Any

from PySide6.QtCore import QSettings

from cosydesk.paths import data_dir_override
from cosydesk.runtime.backends import CHOICES as BACKEND_CHOICES


class Key(str, Enum):
    MODEL_DIR = "model/dir"
    EXTRA_MODEL_DIRS = "model/extra_dirs"  # folders added with "Add folder…" (JSON list)
    RECENT_TEXT_FILES = "files/recent_text"  # File > Open Recent, newest first (JSON list)
    DEVICE = "runtime/device"  # auto | cpu | cuda | cuda:N
    BACKEND = "runtime/backend"  # auto | eager | cudagraph | tensorrt
    PRECISION = "runtime/precision"  # auto | fp32 | fp16
    AUDIO_DEVICE = "audio/output_device"  # "" = system default, else a PortAudio device name
    LANGUAGE = "ui/language"  # system | en | zh_CN
    SPEAKER = "voice/speaker"
    STYLE = "voice/style"
    SPEED = "voice/speed"
    EXPORT_FOLDER = "export/folder"  # where the last export went ("" = the user's Music, or home, folder)
    EXPORT_DIR = "export/folder"  # the same key (an Enum alias): the Preferences dialog's name for it
    EXPORT_FORMAT = "export/format"  # wav | flac | mp3 | opus | ogg: what Export offers first
    THEME = "ui/theme"  # system | light | dark
    HISTORY_SIZE = "history/max_entries"  # utterances kept in History; older ones are removed
    VOICE_PROMPT_MAX_S = "voice/prompt_max_s"  # longest recording a new voice profile takes (<= 30 s)
    GEOMETRY = "ui/geometry"
    WINDOW_STATE = "ui/window_state"
    SERVE_ENABLED = "serve/enabled"  # "Serve other apps": the speech API inside the app (ui/serve_switch.py)
    SERVE_HOST = "serve/host"  # loopback unless an API key is set (the rule of `cosydesk serve`)
    SERVE_PORT = "serve/port"
    SERVE_API_KEY = "serve/api_key"  # "" = none (then COSYDESK_API_KEY, if set)


DEFAULTS: dict[Key, Any] = {
    Key.MODEL_DIR: "",
    Key.EXTRA_MODEL_DIRS: [],
    Key.RECENT_TEXT_FILES: [],
    Key.DEVICE: "auto",
    Key.BACKEND: "auto",
    Key.PRECISION: "auto",
    Key.AUDIO_DEVICE: "",
    Key.LANGUAGE: "system",
    Key.SPEAKER: "",
    Key.STYLE: "",
    Key.SPEED: 1.0,
    Key.THEME: "system",
    Key.EXPORT_FORMAT: "wav",
    Key.EXPORT_FOLDER: "",
    Key.HISTORY_SIZE: 500,
    Key.VOICE_PROMPT_MAX_S: 30.0,
    Key.GEOMETRY: b"",
    Key.WINDOW_STATE: b"",
    Key.SERVE_ENABLED: False,
    Key.SERVE_HOST: "127.0.0.1",
    Key.SERVE_PORT: 8000,
    Key.SERVE_API_KEY: "",
}

CHOICES: dict[Key, tuple[str, ...]] = {
    Key.DEVICE: ("auto", "cpu", "cuda"),
    Key.BACKEND: BACKEND_CHOICES,
    Key.PRECISION: ("auto", "fp32", "fp16"),
    Key.LANGUAGE: ("system", "en", "zh_CN"),
    Key.THEME: ("system", "light", "dark"),
    Key.EXPORT_FORMAT: ("wav", "flac", "mp3", "opus", "ogg"),
}

#: Numeric settings outside these bounds (hand-edited files) are clamped into them.
RANGES: dict[Key, tuple[float, float]] = {
    Key.HISTORY_SIZE: (10, 5000),
    Key.VOICE_PROMPT_MAX_S: (5.0, 30.0),
    Key.SPEED: (0.25, 4.0),  # cosydesk.runtime.types.SPEED_RANGE (not imported: settings stays free of runtime)
}


MAX_PATH_CHARS = 4096  # PATH_MAX on Linux; a longer "path" makes os.stat raise ENAMETOOLONG


def _usable_path(value: Any) -> bool:
    return isinstance(value, str) and 0 < len(value) <= MAX_PATH_CHARS and "\0" not in value


class Settings:
    """Typed access to QSettings. Values come back with the type of their default."""

    def __init__(self, qsettings: QSettings | None = None) -> None:
        self._q = qsettings if qsettings is not None else self._default_store()

    @staticmethod
    def _default_store() -> QSettings:
        override = data_dir_override()
        if override is not None:
            return QSettings(str(Path(override) / "settings.ini"), QSettings.Format.IniFormat)
        return QSettings(QSettings.Format.IniFormat, QSettings.Scope.UserScope, "cosydesk", "cosydesk")

    @classmethod
    def at(cls, ini_path: str | os.PathLike) -> Settings:
        return cls(QSettings(str(ini_path), QSettings.Format.IniFormat))

    @property
    def file_name(self) -> str:
        return self._q.fileName()

    def get(self, key: Key) -> Any:
        default = DEFAULTS[key]
        raw = self._q.value(key.value, None)
        if raw is None:
            return default
        try:
            if isinstance(default, bool):
                return raw if isinstance(raw, bool) else str(raw).lower() in ("1", "true", "yes")
            if isinstance(default, (int, float)):
                value = float(raw)
                if not math.isfinite(value):
                    return default
                low, high = RANGES.get(key, (-math.inf, math.inf))
                value = min(max(value, low), high)
                return int(round(value)) if isinstance(default, int) else value
            if isinstance(default, list):
                value = json.loads(raw) if isinstance(raw, str) else list(raw)
                # every list setting is a list of paths: a number, null, an object or a NUL in one is dropped
                # (Path(5) or a NUL byte would raise wherever the path is used, e.g. at start-up)
                return [v for v in value if _usable_path(v)] if isinstance(value, list) else default
            if isinstance(default, bytes):
                return bytes(raw.data()) if hasattr(raw, "data") else bytes(raw)
            value = str(raw)
        except (TypeError, ValueError, RecursionError, OverflowError):  # RecursionError: JSON nested thousands deep
            return default
        choices = CHOICES.get(key)
        if choices and not any(value == c or value.startswith(c + ":") for c in choices):
            return default  # a hand-edited or outdated value must not break start-up
        return value

    def set(self, key: Key, value: Any) -> None:
        if isinstance(DEFAULTS[key], list):
            value = json.dumps(list(value), ensure_ascii=False)
        self._q.setValue(key.value, value)

    def reset(self, key: Key) -> None:
        self._q.remove(key.value)

    def sync(self) -> None:
        self._q.sync()
