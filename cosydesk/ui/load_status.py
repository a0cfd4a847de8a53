"""The status bar's state text and model-loading bar.

What it is for: the Synthesizer reports loading as (stage, fraction) with long stretches at one fraction
(reading the weights is all "Loading model", 0 %), so a percentage alone reads "0 %" until the very end.
The bar is therefore indeterminate (busy) while no stage has reported a fraction yet, and a percentage once
one has; the stage name is always shown beside it. The state text stays on one line: longer text is elided
with "…" and the whole of it is in the tooltip (a wrapped label was clipped over two lines).

What it must not do: know about the main window or the worker (main_window.py wires it).
"""

from __future__ import annotations

from PySide6.QtCore import QCoreApplication, Qt
from PySide6.QtGui import QResizeEvent
from PySide6.QtWidgets import QLabel, QProgressBar, QSizePolicy, QWidget

from cosydesk.ui.error_text import translate_message


class StatusLine(QLabel):
    """A QLabel that never wraps: the text is elided to the width it gets; text() returns the whole text."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._full = ""
        self.setWordWrap(False)
        self.setTextFormat(Qt.TextFormat.PlainText)
        # Ignored: the status bar gives it the room left by the permanent widgets instead of growing for it.
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.setMinimumWidth(80)

    def setText(self, text: str) -> None:  # noqa: N802 - Qt's name
        self._full = " ".join(str(text).split())  # one line, whatever the message held
        self._elide()

    def text(self) -> str:
        return self._full

    def shown_text(self) -> str:
        """What is painted (elided when the label is narrower than the text)."""
        return super().text()

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802
        super().resizeEvent(event)
        self._elide()

    def _elide(self) -> None:
        width = max(self.width() - 4, 10)
        shown = self.fontMetrics().elidedText(self._full, Qt.TextElideMode.ElideRight, width)
        super().setText(shown)
        self.setToolTip(self._full if shown != self._full else "")


def show_load_progress(bar: QProgressBar, fraction: float, stage: str) -> None:
    """Busy bar until a stage reports progress, then the percentage; the stage name is the bar's tooltip."""
    bar.setTextVisible(False)  # the status text beside it carries the words; the bar is 160 px wide
    if fraction <= 0.0:
        bar.setRange(0, 0)
    else:
        bar.setRange(0, 100)
        bar.setValue(int(round(100 * min(fraction, 1.0))))
    bar.setToolTip(translate_message(stage))


# The texts below belong to the main window's translation context (lupdate reads these literal calls).
def loading_text(model_name: str, stage: str, fraction: float) -> str:
    stage = translate_message(stage) if stage else QCoreApplication.translate("MainWindow", "starting")
    if fraction > 0:
        return QCoreApplication.translate("MainWindow", "Loading {model}: {stage}… {p}%").format(
            model=model_name, stage=stage, p=int(fraction * 100))
    return QCoreApplication.translate("MainWindow", "Loading {model}: {stage}…").format(model=model_name, stage=stage)


def speak_tooltip(model_loaded: bool, loading: bool) -> str:
    """Why Speak is disabled, or what it does."""
    if model_loaded:
        return QCoreApplication.translate("MainWindow", "Speak the selection or the whole text (Ctrl+Enter)")
    if loading:
        return QCoreApplication.translate("MainWindow", "Speak is available once the model has loaded")
    return QCoreApplication.translate("MainWindow", "Load a model first: pick one in the model list or with “Models…”")
