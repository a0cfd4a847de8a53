"""Remove the temporary files a killed CosyDesk left behind (SIGKILL or power loss between write and rename).

Only names CosyDesk itself creates are touched, and only once they are older than MIN_AGE_S (another running
instance may be writing one right now):

* ``.<name>.<8 random>.tmp``            - atomic_file.write_atomically (history index, draft, engine plans)
* ``.<stem>.<8 random><.wav|.flac>.part`` - audio.export.write_audio (exports, history audio, voice prompts)

At start the folders CosyDesk owns are swept (the data folder, history/, each voices/<profile>/); in a user's
folder only the exact temporaries of the file being exported are, when it is exported again
(``remove_stale_export_temporaries``). Never recursive beyond that, never a directory, never through a symlink.
"""

from __future__ import annotations

import logging
import os
import re
import stat
import time
from pathlib import Path

log = logging.getLogger(__name__)

MIN_AGE_S = 15 * 60  # a write takes milliseconds; a quarter of an hour old means its writer is gone
# the random part: tempfile.mkstemp's 8 characters, or atomic_file's 8 hex digits
_RANDOM = r"[a-z0-9_]{8}"
_ATOMIC = re.compile(rf"^\.(?P<name>.+)\.{_RANDOM}\.tmp$")
_EXPORT = re.compile(rf"^\.(?P<stem>.+)\.{_RANDOM}(?P<suffix>\.wav|\.flac)\.part$", re.IGNORECASE)


def is_cosydesk_temporary(name: str) -> bool:
    """Does ``name`` have the shape of a temporary file CosyDesk writes (see the module docstring)?"""
    return bool(_ATOMIC.match(name) or _EXPORT.match(name))


def _remove_if_stale(path: Path, now: float, min_age_s: float) -> bool:
    try:
        info = os.lstat(path)
        if not stat.S_ISREG(info.st_mode) or now - info.st_mtime < min_age_s:
            return False  # a symlink, FIFO or directory of that name is not ours; a young file may be in use
        path.unlink()
    except OSError:
        return False
    log.info("removed a leftover temporary file %s", path)
    return True


def remove_leftover_temporaries(folder: str | os.PathLike, min_age_s: float = MIN_AGE_S,
                                now: float | None = None) -> list[Path]:
    """Remove CosyDesk's stale temporaries directly in ``folder`` (a folder CosyDesk owns); the removed paths."""
    folder = Path(folder)
    now = time.time() if now is None else now
    try:
        if folder.is_symlink() or not folder.is_dir():
            return []
        names = [entry.name for entry in os.scandir(folder)]
    except OSError:
        return []
    return [folder / name for name in names
            if is_cosydesk_temporary(name) and _remove_if_stale(folder / name, now, min_age_s)]


def remove_stale_export_temporaries(target: str | os.PathLike, min_age_s: float = MIN_AGE_S,
                                    now: float | None = None) -> list[Path]:
    """Remove stale temporaries of exactly this export target (``.<stem>.<random><suffix>.part`` beside it) -
    the only files CosyDesk ever removes from a user's folder."""
    target = Path(target)
    now = time.time() if now is None else now
    try:
        names = [entry.name for entry in os.scandir(target.parent)]
    except OSError:
        return []
    removed = []
    for name in names:
        match = _EXPORT.match(name)
        if (match and match["stem"] == target.stem and match["suffix"].lower() == target.suffix.lower()
                and _remove_if_stale(target.parent / name, now, min_age_s)):
            removed.append(target.parent / name)
    return removed
