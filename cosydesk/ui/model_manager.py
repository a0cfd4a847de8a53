"""Model manager dialog: the catalogue with sizes and features, downloads with progress/cancel, "Add folder…".

Rows: the catalogue models first, then the folders added by hand ("Add folder…", a folder dropped on the
window), each with its version, size on disk and path; an added folder can be taken off the list again
("Remove from list" never deletes files). Name columns size to their contents, so names are never cut off.

What it must not do: block the UI thread on the network; downloads run in a QThread (DownloadWorker).
"""

from __future__ import annotations

import threading
from pathlib import Path

from PySide6.QtCore import QEvent, QLocale, QObject, Qt, QThread, Signal, Slot
from PySide6.QtWidgets import (QDialog, QDialogButtonBox, QFileDialog, QHBoxLayout, QHeaderView, QLabel,
                               QProgressBar, QPushButton, QTableWidget, QTableWidgetItem, QVBoxLayout, QWidget)

from dataclasses import dataclass

from cosydesk import hub
from cosydesk.settings import Key, Settings
from cosydesk.ui.error_text import display_message


@dataclass(frozen=True)
class ModelRow:
    name: str  # catalogue name, or the added folder's name
    folder: Path
    added: bool  # a folder added by hand (not a catalogue entry)


def _folder_size_gb(folder: Path) -> float | None:
    try:
        return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file()) / 1e9
    except OSError:
        return None


class DownloadWorker(QObject):
    progress = Signal(int, int)  # done bytes, total bytes
    finished = Signal(str)  # folder
    failed = Signal(str, bool)  # message, cancelled

    def __init__(self, name: str, models_dir: Path) -> None:
        super().__init__()
        self.name = name
        self.models_dir = models_dir
        self.cancel = threading.Event()

    @Slot()
    def run(self) -> None:
        try:
            folder = hub.download_model(self.name, self.models_dir,
                                        progress=lambda done, total, _msg: self.progress.emit(done, total),
                                        cancel=self.cancel)
        except hub.DownloadCancelled:
            self.failed.emit("cancelled", True)
        except hub.DownloadError as error:
            self.failed.emit(str(error), False)
        else:
            self.finished.emit(str(folder))


def known_model_dirs(settings: Settings, models_dir: Path | None = None) -> list[Path]:
    """Installed catalogue models plus folders added by hand (only those that still load)."""
    folders = list(hub.installed_models(models_dir))
    for extra in settings.get(Key.EXTRA_MODEL_DIRS):
        path = Path(extra)
        try:
            loadable = path not in folders and hub.check_model_dir(path).loadable
        except (OSError, ValueError):  # a hand-edited entry naming something unreadable must not stop the start
            loadable = False
        if loadable:
            folders.append(path)
    return folders


class ModelManagerDialog(QDialog):
    modelChosen = Signal(str)  # folder to load
    foldersChanged = Signal()  # an added folder was taken off the list

    COLUMNS = 4

    def __init__(self, settings: Settings, models_dir: Path | None = None, select: str | None = None,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("modelManager")
        self.settings = settings
        self.models_dir = Path(models_dir) if models_dir else hub.default_models_dir()
        self._thread: QThread | None = None
        self._worker: DownloadWorker | None = None
        self.rows: list[ModelRow] = []
        self.table = QTableWidget(0, self.COLUMNS, self)
        self.table.setObjectName("modelTable")
        self.table.setSelectionBehavior(QTableWidget.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QTableWidget.SelectionMode.SingleSelection)
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().setVisible(False)
        header = self.table.horizontalHeader()
        for column in (0, 1, 3):  # names, sizes and states are shown whole (D18)
            header.setSectionResizeMode(column, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(2, QHeaderView.ResizeMode.Stretch)
        self.table.setWordWrap(True)
        self.table.itemSelectionChanged.connect(self._update_buttons)
        self.status = QLabel(self)
        self.status.setObjectName("modelStatus")
        self.status.setWordWrap(True)
        self.status.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.progress = QProgressBar(self)
        self.progress.setObjectName("downloadProgress")
        self.progress.hide()
        self.download_button = QPushButton(self)
        self.download_button.setObjectName("downloadButton")
        self.cancel_button = QPushButton(self)
        self.cancel_button.setObjectName("cancelDownloadButton")
        self.cancel_button.hide()
        self.use_button = QPushButton(self)
        self.use_button.setObjectName("useModelButton")
        self.add_folder_button = QPushButton(self)
        self.add_folder_button.setObjectName("addFolderButton")
        self.remove_button = QPushButton(self)
        self.remove_button.setObjectName("removeFolderButton")
        self.remove_button.clicked.connect(self._remove_selected)
        self.download_button.clicked.connect(self.start_download)
        self.cancel_button.clicked.connect(self.cancel_download)
        self.use_button.clicked.connect(self._use_selected)
        self.add_folder_button.clicked.connect(self._ask_folder)
        row = QHBoxLayout()
        for button in (self.download_button, self.cancel_button, self.use_button, self.add_folder_button,
                       self.remove_button):
            row.addWidget(button)
        row.addStretch(1)
        close = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, self)
        close.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        self.intro = QLabel(self)
        self.intro.setWordWrap(True)
        layout.addWidget(self.intro)
        layout.addWidget(self.table, 1)
        layout.addWidget(self.progress)
        layout.addWidget(self.status)
        layout.addLayout(row)
        layout.addWidget(close)
        self.resize(900, 460)
        self.retranslate()
        self.select(select or hub.DEFAULT_MODEL)

    # -- texts ------------------------------------------------------------------------------------------
    def changeEvent(self, event) -> None:  # noqa: N802
        if event.type() == QEvent.Type.LanguageChange:
            self.retranslate()
        super().changeEvent(event)

    def _chinese(self) -> bool:
        return QLocale().language() == QLocale.Language.Chinese

    def retranslate(self) -> None:
        self.setWindowTitle(self.tr("Models"))
        self.intro.setText(self.tr("Models are stored in {folder}. {default} is recommended: the lowest streaming "
                                   "latency and voice cloning.").format(folder=self.models_dir,
                                                                          default=hub.DEFAULT_MODEL))
        self.table.setHorizontalHeaderLabels([self.tr("Model"), self.tr("Size"), self.tr("What it offers"),
                                              self.tr("Status")])
        self.download_button.setText(self.tr("Download"))
        self.cancel_button.setText(self.tr("Cancel download"))
        self.use_button.setText(self.tr("Use this model"))
        self.add_folder_button.setText(self.tr("Add folder…"))
        self.remove_button.setText(self.tr("Remove from list"))
        self.table.setToolTip(self.tr("Catalogue models and the folders you added; select one to use it."))
        self.download_button.setToolTip(self.tr("Download the selected catalogue model (resumes where it stopped)"))
        self.cancel_button.setToolTip(self.tr("Stop the download; what was downloaded is kept"))
        self.use_button.setToolTip(self.tr("Load the selected model in the main window"))
        self.add_folder_button.setToolTip(self.tr("Use a CosyVoice model folder you already have"))
        self.remove_button.setToolTip(self.tr("Take the selected added folder off the list (its files stay on disk)"))
        self.refresh()

    def _added_folders(self) -> list[Path]:
        catalogue = {self.models_dir / info.name for info in hub.CATALOGUE}
        seen: list[Path] = []
        for entry in self.settings.get(Key.EXTRA_MODEL_DIRS):
            path = Path(entry)
            if path not in catalogue and path not in seen:
                seen.append(path)
        return seen

    def refresh(self) -> None:
        chinese = self._chinese()
        selected = self.selected_row()
        self.rows = [ModelRow(info.name, self.models_dir / info.name, False) for info in hub.CATALOGUE]
        self.rows += [ModelRow(folder.name, folder, True) for folder in self._added_folders()]
        self.table.setRowCount(len(self.rows))
        for row, entry in enumerate(self.rows):
            if entry.added:
                report = hub.check_model_dir(entry.folder)
                size = _folder_size_gb(entry.folder) if entry.folder.is_dir() else None
                offers = self.tr("Added folder ({version} model): {path}").format(
                    version=report.version or "?", path=entry.folder)
                cells = [entry.name, "–" if size is None else f"{size:.1f} GB", offers,
                         self.tr("added") if report.loadable else self.tr("cannot be used")]
                tooltip = str(entry.folder) if report.loadable else "\n".join(
                    [str(entry.folder), *map(display_message, report.problems)])
            else:
                info = hub.catalogue_entry(entry.name)
                installed = hub.check_model_dir(entry.folder).loadable
                cells = [info.name + ("  ★" if info.recommended else ""), f"~{info.size_gb:.1f} GB",
                         info.summary_zh if chinese else info.summary_en,
                         self.tr("installed") if installed else self.tr("not installed")]
                tooltip = f"{info.name} ({info.hf_repo})"
            for column, text in enumerate(cells):
                item = QTableWidgetItem(text)
                item.setData(Qt.ItemDataRole.UserRole, entry.name)
                item.setToolTip(tooltip if column != 2 else text)
                self.table.setItem(row, column, item)
        self.table.resizeColumnsToContents()
        self.table.resizeRowsToContents()
        if selected is not None and selected in self.rows:
            self.table.selectRow(self.rows.index(selected))
        self._update_buttons()

    # -- selection ----------------------------------------------------------------------------------------
    def select(self, name: str) -> None:
        """Select the row of catalogue model `name` (or of an added folder, by name or path)."""
        for row, entry in enumerate(self.rows):
            if name in (entry.name, str(entry.folder)):
                self.table.selectRow(row)
                return

    def selected_row(self) -> ModelRow | None:
        if not hasattr(self, "table") or self.table.selectionModel() is None:
            return None
        rows = self.table.selectionModel().selectedRows()
        return self.rows[rows[0].row()] if rows and rows[0].row() < len(self.rows) else None

    def selected_name(self) -> str | None:
        """The selected catalogue model's name (None for an added folder or no selection)."""
        row = self.selected_row()
        return row.name if row is not None and not row.added else None

    def _update_buttons(self) -> None:
        row = self.selected_row()
        downloading = self._worker is not None
        installed = row is not None and hub.check_model_dir(row.folder).loadable
        self.download_button.setEnabled(row is not None and not row.added and not downloading and not installed)
        self.use_button.setEnabled(installed and not downloading)
        self.remove_button.setEnabled(row is not None and row.added)

    def _use_selected(self) -> None:
        row = self.selected_row()
        if row is not None:
            self.modelChosen.emit(str(row.folder))
            self.accept()

    def _remove_selected(self) -> None:
        row = self.selected_row()
        if row is not None and row.added:
            self.remove_folder(row.folder)

    def remove_folder(self, folder: str | Path) -> bool:
        """Take an added folder off the list (the files stay where they are). True if it was listed."""
        folder = Path(folder)
        extra = self.settings.get(Key.EXTRA_MODEL_DIRS)
        kept = [p for p in extra if Path(p) != folder]
        if len(kept) == len(extra):
            return False
        self.settings.set(Key.EXTRA_MODEL_DIRS, kept)
        self.status.setText(self.tr("Removed {folder} from the list; its files are still on disk.").format(
            folder=folder))
        self.refresh()
        self.foldersChanged.emit()
        return True

    # -- add folder ---------------------------------------------------------------------------------------
    def _ask_folder(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, self.tr("Choose a CosyVoice model folder"))
        if folder:
            self.add_folder(folder)

    def add_folder(self, folder: str | Path) -> bool:
        """Check a folder; explain what is missing, or remember it and offer it. True if usable."""
        report = hub.check_model_dir(folder)
        if not report.loadable:
            self.status.setText(self.tr("This folder cannot be used:") + "\n• "
                                + "\n• ".join(map(display_message, report.problems))
                                + ("\n" + self.tr("Also missing:") + "\n• "
                                   + "\n• ".join(map(display_message, report.missing_optional))
                                   if report.missing_optional else ""))
            return False
        extra = [p for p in self.settings.get(Key.EXTRA_MODEL_DIRS) if p != str(report.path)]
        self.settings.set(Key.EXTRA_MODEL_DIRS, extra + [str(report.path)])
        message = self.tr("Added {folder} ({version} model).").format(folder=report.path, version=report.version)
        if report.missing_optional:
            message += "\n" + self.tr("It works, but:") + "\n• " + "\n• ".join(map(display_message,
                                                                                  report.missing_optional))
        self.status.setText(message)
        self.refresh()
        self.select(str(report.path))
        self.modelChosen.emit(str(report.path))
        return True

    # -- download -----------------------------------------------------------------------------------------
    def start_download(self) -> None:
        name = self.selected_name()
        if not name or self._worker is not None:
            return
        self._worker = DownloadWorker(name, self.models_dir)
        self._thread = QThread(self)
        self._worker.moveToThread(self._thread)
        self._thread.started.connect(self._worker.run)
        self._worker.progress.connect(self._on_progress)
        self._worker.finished.connect(self._on_downloaded)
        self._worker.failed.connect(self._on_failed)
        self.progress.setRange(0, 0)
        self.progress.show()
        self.cancel_button.show()
        self.status.setText(self.tr("Downloading {name}…").format(name=name))
        self._update_buttons()
        self._thread.start()

    def cancel_download(self) -> None:
        if self._worker is not None:
            self._worker.cancel.set()
            self.status.setText(self.tr("Cancelling… (what was downloaded is kept; downloading again resumes)"))

    @Slot(int, int)
    def _on_progress(self, done: int, total: int) -> None:
        if total > 0:
            self.progress.setRange(0, 1000)
            self.progress.setValue(int(1000 * done / total))
            self.progress.setFormat(f"{done / 1e9:.2f} / {total / 1e9:.2f} GB")

    @Slot(str)
    def _on_downloaded(self, folder: str) -> None:
        self._end_download()
        self.status.setText(self.tr("Downloaded to {folder}.").format(folder=folder))
        self.refresh()

    @Slot(str, bool)
    def _on_failed(self, message: str, cancelled: bool) -> None:
        self._end_download()
        self.status.setText(self.tr("Download cancelled; starting it again resumes where it stopped.")
                            if cancelled else display_message(message))

    def _end_download(self) -> None:
        thread, self._thread, self._worker = self._thread, None, None
        if thread is not None:
            thread.quit()
            thread.wait(5000)
        self.progress.hide()
        self.cancel_button.hide()
        self._update_buttons()

    def done(self, result: int) -> None:  # noqa: D401 - Qt override: closing cancels a running download
        if self._worker is not None:
            # Do not wait for the network here: the thread ends on its own once the download notices the cancel.
            worker, thread = self._worker, self._thread
            self._worker = self._thread = None
            worker.cancel.set()
            thread.setParent(None)
            _ORPHANS.add((worker, thread))
            worker.failed.connect(thread.quit)
            worker.finished.connect(thread.quit)
            thread.finished.connect(lambda: _ORPHANS.discard((worker, thread)))
        super().done(result)


_ORPHANS: set = set()  # downloads still winding down after their dialog closed
