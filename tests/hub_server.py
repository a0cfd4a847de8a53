"""Local stand-ins for the Hugging Face Hub on 127.0.0.1, for download tests without any network.

- `FakeHub`: answers the calls huggingface_hub's snapshot_download makes (model info, file tree, HEAD and GET
  of each file) for one repository whose files the test chooses. A file can be served normally, trickled
  (one byte per interval, the connection kept alive) or cut off halfway.
- `SilentServer`: accepts connections and never answers a single byte.

Point the download at one with HF_ENDPOINT=server.url.
"""

from __future__ import annotations

import hashlib
import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote, urlsplit

COMMIT = "0123456789abcdef0123456789abcdef01234567"


class FakeHub:
    def __init__(self, repo_id: str, files: dict[str, bytes], trickle: set[str] = frozenset(),
                 cut_off: set[str] = frozenset(), trickle_interval_s: float = 0.5) -> None:
        self.repo_id = repo_id
        self.files = files
        self.trickle = set(trickle)
        self.cut_off = set(cut_off)
        self.trickle_interval_s = trickle_interval_s
        self.requests: list[str] = []
        self._closing = threading.Event()
        hub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:  # keep test output clean
                pass

            def do_HEAD(self) -> None:  # noqa: N802 - http.server's naming
                hub._answer(self, body=False)

            def do_GET(self) -> None:  # noqa: N802
                hub._answer(self, body=True)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    # -- what the hub says about the repository -------------------------------------------------------------
    @staticmethod
    def sha256(data: bytes) -> str:
        return hashlib.sha256(data).hexdigest()

    def _tree(self) -> list[dict]:
        return [{"type": "file", "path": name, "size": len(data), "oid": hashlib.sha1(data).hexdigest(),  # noqa: S324
                 "lfs": {"oid": self.sha256(data), "size": len(data), "pointerSize": 134}}
                for name, data in self.files.items()]

    def _answer(self, handler: BaseHTTPRequestHandler, body: bool) -> None:
        path = unquote(urlsplit(handler.path).path)
        self.requests.append(f"{handler.command} {path}")
        api = f"/api/models/{self.repo_id}"
        if path in (api, f"{api}/revision/main", f"{api}/revision/{COMMIT}"):
            siblings = [{"rfilename": name} for name in self.files]
            return self._json(handler, {"id": self.repo_id, "modelId": self.repo_id, "sha": COMMIT,
                                        "siblings": siblings, "private": False}, body)
        if path.startswith(f"{api}/tree/"):
            return self._json(handler, self._tree(), body)
        prefix = f"/{self.repo_id}/resolve/"
        if path.startswith(prefix):
            name = path[len(prefix):].split("/", 1)[1]
            if name in self.files:
                return self._file(handler, name, body)
        handler.send_response(404)
        handler.send_header("Content-Length", "0")
        handler.send_header("X-Error-Code", "EntryNotFound")
        handler.end_headers()

    @staticmethod
    def _json(handler: BaseHTTPRequestHandler, data, body: bool) -> None:
        payload = json.dumps(data).encode()
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(payload)))
        handler.end_headers()
        if body:
            handler.wfile.write(payload)

    def _file(self, handler: BaseHTTPRequestHandler, name: str, body: bool) -> None:
        data = self.files[name]
        start = 0
        ranged = handler.headers.get("Range", "")
        if ranged.startswith("bytes=") and ranged[6:].split("-")[0].isdigit():
            start = int(ranged[6:].split("-")[0])
        handler.send_response(206 if start else 200)
        handler.send_header("Content-Length", str(len(data) - start))
        handler.send_header("ETag", f'"{self.sha256(data)}"')
        handler.send_header("X-Linked-Etag", f'"{self.sha256(data)}"')
        handler.send_header("X-Linked-Size", str(len(data)))
        handler.send_header("X-Repo-Commit", COMMIT)
        if start:
            handler.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
        handler.end_headers()
        if not body:
            return
        rest = data[start:]
        try:
            if name in self.trickle:
                for i in range(len(rest)):
                    if self._closing.wait(self.trickle_interval_s):
                        return
                    handler.wfile.write(rest[i:i + 1])
                    handler.wfile.flush()
            elif name in self.cut_off:
                handler.wfile.write(rest[: len(rest) // 2])
                handler.wfile.flush()
                handler.close_connection = True
                handler.connection.shutdown(socket.SHUT_RDWR)
            else:
                handler.wfile.write(rest)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def __enter__(self) -> FakeHub:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._closing.set()
        self._server.shutdown()
        self._server.server_close()


class SilentServer:
    """Accepts TCP connections and never sends a byte (a hub behind a broken proxy)."""

    def __init__(self) -> None:
        self._socket = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._socket.getsockname()[1]}"
        self.accepted = 0
        self._held: list[socket.socket] = []
        self._thread = threading.Thread(target=self._accept, daemon=True)

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self._socket.accept()
            except OSError:
                return
            self.accepted += 1
            self._held.append(connection)

    def __enter__(self) -> SilentServer:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._socket.close()
        for connection in self._held:
            connection.close()


def wait_for(condition, timeout_s: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return condition()
