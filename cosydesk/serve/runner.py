"""Running the app with uvicorn: in the foreground (`cosydesk serve`) or on a thread (tests, the desktop app).

    sock = bind_socket("127.0.0.1", 0)                 # bind first: a taken port fails before the model loads
    with ServerThread(app, sock) as server:            # serves on its own thread and event loop
        print(server.base_url)                         # http://127.0.0.1:PORT/v1

uvicorn's connection limit is set well above the engine's queue, so clients beyond the queue get the app's own
429 (with Retry-After) rather than uvicorn's bare 503.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time

GRACEFUL_SHUTDOWN_S = 5
# An idle connection is kept this long. It must outlast the clients' own idle expiry (httpx, and with it the
# openai client: 5 s; aiohttp 15 s): at equal timeouts the server closes a connection just as a client reuses
# it, and that request fails with a broken connection (seen once in 620 requests of the load test).
KEEP_ALIVE_S = 30


def bind_socket(host: str, port: int) -> socket.socket:
    """A listening-ready TCP socket on host:port (port 0: a free one); OSError says why not."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if family == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        sock.bind(address)
        sock.listen(128)  # connections made before uvicorn starts wait in the backlog instead of being refused
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


def make_server(app, connection_limit: int = 256, log_level: str = "warning", access_log: bool = False):
    import uvicorn

    config = uvicorn.Config(app, log_level=log_level, access_log=access_log, lifespan="off",
                            limit_concurrency=connection_limit, timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_S,
                            timeout_keep_alive=KEEP_ALIVE_S)
    return uvicorn.Server(config)


def url_of(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}"


class ServerThread:
    """uvicorn serving `app` on a background thread; start() returns once it accepts connections."""

    def __init__(self, app, sock: socket.socket | None = None, connection_limit: int = 256,
                 log_level: str = "warning") -> None:
        self.sock = sock if sock is not None else bind_socket("127.0.0.1", 0)
        self.server = make_server(app, connection_limit=connection_limit, log_level=log_level)
        self.url = url_of(self.sock)
        self.base_url = self.url + "/v1"
        self._thread = threading.Thread(target=self._run, name="cosydesk-serve-http", daemon=True)
        self._error: BaseException | None = None

    def _run(self) -> None:
        try:
            asyncio.run(self.server.serve(sockets=[self.sock]))
        except BaseException as err:  # noqa: BLE001 - reported by start()/stop()
            self._error = err

    def start(self, timeout: float = 30.0) -> ServerThread:
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self.server.started:
            if self._error is not None or not self._thread.is_alive():
                raise RuntimeError(f"the speech server did not start: {self._error!r}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"the speech server did not start within {timeout:.0f} s")
            time.sleep(0.01)
        return self

    def stop(self, timeout: float = GRACEFUL_SHUTDOWN_S + 5) -> None:
        self.server.should_exit = True
        self._thread.join(timeout)

    def __enter__(self) -> ServerThread:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
