"""Help → About shows its whole text (D16): the dialog is as tall as the wrapped text, in English and Chinese,
and cannot be shrunk below it."""

from __future__ import annotations

import pytest

from cosydesk.ui import i18n
from cosydesk.ui.about import AboutDialog


@pytest.mark.parametrize("language", ["en", "zh_CN"])
def test_about_text_is_never_clipped(qtbot, tmp_path, language):
    i18n.set_language(language)
    try:
        long_folder = tmp_path / ("a-rather-long-folder-name-" * 3) / "cosydesk"
        dialog = AboutDialog(long_folder, long_folder / "models")
        qtbot.addWidget(dialog)
        dialog.show()
        qtbot.waitExposed(dialog)
        label = dialog.text
        assert label.height() >= label.heightForWidth(label.width())
        assert label.geometry().bottom() <= dialog.height()
        dialog.resize(200, 100)  # a user dragging it smaller
        qtbot.wait(10)
        assert label.height() >= label.heightForWidth(label.width())
    finally:
        i18n.set_language("en")
