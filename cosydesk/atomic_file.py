"""Replace a file all at once: write a temporary file beside it, then rename it over the target.

A reader (or a crash mid-write) never sees half a file: the target holds either the old contents or the new.
Used for engine plans and their timing caches, the history index, the editor's draft and (through
`create_temporary`) audio exports. The new file gets the mode any editor's would (0666 less the umask: 0644
under umask 022), not mkstemp's 0600. Plain standard library, no heavy imports: any layer may use it.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

#: O_BINARY exists on Windows only; O_CLOEXEC keeps the handle out of child processes.
_CREATE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0) | getattr(os, "O_CLOEXEC", 0)


def create_temporary(folder: Path, prefix: str, suffix: str) -> tuple[int, Path]:
    """A new, uniquely named file in `folder`, open for writing: (fd, path).

    Like tempfile.mkstemp, but created with mode 0666 so the kernel applies the umask: the file that is
    renamed over the target is readable by others exactly when the user's other new files are. (Reading the
    umask to chmod afterwards would need os.umask(), which briefly changes it for every thread.)
    """
    for _ in range(100):
        path = Path(folder) / f"{prefix}{secrets.token_hex(4)}{suffix}"
        try:
            return os.open(path, _CREATE_FLAGS, 0o666), path
        except FileExistsError:
            continue
    raise FileExistsError(f"no free temporary file name in {folder}")


def write_atomically(path: str | os.PathLike, data: bytes | str, durable: bool = False) -> None:
    """Write ``data`` (str as UTF-8) to ``path``, creating its folder; ``durable`` also fsyncs before the
    rename (for files that are costly to rebuild). Raises OSError; the temporary file never stays behind."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    handle, temporary = create_temporary(path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(payload)
            if durable:
                out.flush()
                os.fsync(out.fileno())
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
