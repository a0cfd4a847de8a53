"""Model manager: added folders are listed and removable (D19); names are shown whole (D18)."""

from __future__ import annotations

import shutil

from cosydesk import hub
from cosydesk.settings import Key, Settings
from cosydesk.ui.model_manager import ModelManagerDialog


def _dialog(qtbot, settings, tmp_path):
    dialog = ModelManagerDialog(settings, tmp_path / "models")
    qtbot.addWidget(dialog)
    dialog.show()
    return dialog


def test_added_folders_are_listed_usable_and_removable(qtbot, tmp_path, fake_model_dir, data_dir):
    settings = Settings.at(tmp_path / "s.ini")
    dialog = _dialog(qtbot, settings, tmp_path)
    assert dialog.add_folder(fake_model_dir)
    names = [dialog.table.item(row, 0).text() for row in range(dialog.table.rowCount())]
    assert names[-1] == "FakeModel" and len(names) == len(hub.CATALOGUE) + 1
    last = dialog.table.rowCount() - 1
    assert "v2" in dialog.table.item(last, 2).text() and str(fake_model_dir) in dialog.table.item(last, 2).text()
    assert dialog.selected_row().folder == fake_model_dir  # the folder just added is selected
    assert dialog.use_button.isEnabled() and dialog.remove_button.isEnabled()
    assert not dialog.download_button.isEnabled()
    with qtbot.waitSignal(dialog.modelChosen) as chosen:
        dialog.use_button.click()
    assert chosen.args == [str(fake_model_dir)]

    again = _dialog(qtbot, settings, tmp_path)  # a new dialog still lists it
    again.select(str(fake_model_dir))
    again.remove_button.click()
    assert settings.get(Key.EXTRA_MODEL_DIRS) == [] and fake_model_dir.is_dir()  # files stay
    assert again.table.rowCount() == len(hub.CATALOGUE) and "still on disk" in again.status.text()


def test_an_added_folder_that_vanished_is_shown_and_can_be_removed(qtbot, tmp_path, fake_model_dir, data_dir):
    settings = Settings.at(tmp_path / "s.ini")
    settings.set(Key.EXTRA_MODEL_DIRS, [str(fake_model_dir)])
    shutil.rmtree(fake_model_dir)
    dialog = _dialog(qtbot, settings, tmp_path)
    last = dialog.table.rowCount() - 1
    assert dialog.table.item(last, 3).text() == "cannot be used"
    dialog.table.selectRow(last)
    assert not dialog.use_button.isEnabled() and dialog.remove_button.isEnabled()
    assert dialog.remove_folder(fake_model_dir)


def test_model_names_are_not_cut_off(qtbot, tmp_path, data_dir):
    dialog = _dialog(qtbot, Settings.at(tmp_path / "s.ini"), tmp_path)
    metrics = dialog.table.fontMetrics()
    for row in range(dialog.table.rowCount()):
        text = dialog.table.item(row, 0).text()
        assert dialog.table.columnWidth(0) >= metrics.horizontalAdvance(text), text
