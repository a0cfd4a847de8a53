"""Text to speak from a file, read the same way by the CLI (``--text-file``) and the app (File > Open text…,
or a file dropped on the window).

Which encoding: a byte-order mark decides (UTF-8, or UTF-16 as Windows Notepad's "Unicode" writes it); else
UTF-8. Chinese Windows long saved .txt files as GBK ("ANSI"), which read as UTF-8 is mostly replacement
characters: a file that is not valid UTF-8 but is valid GB18030 (a superset of GBK) is read as GB18030 when
UTF-8 would lose more than a tenth of its non-ASCII characters. Otherwise invalid UTF-8 bytes become U+FFFD,
so a file with a few bad bytes still speaks (the replacement characters are not pronounced) instead of failing
on its first bad byte. NUL characters mean binary data (or UTF-16 without its mark): refused with a message.
"""

from __future__ import annotations

import codecs
import os
import stat
from pathlib import Path


class TextFileError(ValueError):
    """A text file that cannot be read; the message names the file and the reason."""


_MARKS = ((codecs.BOM_UTF8, "utf-8"), (codecs.BOM_UTF16_LE, "utf-16-le"), (codecs.BOM_UTF16_BE, "utf-16-be"))


def decode_text(data: bytes) -> str:
    """``data`` as text by the rules in the module docstring (never raises; may contain NUL characters)."""
    for mark, codec in _MARKS:
        if data.startswith(mark):
            return data[len(mark):].decode(codec, errors="replace")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        pass
    text = data.decode("utf-8", errors="replace")
    lost = text.count("\ufffd")
    non_ascii = sum(1 for ch in text if ord(ch) > 127)
    if lost * 10 > non_ascii:
        try:
            return data.decode("gb18030")
        except UnicodeDecodeError:
            pass
    return text


def read_text_file(path: str | Path, max_bytes: int | None = None) -> str:
    """The text of ``path`` (see ``decode_text``); ``max_bytes``: refuse larger files. The size limit is checked
    on the file before reading, and only regular files are read: a FIFO, a device (/dev/zero) or a socket is
    refused at once (opened with O_NONBLOCK and checked with fstat, so nothing can block or read forever)."""
    path = Path(path).expanduser()
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            raise TextFileError(f"{path} is not a regular file (a pipe, device or folder): open a text file")
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
        with os.fdopen(fd, "rb") as handle:
            info = os.fstat(handle.fileno())  # the file opened, not what the name pointed at a moment before
            if not stat.S_ISREG(info.st_mode):
                raise TextFileError(f"{path} is not a regular file (a pipe, device or folder): open a text file")
            if max_bytes is not None and info.st_size > max_bytes:
                raise TextFileError(f"{path.name} is {info.st_size:,} bytes, more than the {max_bytes:,} that can be "
                                    "opened at once: split it into smaller files")
            data = handle.read(info.st_size + 1 if max_bytes is None else max_bytes + 1)
            if max_bytes is not None and len(data) > max_bytes:  # it grew while being read
                raise TextFileError(f"{path.name} is more than the {max_bytes:,} bytes that can be opened at once: "
                                    "split it into smaller files")
    except OSError as err:
        raise TextFileError(f"cannot read {path}: {err.strerror or err}") from None
    text = decode_text(data)
    if "\x00" in text:
        raise TextFileError(f"{path.name} does not look like a text file (it holds binary data): open a plain "
                            "text file, saved as UTF-8")
    return text
