"""`cosydesk read [TEXT] [--clipboard] [--selection]`: read text aloud through the running app, or standalone.

    cosydesk read "Hello there."          # the running CosyDesk speaks it (its voice, its queue, its history)
    cosydesk read --selection             # the selected text (X11 / Wayland primary selection): bind to a shortcut
    cosydesk read --clipboard             # what was copied
    echo "Hello." | cosydesk read         # standard input

With a CosyDesk running on this data folder, the text goes over its local socket (ui/single_instance.py) and the
command returns at once; without one it is spoken here, as `cosydesk say --play` would. Registered by
cosydesk.cli like serve and doctor; nothing heavy is imported until the command runs (Qt only for the socket,
the clipboard and the selection; torch only when speaking standalone).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys

MAX_STDIN_BYTES = 4 * 1024 * 1024
MAX_READ_CHARS = 100_000  # as the app's socket accepts (ui/single_instance.py)


def add_parser(sub) -> None:
    read = sub.add_parser("read", help="read text aloud through the running app (or standalone when none runs)",
                          description="Hand TEXT (or the clipboard, the selection, standard input) to the running "
                                      "CosyDesk, which speaks it with its current voice; when none runs, speak it "
                                      "here as `cosydesk say --play` does.")
    read.add_argument("text", nargs="?", help="what to read (default: standard input)")
    source = read.add_mutually_exclusive_group()
    source.add_argument("--clipboard", action="store_true", help="read the clipboard's text")
    source.add_argument("--selection", action="store_true",
                        help="read the selected text (X11 / Wayland primary selection; for a desktop shortcut)")
    read.add_argument("--model", help="standalone only: model folder or name (default: the app's last model)")
    read.add_argument("--speaker", help="standalone only: SFT speaker (default: the model's first)")
    read.add_argument("--audio-device", default=None, help="standalone only: PortAudio output device")
    read.add_argument("--standalone", action="store_true", help="speak here even when the app is running")
    read.set_defaults(func=cmd_read)


def _user_error(message: str) -> Exception:
    from cosydesk.cli import UserError

    return UserError(message)


def _qt_application():
    """A QGuiApplication for the clipboard (the platform plugin must load: say why not in one line)."""
    from cosydesk import qt_platform

    try:
        import PySide6.QtGui  # noqa: F401
    except ImportError as error:
        raise _user_error(f"--clipboard and --selection need Qt: {qt_platform.import_advice(error)}") from None
    problem = qt_platform.startup_problem()
    if problem is not None:
        raise _user_error(f"cannot reach the desktop's clipboard: {problem}")
    from PySide6.QtGui import QGuiApplication

    return QGuiApplication.instance() or QGuiApplication([sys.argv[0]])


def _wayland() -> bool:
    return bool(os.environ.get("WAYLAND_DISPLAY")) and os.environ.get("QT_QPA_PLATFORM", "wayland").startswith("wayland")


def _wl_paste(primary: bool) -> str | None:
    """wl-clipboard's reader, for a Wayland session where Qt without a focused window is not sent the selection."""
    tool = shutil.which("wl-paste")
    if tool is None:
        return None
    try:
        done = subprocess.run([tool, "--no-newline", "--type", "text"] + (["--primary"] if primary else []),
                              capture_output=True, timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.decode("utf-8", "replace") if done.returncode == 0 else ""


def read_clipboard_text(selection: bool) -> str:
    """The clipboard's (or the primary selection's) text; UserError where there is none or it is unsupported."""
    app = _qt_application()
    from PySide6.QtGui import QClipboard

    clipboard = app.clipboard()
    what = "selection" if selection else "clipboard"
    if selection and not clipboard.supportsSelection():
        if _wayland() and (text := _wl_paste(primary=True)):
            return text
        raise _user_error(f"--selection: this desktop ({app.platformName()}) has no primary selection (X11 and "
                          "Wayland with primary-selection support have one); use --clipboard instead")
    text = clipboard.text(QClipboard.Mode.Selection if selection else QClipboard.Mode.Clipboard)
    if not text.strip() and _wayland():
        text = _wl_paste(primary=selection) or text
    if not text.strip():
        hint = " (on Wayland, install wl-clipboard so that a shortcut can read it)" if _wayland() else ""
        raise _user_error(f"the {what} holds no text: {'select' if selection else 'copy'} some text first{hint}")
    return text


def _stdin_text() -> str:
    if sys.stdin is None or sys.stdin.isatty():
        raise _user_error("nothing to read: give TEXT, --clipboard or --selection, or pipe text into standard input")
    data = sys.stdin.buffer.read(MAX_STDIN_BYTES + 1)
    if len(data) > MAX_STDIN_BYTES:
        raise _user_error(f"standard input has more than {MAX_STDIN_BYTES} bytes; give a shorter text "
                          "(or `cosydesk say --text-file FILE -o out.wav` for a book)")
    return data.decode("utf-8", "replace")


def cmd_read(args: argparse.Namespace) -> int:
    if args.text is not None and (args.clipboard or args.selection):
        raise _user_error("give either TEXT or --clipboard / --selection, not both")
    source = "clipboard" if args.clipboard else "selection" if args.selection else "cli"
    if args.clipboard or args.selection:
        text = read_clipboard_text(args.selection)
    else:
        text = args.text if args.text is not None else _stdin_text()
    if not text.strip():
        raise _user_error("nothing to read: the text is empty")
    if len(text) > MAX_READ_CHARS:
        raise _user_error(f"the text has {len(text)} characters; at most {MAX_READ_CHARS} are read aloud at once "
                          "(use `cosydesk say --text-file FILE -o out.wav` for longer texts)")
    if not args.standalone and _hand_to_app(text, source):
        return 0
    return _speak_here(args, text)


def _hand_to_app(text: str, source: str) -> bool:
    """True when the running app took the text."""
    from cosydesk import hub

    try:
        from cosydesk.ui.single_instance import InstanceError, send_command
    except ImportError:  # no Qt here: then no app can be running either
        return False
    try:
        reply = send_command(hub.app_data_dir(), {"cmd": "read", "text": text, "source": source})
    except InstanceError as error:
        raise _user_error(str(error)) from None
    if reply is None:
        return False
    if not reply.get("ok"):
        raise _user_error(f"the running CosyDesk refused the text: {reply.get('error')}")
    print(f"cosydesk: handed {len(text)} characters to the running CosyDesk", file=sys.stderr)
    return True


def _speak_here(args: argparse.Namespace, text: str) -> int:
    """As `cosydesk say TEXT --play` (the model the app used last, unless --model says otherwise)."""
    from cosydesk import cli

    say = cli.build_parser().parse_args(["say"])
    say.text, say.play, say.audio_device = text, True, args.audio_device
    say.model, say.speaker = args.model or _last_app_model(), args.speaker
    return cli.cmd_say(say)


def _last_app_model() -> str | None:
    from cosydesk import hub

    try:
        from cosydesk.settings import Key, Settings

        folder = Settings().get(Key.MODEL_DIR)
    except ImportError:
        return None
    return folder if folder and hub.check_model_dir(folder).loadable else None
