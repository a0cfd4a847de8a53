"""Help → Diagnostics checks the models the app uses (D17): the folders added in the model manager are listed,
and the recommended model's unfinished download is a warning with the command that resumes it, not a FAIL."""

from __future__ import annotations

from cosydesk import hub
from cosydesk.settings import Key, Settings
from tests.support.paths import fixture_dir
from tests.ui.fake_synth import factory
from tests.ui.helpers import make_window


def test_diagnostics_lists_added_models_and_no_fail_for_an_unfinished_default(qtbot, data_dir, tmp_path):
    models = tmp_path / "models"
    leftover = models / hub.DEFAULT_MODEL  # a download interrupted in place (older CosyDesk)
    (leftover / ".cache" / "huggingface" / "download").mkdir(parents=True)
    settings = Settings.at(data_dir / "settings.ini")
    added_model = fixture_dir("v2") / "model"  # the official tiny v2 model, as "Add folder…" would list it
    settings.set(Key.EXTRA_MODEL_DIRS, [str(added_model)])
    settings.sync()
    window = make_window(qtbot, data_dir, factory())
    window.models_dir = models
    dialog = window.open_diagnostics()
    qtbot.addWidget(dialog)
    qtbot.waitUntil(lambda: dialog.finished_checks, timeout=60000)
    lines = dialog.report.toPlainText().splitlines()
    added = [line for line in lines if "model model:" in line]
    default = [line for line in lines if f"model {hub.DEFAULT_MODEL}" in line]
    assert added and "FAIL" not in added[0]
    assert default and default[0].startswith("[WARN]") and "did not finish" in default[0]
    assert f"cosydesk models --download {hub.DEFAULT_MODEL}" in dialog.report.toPlainText()
    window.shutdown()


def test_weights_in_torchs_older_format_are_not_reported_broken(tmp_path):
    """torch.load(mmap=True) refuses checkpoints saved without the zip format, which the runtime loads fine."""
    import torch

    from cosydesk.doctor import _weights_open

    path = tmp_path / "llm.pt"
    torch.save({"w": torch.zeros(2)}, path, _use_new_zipfile_serialization=False)
    assert _weights_open(path) is None
    path.write_bytes(b"not a checkpoint")
    assert "does not open" in _weights_open(path)
