"""Developer tool, not part of the app: take the README screenshot (the real main window mid-synthesis,
telemetry dock visible).

    Xvfb :99 -screen 0 1280x800x24 -nolisten tcp &
    DISPLAY=:99 QT_QPA_PLATFORM=xcb python tools/screenshot.py docs/screenshot-main.png --model DIR [--lang zh_CN]
    DISPLAY=:99 QT_QPA_PLATFORM=xcb python tools/screenshot.py docs/screenshot-reading.png --model DIR --reading

It speaks a few short lines (so history and the latency plot have content), then a long text, and while
that one is still being synthesised it captures the X screen with ImageMagick's `import -window root`
(a real-window screenshot, not a widget render; without ImageMagick, Qt grabs the X screen the same way).
--reading speaks a long text of many sentences instead and captures a few seconds into it (progress and the highlighted sentence visible)
(sentence progress and highlight visible). Needs a CJK font (fonts-wqy-microhei) for Chinese text.
For a real-time paced sound device without a sound card (so the underrun counter means something), route ALSA
to a PulseAudio null sink (`pulseaudio -n --daemonize -L module-null-sink ...`) with ALSA_CONFIG_PATH pointing at a config holding
`pcm.!default { type pulse }`; the committed docs/screenshot-main.png was taken that way.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from PySide6.QtCore import QObject, QTimer, Slot

WARM_LINES = ["你好，欢迎使用 CosyDesk。", "Hello! This runs on your own GPU.", "今天天气很好。"]
LONG_TEXT = ("CosyDesk 在你自己的显卡上实时合成语音：输入中文或英文，按 Ctrl+Enter 立即朗读。\n"
             "It streams audio as soon as the first chunk is ready, and shows first-audio latency, "
             "real-time factor and memory use live in the telemetry panel.\n"
             "你可以选择说话人和风格，把喜欢的句子导出为 WAV 文件。")


READING_TEXT = ("The museum opens at nine in the morning, and visitors start with the hall of old maps. "
                "Next comes a room of ship models, each one built by hand over many winters.\n"
                "Children like the whale skeleton best; it hangs from the ceiling of the great hall. "
                "The café on the top floor looks out over the harbour and the old lighthouse.\n"
                "Tickets are free on the first Sunday of every month, and tours leave every hour. "
                "The last entry is at half past four, and the shop closes at five.\n"
                "In winter the garden behind the museum is closed, but the glass house stays open. "
                "It holds palms, orchids and a small pond with golden fish.\n"
                "Schools can book a guided visit for a class, with a workshop on drawing maps. "
                "Please book at least two weeks ahead, by phone or on the website.")


class _Driver(QObject):
    """Lives in the UI thread, so the worker's signals reach these slots queued (never in the worker thread)."""

    def __init__(self, app, window, args) -> None:
        super().__init__()
        self.app, self.window, self.args = app, window, args
        self.queue = list(WARM_LINES)
        self.shot = None

    def speak_next(self) -> None:
        if self.args.reading:
            self.queue = []
        if self.queue:
            self.window.text_edit.setPlainText(self.queue.pop(0))
            self.window.speak()
        elif self.shot is None:
            self.shot = "waiting"
            self.window.text_edit.setPlainText(READING_TEXT if self.args.reading else LONG_TEXT)
            self.window.speak()

    @Slot(object)
    def on_finished(self, result) -> None:
        if self.shot is None:
            QTimer.singleShot(300, self.speak_next)

    @Slot(object)
    def on_chunk(self, info) -> None:
        if self.shot == "waiting" and (not self.args.reading or info.sentence_index >= 1):
            self.shot = "taking"
            QTimer.singleShot(6000 if self.args.reading else 150, self.take)  # the highlight follows playback

    def take(self) -> None:
        out = self.args.out
        out.parent.mkdir(parents=True, exist_ok=True)
        self.app.processEvents()
        if Path("/usr/bin/import").exists():
            subprocess.run(["/usr/bin/import", "-window", "root", "-crop",
                            f"{self.args.width}x{self.args.height}+0+0", str(out)], check=True)
        else:  # the X server's root window through Qt (still the real screen, not a widget render)
            grab = self.app.primaryScreen().grabWindow(0, 0, 0, self.args.width, self.args.height)
            if not grab.save(str(out)):
                raise SystemExit(f"could not write {out}")
        print(f"saved {out}")
        self.window.stop()
        QTimer.singleShot(200, self.app.quit)

    def start_when_ready(self) -> None:
        if self.window.state == "ready" and self.window.model is not None:
            self.speak_next()
        else:
            QTimer.singleShot(200, self.start_when_ready)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--model", required=True)
    parser.add_argument("--lang", default="en", choices=["en", "zh_CN"])
    parser.add_argument("--width", type=int, default=1280)
    parser.add_argument("--height", type=int, default=800)
    parser.add_argument("--reading", action="store_true", help="a long text mid-way: sentence progress and highlight")
    args = parser.parse_args(argv)
    os.environ.setdefault("COSYDESK_DATA_DIR", tempfile.mkdtemp(prefix="cosydesk-shot-"))

    from cosydesk.settings import Key, Settings
    from cosydesk.ui.app import build_main_window, create_application

    app = create_application([sys.argv[0]])
    settings = Settings()
    settings.set(Key.LANGUAGE, args.lang)
    window = build_main_window(args.model, settings=settings)
    window.setGeometry(0, 0, args.width, args.height)
    window.show()
    driver = _Driver(app, window, args)
    window.controller.worker.jobFinished.connect(driver.on_finished)
    window.controller.worker.chunkReady.connect(driver.on_chunk)
    QTimer.singleShot(500, driver.start_when_ready)
    QTimer.singleShot(240_000, app.quit)  # never hang a script
    app.exec()
    window.shutdown()
    return 0 if args.out.exists() else 1


if __name__ == "__main__":
    sys.exit(main())
