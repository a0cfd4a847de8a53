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
