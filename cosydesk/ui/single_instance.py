"""One CosyDesk per data folder: a local socket (QLocalServer) that a second start or `cosydesk read` talks to.

    instance = SingleInstance(data_dir)
    if instance.claim():                      # we are the first: instance.server answers from now on
        instance.server.showRequested.connect(...); instance.server.readRequested.connect(...)
    else:                                     # another CosyDesk runs on this folder and has raised its window
        ...
    reply = send_command(data_dir, {"cmd": "read", "text": "Hello."})   # None: no app is running

The server name is derived from the user and the resolved data folder, so two users, or one user with two data
folders (COSYDESK_DATA_DIR), never meet. Claiming happens under a lock file in the data folder, so two starts at
the same moment cannot both become the server; a socket left behind by a crashed app (nobody answers) is
removed and the new instance takes over.

The protocol: one JSON object per line (UTF-8), at most MAX_MESSAGE_BYTES; the reply is one line too.
    {"cmd": "show", "model": "/abs/dir" (optional)}  -> {"ok": true}
    {"cmd": "read", "text": "...", "source": "clipboard" (optional)}  -> {"ok": true} or {"ok": false, "error": ...}
    {"cmd": "ping"}  -> {"ok": true, "app": "cosydesk", "pid": N}
Another local process may send anything: a message that is not valid is answered with an error and logged
(one line), an over-long line or a silent connection is dropped; nothing a client sends can raise or run code.
"""

from __future__ import annotations

import getpass
import hashlib
import json
import logging
import os
import re
import sys
import time
from pathlib import Path

from PySide6.QtCore import QObject, QTimer, Signal
from PySide6.QtNetwork import QLocalServer, QLocalSocket

from cosydesk.file_lock import LockTimeout, exclusive_lock

log = logging.getLogger("cosydesk.single_instance")

PROTOCOL_VERSION = 1
MAX_MESSAGE_BYTES = 1024 * 1024  # a 100,000-character Chinese text is ~300 kB in UTF-8
MAX_READ_CHARS = 100_000  # cosydesk/read_command.py checks the same bound before sending
MAX_CONNECTIONS = 8
IDLE_TIMEOUT_MS = 5000  # a client that connects and says nothing is dropped
CONNECT_TIMEOUT_MS = 1000
REPLY_TIMEOUT_MS = 5000
COMMANDS = ("show", "read", "ping")


class InstanceError(Exception):
    """Another CosyDesk holds the data folder but did not answer as it should (one line, for the user)."""


def server_name(data_dir: str | os.PathLike) -> str:
    """The local socket's name for this user and data folder (a path in $XDG_RUNTIME_DIR when there is one)."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):  # no passwd entry (containers): the uid still tells users apart
        user = str(os.getuid()) if hasattr(os, "getuid") else "user"
    user = re.sub(r"[^A-Za-z0-9_.-]", "_", user)[:32] or "user"
    digest = hashlib.sha256(str(Path(data_dir).expanduser().resolve()).encode("utf-8", "surrogatepass")).hexdigest()
    name = f"cosydesk-{user}-{digest[:16]}"
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if sys.platform != "win32" and runtime and Path(runtime).is_dir() and len(runtime) < 60:
        return str(Path(runtime) / f"{name}.sock")  # per-user, 0700, the same in every process of the session
    return name  # Qt puts it in the temporary folder (Unix) or makes it a named pipe (Windows)


# -- messages ---------------------------------------------------------------------------------------------------
def encode(message: dict) -> bytes:
    return json.dumps(message, ensure_ascii=False).encode("utf-8") + b"\n"


def _clean_text(text: str) -> str:
    """Lone surrogates (valid in JSON, not in Qt strings) become U+FFFD."""
    return text.encode("utf-8", "replace").decode("utf-8", "replace") if not text.isascii() else text


def parse_message(line: bytes) -> tuple[dict | None, str | None]:
    """(message, None) for a valid command, (None, why) otherwise. Never raises."""
    try:
        message = json.loads(line)
    except (ValueError, RecursionError) as error:  # UnicodeDecodeError is a ValueError
        return None, f"not JSON ({type(error).__name__})"
    if not isinstance(message, dict):
        return None, f"a JSON object was expected, not {type(message).__name__}"
    cmd = message.get("cmd")
    if cmd not in COMMANDS:
        return None, f"unknown command {str(cmd)[:40]!r} (known: {', '.join(COMMANDS)})"
    if cmd == "read":
        text = message.get("text")
        if not isinstance(text, str) or not text.strip():
            return None, "'read' needs a non-empty 'text' string"
        if len(text) > MAX_READ_CHARS:
            return None, f"'text' has {len(text)} characters; at most {MAX_READ_CHARS} are read aloud"
        source = message.get("source")
        return {"cmd": "read", "text": _clean_text(text),
                "source": source if isinstance(source, str) and source.isidentifier() else "cli"}, None
    if cmd == "show":
        model = message.get("model")
        if model is not None and (not isinstance(model, str) or not model or "\0" in model or len(model) > 4096):
            return None, "'model' must be a folder path"
        return {"cmd": "show", "model": _clean_text(model) if model else None}, None
    return {"cmd": "ping"}, None


# -- the server (the running app) -------------------------------------------------------------------------------
class _Client:
    """One connected client: its socket (a child of the QLocalServer), unread bytes and last activity."""

    def __init__(self, socket: QLocalSocket) -> None:
        self.socket = socket
        self.buffer = bytearray()
        self.last_seen = time.monotonic()


class LocalCommandServer(QObject):
    """Listens on the instance's local socket and turns valid messages into signals (on the UI thread)."""

    showRequested = Signal(object)  # model folder (str) or None
    readRequested = Signal(str, str)  # text, source ("cli", "clipboard", "selection", ...)

    def __init__(self, name: str, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.name = name
        self.server = QLocalServer(self)
        self.server.setSocketOptions(QLocalServer.SocketOption.UserAccessOption)
        self.server.setMaxPendingConnections(MAX_CONNECTIONS)
        self.server.newConnection.connect(self._accept)
        self.clients: list[_Client] = []
        self.ignored = 0  # messages refused (tests, diagnostics)
        self.idle_timer = QTimer(self)
        self.idle_timer.setInterval(max(50, IDLE_TIMEOUT_MS // 4))
        self.idle_timer.timeout.connect(self._drop_idle)

    @property
    def connections(self) -> list[_Client]:
        return self.clients

    def listen(self) -> bool:
        if not self.server.listen(self.name):
            QLocalServer.removeServer(self.name)  # a socket file left by a crashed instance
            if not self.server.listen(self.name):
                return False
        self.idle_timer.start()
        return True

    def error_string(self) -> str:
        return self.server.errorString()

    def _accept(self) -> None:
        while self.server.hasPendingConnections():
            socket = self.server.nextPendingConnection()
            if len(self.clients) >= MAX_CONNECTIONS:
                log.warning("local socket: more than %d clients at once; one was turned away", MAX_CONNECTIONS)
                socket.abort()
                socket.deleteLater()
                continue
            client = _Client(socket)
            self.clients.append(client)
            socket.readyRead.connect(lambda client=client: self._read(client))
            socket.disconnected.connect(lambda client=client: self._drop(client))

    def _read(self, client: _Client) -> None:
        if client not in self.clients:
            return
        client.buffer += bytes(client.socket.readAll().data())
        client.last_seen = time.monotonic()
        while client in self.clients:
            end = client.buffer.find(b"\n")
            if end < 0:
                if len(client.buffer) > MAX_MESSAGE_BYTES:
                    log.warning("local socket: a message of more than %d bytes was dropped", MAX_MESSAGE_BYTES)
                    self._reply(client, {"ok": False, "error": f"message longer than {MAX_MESSAGE_BYTES} bytes"})
                    self._drop(client)
                return
            line, client.buffer = bytes(client.buffer[:end]), client.buffer[end + 1:]
            if end > MAX_MESSAGE_BYTES:
                log.warning("local socket: a message of %d bytes was dropped (limit %d)", end, MAX_MESSAGE_BYTES)
                self._reply(client, {"ok": False, "error": f"message longer than {MAX_MESSAGE_BYTES} bytes"})
                continue
            self._reply(client, self.handle_line(line))

    @staticmethod
    def _reply(client: _Client, reply: dict) -> None:
        if client.socket.state() == QLocalSocket.LocalSocketState.ConnectedState:
            client.socket.write(encode(reply))
            client.socket.flush()

    def _drop_idle(self) -> None:
        limit = time.monotonic() - IDLE_TIMEOUT_MS / 1000
        for client in [c for c in self.clients if c.last_seen < limit]:
            log.info("local socket: a client said nothing for %d ms and was dropped", IDLE_TIMEOUT_MS)
            self._drop(client)

    def _drop(self, client: _Client) -> None:
        if client not in self.clients:
            return
        self.clients.remove(client)
        socket = client.socket
        for signal in (socket.readyRead, socket.disconnected):
            try:
                signal.disconnect()
            except (RuntimeError, TypeError):
                pass
        socket.abort()
        socket.deleteLater()

    def handle_line(self, line: bytes) -> dict:
        message, problem = parse_message(line)
        if message is None:
            self.ignored += 1
            log.warning("local socket: ignored a message: %s", problem)
            return {"ok": False, "error": problem}
        if message["cmd"] == "show":
            self.showRequested.emit(message["model"])
        elif message["cmd"] == "read":
            self.readRequested.emit(message["text"], message["source"])
        return {"ok": True, "app": "cosydesk", "pid": os.getpid(), "v": PROTOCOL_VERSION}

    def close(self) -> None:
        self.idle_timer.stop()
        for client in list(self.clients):
            self._drop(client)
        self.server.close()


# -- the client (a second start, `cosydesk read`) ---------------------------------------------------------------
def _exchange(name: str, message: dict, reply_timeout_ms: int) -> dict | None:
    socket = QLocalSocket()
    socket.connectToServer(name)
    if not socket.waitForConnected(CONNECT_TIMEOUT_MS):
        return None  # nobody listens (or a stale socket file): no app is running
    try:
        socket.write(encode(message))
        socket.waitForBytesWritten(reply_timeout_ms)
        data = bytearray()
        while b"\n" not in data and len(data) <= MAX_MESSAGE_BYTES:
            if not socket.waitForReadyRead(reply_timeout_ms):
                data += bytes(socket.readAll().data())
                break
            data += bytes(socket.readAll().data())
        line = bytes(data).split(b"\n", 1)[0]
        try:
            reply = json.loads(line)
        except ValueError:
            reply = None
        if not isinstance(reply, dict):
            raise InstanceError("another CosyDesk is running on this data folder but did not answer "
                                f"(socket {name}); close it, or wait until it responds")
        return reply
    finally:
        socket.disconnectFromServer()


def send_command(data_dir: str | os.PathLike, message: dict, reply_timeout_ms: int = REPLY_TIMEOUT_MS) -> dict | None:
    """Send one message to the CosyDesk running on `data_dir`: its reply, or None when none runs."""
    return _exchange(server_name(data_dir), message, reply_timeout_ms)


class SingleInstance:
    """Claim the data folder's local socket, or hand over to the CosyDesk that already holds it."""

    def __init__(self, data_dir: str | os.PathLike) -> None:
        self.data_dir = Path(data_dir)
        self.name = server_name(self.data_dir)
        self.server: LocalCommandServer | None = None
        self.reply: dict | None = None

    def claim(self, show_message: dict | None = None) -> bool:
        """True: this process is now the instance (self.server listens). False: the running one got
        `show_message` (default {"cmd": "show"}) and answered (self.reply). InstanceError when it does not
        answer, or the socket cannot be created."""
        try:
            with exclusive_lock(self.data_dir / "instance.lock", timeout_s=10.0):
                reply = _exchange(self.name, show_message or {"cmd": "show"}, REPLY_TIMEOUT_MS)
                if reply is not None:
                    self.reply = reply
                    return False
                server = LocalCommandServer(self.name)
                if not server.listen():
                    raise InstanceError(f"cannot create the local socket {self.name}: {server.error_string()}")
                self.server = server
                return True
        except LockTimeout as error:
            raise InstanceError(str(error)) from None
        except OSError as error:  # the data folder is not writable: no lock file
            raise InstanceError(f"cannot lock {self.data_dir / 'instance.lock'}: {error.strerror or error}") from None

    def release(self) -> None:
        if self.server is not None:
            self.server.close()
            self.server = None
