"""The main window's model handling: the model list, loading (with progress), warm-up and runtime options.

What it is for: choosing, loading and reloading models through the SynthController and reflecting the worker's
load signals in the window. A mixin of MainWindow.

What it must not do: wait for a load; the worker reports back through signals.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt

from cosydesk import hub
from cosydesk.settings import Key
from cosydesk.ui.load_status import show_load_progress
from cosydesk.ui.error_text import display_message, translate_message
from cosydesk.ui.model_manager import ModelManagerDialog, known_model_dirs
from cosydesk.ui.worker import ModelSummary


class ModelBar:
    """Mixin of MainWindow: models."""

    def refresh_models(self) -> None:
        current = self.settings.get(Key.MODEL_DIR)
        self.model_combo.blockSignals(True)
        self.model_combo.clear()
        folders = known_model_dirs(self.settings, self.models_dir)
        if current and Path(current) not in folders and hub.check_model_dir(current).loadable:
            folders.append(Path(current))
        for folder in folders:
            self.model_combo.addItem(folder.name, str(folder))
            self.model_combo.setItemData(self.model_combo.count() - 1, str(folder), Qt.ItemDataRole.ToolTipRole)
        index = self.model_combo.findData(current)
        self.model_combo.setCurrentIndex(index if index >= 0 else -1)
        self.model_combo.setPlaceholderText(self.tr("No model installed"))
        self.model_combo.blockSignals(False)

    def load_model(self, folder: str | Path) -> bool:
        report = hub.check_model_dir(folder)
        if not report.loadable:
            self.show_message(self.tr("Cannot use {folder}: {problems}").format(
                folder=folder, problems=translate_message("; ".join(report.problems))), True)  # "；" in Chinese
            return False
        # The worker keeps the model in use until the new one has loaded: when the new folder is refused or fails
        # to load, that model stays (loadRefused / reloadFailed -> _keep_previous_model).
        self._kept_model = self.model
        self.settings.set(Key.MODEL_DIR, str(report.path))
        self.refresh_models()
        self.model = None
        self.current_job = None
        self.load_fraction = 0.0
        self.load_stage = ""
        show_load_progress(self.load_progress, 0.0, "")
        self._set_state("loading")
        self.show_message("", False)
        self.controller.load(str(report.path), device=self.settings.get(Key.DEVICE),
                             backend=self.settings.get(Key.BACKEND), precision=self.settings.get(Key.PRECISION))
        return True

    def _on_model_chosen(self, index: int) -> None:
        folder = self.model_combo.itemData(index)
        if folder and (self.model is None or folder != self.model.model_dir):
            self.load_model(folder)

    def _set_runtime_option(self, key: Key, value: str) -> None:
        """Compute device / backend: reload the model with it. The working model stays in use until the reload
        has succeeded; when it fails, the setting goes back to what the working model runs with."""
        previous = self.settings.get(key)
        self.settings.set(key, value)
        folder = self.model.model_dir if self.model is not None else self.settings.get(Key.MODEL_DIR)
        option = {Key.DEVICE: "device", Key.BACKEND: "backend", Key.PRECISION: "precision"}.get(key)
        if self.model is not None and self.model.options.get(option) == value:
            return  # already running with it
        if folder and (self.model is not None or self.state == "no_model"):
            self._option_change = (key, previous)
            self.load_model(folder)

    def _keep_previous_model(self, message: str) -> None:
        """The new model (or the same one with new options) was refused by its checks or did not load: the one
        loaded before is still in use, and an engine setting changed for the reload goes back."""
        kept, self._kept_model = getattr(self, "_kept_model", None), None
        change, self._option_change = getattr(self, "_option_change", None), None
        if change is not None:
            key, previous = change
            self.settings.set(key, previous)
            self._check_runtime_actions()
        if kept is None:
            return self._on_load_failed(message)
        self.model = kept
        self.settings.set(Key.MODEL_DIR, str(kept.model_dir))
        self.refresh_models()
        self._set_state("ready")
        self.show_message(self.tr("{reason}. Still using {name} on {device} ({backend}).").format(
            reason=display_message(message).rstrip("."), name=Path(kept.model_dir).name, device=kept.device, backend=kept.backend), True)

    def _check_runtime_actions(self) -> None:
        """An open Preferences dialog shows the engine settings as they are now (after a reload went back)."""
        dialog = getattr(self, "preferences_dialog", None)
        if dialog is None:
            return
        try:
            dialog.fill()
        except RuntimeError:  # its window was closed and deleted meanwhile
            self.preferences_dialog = None

    def open_model_manager(self, select: str | None = None, modal: bool = True) -> ModelManagerDialog:
        dialog = ModelManagerDialog(self.settings, self.models_dir, select=select, parent=self)
        dialog.modelChosen.connect(lambda folder: (self.refresh_models(), self.load_model(folder)))
        if modal:
            dialog.exec()
            self.refresh_models()
        else:
            dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
            dialog.show()
        return dialog

    def _on_load_progress(self, stage: str, fraction: float) -> None:
        self.load_fraction = max(self.load_fraction, min(1.0, fraction))  # never backwards
        self.load_stage = stage
        show_load_progress(self.load_progress, self.load_fraction, stage)
        self._update_status()

    def _on_loaded(self, summary: ModelSummary) -> None:
        self.model = summary
        self._kept_model = self._option_change = None
        self._set_state("ready")
        self.refresh_voices()
        self.refresh_styles()
        if self._pending_request is not None:
            request, self._pending_request = self._pending_request, None
            self.current_job = self.controller.speak(request)
            self.reading.start(self.current_job, self.text_edit.toPlainText(), getattr(self, "_pending_offset", 0))

    def _on_load_failed(self, message: str) -> None:
        self.model = None
        self._set_state("no_model")
        self.show_message(message, True)

    def _on_warming_up(self) -> None:
        self._set_state("warming")

    def _on_warmed_up(self, seconds: float) -> None:
        if self.state == "warming":
            self._set_state("ready")

