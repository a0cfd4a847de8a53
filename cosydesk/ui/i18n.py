"""UI language: English source strings, Chinese (zh_CN) from a compiled Qt translation (.qm).

"system" follows the system locale (QLocale.system()); switching at run time installs another translator,
and every widget re-labels itself on QEvent.LanguageChange.
"""

from __future__ import annotations

from PySide6.QtCore import QCoreApplication, QLibraryInfo, QLocale, QTranslator

from cosydesk.ui.resources import translations_dir

SUPPORTED = ("en", "zh_CN")
_installed: list[QTranslator] = []
_current = "en"


def current_language() -> str:
    """The language set_language installed last ('en' until it is called); ui/error_text.py follows it."""
    return _current


def resolve_language(choice: str) -> str:
    """'system' -> 'zh_CN' for any Chinese system locale, else 'en'."""
    if choice in SUPPORTED:
        return choice
    return "zh_CN" if QLocale.system().language() == QLocale.Language.Chinese else "en"


def set_language(choice: str) -> str:
    """Install the translators for `choice` ('system', 'en', 'zh_CN'); returns the language now in use."""
    app = QCoreApplication.instance()
    global _current
    language = resolve_language(choice)
    _current = language
    for translator in _installed:
        app.removeTranslator(translator)
    _installed.clear()
    QLocale.setDefault(QLocale(language if language != "en" else "en_US"))
    if language != "en":
        ours = QTranslator(app)
        if ours.load(str(translations_dir() / f"cosydesk_{language}.qm")):
            app.installTranslator(ours)
            _installed.append(ours)
        qt_own = QTranslator(app)  # Qt's standard dialogs and buttons (Save, Cancel, …)
        if qt_own.load(f"qtbase_{language}", QLibraryInfo.path(QLibraryInfo.LibraryPath.TranslationsPath)):
            app.installTranslator(qt_own)
            _installed.append(qt_own)
    return language
