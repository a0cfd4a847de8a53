"""File > Open Recent: the text files opened last, newest first, kept in the settings between sessions.

A file that opened is moved to the top; one that no longer opens because it is gone is dropped from the list
(the main window says why); "Clear Menu" empties it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from PySide6.QtWidgets import QMenu, QWidget

from cosydesk.settings import Key, Settings

RECENT_LIMIT = 8


def remembered(paths: list[str], path: str, limit: int = RECENT_LIMIT) -> list[str]:
    """``paths`` with ``path`` at the front (moved there if it was already listed), at most ``limit`` long."""
    return ([path] + [p for p in paths if p != path])[:limit]


class RecentTextFiles:
    """The list behind the menu, as absolute paths in ``Key.RECENT_TEXT_FILES``."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def paths(self) -> list[str]:
        return [p for p in self.settings.get(Key.RECENT_TEXT_FILES) if isinstance(p, str) and p]

    def add(self, path: str | Path) -> None:
        self.settings.set(Key.RECENT_TEXT_FILES, remembered(self.paths(), _absolute(path)))

    def forget(self, path: str | Path) -> None:
        self.settings.set(Key.RECENT_TEXT_FILES, [p for p in self.paths() if p != _absolute(path)])

    def clear(self) -> None:
        self.settings.set(Key.RECENT_TEXT_FILES, [])


def _absolute(path: str | Path) -> str:
    return str(Path(path).expanduser().absolute())


class RecentFilesMenu(QMenu):
    """The submenu, rebuilt each time it opens: "&1 name" per file (full path as tip), then "Clear Menu"."""

    def __init__(self, recent: RecentTextFiles, open_file: Callable[[Path], bool], parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("recentFilesMenu")
        self.recent = recent
        self.open_file = open_file
        self.setToolTipsVisible(True)
        self.aboutToShow.connect(self.refill)
        self.retranslate()

    def retranslate(self) -> None:
        self.setTitle(self.tr("Open &Recent"))

    def refill(self) -> None:
        self.clear()
        paths = self.recent.paths()
        if not paths:
            self.addAction(self.tr("No recent files")).setEnabled(False)
            return
        for number, path in enumerate(paths, 1):
            label = Path(path).name.replace("&", "&&")
            action = self.addAction(f"&{number} {label}" if number < 10 else label)
            action.setToolTip(path)
            action.setStatusTip(path)
            action.triggered.connect(lambda _checked=False, p=path: self.open_file(Path(p)))
        self.addSeparator()
        self.addAction(self.tr("Clear Menu")).triggered.connect(self.recent.clear)
