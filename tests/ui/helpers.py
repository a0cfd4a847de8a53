"""Shared helpers for UI tests: build a MainWindow with injected parts and wait for it to settle."""

from __future__ import annotations

from pathlib import Path

from cosydesk.audio.player import Player
from cosydesk.settings import Settings
from cosydesk.telemetry.sampler import NvmlSource, TelemetrySampler
from cosydesk.ui.main_window import MainWindow
from tests.audio.fake_sd import FakeSoundDevice
from tests.telemetry.fake_nvml import FakeNvml


def make_window(qtbot, data_dir: Path, synthesizer_factory, player: Player | None = None, model_dir=None,
                sampler: TelemetrySampler | None = None, warmup: bool = False, show: bool = True) -> MainWindow:
    window = MainWindow(settings=Settings.at(data_dir / "settings.ini"), synthesizer_factory=synthesizer_factory,
                        player=player if player is not None else Player(sd_module=FakeSoundDevice(speed=8.0)),
                        sampler=sampler or TelemetrySampler(NvmlSource(FakeNvml())), data_dir=data_dir,
                        warmup=warmup)
    qtbot.addWidget(window)
    if show:
        window.show()
    if model_dir is not None:
        window.load_model(model_dir)
        qtbot.waitUntil(lambda: window.state == "ready" and window.model is not None, timeout=60000)
    return window


def wait_idle(qtbot, window: MainWindow, timeout: int = 30000) -> None:
    """Until no job is running and the player has gone quiet."""
    qtbot.waitUntil(lambda: window.current_job is None and window.controller.pending_jobs == 0
                    and not window.player.is_playing, timeout=timeout)


def drag_and_drop(widget, paths=(), text: str | None = None) -> list[bool]:
    """Drag local ``paths`` (or plain ``text``) onto ``widget`` and drop them at its centre, as a file manager
    would: DragEnter, DragMove, Drop sent through Qt's event dispatch. Returns whether each event was accepted."""
    from PySide6.QtCore import QMimeData, QPointF, Qt, QUrl
    from PySide6.QtGui import QDragEnterEvent, QDragMoveEvent, QDropEvent
    from PySide6.QtWidgets import QApplication

    mime = QMimeData()
    if paths:
        mime.setUrls([QUrl.fromLocalFile(str(p)) for p in paths])
    if text is not None:
        mime.setText(text)
    centre = widget.rect().center()
    copy, left, none = Qt.DropAction.CopyAction, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier
    events = [QDragEnterEvent(centre, copy, mime, left, none), QDragMoveEvent(centre, copy, mime, left, none),
              QDropEvent(QPointF(centre), copy, mime, left, none)]
    accepted = []
    for event in events:
        QApplication.sendEvent(widget, event)
        accepted.append(event.isAccepted())
    return accepted
