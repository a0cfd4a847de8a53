"""Where CosyDesk keeps its files on this machine: the data, models, engines and cache folders, in one place.

    data_dir()     settings, history, voice profiles, the editor draft   COSYDESK_DATA_DIR, else the platform's
                                                                         user data folder
    voices_dir()   saved voice profiles                                  <data>/voices
    models_dir()   downloaded models                                     COSYDESK_MODELS_DIR, else <data>/models
    engines_dir()  built TensorRT engines                                COSYDESK_ENGINES_DIR, else engines/ of a
                                                                         source checkout, else <data>/engines
    cache_dir()    rebuildable caches (torch.compile's kernels)          the platform's user cache folder

Every folder is computed here and nowhere else; the variables are read through ``cosydesk.environment`` (where
they are documented). Only data_dir() creates its folder; the others are created by whoever writes into them.

What it must not do: import torch, Qt or the runtime (the CLI imports it before any of them).
"""

from __future__ import annotations

from pathlib import Path

import platformdirs

from cosydesk import environment

APP_NAME = "cosydesk"
#: A source checkout: the folder holding pyproject.toml and the package (engines/ there is the engine cache).
_CHECKOUT = Path(__file__).resolve().parents[1]


def data_dir() -> Path:
    """Per-user data folder (history, voice profiles, models). COSYDESK_DATA_DIR overrides it (tests, portable use)."""
    override = environment.text("COSYDESK_DATA_DIR")
    path = Path(override) if override else Path(platformdirs.user_data_dir(APP_NAME, appauthor=False))
    path.mkdir(parents=True, exist_ok=True)
    return path


def data_dir_override() -> Path | None:
    """COSYDESK_DATA_DIR when set: the settings file then lives there too (else in the platform's config place)."""
    override = environment.text("COSYDESK_DATA_DIR")
    return Path(override) if override else None


def voices_dir() -> Path:
    """Saved voice profiles (a recording and its transcript each): <data>/voices."""
    return data_dir() / "voices"


def models_dir() -> Path:
    """Where downloaded models go: <data>/models (COSYDESK_MODELS_DIR overrides it)."""
    override = environment.text("COSYDESK_MODELS_DIR")
    return Path(override) if override else data_dir() / "models"


def engines_dir() -> Path:
    """The TensorRT engine cache: $COSYDESK_ENGINES_DIR, else <checkout>/engines in a source checkout, else
    <data>/engines (so COSYDESK_DATA_DIR moves it along with everything else)."""
    override = environment.text("COSYDESK_ENGINES_DIR")
    if override:
        return Path(override).expanduser()
    if (_CHECKOUT / "pyproject.toml").is_file() and (_CHECKOUT / "engines").is_dir():
        return _CHECKOUT / "engines"
    return data_dir() / "engines"


def cache_dir() -> Path:
    """Per-user cache folder: what is in it can be rebuilt (torch.compile's kernels under inductor/)."""
    return Path(platformdirs.user_cache_dir(APP_NAME))


def inductor_cache_dir() -> Path:
    """Where torch.compile keeps its compiled kernels unless TORCHINDUCTOR_CACHE_DIR says otherwise."""
    return cache_dir() / "inductor"
