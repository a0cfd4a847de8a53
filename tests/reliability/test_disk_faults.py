"""Disk faults while writing audio (issue 31): a read-only folder, a full disk, a file-size limit. Each is one
clear message, nothing partial is left, and no "Exception ignored from cffi callback" noise appears (the write
fails inside soundfile's virtual-I/O callback: write_audio keeps the OS error there and reports it after)."""

from __future__ import annotations

import errno
import os
import subprocess
import sys

import numpy as np
import pytest

from cosydesk.audio import export
from tests.support.paths import REPO_ROOT

# fault -> (errno raised by the OS, fragment of the one-line message)
FAULTS = {
    "disk_full": (errno.ENOSPC, "not enough disk space"),
    "quota": (errno.EDQUOT, "not enough disk space"),
    "file_size_limit": (errno.EFBIG, "file-size limit"),
    "read_only_mount": (errno.EROFS, "read-only"),
    "no_permission": (errno.EACCES, "read-only or not yours"),
}


def failing_fdopen(code: int, after_bytes: int):
    real_fdopen = os.fdopen

    def fdopen(fd, *args, **kwargs):
        raw = real_fdopen(fd, *args, **kwargs)
        plain_write, written = raw.write, [0]

        class Raw:
            def __getattr__(self, name):
                return getattr(raw, name)

            def __enter__(self):
                return self

            def __exit__(self, *exc):
                raw.close()

            def write(self, data):
                if written[0] + len(data) > after_bytes:
                    raise OSError(code, os.strerror(code))
                written[0] += len(data)
                return plain_write(data)

        return Raw()

    return fdopen


@pytest.mark.parametrize("fault", FAULTS)
def test_a_write_that_fails_midway_is_one_line_and_leaves_nothing(fault, tmp_path, monkeypatch, capsys):
    code, fragment = FAULTS[fault]
    (tmp_path / "speech.wav").write_bytes(b"an earlier export")
    monkeypatch.setattr(export.os, "fdopen", failing_fdopen(code, after_bytes=20000))
    with pytest.raises(export.ExportError) as caught:
        export.write_audio(tmp_path / "speech.wav", np.zeros(240000, np.float32), 24000)
    message = str(caught.value)
    assert fragment in message and "\n" not in message and "[Errno" not in message, message
    assert caught.value.errno in (code, errno.ENOSPC)
    assert sorted(os.listdir(tmp_path)) == ["speech.wav"]
    assert (tmp_path / "speech.wav").read_bytes() == b"an earlier export"
    assert "Exception ignored" not in capsys.readouterr().err


@pytest.mark.parametrize("fault", ["read_only_mount", "no_permission"])
def test_a_folder_that_refuses_new_files_is_one_line_in_the_cli(fault, tmp_path, monkeypatch, capsys):
    """`cosydesk say -o` into a read-only folder: a traceback at main (PermissionError was not an ExportError)."""
    from cosydesk import cli

    code, fragment = FAULTS[fault]

    def refuse(*args, **kwargs):
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(export, "create_temporary", refuse)
    import cosydesk.runtime

    class Tiny:
        sample_rate, version, device, backend = 24000, "v2", "cpu", "eager"

        def __init__(self, *args, **kwargs):
            pass

        def notices(self, request):
            return []

        def stream(self, request, cancel=None):
            from cosydesk.runtime.types import AudioChunk

            yield AudioChunk(np.full(2400, 0.1, np.float32), 24000, 0, True, timings={})

    monkeypatch.setattr(cosydesk.runtime, "Synthesizer", Tiny)
    rc = cli.main(["say", "hello.", "--model", str(tmp_path), "-o", str(tmp_path / "out.wav")])
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert rc == 2 and len(lines) == 1 and lines[0].startswith("cosydesk: error:") and fragment in lines[0], err
    assert not (tmp_path / "out.wav").exists()


FSIZE_PROBE = """
import resource, sys, numpy as np
from pathlib import Path
from cosydesk.audio.export import ExportError, write_audio
resource.setrlimit(resource.RLIMIT_FSIZE, (100000, 100000))
try:
    write_audio(Path(sys.argv[1]) / 'x.wav', np.zeros(240000, np.float32), 24000)
except ExportError as error:
    print(error)
"""


@pytest.mark.skipif(sys.platform == "win32", reason="RLIMIT_FSIZE is POSIX")
def test_a_real_file_size_limit_is_one_line_without_cffi_noise(tmp_path):
    """A real RLIMIT_FSIZE (as `ulimit -f`): at main, "Exception ignored from cffi callback" tracebacks."""
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    result = subprocess.run([sys.executable, "-c", FSIZE_PROBE, str(tmp_path)], capture_output=True, text=True,
                            env=env, timeout=60, cwd=REPO_ROOT)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "file-size limit" in result.stdout, result.stdout
    assert result.stderr.strip() == "", result.stderr[-2000:]
    assert os.listdir(tmp_path) == []
