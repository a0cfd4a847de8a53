"""Qt's platform plugin check (cosydesk/qt_platform.py): the missing libraries and the one command that installs
them, the same words in `cosydesk doctor` and at the app's start, and agreement with what Qt itself reports."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from cosydesk import doctor, qt_platform
from tests.support.paths import REPO_ROOT

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the xcb plugin exists on Linux only")

# What ldd printed for PySide6 6.11's libqxcb.so on a fresh Debian 12 desktop (trimmed).
LDD_MISSING_TWO = """\
\tlinux-vdso.so.1 (0x00007ffd1a9f5000)
\tlibQt6XcbQpa.so.6 => /venv/PySide6/Qt/plugins/platforms/../../lib/libQt6XcbQpa.so.6 (0x00007f0e)
\tlibxcb-cursor.so.0 => /lib/x86_64-linux-gnu/libxcb-cursor.so.0 (0x00007f0e)
\tlibxcb-icccm.so.4 => not found
\tlibxcb-keysyms.so.1 => not found
\tlibxcb-icccm.so.4 => not found
\tlibxcb-keysyms.so.1 => not found
\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f0e)
"""
LDD_ALL_FOUND = "\tlibxcb-icccm.so.4 => /lib/x86_64-linux-gnu/libxcb-icccm.so.4 (0x1)\n\tlibc.so.6 => /lib/libc.so.6 (0x2)\n"


@pytest.fixture
def plugin_folder(tmp_path) -> Path:
    """A stand-in for PySide6/Qt/plugins/platforms holding an (empty) xcb plugin."""
    folder = tmp_path / "platforms"
    folder.mkdir()
    (folder / "libqxcb.so").write_bytes(b"")
    return folder


def test_ldd_output_names_each_missing_library_once():
    assert qt_platform.parse_missing(LDD_MISSING_TWO) == ["libxcb-icccm.so.4", "libxcb-keysyms.so.1"]
    assert qt_platform.parse_missing(LDD_ALL_FOUND) == []
    dlopen = "libqxcb.so: libxcb-cursor.so.0: cannot open shared object file: No such file or directory"
    assert qt_platform.parse_missing(dlopen) == ["libxcb-cursor.so.0"]


def test_install_command_maps_sonames_to_packages_per_distro():
    sonames = ["libxcb-icccm.so.4", "libxcb-keysyms.so.1", "libxcb-cursor.so.0", "libxkbcommon-x11.so.0",
               "libxcb-shape.so.0", "libxcb-randr.so.0"]
    assert qt_platform.install_command(sonames, "apt") == (
        "sudo apt install libxcb-icccm4 libxcb-keysyms1 libxcb-cursor0 libxkbcommon-x11-0 libxcb-shape0 libxcb-randr0")
    # Fedora packs several sonames into one package (libxcb), named once.
    assert qt_platform.install_command(sonames, "dnf") == (
        "sudo dnf install xcb-util-wm xcb-util-keysyms xcb-util-cursor libxkbcommon-x11 libxcb")
    unknown = qt_platform.install_command(["libEGL.so.1", "libweird.so.7"], "apt")
    assert unknown.startswith("sudo apt install libegl1; ") and "apt-file search libweird.so.7" in unknown
    # A library of the wheel itself missing is a broken PySide6, not a system package.
    assert "pip install --force-reinstall PySide6" in qt_platform.install_command(["libQt6XcbQpa.so.6"], "apt")


def test_every_xcb_package_in_the_recommended_list_is_in_the_soname_map():
    mapped = {apt for apt, _ in qt_platform.SONAME_PACKAGES.values()}
    assert set(qt_platform.XCB_PACKAGES_APT) <= mapped


@pytest.mark.parametrize(("os_release", "manager"), [
    ('ID=debian\nVERSION_ID="12"\n', "apt"),
    ("ID=ubuntu\nID_LIKE=debian\n", "apt"),
    ('ID=fedora\nVERSION_ID=41\n', "dnf"),
    ('ID="rocky"\nID_LIKE="rhel centos fedora"\n', "dnf"),
    ("", "apt"),
])
def test_package_manager_from_os_release(os_release, manager):
    assert qt_platform.package_manager(os_release) == manager


@linux_only
def test_check_with_injected_ldd_output(plugin_folder):
    report = qt_platform.check_platform("xcb", plugin_folder, run_ldd=lambda path: LDD_MISSING_TWO)
    assert not report.ok and report.plugin == plugin_folder / "libqxcb.so"
    assert report.missing == ["libxcb-icccm.so.4", "libxcb-keysyms.so.1"]
    what, fix = qt_platform.advice(report, "apt")
    assert "libxcb-icccm.so.4, libxcb-keysyms.so.1" in what and fix == "sudo apt install libxcb-icccm4 libxcb-keysyms1"
    assert qt_platform.check_platform("xcb", plugin_folder, run_ldd=lambda path: LDD_ALL_FOUND).ok


def test_a_missing_plugin_is_a_problem_not_a_crash(tmp_path):
    report = qt_platform.check_platform("xcb", tmp_path, run_ldd=lambda path: pytest.fail("ldd must not run"))
    assert not report.ok and "not in" in report.problem and str(tmp_path) in report.problem


@linux_only
def test_doctor_line_and_app_start_give_the_same_advice(plugin_folder, monkeypatch):
    fake_ldd = lambda path: LDD_MISSING_TWO  # noqa: E731
    check = doctor.check_qt(plugin_folder, fake_ldd)
    assert check.status == doctor.FAIL and check.fix.endswith("install libxcb-icccm4 libxcb-keysyms1")
    problem = qt_platform.startup_problem({"DISPLAY": ":0"}, plugin_folder, fake_ldd)
    assert problem is not None
    what, fix = problem.split("\nfix: ")
    assert what in check.detail and fix == check.fix
    assert doctor.check_qt(plugin_folder, lambda path: LDD_ALL_FOUND).status == doctor.OK


@linux_only
def test_app_start_only_judges_xcb(plugin_folder):
    missing = lambda path: LDD_MISSING_TWO  # noqa: E731
    for chosen in ("offscreen", "wayland", "vnc:size=800x600", "minimal"):
        assert qt_platform.startup_problem({"QT_QPA_PLATFORM": chosen, "DISPLAY": ":0"}, plugin_folder, missing) is None
    assert qt_platform.startup_problem({"QT_QPA_PLATFORM": "xcb;offscreen", "DISPLAY": ":0"}, plugin_folder, missing)
    assert qt_platform.startup_problem({"DISPLAY": ":0"}, plugin_folder, lambda path: LDD_ALL_FOUND) is None
    no_display = qt_platform.startup_problem({}, plugin_folder, missing)
    assert no_display is not None and "DISPLAY" in no_display and "cosydesk say" in no_display
    # A Wayland session whose wayland plugin loads does not need xcb at all.
    (plugin_folder / "libqwayland.so").write_bytes(b"")
    wayland_ok = lambda path: LDD_ALL_FOUND if "wayland" in path.name else LDD_MISSING_TWO  # noqa: E731
    assert qt_platform.startup_problem({"WAYLAND_DISPLAY": "wayland-0", "DISPLAY": ":0"}, plugin_folder,
                                       wayland_ok) is None


@linux_only
def test_the_app_prints_the_advice_instead_of_qts_abort(tmp_path):
    """`cosydesk` with no subcommand, on a desktop missing two xcb libraries (a fake `ldd` says so): two lines
    and rc 2 before any QApplication exists (Qt's own abort would be rc 134 blaming libxcb-cursor0)."""
    shim = tmp_path / "bin"
    shim.mkdir()
    (shim / "ldd").write_text("#!/bin/sh\ncat <<'EOF'\n" + LDD_MISSING_TWO + "EOF\n")
    (shim / "ldd").chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k not in ("QT_QPA_PLATFORM", "WAYLAND_DISPLAY", "XDG_SESSION_TYPE")}
    env.update(PATH=f"{shim}{os.pathsep}{env.get('PATH', '')}", DISPLAY=":917", PYTHONPATH=str(REPO_ROOT),
               COSYDESK_DATA_DIR=str(tmp_path / "data"))
    result = subprocess.run([sys.executable, "-m", "cosydesk"], capture_output=True, text=True, env=env,
                            timeout=120, cwd=REPO_ROOT)
    assert result.returncode == 2, result.stderr
    assert result.stderr.splitlines()[0] == (
        "cosydesk: error: Qt's xcb platform plugin cannot load: missing libxcb-icccm.so.4, libxcb-keysyms.so.1")
    assert result.stderr.splitlines()[1].endswith(" install libxcb-icccm4 libxcb-keysyms1")
    assert "Traceback" not in result.stderr and "qt.qpa" not in result.stderr


@linux_only
def test_the_real_check_agrees_with_qt_on_this_machine():
    """No injection: ldd on the installed PySide6 against Qt loading the plugin for real (QT_DEBUG_PLUGINS).
    With the libraries installed the check passes and Qt gets as far as looking for a display; without them the
    check names the library Qt failed on. Either way the two must agree."""
    report = qt_platform.check_platform("xcb")
    assert report.plugin is not None, report.problem
    probe = "from PySide6.QtGui import QGuiApplication\nQGuiApplication([])\n"
    env = {**os.environ, "QT_QPA_PLATFORM": "xcb", "QT_DEBUG_PLUGINS": "1", "DISPLAY": ":31999"}
    qt = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=120)
    failed_libraries = qt_platform.parse_missing(qt.stderr)
    if report.ok:
        assert failed_libraries == [], textwrap.shorten(qt.stderr, 2000)
        assert "could not connect to display" in qt.stderr
    else:
        assert failed_libraries and failed_libraries[0] in report.missing, (report.missing, failed_libraries)


def test_qtcore_failing_to_load_names_its_library(monkeypatch):
    def broken_qtcore():
        raise ImportError("libglib-2.0.so.0: cannot open shared object file: No such file or directory")

    monkeypatch.setattr(qt_platform, "_plugin_folder", broken_qtcore)
    report = qt_platform.check_platform("xcb")
    assert report.missing == ["libglib-2.0.so.0"] and not report.problem
    assert qt_platform.advice(report, "apt")[1] == "sudo apt install libglib2.0-0"


def test_the_app_names_a_library_qtgui_cannot_load_instead_of_a_traceback(monkeypatch, capsys):
    """On a minimal system `import PySide6.QtGui` fails (no libEGL): one error line and the fix, rc 2."""
    import importlib.abc

    from cosydesk import cli

    class NoEgl(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name == "cosydesk.ui.app":
                raise ImportError("libEGL.so.1: cannot open shared object file: No such file or directory")
            return None

    monkeypatch.delitem(sys.modules, "cosydesk.ui.app", raising=False)
    monkeypatch.setattr(sys, "meta_path", [NoEgl(), *sys.meta_path])
    monkeypatch.setattr(qt_platform, "package_manager", lambda os_release=None: "apt")
    assert cli.main([]) == 2
    assert capsys.readouterr().err.splitlines() == ["cosydesk: error: Qt cannot load: missing libEGL.so.1",
                                                    "fix: sudo apt install libegl1"]
