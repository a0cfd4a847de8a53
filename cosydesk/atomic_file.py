"""Replace a file all at once: write a temporary file beside it, then rename it over the target.

A reader (or a crash mid-write) never sees half a file: the target holds either the old contents or the new.
Used for engine plans and their timing caches, the history index and the editor's draft. Plain standard
library, no heavy imports: any layer may use it.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def write_atomically(path: str | os.PathLike, data: bytes | str, durable: bool = False) -> None:
    """Write ``data`` (str as UTF-8) to ``path``, creating its folder; ``durable`` also fsyncs before the
    rename (for files that are costly to rebuild). Raises OSError; the temporary file never stays behind."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(payload)
            if durable:
                out.flush()
                os.fsync(out.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
