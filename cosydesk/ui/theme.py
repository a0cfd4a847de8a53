"""Light and dark themes: the application palette, message colours and (through the palette) the plots.

What it is for: Preferences → Theme (system / light / dark), applied live. ``apply_theme`` sets a Fusion
palette on the QApplication and adds the theme's colours for messages (errors, confirmations, notes) to the
style sheet; widgets get Qt's palette-change events, and ``theme_signals().changed`` is emitted with the
theme before apply_theme returns, so the telemetry dock re-colours and repaints its pyqtgraph plots at once
(background the theme's Base, axes and text its Text) instead of on its next refresh.
"system" follows the desktop's colour scheme (QStyleHints.colorScheme) and switches with it.

What it must not do: know about particular windows (they style themselves by object name and properties).
"""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtGui import QColor, QGuiApplication, QPalette
from PySide6.QtWidgets import QApplication

from cosydesk.ui.resources import style_sheet

CHOICES = ("system", "light", "dark")


@dataclass(frozen=True)
class Theme:
    name: str  # "light" or "dark"
    window: str
    base: str
    alternate_base: str
    text: str
    button: str
    highlight: str
    disabled_text: str
    link: str
    error: str  # message labels: something went wrong
    ok: str  # message labels: something worked ("Saved …")
    note: str  # secondary text


LIGHT = Theme("light", window="#efefef", base="#ffffff", alternate_base="#f5f5f5", text="#1f1f1f",
              button="#efefef", highlight="#2f6fde", disabled_text="#9a9a9a", link="#1a56c4",
              error="#b3261e", ok="#1e6b30", note="#6b6b6b")
DARK = Theme("dark", window="#2b2d30", base="#1e1f22", alternate_base="#26282b", text="#e8eaed",
             button="#3a3d41", highlight="#4f8ef7", disabled_text="#7c7f83", link="#8ab4f8",
             error="#f28b82", ok="#81c995", note="#a8abb0")
THEMES = {"light": LIGHT, "dark": DARK}
_current: Theme = LIGHT


class ThemeSignals(QObject):
    changed = Signal(object)  # the Theme now in use, emitted synchronously by apply_theme


_signals: ThemeSignals | None = None


def theme_signals() -> ThemeSignals:
    """The app-wide notifier of theme changes (made on first use, after the QApplication exists)."""
    global _signals
    if _signals is None:
        _signals = ThemeSignals()
    return _signals


def system_prefers_dark() -> bool:
    hints = QGuiApplication.styleHints()
    scheme = getattr(hints, "colorScheme", None)  # Qt >= 6.5
    return scheme is not None and scheme() == Qt.ColorScheme.Dark


def resolve_theme(choice: str) -> Theme:
    """'light' / 'dark' as named; 'system' (or anything unknown) from the desktop's colour scheme."""
    if choice in THEMES:
        return THEMES[choice]
    return DARK if system_prefers_dark() else LIGHT


def palette_for(theme: Theme) -> QPalette:
    role, group = QPalette.ColorRole, QPalette.ColorGroup
    palette = QPalette()
    for r, colour in ((role.Window, theme.window), (role.WindowText, theme.text), (role.Base, theme.base),
                      (role.AlternateBase, theme.alternate_base), (role.Text, theme.text),
                      (role.Button, theme.button), (role.ButtonText, theme.text), (role.ToolTipBase, theme.base),
                      (role.ToolTipText, theme.text), (role.PlaceholderText, theme.disabled_text),
                      (role.Highlight, theme.highlight), (role.HighlightedText, "#ffffff"),
                      (role.Link, theme.link), (role.BrightText, theme.error)):
        palette.setColor(r, QColor(colour))
    for r in (role.WindowText, role.Text, role.ButtonText):
        palette.setColor(group.Disabled, r, QColor(theme.disabled_text))
    return palette


def message_style(theme: Theme) -> str:
    """Style-sheet rules for message colours: QLabel#errorLabel (and any label with a "message" property of
    "error" / "ok" / "note") in the theme's colours."""
    return (f'\nQLabel#errorLabel, QLabel[message="error"] {{ color: {theme.error}; font-weight: bold; }}'
            f'\nQLabel#errorLabel[message="ok"], QLabel[message="ok"] {{ color: {theme.ok}; font-weight: normal; }}'
            f'\nQLabel#telemetryNote, QLabel[message="note"] {{ color: {theme.note}; }}\n')


def current_theme() -> Theme:
    return _current


def apply_theme(choice: str, app: QApplication | None = None) -> Theme:
    """Make `choice` ('system', 'light', 'dark') the look of the whole app now; returns the theme in use."""
    global _current
    app = app or QApplication.instance()
    theme = resolve_theme(choice)
    _current = theme
    app.setPalette(palette_for(theme))
    app.setStyleSheet(style_sheet() + message_style(theme))
    theme_signals().changed.emit(theme)
    return theme


def follow_system(app: QApplication, choice_now) -> None:
    """While the choice is 'system', re-apply when the desktop switches between light and dark.
    `choice_now` returns the current choice (the setting can change after this is connected)."""
    hints = app.styleHints()
    if hasattr(hints, "colorSchemeChanged"):
        hints.colorSchemeChanged.connect(lambda _scheme: choice_now() == "system" and apply_theme("system", app))
