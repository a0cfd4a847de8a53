"""The tray menu's actions and `cosydesk read` without a running app (issue 30, item 5).

Offscreen Qt has no system tray, so the menu object (what the tray shows) is driven directly; the standalone
`read` speaks through the real player into the ALSA capture device (tests/support/alsa_capture.py).
"""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QSystemTrayIcon

from cosydesk import cli, read_command
from cosydesk.audio.player import Player
from cosydesk.ui.desktop import DesktopIntegration
from tests.audio.fake_sd import FakeSoundDevice
from tests.support.alsa_capture import capture_path, read_capture
from tests.ui.fake_synth import factory
from tests.ui.helpers import make_window, wait_idle


def test_tray_menu_actions(qtbot, data_dir, fake_model_dir):
    build = factory(chunks=30, delay_s=0.02)
    window = make_window(qtbot, data_dir, build, model_dir=fake_model_dir,
                         player=Player(sd_module=FakeSoundDevice(speed=1.0)))
    integration = DesktopIntegration(window)
    menu = integration.tray_menu
    texts = [a.text() for a in menu.actions() if not a.isSeparator()]
    assert texts == ["Read clipboard", "Pause", "Stop", "Show CosyDesk", "Serve other apps", "Quit"]
    assert menu.serve_action is integration.serve.action  # one switch: tray, Tools menu (and Preferences)
    assert integration.serve.action in integration.tools_menu.actions()
    assert integration.tray.available == QSystemTrayIcon.isSystemTrayAvailable()
    menu.refresh()
    assert not menu.pause_action.isEnabled() and not menu.stop_action.isEnabled()  # nothing plays yet

    QGuiApplication.clipboard().setText("Copied from another program.")
    window.text_edit.setPlainText("The editor's own text.")
    with qtbot.waitSignal(window.controller.worker.chunkReady, timeout=10000):
        menu.read_clipboard_action.trigger()
    assert build.made[-1].requests[-1].text == "Copied from another program."
    assert window.text_edit.toPlainText() == "The editor's own text."  # the editor is left alone
    qtbot.waitUntil(lambda: window.player.is_playing, timeout=10000)
    menu.refresh()
    assert menu.pause_action.isEnabled() and menu.stop_action.isEnabled()
    menu.pause_action.trigger()
    assert window.player.paused
    menu.refresh()
    assert menu.pause_action.text() == "Resume" and menu.pause_action.isChecked()
    menu.pause_action.trigger()
    assert not window.player.paused
    with qtbot.waitSignal(window.controller.worker.jobFinished, timeout=10000) as finished:
        menu.stop_action.trigger()
    assert finished.args[0].cancelled
    wait_idle(qtbot, window)

    QGuiApplication.clipboard().setText("   ")
    menu.read_clipboard_action.trigger()
    assert "clipboard holds no text" in window.error_label.text()

    window.showMinimized()
    menu.show_action.trigger()
    assert window.isVisible() and not window.isMinimized()
    menu.quit_action.trigger()
    assert not window.isVisible()
    assert integration._shut  # closing stopped the integration (server, tray, socket) with the window


def test_read_speaks_standalone_when_no_app_runs(data_dir, tiny_v2, tiny_v2_synth, monkeypatch, capsys):
    if capture_path() is None:
        pytest.skip("sounddevice was imported before the ALSA capture config was installed")
    pytest.importorskip("sounddevice", exc_type=OSError)
    import cosydesk.runtime

    opened = []  # the session's tiny Synthesizer instead of a second load of the same folder
    monkeypatch.setattr(cosydesk.runtime, "Synthesizer", lambda folder, **options: opened.append(folder) or tiny_v2_synth)
    assert cli.main(["read", "--model", str(tiny_v2), "Hello there."]) == 0
    assert "first audio" in capsys.readouterr().err  # as `say --play` reports
    assert [str(folder) for folder in opened] == [str(tiny_v2)]
    captured = read_capture()
    assert np.count_nonzero(captured) > 1000 and np.isfinite(captured).all()


def test_read_takes_the_clipboard_and_refuses_what_it_cannot_read(data_dir, qapp, monkeypatch, capsys):
    spoken: list[str] = []
    monkeypatch.setattr(read_command, "_speak_here", lambda args, text: spoken.append(text) or 0)
    QGuiApplication.clipboard().setText("From the clipboard.")
    assert cli.main(["read", "--clipboard"]) == 0
    assert spoken == ["From the clipboard."]

    # offscreen (like Windows and macOS) has no primary selection: one line, rc 2
    assert cli.main(["read", "--selection"]) == 2
    err = capsys.readouterr().err
    assert "no primary selection" in err and "--clipboard" in err and err.count("\n") == 1
    QGuiApplication.clipboard().setText("")
    assert cli.main(["read", "--clipboard"]) == 2
    assert "clipboard holds no text" in capsys.readouterr().err
    assert cli.main(["read", "x" * (read_command.MAX_READ_CHARS + 1)]) == 2
    assert "at most" in capsys.readouterr().err
    assert cli.main(["read", "text", "--clipboard"]) == 2
    assert spoken == ["From the clipboard."]
