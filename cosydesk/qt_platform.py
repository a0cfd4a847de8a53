"""Can Qt open a window here? Finds the system libraries Qt's platform plugin (xcb on Linux) is missing.

What it is for: `cosydesk doctor` and the desktop app's start both ask this, so a newcomer sees the exact
missing libraries and the one command that installs them, instead of Qt's abort ("xcb-cursor0 or
libxcb-cursor0 is needed", rc 134), which names the wrong package when libxcb-icccm4 / libxcb-keysyms1 are
the real culprits. The same text is printed in both places (`advice()`).

How: `ldd` on the plugin (libqxcb.so), which follows its RUNPATH to libQt6XcbQpa and lists every library the
dynamic loader cannot find. Without ldd, a child process dlopens the plugin and reports the first failure.

What it must not do: import Qt's GUI modules or create a QApplication (that is what aborts), change the machine,
or raise. Only `PySide6.QtCore` is imported, lazily, to find the plugin folder.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

#: The one CJK font CosyDesk recommends everywhere (doctor, README, CI): small (~10 MB) and complete enough.
CJK_FONT_PACKAGE = {"apt": "fonts-wqy-microhei", "dnf": "wqy-microhei-fonts"}

#: soname -> (Debian/Ubuntu package, Fedora package) for what PySide6's xcb / wayland plugins and QtGui load.
SONAME_PACKAGES: dict[str, tuple[str, str]] = {
    "libxcb-icccm.so.4": ("libxcb-icccm4", "xcb-util-wm"),
    "libxcb-keysyms.so.1": ("libxcb-keysyms1", "xcb-util-keysyms"),
    "libxcb-cursor.so.0": ("libxcb-cursor0", "xcb-util-cursor"),
    "libxcb-image.so.0": ("libxcb-image0", "xcb-util-image"),
    "libxcb-render-util.so.0": ("libxcb-render-util0", "xcb-util-renderutil"),
    "libxcb-util.so.1": ("libxcb-util1", "xcb-util"),
    "libxcb-shape.so.0": ("libxcb-shape0", "libxcb"),
    "libxcb-randr.so.0": ("libxcb-randr0", "libxcb"),
    "libxcb-xinerama.so.0": ("libxcb-xinerama0", "libxcb"),
    "libxcb-xkb.so.1": ("libxcb-xkb1", "libxcb"),
    "libxcb-shm.so.0": ("libxcb-shm0", "libxcb"),
    "libxcb-sync.so.1": ("libxcb-sync1", "libxcb"),
    "libxcb-xfixes.so.0": ("libxcb-xfixes0", "libxcb"),
    "libxcb-render.so.0": ("libxcb-render0", "libxcb"),
    "libxcb-glx.so.0": ("libxcb-glx0", "libxcb"),
    "libxcb.so.1": ("libxcb1", "libxcb"),
    "libX11-xcb.so.1": ("libx11-xcb1", "libX11-xcb"),
    "libX11.so.6": ("libx11-6", "libX11"),
    "libXau.so.6": ("libxau6", "libXau"),
    "libXdmcp.so.6": ("libxdmcp6", "libXdmcp"),
    "libxkbcommon-x11.so.0": ("libxkbcommon-x11-0", "libxkbcommon-x11"),
    "libxkbcommon.so.0": ("libxkbcommon0", "libxkbcommon"),
    "libEGL.so.1": ("libegl1", "libglvnd-egl"),
    "libGL.so.1": ("libgl1", "libglvnd-glx"),
    "libGLX.so.0": ("libglx0", "libglvnd-glx"),
    "libOpenGL.so.0": ("libopengl0", "libglvnd-opengl"),
    "libGLdispatch.so.0": ("libglvnd0", "libglvnd"),
    "libfontconfig.so.1": ("libfontconfig1", "fontconfig"),
    "libfreetype.so.6": ("libfreetype6", "freetype"),
    "libdbus-1.so.3": ("libdbus-1-3", "dbus-libs"),
    "libglib-2.0.so.0": ("libglib2.0-0", "glib2"),
    "libgthread-2.0.so.0": ("libglib2.0-0", "glib2"),
    "libpng16.so.16": ("libpng16-16", "libpng"),
    "libz.so.1": ("zlib1g", "zlib"),
    "libwayland-client.so.0": ("libwayland-client0", "libwayland-client"),
    "libwayland-cursor.so.0": ("libwayland-cursor0", "libwayland-cursor"),
    "libwayland-egl.so.1": ("libwayland-egl1", "libwayland-egl"),
}

#: Everything the xcb plugin needs beyond a minimal desktop, in one list (README / CI may name the same set).
XCB_PACKAGES_APT = ("libxcb-icccm4", "libxcb-keysyms1", "libxcb-cursor0", "libxcb-image0", "libxcb-render-util0",
                    "libxcb-shape0", "libxcb-randr0", "libxcb-xinerama0", "libxcb-xkb1", "libxkbcommon-x11-0",
                    "libegl1", "libgl1", "libfontconfig1", "libdbus-1-3")
#: A missing Qt library of the wheel itself means a broken PySide6 install, not a system package.
_BROKEN_WHEEL_FIX = "pip install --force-reinstall PySide6-Essentials"

LddRunner = Callable[[Path], str]


@dataclass
class PlatformReport:
    """Whether Qt's `platform` plugin can load: the plugin file, the libraries missing and how to install them."""

    platform: str
    plugin: Path | None
    missing: list[str] = field(default_factory=list)  # sonames the loader cannot find
    problem: str = ""  # any other reason it cannot load (plugin not found, PySide6 absent)

    @property
    def ok(self) -> bool:
        return not self.missing and not self.problem


# ---------------------------------------------------------------------------------------------- probes


def _plugin_folder() -> Path | None:
    """PySide6's plugins/platforms folder (QLibraryInfo knows the frozen-app layout too); None without PySide6.
    Raises ImportError when PySide6 is there but QtCore cannot load (a system library missing)."""
    import importlib.util

    if importlib.util.find_spec("PySide6") is None:
        return None
    from PySide6.QtCore import QLibraryInfo

    return Path(QLibraryInfo.path(QLibraryInfo.LibraryPath.PluginsPath)) / "platforms"


def find_plugin(platform: str, folder: Path | None) -> Path | None:
    if folder is None:
        return None
    for name in (f"libq{platform}.so", f"libq{platform}.dylib", f"q{platform}.dll"):
        if (folder / name).is_file():
            return folder / name
    return None


def _run_ldd(path: Path) -> str:
    """ldd's report for `path`; without ldd, a child that dlopens it (names the first missing library only)."""
    ldd = shutil.which("ldd")
    if ldd is not None:
        result = subprocess.run([ldd, str(path)], capture_output=True, text=True, timeout=30)
        return result.stdout + result.stderr
    probe = "import ctypes, sys\ntry:\n ctypes.CDLL(sys.argv[1])\nexcept OSError as e:\n print(e)"
    result = subprocess.run([sys.executable, "-c", probe, str(path)], capture_output=True, text=True, timeout=30)
    return result.stdout


_LDD_NOT_FOUND = re.compile(r"^\s*(\S+)\s*=>\s*not found", re.MULTILINE)
_DLOPEN_ERROR = re.compile(r"(\S+\.so[.\d]*): cannot open shared object file")


def parse_missing(ldd_output: str) -> list[str]:
    """Sonames that ldd (or a dlopen error) reports as not found, each once, in order."""
    found = _LDD_NOT_FOUND.findall(ldd_output) + _DLOPEN_ERROR.findall(ldd_output)
    return list(dict.fromkeys(found))


def check_platform(platform: str = "xcb", folder: Path | None = None, run_ldd: LddRunner = _run_ldd) -> PlatformReport:
    """Can Qt load `platform`'s plugin? Never raises (a failed probe is a `problem`)."""
    try:
        folder = folder if folder is not None else _plugin_folder()
    except ImportError as error:  # e.g. "libglib-2.0.so.0: cannot open shared object file"
        missing = parse_missing(str(error))
        return PlatformReport(platform, None, missing=missing,
                              problem="" if missing else f"PySide6 cannot be imported ({error})")
    plugin = find_plugin(platform, folder)
    if plugin is None:
        problem = ("PySide6 is not installed" if folder is None
                   else f"Qt's {platform} platform plugin is not in {folder}")
        return PlatformReport(platform, None, problem=problem)
    if not sys.platform.startswith("linux"):
        return PlatformReport(platform, plugin)  # macOS / Windows wheels bundle what they need
    try:
        missing = parse_missing(run_ldd(plugin))
    except (OSError, subprocess.SubprocessError) as error:
        return PlatformReport(platform, plugin, problem=f"cannot inspect {plugin.name} ({error})")
    return PlatformReport(platform, plugin, missing=missing)


# ---------------------------------------------------------------------------------------------- advice


def package_manager(os_release: str | None = None) -> str:
    """'apt' or 'dnf', from /etc/os-release (ID / ID_LIKE); 'apt' when unknown (the most common family)."""
    if os_release is None:
        try:
            os_release = Path("/etc/os-release").read_text(encoding="utf-8", errors="replace")
        except OSError:
            os_release = ""
    ids = " ".join(m.group(1) for m in re.finditer(r"^(?:ID|ID_LIKE)=\"?([^\"\n]*)", os_release, re.MULTILINE))
    words = set(ids.lower().split())
    if words & {"fedora", "rhel", "centos", "rocky", "almalinux"}:
        return "dnf"
    return "apt"


def install_command(sonames: list[str], manager: str | None = None) -> str:
    """The one command that installs the packages providing `sonames` (unknown ones named for apt-file/dnf)."""
    manager = manager or package_manager()
    if any(name.startswith(("libQt6", "libpyside6", "libshiboken6")) for name in sonames):
        return _BROKEN_WHEEL_FIX
    column = 1 if manager == "dnf" else 0
    packages = list(dict.fromkeys(SONAME_PACKAGES[s][column] for s in sonames if s in SONAME_PACKAGES))
    unknown = [s for s in sonames if s not in SONAME_PACKAGES]
    parts = [f"sudo {manager} install {' '.join(packages)}"] if packages else []
    finder = "dnf provides '*/{}'" if manager == "dnf" else "apt-file search {}"
    parts += [f"install the package that `{finder.format(name)}` names" for name in unknown]
    return "; ".join(parts)


def advice(report: PlatformReport, manager: str | None = None) -> tuple[str, str]:
    """(what is wrong, the command that fixes it) — the same words in `cosydesk doctor` and at the app's start."""
    if report.missing:
        what = (f"Qt's {report.platform} platform plugin cannot load: missing "
                + ", ".join(report.missing))
        return what, install_command(report.missing, manager)
    if report.problem:
        return report.problem, _BROKEN_WHEEL_FIX
    return f"Qt's {report.platform} platform plugin loads ({report.plugin})", ""


def import_advice(error: ImportError) -> str:
    """Two lines (what, fix) for PySide6 failing to import, e.g. QtGui on a minimal system without libEGL."""
    missing = parse_missing(str(error))
    if not missing:
        return f"Qt cannot be imported ({error})\nfix: {_BROKEN_WHEEL_FIX}"
    return (f"Qt cannot load: missing {', '.join(missing)}\nfix: {install_command(missing)}")


# ------------------------------------------------------------------------------------------ app start


def _requested_platform(environ: Mapping[str, str]) -> str:
    """The first platform Qt will try: QT_QPA_PLATFORM's first entry ('xcb:arg;wayland' -> 'xcb'), or ''."""
    value = environ.get("QT_QPA_PLATFORM", "").strip()
    return value.split(";")[0].split(":")[0].strip()


def startup_problem(environ: Mapping[str, str] | None = None, folder: Path | None = None,
                    run_ldd: LddRunner = _run_ldd) -> str | None:
    """Why Qt would abort opening the app's window here (two lines: what, fix), or None when it should start.

    Only Linux with xcb in play is judged: a platform the user chose (offscreen, wayland, vnc) is left to Qt.
    """
    environ = os.environ if environ is None else environ
    if not sys.platform.startswith("linux"):
        return None
    requested = _requested_platform(environ)
    if requested and requested != "xcb":
        return None
    if not requested and (environ.get("WAYLAND_DISPLAY") or environ.get("XDG_SESSION_TYPE") == "wayland"):
        if check_platform("wayland", folder, run_ldd).ok:
            return None  # Qt prefers wayland on a Wayland session and that plugin loads
    if not environ.get("DISPLAY") and not requested:
        return ("no graphical display (DISPLAY and WAYLAND_DISPLAY are unset): the desktop app needs a desktop "
                "session\nfix: run it from the desktop, or use the command line: cosydesk say \"Hello\" -o hello.wav")
    report = check_platform("xcb", folder, run_ldd)
    if report.ok:
        return None
    what, fix = advice(report)
    return f"{what}\nfix: {fix}"
