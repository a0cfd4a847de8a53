"""cosydesk.paths: every folder is computed in one place, and each honours its variable."""

from __future__ import annotations

import re
from pathlib import Path

from cosydesk import hub, paths

PACKAGE = Path(paths.__file__).parent


def test_folders_follow_the_data_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("COSYDESK_DATA_DIR", str(tmp_path / "data"))
    for name in ("COSYDESK_MODELS_DIR", "COSYDESK_ENGINES_DIR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(paths, "_CHECKOUT", tmp_path / "installed")  # not a source checkout
    assert paths.data_dir() == tmp_path / "data" and (tmp_path / "data").is_dir()
    assert paths.models_dir() == tmp_path / "data" / "models"
    assert paths.voices_dir() == tmp_path / "data" / "voices"
    assert paths.engines_dir() == tmp_path / "data" / "engines"  # used to ignore COSYDESK_DATA_DIR
    assert paths.data_dir_override() == tmp_path / "data"
    monkeypatch.delenv("COSYDESK_DATA_DIR")
    assert paths.data_dir_override() is None


def test_each_folder_has_its_own_override(tmp_path, monkeypatch):
    monkeypatch.setenv("COSYDESK_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("COSYDESK_MODELS_DIR", str(tmp_path / "m"))
    monkeypatch.setenv("COSYDESK_ENGINES_DIR", str(tmp_path / "e"))
    assert paths.models_dir() == tmp_path / "m" and paths.engines_dir() == tmp_path / "e"
    monkeypatch.delenv("COSYDESK_ENGINES_DIR")
    checkout = tmp_path / "checkout"
    (checkout / "engines").mkdir(parents=True)
    (checkout / "pyproject.toml").write_text("")
    monkeypatch.setattr(paths, "_CHECKOUT", checkout)
    assert paths.engines_dir() == checkout / "engines"  # a source checkout keeps its engines/ folder


def test_the_old_names_are_the_paths_functions():
    from cosydesk.runtime.backends.tensorrt import torch_bridge

    assert hub.default_models_dir is paths.models_dir and hub.app_data_dir is paths.data_dir
    assert torch_bridge.default_engines_dir is paths.engines_dir


def test_no_other_module_computes_a_folder():
    """platformdirs and the folder variables are read in cosydesk/paths.py only."""
    pattern = re.compile(r"(import|from) platformdirs|environ[^\n]*COSYDESK_(DATA|MODELS|ENGINES)_DIR")
    offenders = [str(path.relative_to(PACKAGE)) for path in PACKAGE.rglob("*.py")
                 if path.name != "paths.py" and pattern.search(path.read_text(encoding="utf-8"))]
    assert offenders == []
