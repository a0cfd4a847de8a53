"""Desktop entry point: `cosydesk` (no arguments) and `cosydesk --model DIR` call run_app().

One app per data folder: run_app first claims the folder's local socket (ui/single_instance.py); when another
CosyDesk holds it, that one raises its window and this process exits 0. The window gets the desktop integration
(ui/desktop.py: tray, Tools > Serve other apps, read-aloud from the socket).
"""

from __future__ import annotations

import sys
from pathlib import Path

from PySide6.QtCore import QTimer
from PySide6.QtGui import QIcon
from PySide6.QtWidgets import QApplication

from cosydesk import hub, qt_platform
from cosydesk.settings import Key, Settings
from cosydesk.ui import i18n
from cosydesk.ui.desktop import DesktopIntegration
from cosydesk.ui.single_instance import InstanceError, SingleInstance
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
    instance = claim_instance(model_dir)
    if instance is None:
        return leave_process(0) if exit_process else 0
    if instance is False:
        return leave_process(2) if exit_process else 2
    if model_dir is not None and not Path(model_dir).expanduser().exists():
        print(f"cosydesk: {model_dir} does not exist", file=sys.stderr)
    window = build_main_window(model_dir)
    if exit_process:
        window.close_wait_ms = 100  # cancel, and do not wait for the chunk being computed: the process ends
    integration = DesktopIntegration(window, instance.server)
    window.show()
    code = int(app.exec())
    integration.shutdown()
    window.shutdown()  # already done by closeEvent unless the loop ended another way
    instance.release()
    if exit_process:
        leave_process(code)
    return code


def claim_instance(model_dir: str | None):
    """This process's SingleInstance (it now answers the data folder's socket); None when a CosyDesk already runs
    there and has raised its window (and opens `model_dir`, if given); False when that one does not answer."""
    instance = SingleInstance(hub.app_data_dir())
    message: dict = {"cmd": "show"}
    if model_dir:
        message["model"] = str(Path(model_dir).expanduser().resolve())
    try:
        if instance.claim(message):
            return instance
    except InstanceError as error:
        print(f"cosydesk: error: {error}", file=sys.stderr)
        return False
    if instance.reply and not instance.reply.get("ok", False):
        print(f"cosydesk: the running CosyDesk answered: {instance.reply.get('error')}", file=sys.stderr)
    print("cosydesk: CosyDesk is already running on this data folder; its window was brought to the front",
          file=sys.stderr)
    return None


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
