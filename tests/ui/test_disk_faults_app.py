"""Disk faults seen from the window (issue 31 item 5): an export into a read-only folder, and a history save
whose audio or index write fails with a full disk. Each shows one plain message in the window (no "[Errno 28]",
no traceback), leaves nothing partial behind, and the app keeps working."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest
from PySide6.QtCore import Qt

import cosydesk.atomic_file
import cosydesk.ui.history
from cosydesk.audio import export
from cosydesk.audio.player import Player
from tests.audio.fake_sd import FakeSoundDevice
from tests.reliability.test_disk_faults import failing_fdopen
from tests.ui.fake_synth import factory
from tests.ui.helpers import make_window, wait_idle
from tests.ui.save_dialog import answer_save_dialog


def _window(qtbot, data_dir, fake_model_dir):
    return make_window(qtbot, data_dir, factory(chunks=3, delay_s=0.005),
                       player=Player(sd_module=FakeSoundDevice(speed=8.0)), model_dir=fake_model_dir)


def _speak(qtbot, window, text: str):
    window.text_edit.setPlainText(text)
    with qtbot.waitSignal(window.controller.worker.jobFinished, timeout=20000) as finished:
        window.speak_button.click()
    result = finished.args[0]
    qtbot.waitUntil(lambda: window.exports.finished_job == result.job_id, timeout=5000)
    wait_idle(qtbot, window)
    return result


def _assert_one_plain_message(window, *fragments: str) -> str:
    text = window.error_label.text()
    assert window.error_label.isVisible() and window.error_label.property("message") == "error", text
    assert "\n" not in text and "Errno" not in text and "Traceback" not in text, text
    for fragment in fragments:
        assert fragment in text, text
    return text


def _read_only(folder: Path, monkeypatch) -> None:
    """Make `folder` read-only. Root ignores permission bits, so there the OS's answer (EACCES on creating a file
    in it) is given by os.open for that folder alone."""
    folder.chmod(0o555)
    if os.geteuid() != 0:
        return
    real_open = os.open

    def guarded_open(path, flags, *args, **kwargs):
        if Path(path).parent == folder and flags & os.O_CREAT:
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(path))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(cosydesk.atomic_file.os, "open", guarded_open)


def test_export_into_a_read_only_folder_is_one_message_and_leaves_nothing(qtbot, data_dir, fake_model_dir,
                                                                          tmp_path, monkeypatch):
    window = _window(qtbot, data_dir, fake_model_dir)
    _speak(qtbot, window, "Something to export.")
    folder = tmp_path / "locked"
    folder.mkdir()
    _read_only(folder, monkeypatch)
    try:
        answer_save_dialog(str(folder / "speech.wav"))
        qtbot.keyClick(window.text_edit, Qt.Key.Key_S, Qt.KeyboardModifier.ControlModifier)
        qtbot.waitUntil(lambda: "read-only" in window.error_label.text(), timeout=5000)
        _assert_one_plain_message(window, "read-only", str(folder), "nothing was written")
        assert list(folder.iterdir()) == []
    finally:
        folder.chmod(0o755)
    monkeypatch.undo()
    again = _speak(qtbot, window, "Still working.")  # the app carries on, and the next export works
    assert again.error is None and window.exports.export(tmp_path / "ok.wav")
    assert (tmp_path / "ok.wav").is_file() and window.error_label.text() == f"Saved {tmp_path / 'ok.wav'}"
    window.shutdown()


def _history_files(window) -> set[str]:
    return {p.name for p in Path(window.history.root).iterdir()}


@pytest.mark.parametrize("which", ["audio", "index"])
def test_a_history_save_on_a_full_disk_is_one_message_and_leaves_nothing(which, qtbot, data_dir, fake_model_dir,
                                                                         monkeypatch):
    window = _window(qtbot, data_dir, fake_model_dir)
    _speak(qtbot, window, "Kept in the history.")
    qtbot.waitUntil(lambda: window.history_panel.list.count() == 1, timeout=5000)
    before = _history_files(window)
    index_before = window.history.index_path.read_bytes()
    if which == "audio":  # the disk fills while the take's audio is written
        monkeypatch.setattr(export.os, "fdopen", failing_fdopen(errno.ENOSPC, after_bytes=1000))
    else:  # the audio fits, the index rewrite does not

        def full_disk(path, data, durable=False):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

        monkeypatch.setattr(cosydesk.ui.history, "write_atomically", full_disk)
    result = _speak(qtbot, window, "This one does not fit.")
    assert result.error is None and len(result.pcm)
    _assert_one_plain_message(window, "Could not save to history", "not enough disk space", "nothing was written")
    assert _history_files(window) == before  # no audio without its entry, no temporary file
    assert window.history.index_path.read_bytes() == index_before
    assert window.history_panel.list.count() == 1 and len(window.history.entries()) == 1
    monkeypatch.undo()
    assert window.exports.export(Path(data_dir) / "still.wav")  # the take itself is not lost: it can be exported
    _speak(qtbot, window, "Space again.")
    qtbot.waitUntil(lambda: window.history_panel.list.count() == 2, timeout=5000)
    qtbot.waitUntil(lambda: window.state == "ready", timeout=5000)
    window.shutdown()
