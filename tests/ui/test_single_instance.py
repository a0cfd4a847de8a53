"""One CosyDesk per data folder, and `cosydesk read` (issue 30, items 4-5): real processes on the local socket.

The first app runs in a child process (tests/ui/instance_driver.py: the real `cosydesk --model` on the fake
synthesizer, offscreen); the second start and `cosydesk read` are the real command line in further children.
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from cosydesk.ui import single_instance
from cosydesk.ui.single_instance import LocalCommandServer, SingleInstance, parse_message, server_name
from tests.support.paths import REPO_ROOT

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="the raw-socket clients here are AF_UNIX")
DRIVER = REPO_ROOT / "tests" / "ui" / "instance_driver.py"


@pytest.fixture
def runtime_dir(monkeypatch):
    """A short private $XDG_RUNTIME_DIR, so the socket is a known path (AF_UNIX paths hold ~100 bytes)."""
    folder = tempfile.mkdtemp(prefix="cd-run-")
    os.chmod(folder, 0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", folder)
    yield Path(folder)
    shutil.rmtree(folder, ignore_errors=True)


def _env(data_dir: Path, runtime_dir: Path) -> dict:
    return {**os.environ, "QT_QPA_PLATFORM": "offscreen", "PYTHONPATH": str(REPO_ROOT), "OMP_NUM_THREADS": "1",
            "COSYDESK_DATA_DIR": str(data_dir), "COSYDESK_MODELS_DIR": str(data_dir.parent / "models"),
            "XDG_RUNTIME_DIR": str(runtime_dir)}


class Child:
    """A running first instance; its stdout lines arrive on a queue."""

    def __init__(self, model_dir: Path, env: dict) -> None:
        self.process = subprocess.Popen([sys.executable, str(DRIVER), str(model_dir)], stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, text=True, env=env, cwd=REPO_ROOT)
        self.lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        for line in self.process.stdout:
            self.lines.put(line.rstrip("\n"))

    def expect(self, wanted: str, timeout: float = 60.0) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                break
            if line.startswith(wanted):
                return line
        if self.process.poll() is not None:
            raise AssertionError(f"the app ended (rc {self.process.returncode}): {self.process.stderr.read()[-3000:]}")
        raise AssertionError(f"the app did not print {wanted!r} within {timeout} s")

    def stop(self) -> str:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return self.process.stderr.read()


def _cosydesk(args: list[str], env: dict, stdin: str | None = None, timeout: float = 60.0):
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "cosydesk", *args], env=env, cwd=REPO_ROOT, capture_output=True,
                          text=True, input=stdin, timeout=timeout)
    return done, time.monotonic() - start


def _raw_exchange(path: str, payload: bytes, replies: int, timeout: float = 10.0) -> list[dict]:
    """Send raw bytes to the app's socket (as any local process could) and read `replies` reply lines."""
    with socket.socket(socket.AF_UNIX) as sock:
        sock.settimeout(timeout)
        sock.connect(path)
        sock.sendall(payload)
        data = b""
        while data.count(b"\n") < replies:
            piece = sock.recv(65536)
            if not piece:
                break
            data += piece
    return [json.loads(line) for line in data.splitlines()[:replies]]


def test_second_start_hands_over_and_read_reaches_the_running_app(tmp_path, fake_model_dir, runtime_dir):
    data_dir = tmp_path / "data"
    env = _env(data_dir, runtime_dir)
    first = Child(fake_model_dir, env)
    try:
        first.expect("ready")
        path = server_name(data_dir)
        assert path.startswith(str(runtime_dir)) and Path(path).is_socket()

        second, seconds = _cosydesk(["--model", str(fake_model_dir)], env)
        assert second.returncode == 0, second.stderr
        assert "already running" in second.stderr
        first.expect("shown")
        print(f"[metric] second start handed over and exited in {seconds:.2f} s")
        assert seconds < 30  # it never loads a model or opens a window (a start of the app takes far longer)

        read, _ = _cosydesk(["read", "Hello from another program."], env)
        assert read.returncode == 0, read.stderr
        assert first.expect('spoke "Hello from another').endswith('program."')
        piped, _ = _cosydesk(["read"], env, stdin="你好，来自标准输入。\n")
        assert piped.returncode == 0, piped.stderr
        assert "\\u4f60\\u597d" in first.expect("spoke ")  # 你好

        # Malformed messages from another local process: each answered with an error, then the app still works.
        garbage = (b"not json\n" + b"[1, 2]\n" + b'{"cmd": "rm -rf"}\n' + b'{"cmd": "read", "text": 5}\n'
                   + b'{"cmd": "read", "text": "   "}\n' + b'{"cmd": "show", "model": 7}\n' + b"[" * 100000 + b"\n"
                   + b"\xff\xfe\n" + b'{"cmd": "ping"}\n')
        replies = _raw_exchange(path, garbage, 9)
        assert [r["ok"] for r in replies] == [False] * 8 + [True], replies
        assert replies[-1]["app"] == "cosydesk"
        # A line over the size limit is refused and the connection dropped; the next client is served.
        assert _raw_exchange(path, b"x" * (single_instance.MAX_MESSAGE_BYTES + 10), 1)[0]["ok"] is False
        read, _ = _cosydesk(["read", "Still here."], env)
        assert read.returncode == 0, read.stderr
        first.expect('spoke "Still here."')
        assert first.process.poll() is None
    finally:
        stderr = first.stop()
    assert "ignored a message" in stderr  # one log line per bad message
    assert "Traceback" not in stderr


def test_a_stale_socket_is_removed_and_the_new_start_becomes_the_server(qtbot, tmp_path, runtime_dir):
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    path = server_name(data_dir)
    leftover = socket.socket(socket.AF_UNIX)
    leftover.bind(path)  # what a crashed instance leaves: the file, nobody listening
    leftover.close()
    assert Path(path).is_socket()
    instance = SingleInstance(data_dir)
    assert instance.claim() is True
    try:
        reply: list[dict] = []
        thread = threading.Thread(target=lambda: reply.extend(_raw_exchange(path, b'{"cmd": "ping"}\n', 1)))
        thread.start()
        qtbot.waitUntil(lambda: bool(reply), timeout=10000)
        thread.join()
        assert reply[0]["ok"] and reply[0]["pid"] == os.getpid()
    finally:
        instance.release()


def test_the_server_name_depends_on_the_data_folder_and_user(tmp_path, runtime_dir):
    assert server_name(tmp_path / "a") != server_name(tmp_path / "b")
    assert server_name(tmp_path / "a") == server_name(tmp_path / "x" / ".." / "a")
    name = Path(server_name(tmp_path / "a")).name
    assert name.startswith("cosydesk-") and len(server_name(tmp_path / "a")) < 100


@pytest.mark.parametrize("line, why", [
    (b"", "not JSON"), (b"\x00\x01", "not JSON"), (b"null", "JSON object"), (b'{"cmd": null}', "unknown command"),
    (b'{"cmd": "read"}', "non-empty"), (b'{"cmd": "read", "text": ["a"]}', "non-empty"),
    (b'{"cmd": "read", "text": "' + b"a" * (single_instance.MAX_READ_CHARS + 1) + b'"}', "at most"),
    (b'{"cmd": "show", "model": "a\\u0000b"}', "folder path"), (b"[" * 50000 + b"]" * 50000, "not JSON"),
])
def test_bad_messages_are_refused_with_a_reason(line, why):
    message, problem = parse_message(line)
    assert message is None and why in problem


def test_valid_messages_are_cleaned():
    message, _ = parse_message(b'{"cmd": "read", "text": "a\\ud800b", "source": "../x"}')
    assert message == {"cmd": "read", "text": "a?b", "source": "cli"}
    message, _ = parse_message(b'{"cmd": "read", "text": "hi", "source": "selection", "extra": {"x": 1}}')
    assert message["source"] == "selection"


def test_a_silent_client_is_dropped(qtbot, tmp_path, runtime_dir, monkeypatch):
    monkeypatch.setattr(single_instance, "IDLE_TIMEOUT_MS", 200)
    server = LocalCommandServer(server_name(tmp_path))
    assert server.listen()
    try:
        silent = socket.socket(socket.AF_UNIX)
        silent.connect(server.name)
        qtbot.waitUntil(lambda: len(server.connections) == 1, timeout=5000)
        qtbot.waitUntil(lambda: not server.connections, timeout=5000)  # dropped after the idle timeout
        silent.close()
    finally:
        server.close()


_SELECTION_OWNER = """
import sys
from PySide6.QtCore import QTimer
from PySide6.QtGui import QClipboard, QGuiApplication

app = QGuiApplication(sys.argv[:1])
app.clipboard().setText("Selected on X11, read by a shortcut.", QClipboard.Mode.Selection)
app.clipboard().setText("Copied on X11.", QClipboard.Mode.Clipboard)
QTimer.singleShot(0, lambda: print("owned", flush=True))
QTimer.singleShot(60000, app.quit)
app.exec()
"""


def test_read_selection_and_clipboard_on_a_real_x_server_reach_the_app(qtbot, tmp_path, runtime_dir, monkeypatch):
    """`cosydesk read --selection` as a desktop shortcut runs it: another X client owns the primary selection."""
    xvfb = shutil.which("Xvfb")
    if xvfb is None or not sys.platform.startswith("linux"):
        pytest.skip("Xvfb is not installed (apt-get install xvfb): no X server to hold a selection")
    from tests.ui.test_real_x11 import _start_xvfb

    data_dir = tmp_path / "data"
    data_dir.mkdir()
    monkeypatch.setenv("COSYDESK_DATA_DIR", str(data_dir))
    instance = SingleInstance(data_dir)
    assert instance.claim()
    received: list[tuple[str, str]] = []
    instance.server.readRequested.connect(lambda text, source: received.append((text, source)))
    server, display = _start_xvfb(xvfb)
    env = {**_env(data_dir, runtime_dir), "DISPLAY": display, "QT_QPA_PLATFORM": "xcb"}
    env.pop("WAYLAND_DISPLAY", None)
    owner = subprocess.Popen([sys.executable, "-c", _SELECTION_OWNER], env=env, stdout=subprocess.PIPE, text=True)
    try:
        assert owner.stdout.readline().strip() == "owned"
        for flag, expected in (("--selection", ("Selected on X11, read by a shortcut.", "selection")),
                               ("--clipboard", ("Copied on X11.", "clipboard"))):
            reader = subprocess.Popen([sys.executable, "-m", "cosydesk", "read", flag], env=env, cwd=REPO_ROOT,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            qtbot.waitUntil(lambda: reader.poll() is not None, timeout=60000)  # the app answers meanwhile
            assert reader.returncode == 0, reader.stderr.read()
            assert received[-1] == expected
    finally:
        owner.kill()
        owner.wait()
        server.terminate()
        server.wait(timeout=10)
        instance.release()
