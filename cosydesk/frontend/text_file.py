"""Text to speak from a file, read the same way by the CLI (``--text-file``) and the app (File > Open text…).

Bytes are decoded as UTF-8 with invalid sequences replaced by U+FFFD, so a file with a few bad bytes still
speaks (the replacement characters are not pronounced) instead of failing on its first bad byte.
"""

from __future__ import annotations

from pathlib import Path


class TextFileError(ValueError):
    """A text file that cannot be read; the message names the file and the reason."""


def read_text_file(path: str | Path, max_bytes: int | None = None) -> str:
    """The text of ``path`` (UTF-8, invalid bytes as U+FFFD); ``max_bytes``: refuse larger files."""
    path = Path(path).expanduser()
    try:
        size = path.stat().st_size
        if max_bytes is not None and size > max_bytes:
            raise TextFileError(f"{path.name} is {size:,} bytes, more than the {max_bytes:,} that can be opened "
                                "at once: split it into smaller files")
        data = path.read_bytes()
    except OSError as err:
        raise TextFileError(f"cannot read {path}: {err.strerror or err}") from None
    return data.decode("utf-8", errors="replace")
