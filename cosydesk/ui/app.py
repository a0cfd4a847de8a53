"""Desktop entry point: `cosydesk` (no arguments) and `cosydesk --model DIR` call run_app()."""

from __future__ import annotations

import sys
from pathlib import Path

from PySide6.QtCore import QTimer
from PySide6.QtGui import QIcon
from PySide6.QtWidgets import QApplication

from cosydesk import hub, qt_platform
from cosydesk.settings import Key, Settings
from cosydesk.ui import i18n
from cosydesk.ui.resources import icon_path, style_sheet


def create_application(argv: list[str] | None = None) -> QApplication:
    app = QApplication.instance() or QApplication(list(argv or sys.argv[:1]))
    app.setApplicationName("CosyDesk")
    app.setOrganizationName("cosydesk")
    app.setApplicationDisplayName("CosyDesk")
    app.setDesktopFileName("cosydesk")
    app.setWindowIcon(QIcon(str(icon_path())))
    app.setStyle("Fusion")
    app.setStyleSheet(style_sheet())
    return app


def build_main_window(model_dir: str | None = None, settings: Settings | None = None, **window_options):
    """Create the window and decide what to open: the given folder, the last model, or the model manager."""
    from cosydesk.ui.main_window import MainWindow

    settings = settings or Settings()
    i18n.set_language(settings.get(Key.LANGUAGE))
    window = MainWindow(settings=settings, **window_options)
    folder = model_dir or settings.get(Key.MODEL_DIR)
    if folder and hub.check_model_dir(folder).loadable:
        window.load_model(folder)
    else:
        if model_dir:
            window.show_message("\n".join(hub.validate_model_dir(model_dir)), True)
        from cosydesk.ui.model_manager import known_model_dirs

        # catalogue models and folders added by hand, as the model list shows them (the last one may be gone)
        installed = known_model_dirs(settings, window.models_dir)
        if installed and not model_dir:
            window.load_model(installed[0])
            if folder:
                window.show_message(window.tr("The model folder used last time ({old}) is gone; using {new}.").format(
                    old=folder, new=installed[0].name), False)
        else:
            # Nothing usable: show the model manager on the recommended default once the window is up.
            QTimer.singleShot(0, lambda: window.open_model_manager(select=hub.DEFAULT_MODEL, modal=False))
    return window


def run_app(model_dir: str | None, argv: list[str], exit_process: bool = True) -> int:
    """Open the main window (on `model_dir` if given) and run the Qt event loop.

    With exit_process (the `cosydesk` command), the process ends as soon as the window has closed and saved its
    state, without waiting for a synthesis chunk in flight or for the interpreter's teardown (torch alone
    takes 1-2 s to finalise): a quick relaunch must not find the old process still there. Otherwise returns
    the exit code.
    """
    # Qt aborts the process (rc 134, naming the wrong package) when its platform plugin cannot load: say
    # which libraries are missing and how to install them instead, exactly as `cosydesk doctor` does.
    problem = None if QApplication.instance() else qt_platform.startup_problem()
    if problem is not None:
        print(f"cosydesk: error: {problem}", file=sys.stderr)
        return 2
    app = create_application(argv)
    if model_dir is not None and not Path(model_dir).expanduser().exists():
        print(f"cosydesk: {model_dir} does not exist", file=sys.stderr)
    window = build_main_window(model_dir)
    if exit_process:
        window.close_wait_ms = 100  # cancel, and do not wait for the chunk being computed: the process ends
    window.show()
    code = int(app.exec())
    window.shutdown()  # already done by closeEvent unless the loop ended another way
    if exit_process:
        leave_process(code)
    return code


def leave_process(code: int) -> None:
    """End the process now. Everything the app keeps (draft, settings, history, exports) is written synchronously
    before this point, and every file is replaced atomically, so skipping finalisers loses nothing."""
    import logging
    import os

    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):  # closed or absent (a windowed app has no console)
            pass
    os._exit(code)
