"""write_atomically: all or nothing, no temporary file left behind."""

from __future__ import annotations

import os

import pytest

from cosydesk.atomic_file import write_atomically


def test_writes_text_and_bytes_and_creates_the_folder(tmp_path):
    target = tmp_path / "a" / "b" / "index.json"
    write_atomically(target, "第一 ✓\n")
    assert target.read_bytes() == "第一 ✓\n".encode()
    write_atomically(target, b"\x00\x01", durable=True)
    assert target.read_bytes() == b"\x00\x01"
    assert os.listdir(target.parent) == ["index.json"]


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temporary(tmp_path, monkeypatch):
    target = tmp_path / "plan.bin"
    target.write_bytes(b"old")

    def broken_replace(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError, match="disk full"):
        write_atomically(target, b"new")
    assert target.read_bytes() == b"old" and os.listdir(tmp_path) == ["plan.bin"]


@pytest.fixture(params=[0o022, 0o077, 0o002], ids=["umask022", "umask077", "umask002"])
def umask(request):
    """Run the test under this umask (restored afterwards)."""
    previous = os.umask(request.param)
    yield request.param
    os.umask(previous)


@pytest.mark.skipif(os.name != "posix", reason="file modes are POSIX")
def test_files_the_user_owns_honour_the_umask(tmp_path, umask):
    """Exports, history audio + index and the draft get 0666 less the umask (0644 under 022), like any editor's
    files — not mkstemp's 0600 — and replacing a file keeps that rule."""
    import numpy as np

    from cosydesk.audio.export import write_audio
    from cosydesk.ui.draft import DraftStore
    from cosydesk.ui.history import HistoryStore

    expected = 0o666 & ~umask
    pcm = np.zeros(2400, dtype=np.float32)
    export = write_audio(tmp_path / "export.wav", pcm, 24000)
    write_audio(tmp_path / "export.flac", pcm, 24000)
    history = HistoryStore(tmp_path / "history")
    entry = history.add("你好", pcm, 24000)
    draft = DraftStore(tmp_path)
    assert draft.save("first draft") and draft.save("second draft")
    write_atomically(tmp_path / "plain.bin", b"x")
    written = [export, tmp_path / "export.flac", history.root / entry.file, history.index_path, draft.path,
               tmp_path / "plain.bin"]
    modes = {path.name: oct(path.stat().st_mode & 0o777) for path in written}
    assert modes == {path.name: oct(expected) for path in written}
    assert not [p for p in tmp_path.rglob(".*") if p.is_file()], "a temporary file was left behind"
