"""Where the app's icons, style sheet and translations are (repo checkout or installed package)."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path


@lru_cache(maxsize=1)
def resources_dir() -> Path:
    here = Path(__file__).resolve()
    for candidate in (here.parents[1] / "resources", here.parents[2] / "resources"):
        if (candidate / "icons").is_dir():
            return candidate
    return here.parents[2] / "resources"


def icon_path() -> Path:
    return resources_dir() / "icons" / "cosydesk.svg"


def voice_profile_icon_path() -> Path:
    """The microphone that marks a recorded voice profile in the voice list (an emoji needs a font most systems
    lack)."""
    return resources_dir() / "icons" / "voice-profile.svg"


def style_sheet() -> str:
    path = resources_dir() / "styles" / "cosydesk.qss"
    return path.read_text(encoding="utf-8") if path.is_file() else ""


def translations_dir() -> Path:
    return resources_dir() / "translations"
