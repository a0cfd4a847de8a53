"""Atomic audio file writing (WAV, FLAC, MP3, Opus, Ogg Vorbis: the table in formats.py) for exports from the
app and the CLI.

What it is for: a file either appears complete or not at all. Data goes to a temporary file in the
target's folder, is flushed to disk, then renamed over the target with os.replace.

What it must not do: leave a partial file behind (disk full, permission, bad format), or import Qt.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

import numpy as np
import soundfile as sf

from cosydesk.atomic_file import create_temporary
from cosydesk.audio.formats import format_for_path, resample, writable_formats
from cosydesk.leftovers import remove_stale_export_temporaries

class ExportError(OSError):
    """Writing an audio file failed; the message names the file and the reason."""


def supported_suffixes() -> list[str]:
    """The file endings this installation can export to (".wav", ".flac", and ".mp3", ".opus", ".ogg" where
    libsndfile writes them)."""
    return [spec.suffix for spec in writable_formats()]


def write_audio(path: str | os.PathLike, pcm: np.ndarray, sample_rate: int, subtype: str | None = None,
                durable: bool = True) -> Path:
    """Write mono float PCM to `path` (its ending picks the format: supported_suffixes()) atomically; returns
    the path. Opus takes 8/12/16/24/48 kHz only: other rates are resampled to 24 kHz.

    subtype: soundfile subtype; default the format's (16-bit PCM for WAV/FLAC). "FLOAT": a bit-exact WAV.
    durable: fsync before the rename (a user's export). The history skips it: fsync can block the UI
    thread for tens of milliseconds, and the rename alone already rules out a half-written file.
    """
    target = Path(path).expanduser()
    suffix = target.suffix.lower()
    spec = format_for_path(target)
    if spec is None or spec.suffix not in supported_suffixes():
        raise ExportError(f"cannot export {target.name}: use one of {', '.join(supported_suffixes())}")
    file_format, default_subtype = spec.major, spec.subtype
    remove_stale_export_temporaries(target)  # what a killed earlier export of this same file left behind
    samples = np.asarray(pcm, dtype=np.float32).reshape(-1)
    if sample_rate <= 0:
        raise ExportError(f"cannot export {target.name}: sample rate {sample_rate} is not positive")
    if spec.rate_for(sample_rate) != sample_rate:
        samples, sample_rate = resample(samples, sample_rate, spec.rate_for(sample_rate)), spec.rate_for(sample_rate)
    folder = target.parent
    if not folder.is_dir():
        raise ExportError(f"cannot export {target.name}: folder {folder} does not exist")

    try:
        fd, temp_name = create_temporary(folder, prefix=f".{target.stem}.", suffix=suffix + ".part")  # umask mode
    except OSError as error:  # a read-only folder, no permission, a full disk: nothing was created
        raise _export_error(error, target) from None
    sink = _WriteErrorCatcher(os.fdopen(fd, "wb", buffering=0))  # unbuffered: a failing write fails at once
    try:
        with sink.raw as handle:
            try:
                sf.write(sink, np.clip(samples, -1.0, 1.0) if (subtype or default_subtype) != "FLOAT" else samples,
                         sample_rate, format=file_format, subtype=subtype or default_subtype, **spec.options)
            except Exception:
                if sink.error is not None:  # the OS's reason, not libsndfile's "System error" / an AssertionError
                    raise sink.error from None
                raise
            if sink.error is not None:  # a failed write that libsndfile did not report
                raise sink.error
            if durable:
                os.fsync(handle.fileno())
        os.replace(temp_name, target)
    except BaseException as error:
        try:
            os.unlink(temp_name)
        except FileNotFoundError:
            pass
        if isinstance(error, (OSError, sf.LibsndfileError, RuntimeError, ValueError, AssertionError)):
            raise _export_error(error, target) from error
        raise
    return target


class _WriteErrorCatcher:
    """The file object libsndfile writes through (soundfile's virtual I/O, cffi callbacks). A write that fails
    (disk full, file-size limit) must not raise inside the callback - Python would print "Exception ignored from
    cffi callback" and libsndfile would go on - so it is kept here and reported as 0 bytes written; libsndfile
    then stops, and write_audio raises the kept error."""

    def __init__(self, raw) -> None:
        self.raw = raw
        self.error: OSError | None = None

    def write(self, data) -> int:
        if self.error is not None:
            return 0
        view, done = memoryview(data), 0
        try:
            while done < len(view):  # a short write (the file-size limit reached mid-buffer): the next one says why
                written = self.raw.write(view[done:])
                if not written:
                    raise OSError(errno.EIO, "the system accepted no more bytes")
                done += written
            return done
        except OSError as error:
            self.error = error
            return done

    def seek(self, offset: int, whence: int = 0) -> int:
        try:
            return self.raw.seek(offset, whence)
        except OSError as error:
            self.error = self.error or error
            return self.raw.tell()

    def tell(self) -> int:
        return self.raw.tell()

    def read(self, count: int = -1) -> bytes:
        return self.raw.read(count)


def _with_errno(code: int, message: str) -> ExportError:
    """An ExportError that carries ``errno`` but prints as the message alone (no "[Errno 28]" prefix)."""
    error = ExportError(message)
    error.errno = code
    return error


def _export_error(error: BaseException, target: Path) -> ExportError:
    """One line saying why ``target`` could not be written (and that nothing was)."""
    code = getattr(error, "errno", None)
    if code in (errno.ENOSPC, getattr(errno, "EDQUOT", -1)):
        return _with_errno(errno.ENOSPC, f"not enough disk space to write {target}; nothing was written")
    if code == errno.EFBIG:
        return _with_errno(errno.EFBIG, f"{target} would be larger than this system's file-size limit allows; "
                                        "nothing was written (export a shorter part, or raise the limit: ulimit -f)")
    if code in (errno.EACCES, errno.EPERM, errno.EROFS):
        return _with_errno(code, f"cannot write into {target.parent}: the folder is read-only or not yours; "
                                 "nothing was written (choose another folder)")
    reason = getattr(error, "strerror", None) or str(error) or type(error).__name__
    return ExportError(f"could not write {target}: {reason}; nothing was written")


def plain_write_error(error: OSError, target: str | os.PathLike) -> ExportError:
    """The one-line, errno-free reason a write of ``target`` failed (for other atomic writers: the history index)."""
    return _export_error(error, Path(target))


def read_audio(path: str | os.PathLike) -> tuple[np.ndarray, int]:
    """Mono float32 samples and the sample rate of an audio file."""
    data, rate = sf.read(str(path), dtype="float32", always_2d=True)
    return data.mean(axis=1).astype(np.float32), int(rate)
