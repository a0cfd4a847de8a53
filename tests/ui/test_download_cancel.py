"""Models… → Download against a hub that accepts the connection and never answers (issue 31): Cancel gives the
dialog back within a second, and nothing that looks like an installed model is left."""

from __future__ import annotations

import time

from cosydesk import hub
from cosydesk.settings import Settings
from cosydesk.ui.model_manager import ModelManagerDialog
from tests.hub_server import SilentServer
from tests.test_hub_download import _point_hub_at


def test_cancel_returns_within_a_second_while_the_hub_is_silent(qtbot, tmp_path, monkeypatch, data_dir):
    models = tmp_path / "models"
    with SilentServer() as server:
        _point_hub_at(monkeypatch, tmp_path, server.url, stall_s=120.0)
        dialog = ModelManagerDialog(Settings.at(tmp_path / "s.ini"), models, select=hub.DEFAULT_MODEL)
        qtbot.addWidget(dialog)
        dialog.start_download()
        qtbot.waitUntil(lambda: server.accepted >= 1, timeout=10000)  # the request is out, blocked
        pressed = time.monotonic()
        dialog.cancel_button.click()
        qtbot.waitUntil(lambda: dialog.download_button.isEnabled(), timeout=5000)
        took = time.monotonic() - pressed
    assert took < 1.0, f"Cancel took {took:.2f} s"
    assert "resumes" in dialog.status.text() and not dialog.cancel_button.isVisible()
    assert hub.installed_models(models) == [] and not (models / hub.DEFAULT_MODEL).exists()
