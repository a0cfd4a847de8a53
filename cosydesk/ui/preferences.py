"""Settings → Preferences… (Ctrl+,): every user setting in one dialog, applied at once, no restart.

Tabs: General (language, theme, history size), Sound (output device), Engine (compute device, backend,
precision in plain words; choices that cannot work here are disabled with the reason, cosydesk/ui/
engine_choices.py), Export (default format and folder). Other parts of the app add their own tab with
add_section() (the local API's "Serve other apps" switch goes there).

Each change is stored in Settings and handed to the `apply` callback (the main window), which does what the
old menus did through the same code paths: a new compute device / backend / precision loads the model again
through the main window's load path, so the model in use keeps working until the new one has loaded.

What it must not do: load models or open audio devices itself.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QEvent
from PySide6.QtGui import QStandardItemModel
from PySide6.QtWidgets import (QComboBox, QDialog, QDialogButtonBox, QFileDialog, QFormLayout, QHBoxLayout, QLabel,
                               QLineEdit, QPushButton, QSpinBox, QTabWidget, QVBoxLayout, QWidget)

from cosydesk.audio.formats import FORMATS
from cosydesk.settings import RANGES, Key, Settings
from cosydesk.ui import engine_choices
from cosydesk.ui.engine_choices import Capabilities
from cosydesk.ui.error_text import translate_message

# the export format table's keys and labels (one table for the app, the CLI and the server)
ENGINE_KEYS = (Key.DEVICE, Key.BACKEND, Key.PRECISION)
EXPORT_FORMATS = tuple((spec.key, spec.label.removesuffix(" audio")) for spec in FORMATS.values())


def _combo(parent: QWidget, name: str) -> QComboBox:
    combo = QComboBox(parent)
    combo.setObjectName(name)
    return combo


def _select(combo: QComboBox, value) -> None:
    index = combo.findData(value)
    combo.setCurrentIndex(index if index >= 0 else 0)


class PreferencesDialog(QDialog):
    def __init__(self, settings: Settings, apply: Callable[[Key, object], None] | None = None,
                 capabilities: Capabilities | None = None, output_devices: Callable[[], list[str]] | None = None,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("preferencesDialog")
        self.settings = settings
        self._applies = apply is not None
        self._apply = apply or (lambda key, value: None)
        self.caps = capabilities or engine_choices.detect()
        self._output_devices = output_devices or self._list_output_devices
        self._filling = False
        self.tabs = QTabWidget(self)
        self.tabs.setObjectName("preferencesTabs")

        general = QWidget(self.tabs)
        self.language_combo = _combo(general, "languageCombo")
        self.theme_combo = _combo(general, "themeCombo")
        self.history_spin = QSpinBox(general)
        self.history_spin.setObjectName("historySizeSpin")
        low, high = RANGES[Key.HISTORY_SIZE]
        self.history_spin.setRange(int(low), int(high))
        self.history_spin.setSingleStep(50)
        self.general_form = QFormLayout(general)
        self.general_form.addRow(QLabel(self), self.language_combo)
        self.general_form.addRow(QLabel(self), self.theme_combo)
        self.general_form.addRow(QLabel(self), self.history_spin)
        self.prompt_spin = QSpinBox(general)
        self.prompt_spin.setObjectName("voicePromptMaxSpin")
        low, high = RANGES[Key.VOICE_PROMPT_MAX_S]
        self.prompt_spin.setRange(int(low), int(high))
        self.general_form.addRow(QLabel(self), self.prompt_spin)

        sound = QWidget(self.tabs)
        self.output_combo = _combo(sound, "outputDeviceCombo")
        self.sound_form = QFormLayout(sound)
        self.sound_form.addRow(QLabel(self), self.output_combo)

        engine = QWidget(self.tabs)
        self.device_combo = _combo(engine, "deviceCombo")
        self.backend_combo = _combo(engine, "backendCombo")
        self.precision_combo = _combo(engine, "precisionCombo")
        self.engine_note = QLabel(engine)
        self.engine_note.setObjectName("engineNote")
        self.engine_note.setWordWrap(True)
        self.engine_note.setProperty("message", "note")
        self.engine_form = QFormLayout(engine)
        for combo in (self.device_combo, self.backend_combo, self.precision_combo):
            self.engine_form.addRow(QLabel(self), combo)
        self.engine_form.addRow(self.engine_note)

        export = QWidget(self.tabs)
        self.format_combo = _combo(export, "exportFormatCombo")
        self.folder_edit = QLineEdit(export)
        self.folder_edit.setObjectName("exportFolderEdit")
        self.folder_button = QPushButton(export)
        self.folder_button.setObjectName("exportFolderButton")
        folder_row = QHBoxLayout()
        folder_row.addWidget(self.folder_edit, 1)
        folder_row.addWidget(self.folder_button)
        self.export_form = QFormLayout(export)
        self.export_form.addRow(QLabel(self), self.format_combo)
        self.export_form.addRow(QLabel(self), folder_row)

        self.pages = {"general": general, "sound": sound, "engine": engine, "export": export}
        for page in self.pages.values():
            self.tabs.addTab(page, "")
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, self)
        self.buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(self.tabs)
        layout.addWidget(self.buttons)
        self.resize(620, 380)

        self.retranslate()
        self.language_combo.activated.connect(lambda _: self._changed(Key.LANGUAGE, self.language_combo.currentData()))
        self.theme_combo.activated.connect(lambda _: self._changed(Key.THEME, self.theme_combo.currentData()))
        self.history_spin.valueChanged.connect(lambda value: self._changed(Key.HISTORY_SIZE, int(value)))
        self.prompt_spin.valueChanged.connect(lambda value: self._changed(Key.VOICE_PROMPT_MAX_S, float(value)))
        self.output_combo.activated.connect(lambda _: self._changed(Key.AUDIO_DEVICE, self.output_combo.currentData()))
        self.device_combo.activated.connect(lambda _: self._engine_changed(Key.DEVICE, self.device_combo))
        self.backend_combo.activated.connect(lambda _: self._engine_changed(Key.BACKEND, self.backend_combo))
        self.precision_combo.activated.connect(lambda _: self._engine_changed(Key.PRECISION, self.precision_combo))
        self.format_combo.activated.connect(lambda _: self._changed(Key.EXPORT_FORMAT, self.format_combo.currentData()))
        self.folder_edit.editingFinished.connect(self._folder_typed)
        self.folder_button.clicked.connect(self._ask_folder)

    # -- sections added by other parts of the app -----------------------------------------------------------
    def add_section(self, title: str, widget: QWidget, object_name: str = "") -> int:
        """Add a tab (e.g. the local API's "Serve other apps" switch); returns its index."""
        if object_name:
            widget.setObjectName(object_name)
        self.pages[object_name or title] = widget
        return self.tabs.addTab(widget, title)

    # -- texts --------------------------------------------------------------------------------------------
    def changeEvent(self, event) -> None:  # noqa: N802 - Qt override
        if event.type() == QEvent.Type.LanguageChange:
            self.retranslate()
        super().changeEvent(event)

    def _label(self, form: QFormLayout, row: int, text: str) -> None:
        item = form.itemAt(row, QFormLayout.ItemRole.LabelRole)
        if item is not None and item.widget() is not None:
            item.widget().setText(text)

    def retranslate(self) -> None:
        self.setWindowTitle(self.tr("Preferences"))
        for index, title in enumerate((self.tr("General"), self.tr("Sound"), self.tr("Engine"), self.tr("Export"))):
            self.tabs.setTabText(index, title)
        for form, labels in ((self.general_form, (self.tr("Language"), self.tr("Theme"), self.tr("History keeps"),
                                                 self.tr("Voice recordings up to"))),
                             (self.sound_form, (self.tr("Output device"),)),
                             (self.engine_form, (self.tr("Compute device"), self.tr("Engine"), self.tr("Precision"))),
                             (self.export_form, (self.tr("Default format"), self.tr("Default folder")))):
            for row, text in enumerate(labels):
                self._label(form, row, text)
        self.history_spin.setSuffix(self.tr(" utterances"))
        self.prompt_spin.setSuffix(self.tr(" s"))
        self.prompt_spin.setToolTip(self.tr("New voice profiles stop recording after this long; a shorter clip of one "
                                            "or two sentences clones best (the models take at most 30 s)"))
        self.folder_button.setText(self.tr("Choose…"))
        self.folder_edit.setPlaceholderText(self.tr("Your Music folder"))
        self.language_combo.setToolTip(self.tr("The language of menus, buttons and messages"))
        self.theme_combo.setToolTip(self.tr("Light or dark colours; the system setting follows the desktop"))
        self.history_spin.setToolTip(self.tr("How many past utterances History keeps; older ones are removed"))
        self.output_combo.setToolTip(self.tr("Where speech is played"))
        self.device_combo.setToolTip(self.tr("Which part of the computer computes the speech"))
        self.backend_combo.setToolTip(self.tr("How the model runs on that device"))
        self.precision_combo.setToolTip(self.tr("Number format of the model's arithmetic"))
        self.format_combo.setToolTip(self.tr("The format Export offers first"))
        self.folder_edit.setToolTip(self.tr("Where Export opens first; empty for your Music folder"))
        self.folder_button.setToolTip(self.tr("Pick the default export folder"))
        self.tabs.setToolTip("")
        self.fill()

    def fill(self) -> None:
        """(Re)fill every control from the settings and the machine's capabilities."""
        self._filling = True
        s = self.settings
        self.language_combo.clear()
        for value, text in (("system", self.tr("Follow the system")), ("en", "English"), ("zh_CN", "中文（简体）")):
            self.language_combo.addItem(text, value)
        _select(self.language_combo, s.get(Key.LANGUAGE))
        self.theme_combo.clear()
        for value, text in (("system", self.tr("Follow the system")), ("light", self.tr("Light")),
                            ("dark", self.tr("Dark"))):
            self.theme_combo.addItem(text, value)
        _select(self.theme_combo, s.get(Key.THEME))
        self.history_spin.setValue(s.get(Key.HISTORY_SIZE))
        self.prompt_spin.setValue(int(round(s.get(Key.VOICE_PROMPT_MAX_S))))
        self.output_combo.clear()
        self.output_combo.addItem(self.tr("System default"), "")
        for name in self._output_devices():
            self.output_combo.addItem(name, name)
        _select(self.output_combo, s.get(Key.AUDIO_DEVICE))
        self.format_combo.clear()
        for value, text in EXPORT_FORMATS:
            self.format_combo.addItem(text, value)
        _select(self.format_combo, s.get(Key.EXPORT_FORMAT))
        self.folder_edit.setText(s.get(Key.EXPORT_DIR))
        self._fill_engine()
        self._filling = False

    def _fill_engine(self) -> None:
        device = self.settings.get(Key.DEVICE)
        device = device.split(":")[0] if device.startswith("cuda") else device
        for combo, choices, key in ((self.device_combo, engine_choices.DEVICES, Key.DEVICE),
                                    (self.backend_combo, engine_choices.BACKENDS, Key.BACKEND),
                                    (self.precision_combo, engine_choices.PRECISIONS, Key.PRECISION)):
            combo.blockSignals(True)
            combo.clear()
            model: QStandardItemModel = combo.model()
            for choice in choices:
                combo.addItem(self._t(choice.label), choice.value)
                item = model.item(combo.count() - 1)
                reason = engine_choices.unavailable_reason(choice, self.caps, device if key != Key.DEVICE else "auto")
                item.setEnabled(not reason)
                item.setToolTip(self._t(choice.help) + (("\n" + self._why(reason)) if reason else ""))
            value = self.settings.get(key)
            _select(combo, value.split(":")[0] if key == Key.DEVICE and value.startswith("cuda") else value)
            combo.blockSignals(False)
        notes = [self._why(r) for r in (engine_choices.unavailable_reason(c, self.caps, device)
                                        for c in engine_choices.DEVICES + engine_choices.BACKENDS) if r]
        gpu = self.tr("GPU: {name}").format(name=self.caps.gpu_name) if self.caps.gpu_name else ""
        lines = [gpu] if gpu else []
        if notes:
            lines.append(self.tr("Some choices are unavailable here: {why}.").format(why=notes[0].rstrip(".")))
        lines.append(self.tr("Changing these loads the model again; the model in use keeps speaking until the "
                             "new one is ready."))
        self.engine_note.setText("\n".join(lines))

    def _words(self) -> dict[str, str]:
        """The engine choices' labels, help and fixed reasons in the UI language (literal tr() calls, so lupdate
        finds them; engine_choices.py holds the English and must not import Qt)."""
        return {
            'Automatic': self.tr('Automatic'),
            'The NVIDIA GPU when there is one, otherwise the processor.': self.tr('The NVIDIA GPU when there is one, otherwise the processor.'),
            'Processor (CPU)': self.tr('Processor (CPU)'),
            'Works on every computer; slower than real time for the full-size models.': self.tr('Works on every computer; slower than real time for the full-size models.'),
            'NVIDIA GPU': self.tr('NVIDIA GPU'),
            'Speech starts in well under a second and runs many times faster than real time.': self.tr('Speech starts in well under a second and runs many times faster than real time.'),
            'The fastest path that has been tested on this kind of device.': self.tr('The fastest path that has been tested on this kind of device.'),
            'Plain PyTorch': self.tr('Plain PyTorch'),
            'The reference path: the same results everywhere, the slowest on a GPU.': self.tr('The reference path: the same results everywhere, the slowest on a GPU.'),
            'Fast GPU path': self.tr('Fast GPU path'),
            "Pre-recorded GPU work (CUDA graphs) with CosyDesk's own kernels.": self.tr("Pre-recorded GPU work (CUDA graphs) with CosyDesk's own kernels."),
            'TensorRT (experimental)': self.tr('TensorRT (experimental)'),
            "NVIDIA's engine compiler for the flow network; engines are built on first use. Not yet run on a GPU of ours, so Automatic never picks it.": self.tr("NVIDIA's engine compiler for the flow network; engines are built on first use. Not yet run on a GPU of ours, so Automatic never picks it."),
            'Half precision on the GPU, full precision on the processor.': self.tr('Half precision on the GPU, full precision on the processor.'),
            'Full precision (32-bit)': self.tr('Full precision (32-bit)'),
            'Exact reference numbers; on a GPU it is slower and uses more memory.': self.tr('Exact reference numbers; on a GPU it is slower and uses more memory.'),
            'Half precision (16-bit)': self.tr('Half precision (16-bit)'),
            'Faster and lighter on a GPU; not used on the processor.': self.tr('Faster and lighter on a GPU; not used on the processor.'),
            'needs the NVIDIA GPU as compute device': self.tr('needs the NVIDIA GPU as compute device'),
            'no NVIDIA GPU found': self.tr('no NVIDIA GPU found'),
        }

    def _t(self, english: str) -> str:
        return self._words().get(english, english)

    def _why(self, reason: str) -> str:
        text = self._t(reason)
        if text == reason:  # a reason with a value in it (engine_choices' f-strings): the message tables
            text = translate_message(reason)
        return text[:1].upper() + text[1:]

    def choice_enabled(self, combo: QComboBox, value: str) -> bool:
        index = combo.findData(value)
        return index >= 0 and combo.model().item(index).isEnabled()

    # -- changes ------------------------------------------------------------------------------------------
    def _changed(self, key: Key, value) -> None:
        if self._filling or self.settings.get(key) == value:
            return
        if key in ENGINE_KEYS and self._applies:
            # the window stores an engine choice itself: it remembers the one running, to go back to it when the
            # model does not load with the new one
            self._apply(key, value)
            return
        self.settings.set(key, value)
        self._apply(key, value)

    def _engine_changed(self, key: Key, combo: QComboBox) -> None:
        value = combo.currentData()
        if not self.choice_enabled(combo, value):  # never stored: it cannot work here
            self._fill_engine()
            return
        self._changed(key, value)
        self._fill_engine()  # a CPU device disables the GPU-only engines and precisions

    def set_engine(self, key: Key, value: str) -> bool:
        """Choose `value` for DEVICE / BACKEND / PRECISION as the user would; False if it is disabled here."""
        combo = {Key.DEVICE: self.device_combo, Key.BACKEND: self.backend_combo,
                 Key.PRECISION: self.precision_combo}[key]
        if not self.choice_enabled(combo, value):
            return False
        combo.setCurrentIndex(combo.findData(value))
        self._engine_changed(key, combo)
        return True

    def _folder_typed(self) -> None:
        text = self.folder_edit.text().strip()
        if text and not Path(text).expanduser().is_dir():
            self.folder_edit.setToolTip(self.tr("{folder} is not a folder; export keeps its previous default").format(
                folder=text))
            self.folder_edit.setProperty("message", "error")
            self.folder_edit.setText(self.settings.get(Key.EXPORT_DIR))
            return
        self._changed(Key.EXPORT_DIR, str(Path(text).expanduser()) if text else "")

    def _ask_folder(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, self.tr("Default export folder"),
                                                  self.settings.get(Key.EXPORT_DIR) or str(Path.home()))
        if folder:
            self.folder_edit.setText(folder)
            self._folder_typed()

    @staticmethod
    def _list_output_devices() -> list[str]:
        from cosydesk.audio.player import list_output_devices

        try:
            return [name for _, name in list_output_devices()]
        except Exception:  # noqa: BLE001 - no PortAudio: only the system default is offered
            return []
