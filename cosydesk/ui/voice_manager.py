"""Voice profiles: the list of saved voices, to preview, rename, re-record and delete them (D20), or add one.

What it is for: managing <user data>/voices through VoiceProfileStore. Preview plays the prompt recording
through the `preview` callable it is given (the window's player path); renaming keeps the folder.

What it must not do: play audio itself or touch the synthesis.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (QDialog, QDialogButtonBox, QHBoxLayout, QInputDialog, QLabel, QListWidget,
                               QListWidgetItem, QMessageBox, QPushButton, QVBoxLayout, QWidget)

from cosydesk.audio.export import read_audio
from cosydesk.audio.profiles import ProfileError, VoiceProfileStore
from cosydesk.ui.error_text import display_message
from cosydesk.ui.history_panel import DETAILS_ROLE, LINES_ROLE, HistoryRowDelegate
from cosydesk.ui.voice_dialog import VoiceProfileDialog

NAME_ROLE = Qt.ItemDataRole.UserRole


class VoiceManagerDialog(QDialog):
    changed = Signal()  # a profile was added, renamed, re-recorded or deleted

    def __init__(self, store: VoiceProfileStore, reserved_names: tuple[str, ...] = (),
                 preview: Callable | None = None, parent: QWidget | None = None, recorder_factory=None) -> None:
        super().__init__(parent)
        self.setObjectName("voiceManagerDialog")
        self.setWindowTitle(self.tr("Voice profiles"))
        self.store = store
        self.reserved_names = reserved_names
        self._preview = preview
        self._recorder_factory = recorder_factory
        self.list = QListWidget(self)
        self.list.setObjectName("voiceList")
        self.list.setAlternatingRowColors(True)
        self.list.setItemDelegate(HistoryRowDelegate(self.list))  # name above, details dimmer below
        self.list.currentItemChanged.connect(lambda *_: self._update_buttons())
        self.list.itemActivated.connect(lambda *_: self.preview_current())
        self.problems_label = QLabel(self)
        self.problems_label.setObjectName("voiceManagerProblems")
        self.problems_label.setWordWrap(True)
        self.buttons: dict[str, QPushButton] = {}
        row = QHBoxLayout()
        for key, text, tip, slot in (
                ("preview", self.tr("Preview"), self.tr("Play the recording the voice is cloned from (Enter)"),
                 self.preview_current),
                ("rename", self.tr("Rename…"), self.tr("Give the voice another name"), self.rename_current),
                ("rerecord", self.tr("Re-record…"), self.tr("Replace the recording and its transcript"),
                 self.rerecord_current),
                ("delete", self.tr("Delete"), self.tr("Remove the voice and its recording"), self.delete_current),
                ("new", self.tr("New…"), self.tr("Add a voice from a recording"), self.add_new)):
            button = QPushButton(text, self)
            button.setObjectName(f"voice{key.capitalize()}Button")
            button.setToolTip(tip)
            button.clicked.connect(lambda _=False, s=slot: s())
            row.addWidget(button)
            self.buttons[key] = button
        close = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, self)
        close.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(self.list, 1)
        layout.addWidget(self.problems_label)
        layout.addLayout(row)
        layout.addWidget(close)
        self.resize(560, 360)
        self.reload()

    def reload(self, select: str | None = None) -> None:
        current = select or self.current_name()
        self.list.clear()
        for profile in self.store.list():
            transcript = " ".join(profile.transcript.split())
            transcript = transcript if len(transcript) <= 70 else transcript[:69] + "…"
            item = QListWidgetItem(self.tr("{name}\n{seconds} s · “{transcript}”").format(
                name=profile.name, seconds=f"{profile.duration_s:.1f}", transcript=transcript))
            item.setData(NAME_ROLE, profile.name)
            item.setData(LINES_ROLE, [profile.name])
            item.setData(DETAILS_ROLE, item.text().split("\n", 1)[1])
            item.setToolTip(profile.transcript)
            self.list.addItem(item)
            if profile.name == current:
                self.list.setCurrentItem(item)
        if self.list.currentItem() is None and self.list.count():
            self.list.setCurrentRow(0)
        self.problems_label.setText("\n".join(map(display_message, self.store.problems)))
        self.problems_label.setVisible(bool(self.store.problems))
        self._update_buttons()

    def current_name(self) -> str | None:
        item = self.list.currentItem()
        return item.data(NAME_ROLE) if item is not None else None

    def _update_buttons(self) -> None:
        has = self.current_name() is not None
        for key in ("preview", "rename", "rerecord", "delete"):
            self.buttons[key].setEnabled(has)
        self.buttons["preview"].setEnabled(has and self._preview is not None)

    def _say(self, problems: list[str]) -> None:
        self.problems_label.setText("\n".join(f"• {display_message(p)}" for p in problems))
        self.problems_label.setVisible(bool(problems))

    def preview_current(self) -> bool:
        profile = self.store.get(self.current_name() or "")
        if profile is None or self._preview is None:
            return False
        try:
            pcm, rate = read_audio(profile.wav_path)
        except Exception as error:  # noqa: BLE001 - a damaged recording: say so, keep the dialog usable
            self._say([self.tr("Cannot play {name}: {e}").format(name=profile.wav_path.name, e=error)])
            return False
        self._preview(pcm, rate)
        return True

    def rename_current(self, new_name: str | None = None) -> bool:
        name = self.current_name()
        if name is None:
            return False
        if new_name is None:
            new_name, ok = QInputDialog.getText(self, self.tr("Rename voice"), self.tr("New name"), text=name)
            if not ok:
                return False
        try:
            profile = self.store.rename(name, new_name, self.reserved_names)
        except (ProfileError, OSError) as error:
            self._say(error.problems if isinstance(error, ProfileError) else [str(error)])
            return False
        self._say([])
        self.reload(select=profile.name)
        self.changed.emit()
        return True

    def _voice_dialog(self, replacing=None) -> VoiceProfileDialog:
        extra = {"recorder_factory": self._recorder_factory} if self._recorder_factory else {}
        dialog = VoiceProfileDialog(self.store, reserved_names=self.reserved_names, parent=self, replacing=replacing,
                                    **extra)
        dialog.accepted.connect(lambda: (self.reload(select=dialog.profile.name if dialog.profile else None),
                                         self.changed.emit()))
        return dialog

    def rerecord_current(self, modal: bool = True) -> VoiceProfileDialog | None:
        profile = self.store.get(self.current_name() or "")
        if profile is None:
            return None
        dialog = self._voice_dialog(replacing=profile)
        dialog.exec() if modal else dialog.show()
        return dialog

    def add_new(self, modal: bool = True) -> VoiceProfileDialog:
        dialog = self._voice_dialog()
        dialog.exec() if modal else dialog.show()
        return dialog

    def delete_current(self, confirm: bool = True) -> bool:
        name = self.current_name()
        if name is None:
            return False
        if confirm and QMessageBox.question(
                self, self.tr("Delete voice"),
                self.tr("Delete the voice “{name}” and its recording?").format(name=name)) \
                != QMessageBox.StandardButton.Yes:
            return False
        if not self.store.delete(name):
            self._say([self.tr("“{name}” could not be deleted.").format(name=name)])
            return False
        self.reload()
        self.changed.emit()
        return True
