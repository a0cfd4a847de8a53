"""The editor's draft: kept in the data folder between sessions, written atomically, never a reason to fail."""

from __future__ import annotations

from cosydesk.ui.draft import DRAFT_FILE, DraftStore
from tests.ui.fake_synth import factory
from tests.ui.helpers import make_window


def test_draft_round_trip_and_empty_text_removes_it(tmp_path):
    store = DraftStore(tmp_path / "data")
    assert store.load() == ""  # no draft yet (and no data folder yet)
    assert store.save("第一段。\nSecond line ✓")
    assert DraftStore(tmp_path / "data").load() == "第一段。\nSecond line ✓"
    assert [p.name for p in (tmp_path / "data").iterdir()] == [DRAFT_FILE]  # no temporary file left behind
    assert store.save("")
    assert not (tmp_path / "data" / DRAFT_FILE).exists() and DraftStore(tmp_path / "data").load() == ""


def test_unreadable_or_unwritable_draft_is_not_an_error(tmp_path):
    (tmp_path / DRAFT_FILE).mkdir()  # a folder where the file should be: cannot be read or replaced
    store = DraftStore(tmp_path)
    assert store.load() == ""
    assert store.save("text") is False
    assert [p.name for p in tmp_path.iterdir()] == [DRAFT_FILE]


def test_typed_text_survives_closing_the_window(qtbot, data_dir, monkeypatch):
    """Typing is saved once it pauses (and at close); the next window opens with it; clearing it clears the draft."""
    import cosydesk.ui.file_actions as file_actions

    monkeypatch.setattr(file_actions, "DRAFT_SAVE_DELAY_MS", 50)
    window = make_window(qtbot, data_dir, factory())
    assert window.text_edit.toPlainText() == ""
    window.text_edit.setPlainText("写了一半的稿子")
    qtbot.waitUntil(lambda: (data_dir / DRAFT_FILE).exists(), timeout=5000)
    assert (data_dir / DRAFT_FILE).read_text(encoding="utf-8") == "写了一半的稿子"
    window.text_edit.setPlainText("written just before closing")
    window.shutdown()  # before the pause ends: closing saves it
    assert (data_dir / DRAFT_FILE).read_text(encoding="utf-8") == "written just before closing"

    again = make_window(qtbot, data_dir, factory())
    assert again.text_edit.toPlainText() == "written just before closing"
    again.text_edit.clear()
    again.shutdown()
    assert not (data_dir / DRAFT_FILE).exists()
    third = make_window(qtbot, data_dir, factory())
    assert third.text_edit.toPlainText() == ""
    third.shutdown()
