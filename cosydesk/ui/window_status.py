"""The main window's state and status bar: the message line, the state (no model, loading, warming, ready,
speaking), the status bar texts and which controls are enabled.

What it is for: one place that turns the window's state into what the user sees. A mixin of MainWindow.

What it must not do: change the state on its own (callers call _set_state).
"""

from __future__ import annotations

from pathlib import Path

from cosydesk.settings import Key
from cosydesk.ui.error_text import display_message
from cosydesk.ui.load_status import loading_text, speak_tooltip

# The housekeeping timer (reaping the audio stream, enabling controls) ticks fast only while audio plays or a
# job runs: at 100 ms all the time it cost ~2 % of a core in an idle window (tools/idle_cpu.py).
BUSY_TICK_MS = 100
IDLE_TICK_MS = 500


class WindowStatus:
    """Mixin of MainWindow: state, status bar and enabled controls."""

    def show_message(self, text: str, is_error: bool = False) -> None:
        """One message line under the editor; its colour comes from the theme (theme.message_style)."""
        text = display_message(text)  # engine messages: in the UI's language, starting with a capital letter
        self.error_label.setText(text)
        self.error_label.setProperty("message", "error" if is_error else "ok")
        self.error_label.style().unpolish(self.error_label)
        self.error_label.style().polish(self.error_label)
        self.error_label.setVisible(bool(text))

    def _set_state(self, state: str) -> None:
        self.state = state
        self.load_progress.setVisible(state == "loading")
        if state in ("loading", "speaking", "warming") and hasattr(self, "housekeeping"):
            self.housekeeping.setInterval(BUSY_TICK_MS)
        self._update_status()
        self._update_controls()

    def _update_status(self) -> None:
        if not hasattr(self, "status_state"):
            return
        names = {
            "no_model": self.tr("No model loaded"),
            "loading": loading_text(Path(self.settings.get(Key.MODEL_DIR) or "").name, self.load_stage,
                                    self.load_fraction),
            "warming": self.tr("Warming up…"),
            "ready": self.tr("Ready"),
            "speaking": self.tr("Speaking…"),
        }
        text = self.speaking_status() if self.state == "speaking" else names.get(self.state, self.state)
        if self.status_state.text() != text:
            self.status_state.setText(text)
        model = self.model
        self.status_model.setText(self.tr("Model: {name} ({version}, {rate} Hz)").format(
            name=Path(model.model_dir).name, version=model.version, rate=model.sample_rate) if model else "")
        self.status_device.setText(self.tr("Device: {d}").format(d=model.device) if model else "")
        self.status_backend.setText(self.tr("Backend: {b}").format(b=model.backend) if model else "")

    def _update_controls(self) -> None:
        if not hasattr(self, "stop_button"):
            return
        loaded = self.model is not None
        self.speak_button.setEnabled(loaded)
        self.speak_action.setEnabled(loaded)
        tooltip = speak_tooltip(loaded, self.state == "loading")
        if self.speak_button.toolTip() != tooltip:
            self.speak_button.setToolTip(tooltip)
        busy = self.state == "speaking" or self.player.is_playing or self._pending_request is not None
        self.stop_button.setEnabled(busy)
        paused = self.player.paused
        self.pause_button.setEnabled(self.player.is_playing)
        self.pause_button.setChecked(paused)
        self.pause_button.setText(self.tr("Resume") if paused else self.tr("Pause"))
        self.export_button.setEnabled(self.last_result is not None or self.exports.speaking_job() is not None)
        has_styles = bool(self.model and self.model.styles) or bool(
            self.model and (self.model.modes.get("instruct") or self.model.modes.get("instruct2")))
        reason = self.style_unavailable_reason() if has_styles else self.tr("This model has no styles.")
        self.style_combo.setEnabled(has_styles and not reason)
        tooltip = reason or self.tr("How the voice speaks: pick a preset or type an instruction")
        if self.style_combo.toolTip() != tooltip:
            self.style_combo.setToolTip(tooltip)
        self.speed_spin.setEnabled(self.model is not None)

    def style_unavailable_reason(self) -> str:
        """Why the Style box is off for the chosen voice ("" when a style can be used with it)."""
        voice = self.current_voice()
        if self.model is None or voice is None or voice[0] != "speaker" or voice[1] in self.model.styled_speakers:
            return ""
        return self.tr("Styles work with a voice profile (your own recording) on this model, not with the "
                       "built-in voice {name}. Choose a voice profile or create one with “New voice…”.").format(
            name=voice[1])

    def _tick(self) -> None:
        self.player.reap()
        self.reading.tick()
        if self.state == "speaking" and self.current_job is None and not self.player.is_playing:
            self._set_state("ready")  # the last of the audio has been heard
        elif self.state == "speaking":
            self._update_status()
        self._update_controls()
        busy = self.player.is_playing or self.state in ("loading", "speaking", "warming")
        interval = BUSY_TICK_MS if busy else IDLE_TICK_MS
        if self.housekeeping.interval() != interval:
            self.housekeeping.setInterval(interval)
