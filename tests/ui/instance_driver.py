"""Child process for tests/ui/test_single_instance.py: the real `cosydesk --model DIR` (cli.main, run_app) on the
fake synthesizer, offscreen. It prints one line per event the test waits for:

    ready                      the model is loaded (the instance socket has been listening since before)
    shown                      a second start (or a `show` message) asked for the window
    spoke <json text>          the worker's synthesizer received a request with this text

    python tests/ui/instance_driver.py MODEL_DIR
"""

from __future__ import annotations

import json
import sys

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication

from cosydesk import cli
from cosydesk.ui import desktop, worker
from cosydesk.ui.app import create_application
from tests.ui.fake_synth import FakeSynthesizer

made: list[FakeSynthesizer] = []


def factory(model_dir, progress=None, **options):
    synth = FakeSynthesizer(model_dir, progress, **options)
    made.append(synth)
    return synth


worker._default_factory = factory
real_show = desktop.DesktopIntegration.show_window


def show_window(self) -> None:
    print("shown", flush=True)
    real_show(self)


desktop.DesktopIntegration.show_window = show_window
said = 0
announced = False


def poll() -> None:
    global said, announced
    from cosydesk.ui.main_window import MainWindow

    windows = [w for w in QApplication.topLevelWidgets() if isinstance(w, MainWindow)]
    if windows and windows[0].state == "ready" and not announced:
        announced = True
        print("ready", flush=True)
    requests = [r for synth in made for r in synth.requests]
    for request in requests[said:]:
        print("spoke " + json.dumps(request.text, ensure_ascii=True), flush=True)
    said = len(requests)


app = create_application([sys.argv[0]])
timer = QTimer()
timer.timeout.connect(poll)
timer.start(20)
sys.exit(cli.main(["--model", sys.argv[1]]))
