"""The main window's voice and style pickers: SFT speakers and saved voice profiles, style presets or free text.

What it is for: filling the speaker and style combos from the loaded model and the profile store, reading the
user's choice back, and the New voice… dialog. A mixin of MainWindow.

What it must not do: synthesise; the chosen voice only goes into a Request (speak_control.py).
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QIcon

from cosydesk.settings import Key
from cosydesk.ui import i18n
from cosydesk.ui.resources import voice_profile_icon_path
from cosydesk.ui.voice_dialog import VoiceProfileDialog

SPEAKER, PROFILE = "speaker", "profile"
LEGACY_PROFILE_MARK = "🎙 "  # how profiles were marked (in the combo's text) before the icon; older settings hold it


def profile_icon() -> QIcon:
    """The bundled microphone icon for voice profiles (an SVG, drawn the same on every system)."""
    return QIcon(str(voice_profile_icon_path()))


def voice_key(kind: str, name: str) -> str:
    """Item data of the speaker combo: kind and name in one string (QVariant keeps strings comparable)."""
    return f"{kind}:{name}"


class VoiceBar:
    """Mixin of MainWindow: voices and styles."""

    def refresh_voices(self) -> None:
        wanted = self.speaker_combo.currentText() or self.settings.get(Key.SPEAKER)
        if wanted and wanted.startswith(LEGACY_PROFILE_MARK):
            wanted = wanted[len(LEGACY_PROFILE_MARK):]
        self.speaker_combo.blockSignals(True)
        self.speaker_combo.clear()
        speakers = self.model.speakers if self.model else []
        for name in speakers:
            self.speaker_combo.addItem(name, voice_key(SPEAKER, name))
        zero_shot = self.model is None or self.model.modes.get("zero_shot", False)
        if zero_shot:
            profiles = self.voices.list()
            if profiles and speakers:
                self.speaker_combo.insertSeparator(self.speaker_combo.count())
            icon, tip = profile_icon(), self.tr("Voice profile recorded on this computer")
            for profile in profiles:
                self.speaker_combo.addItem(icon, profile.name, voice_key(PROFILE, profile.name))
                self.speaker_combo.setItemData(self.speaker_combo.count() - 1, tip, Qt.ItemDataRole.ToolTipRole)
        index = max(0, self.speaker_combo.findText(wanted)) if wanted else 0
        if self.speaker_combo.count():
            self.speaker_combo.setCurrentIndex(index)
        self.speaker_combo.setPlaceholderText(self.tr("Create a voice profile"))
        self.speaker_combo.blockSignals(False)
        self.new_voice_button.setEnabled(zero_shot)
        self._update_controls()

    def refresh_styles(self) -> None:
        if not hasattr(self, "style_combo"):
            return
        typed = self.style_combo.currentText() if self.style_combo.currentIndex() < 0 else None
        current = self.style_combo.currentData()
        self.style_combo.blockSignals(True)
        self.style_combo.clear()
        self.style_combo.addItem(self.tr("(no style)"), "")
        if self.model is not None:
            chinese = i18n.resolve_language(self.settings.get(Key.LANGUAGE)) == "zh_CN"
            for label in self.model.styles:
                shown = self.model.style_labels_zh.get(label, label) if chinese else label
                self.style_combo.addItem(shown, label)
        index = self.style_combo.findData(current) if current else 0
        self.style_combo.setCurrentIndex(max(0, index))
        if typed:
            self.style_combo.setEditText(typed)
        self.style_combo.blockSignals(False)
        self._update_controls()

    def current_voice(self) -> tuple[str, str] | None:
        data = self.speaker_combo.currentData()
        if not data or ":" not in data:
            return None
        kind, name = data.split(":", 1)
        return kind, name

    def current_instruct(self) -> str | None:
        if self.style_unavailable_reason():  # a style the chosen voice cannot take is not sent (Speak would fail)
            return None
        index = self.style_combo.currentIndex()
        text = self.style_combo.currentText().strip()
        if index >= 0 and text == self.style_combo.itemText(index):
            return self.style_combo.itemData(index) or None
        return text or None  # free text typed by the user

    def open_voice_dialog(self, modal: bool = True) -> VoiceProfileDialog:
        reserved = tuple(self.model.speakers) if self.model else ()
        dialog = VoiceProfileDialog(self.voices, reserved_names=reserved, parent=self,
                                    max_seconds=self.settings.get(Key.VOICE_PROMPT_MAX_S))
        dialog.accepted.connect(lambda: self._on_profile_saved(dialog))
        if modal:
            dialog.exec()
        else:
            dialog.show()
        return dialog

    def open_voice_manager(self, modal: bool = True):
        """File > Voice profiles…: preview, rename, re-record, delete (voice_manager.py)."""
        from cosydesk.ui.voice_manager import VoiceManagerDialog

        reserved = tuple(self.model.speakers) if self.model else ()
        dialog = VoiceManagerDialog(self.voices, reserved, preview=self.controller.replay, parent=self)
        dialog.changed.connect(self.refresh_voices)
        dialog.exec() if modal else dialog.show()
        return dialog

    def _on_profile_saved(self, dialog: VoiceProfileDialog) -> None:
        if dialog.profile is not None:
            self.refresh_voices()
            index = self.speaker_combo.findData(voice_key(PROFILE, dialog.profile.name))
            if index >= 0:
                self.speaker_combo.setCurrentIndex(index)

    def _remember_voice(self) -> None:
        self.settings.set(Key.SPEAKER, self.speaker_combo.currentText())
        self.settings.set(Key.SPEED, self.speed_spin.value())

