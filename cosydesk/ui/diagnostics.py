"""Help → Diagnostics: the `cosydesk doctor` checks in a dialog.

The models checked are those the app knows: the models folder and the folders added in the model manager
(the main window passes them), so an added model shows up here as it does in the model list (D17).

The checks (NVML, torch import, PortAudio probe, model folders) can take seconds, so they run on a plain Python
thread and hand their result to the UI thread through a queued Qt signal; the dialog never blocks the window.
"""

from __future__ import annotations

import threading

from PySide6.QtCore import QObject, Signal
from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QLabel, QPlainTextEdit, QVBoxLayout, QWidget

from cosydesk.ui.error_text import current_language, translate_message


def check_line(check, language: str | None = None) -> str:
    """One check as `cosydesk doctor` prints it (Check.line), its name, status, detail and fix in the UI's language
    (commands stay as they are: no table knows them)."""
    language = language or current_language()
    if language == "en":
        return check.line()
    status = translate_message(check.status, language)
    text = (f"[{status}] {translate_message(check.name, language)}："
            f"{translate_message(check.detail, language)}")
    if check.fix:
        text += "\n       " + translate_message(f"fix: {check.fix}", language)
    return text


class _Relay(QObject):
    done = Signal(str, str)  # report text, summary line


def diagnostics_report(model_dirs=(), models_dir=None) -> tuple[str, str]:
    """(all check lines, 'N OK, N WARN, N FAIL') - the same lines `cosydesk doctor` prints (in the UI's language),
    for the models folder `models_dir` and the extra folders `model_dirs` (those the user added)."""
    from cosydesk.doctor import run_checks

    checks = run_checks(model_dirs=model_dirs, models_dir=models_dir, verify_hashes=False)
    counts = {status: sum(c.status == status for c in checks) for status in ("OK", "WARN", "FAIL")}
    summary = ", ".join(f"{n} {status}" for status, n in counts.items())
    return "\n".join(check_line(c) for c in checks), summary


class DiagnosticsDialog(QDialog):
    """Runs the checks in the background and shows them, with the command that fixes each problem."""

    def __init__(self, parent: QWidget | None = None, model_dirs=(), models_dir=None):
        super().__init__(parent)
        self.setObjectName("diagnosticsDialog")
        self.setWindowTitle(self.tr("Diagnostics"))
        self.resize(760, 480)
        self.summary = QLabel(self.tr("Checking the GPU, TensorRT, audio, fonts and models…"))
        self.report = QPlainTextEdit(readOnly=True)
        self.report.setObjectName("diagnosticsReport")
        self.report.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        for widget in (self.summary, self.report, buttons):
            layout.addWidget(widget)
        self._relay = _Relay(self)
        self._relay.done.connect(self._show)
        self.finished_checks = False
        self.models_dir = models_dir
        threading.Thread(target=self._run, args=(tuple(model_dirs),), name="cosydesk-diagnostics", daemon=True).start()

    def _run(self, model_dirs) -> None:
        try:
            text, summary = diagnostics_report(model_dirs, self.models_dir)
        except Exception as err:  # noqa: BLE001 - run_checks never raises, but the dialog must not hang
            text = f"{type(err).__name__}: {translate_message(str(err))}"
            summary = self.tr("The diagnostics could not run: {error}").format(error=type(err).__name__)
        self._relay.done.emit(text, summary)

    def _show(self, text: str, summary: str) -> None:
        self.report.setPlainText(text)
        counts = dict(part.split(" ")[::-1] for part in summary.split(", ")) if " OK" in summary else {}
        if counts:  # "3 OK, 1 WARN, 0 FAIL" in the UI's language
            summary = self.tr("{ok} passed, {warn} warnings, {fail} failed").format(
                ok=counts.get("OK", 0), warn=counts.get("WARN", 0), fail=counts.get("FAIL", 0))
        self.summary.setText(summary)
        self.finished_checks = True
