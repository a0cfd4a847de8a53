"""Reading CosyDesk's own state files (history index, voice profiles, the draft) as untrusted input.

A hand-edited, damaged or hostile file in the data folder must never stop the app from starting, hang it, or
make it touch a file outside the folder the state belongs to. So: only regular files are opened (a FIFO or a
device would block or never end), with a size limit checked on the file; JSON nested too deeply is an error
like any other; a name a state file gives for a companion file must be a plain name inside its folder; and a
file standing where a folder should be is moved aside, not trusted. Errors are StateFileError (one line naming
the file); callers skip the bad entry and report it. Plain standard library; no Qt.
"""

from __future__ import annotations

import json
import os
import stat
import time
from pathlib import Path
from typing import Any


class StateFileError(ValueError):
    """A state file cannot be used; the message names it and says why."""


def read_regular_file(path: Path, max_bytes: int) -> bytes:
    """The bytes of ``path`` if it is a regular file of at most ``max_bytes``. FileNotFoundError if absent;
    StateFileError for a FIFO, device, directory or oversized file (none of them is read)."""
    try:
        info = os.stat(path)  # follows a symlink: what it points at must be a regular file
    except FileNotFoundError:
        raise
    except OSError as error:
        raise StateFileError(f"{path} cannot be read ({error.strerror or error})") from error
    if not stat.S_ISREG(info.st_mode):
        raise StateFileError(f"{path} is not a regular file")
    if info.st_size > max_bytes:
        raise StateFileError(f"{path} is {info.st_size:,} bytes, more than the {max_bytes:,} it may hold")
    # O_NONBLOCK: if a FIFO replaced the file since the stat, the open still returns at once
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise StateFileError(f"{path} is not a regular file")
        data = handle.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise StateFileError(f"{path} grew past {max_bytes:,} bytes while it was read")
    return data


def read_json(path: Path, max_bytes: int) -> Any:
    """Parsed JSON of a regular file (see read_regular_file); StateFileError for anything unreadable."""
    data = read_regular_file(path, max_bytes)
    try:
        return json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as error:
        raise StateFileError(f"{path} is not valid JSON ({' '.join(str(error).split())[:120]})") from error
    except RecursionError as error:
        raise StateFileError(f"{path} is nested too deeply to be a CosyDesk file") from error


def contained_file(root: Path, name: Any) -> Path | None:
    """``root / name`` when ``name`` is a plain file name whose real path (symlinks resolved) stays inside
    ``root``; None for anything else ("../x", "/home/u/x", "a/b", "", a number ...). Nothing is created."""
    if not isinstance(name, str) or not name or name in (".", "..") or "\0" in name:
        return None
    if Path(name).name != name or "/" in name or "\\" in name or Path(name).is_absolute() or ":" in name:
        return None
    try:
        real_root = Path(root).resolve()
        candidate = (Path(root) / name).resolve()
    except (OSError, RuntimeError):  # RuntimeError: a symlink loop
        return None
    if candidate.parent != real_root:
        return None
    return Path(root) / name


def ensure_folder(path: Path) -> str | None:
    """Make ``path`` a folder. A file (or FIFO, or dangling link) standing there is renamed aside first, so
    nothing is lost; returns a message saying so, else None. OSError if the folder cannot be made."""
    path = Path(path)
    note = None
    if (path.exists() or path.is_symlink()) and not path.is_dir():
        aside = path.with_name(f"{path.name}.not-a-folder-{int(time.time())}")
        os.replace(path, aside)
        note = f"{path} was a file, not a folder: it was moved to {aside.name} and an empty folder made"
    path.mkdir(parents=True, exist_ok=True)
    return note
