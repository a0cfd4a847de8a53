"""Every control of the main window says what it does when hovered (issue 29 item 7): buttons, boxes, fields and
lists shown in the window and its docks carry a tooltip, in English and in Chinese."""

from __future__ import annotations

from PySide6.QtWidgets import (QAbstractButton, QAbstractSpinBox, QComboBox, QLineEdit, QListWidget,
                               QPlainTextEdit)

from tests.ui.fake_synth import factory
from tests.ui.helpers import make_window

CONTROLS = (QAbstractButton, QComboBox, QAbstractSpinBox, QLineEdit, QPlainTextEdit, QListWidget)


def _without_tooltip(window) -> list[str]:
    missing = []
    for cls in CONTROLS:
        for control in window.findChildren(cls):
            inner_of_combo = isinstance(control, QLineEdit) and isinstance(control.parent(), (QComboBox,
                                                                                               QAbstractSpinBox))
            qt_own = control.objectName().startswith("qt_")  # Qt's dock float/close buttons
            if control.isVisibleTo(window) and not inner_of_combo and not qt_own and not control.toolTip().strip():
                label = control.text() if hasattr(control, "text") and callable(control.text) else ""
                missing.append(f"{type(control).__name__} {control.objectName()!r} {label!r}")
    return sorted(missing)


def test_every_visible_control_has_a_tooltip(qtbot, data_dir, fake_model_dir):
    window = make_window(qtbot, data_dir, factory(), model_dir=fake_model_dir)
    missing = _without_tooltip(window)
    assert missing == [], "\n".join(missing)
    window.set_language("zh_CN")
    assert _without_tooltip(window) == []
    window.set_language("en")
    window.shutdown()
