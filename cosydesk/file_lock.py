"""An exclusive lock between processes on one lock file (fcntl.flock on POSIX, msvcrt.locking on Windows).

What it is for: read-modify-write of a state file shared by two app instances on one data folder (the history
index), so neither overwrites what the other just added. The lock is advisory and held for milliseconds; the
operating system drops it when the holder dies, so a killed instance never leaves it stuck.
Plain standard library; no Qt.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None  # type: ignore[assignment]
    import msvcrt


class LockTimeout(OSError):
    """Another process held the lock for longer than the timeout."""


def _try_lock(fd: int) -> bool:
    try:
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        else:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
    except (BlockingIOError, PermissionError):
        return False
    except OSError as error:  # Windows reports a held lock as EDEADLOCK / EACCES
        if fcntl is None:
            return False
        raise error
    return True


def _unlock(fd: int) -> None:
    if fcntl is not None:
        fcntl.flock(fd, fcntl.LOCK_UN)
    else:
        os.lseek(fd, 0, os.SEEK_SET)
        msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)


@contextmanager
def exclusive_lock(path: str | os.PathLike, timeout_s: float = 5.0) -> Iterator[None]:
    """Hold the lock on ``path`` (created if missing) inside the block; LockTimeout after ``timeout_s``."""
    path = Path(path)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o666)
    try:
        deadline = time.monotonic() + timeout_s
        while not _try_lock(fd):
            if time.monotonic() > deadline:
                raise LockTimeout(f"{path} stayed locked by another CosyDesk for more than {timeout_s:.0f} s")
            time.sleep(0.01)
        try:
            yield
        finally:
            _unlock(fd)
    finally:
        os.close(fd)
