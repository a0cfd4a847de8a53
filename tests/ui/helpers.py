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
