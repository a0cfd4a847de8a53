"""The "Serve other apps" switch: the local OpenAI-compatible speech server (cosydesk/serve/) inside the app.

What it is for: running `cosydesk serve`'s FastAPI app on the model the app has already loaded, on a background
thread (uvicorn with its own event loop), so other programs can speak with the app's voices without a second
engine. The app's speech and the server's requests take turns on that one model (serve/turns.py: the worker's
GatedSynth and the server's share one TurnGate); the server's own bounded queue (SpeechEngine) stays in front.
The switch is one checkable QAction (the tray, Tools menu and Preferences can all show it), persisted as
Key.SERVE_ENABLED; address, port and key come from Key.SERVE_HOST / SERVE_PORT / SERVE_API_KEY (or
COSYDESK_API_KEY) under the same rule as the CLI (no non-loopback address without a key). When the model
changes, the server stops before the old model is dropped and starts again on the new one.

What it must not do: block the UI thread (FastAPI and uvicorn are imported, started and stopped on a helper
thread), or let the server run a request while the app is loading or speaking on the same model.
"""

from __future__ import annotations

import errno
import logging
import socket
import threading
import time
from pathlib import Path

from PySide6.QtCore import QObject, QTimer, Signal, Slot
from PySide6.QtGui import QAction

from cosydesk import environment
from cosydesk.settings import Key, Settings

log = logging.getLogger("cosydesk.ui.serve")
STATUS_INTERVAL_MS = 250


class _Activity:
    """ASGI wrapper that notes each speech request's client (address and User-Agent) for the status bar."""

    def __init__(self, app) -> None:
        self.app = app
        self.requests = 0
        self.last_client = ""

    async def __call__(self, scope, receive, send):
        if scope.get("type") == "http" and scope.get("path") == "/v1/audio/speech":
            self.requests += 1
            host = (scope.get("client") or ("?", 0))[0]
            agent = next((v.decode("latin-1") for k, v in scope.get("headers", ()) if k == b"user-agent"), "")
            self.last_client = f"{agent.split(' ')[0][:40]} ({host})" if agent else host
        await self.app(scope, receive, send)


class ServeSwitch(QObject):
    """Owns the in-app server: start on the loaded model, stop on model change and shutdown; report activity."""

    stateChanged = Signal(str)  # "off", "waiting" (for a model), "starting", "on", "stopping", "failed"
    statusText = Signal(str)  # for the status bar ("" when off)
    failed = Signal(str)  # one line: why the server could not start
    _started = Signal(object, object, str)  # from the helper thread: (server, engine, "") or (None, None, why)
    _stopped = Signal()

    def __init__(self, controller, settings: Settings, voices_dir: Path | None = None,
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.controller = controller
        self.settings = settings
        self.voices_dir = voices_dir
        self.state = "off"
        self.server = None  # ServerThread
        self.engine = None  # SpeechEngine
        self.activity: _Activity | None = None
        self.url = ""
        self.model_dir: str | None = None
        self._busy_thread: threading.Thread | None = None
        self._restart_when_stopped = False  # switched on again while stopping
        self._awaiting_model = False  # a load is under way: start on the model it brings, not the old one
        self.action = QAction(self)
        self.action.setObjectName("serveOtherAppsAction")
        self.action.setCheckable(True)
        self.action.toggled.connect(self.set_enabled)
        self._started.connect(self._on_started)
        self._stopped.connect(self._on_stopped)
        controller.loadStarting.connect(self._on_load_starting)
        controller.worker.loaded.connect(self._on_model_loaded)
        self.timer = QTimer(self)
        self.timer.setInterval(STATUS_INTERVAL_MS)
        self.timer.timeout.connect(self._report)
        self.retranslate()
        self.action.setChecked(bool(settings.get(Key.SERVE_ENABLED)))  # starts once a model is loaded

    def retranslate(self) -> None:
        self.action.setText(self.tr("Serve other apps"))
        self.action.setToolTip(self.tr("Let other programs speak through CosyDesk's OpenAI-compatible API "
                                       "(/v1/audio/speech) on the model loaded here"))
        self._report()

    # -- the switch ---------------------------------------------------------------------------------------------
    @property
    def enabled(self) -> bool:
        return self.action.isChecked()

    @Slot(bool)
    def set_enabled(self, on: bool) -> None:
        if self.action.isChecked() != on:
            self.action.setChecked(on)  # comes back here through toggled
            return
        self.settings.set(Key.SERVE_ENABLED, on)
        if on:
            self._start()
        else:
            self._restart_when_stopped = False
            self._stop()

    def _set_state(self, state: str) -> None:
        if state != self.state:
            self.state = state
            self.stateChanged.emit(state)
        if state in ("on", "starting"):
            self.timer.start()
        else:
            self.timer.stop()
        self._report()

    def _fail(self, why: str) -> None:
        log.warning("in-app speech server: %s", why)
        self._set_state("failed")
        self.action.blockSignals(True)
        self.action.setChecked(False)
        self.action.blockSignals(False)
        self.settings.set(Key.SERVE_ENABLED, False)
        self.failed.emit(why)
        self._set_state("off")

    # -- starting ------------------------------------------------------------------------------------------------
    def _config(self) -> tuple[str, int, str | None] | str:
        from cosydesk.serve.config import bind_problem, is_loopback

        host = self.settings.get(Key.SERVE_HOST).strip() or "127.0.0.1"
        port = self.settings.get(Key.SERVE_PORT)
        key = (self.settings.get(Key.SERVE_API_KEY) or "").strip() or environment.text("COSYDESK_API_KEY") or None
        if not 0 <= port <= 65535:
            return self.tr("port {port} (setting {key}) is not a TCP port (0-65535)").format(
                port=port, key=Key.SERVE_PORT.value)
        problem = bind_problem(host, key)
        if problem and not is_loopback(host) and not key:
            # the CLI's text names --host / --api-key flags; the app says where its settings are, whole (one tr
            # string: replacing the flags by translated words left the rest of the sentence in English)
            return self.tr("address {host} would let other computers use this server without a key: set an API key "
                           "in Preferences > Local API (or COSYDESK_API_KEY), or keep the address 127.0.0.1").format(
                host=host)
        if problem:
            return problem
        return host, port, key

    def _start(self) -> None:
        if self.state in ("on", "starting"):
            return
        if self.state == "stopping":
            self._restart_when_stopped = True
            return
        synth = getattr(self.controller.worker, "synth", None)
        if synth is None or not hasattr(synth, "gate") or self._awaiting_model:
            self._set_state("waiting")  # starts when a model is loaded
            return
        config = self._config()
        if isinstance(config, str):
            self._fail(config)
            return
        host, port, key = config
        self.model_dir = self.model_dir or str(getattr(synth, "model_dir", "") or self.settings.get(Key.MODEL_DIR))
        self._set_state("starting")
        thread = threading.Thread(target=self._start_in_background, args=(synth, host, port, key),
                                  name="cosydesk-serve-start", daemon=True)
        self._busy_thread = thread
        thread.start()

    def _start_in_background(self, synth, host: str, port: int, key: str | None) -> None:
        try:
            from cosydesk.serve.app import create_app
            from cosydesk.serve.config import DEFAULT_QUEUE, ServeConfig
            from cosydesk.serve.engine import SpeechEngine
            from cosydesk.serve.runner import ServerThread, bind_socket
            from cosydesk.serve.turns import GatedSynth

            try:
                sock = bind_socket(host, port)
            except OSError as error:
                reason = error.strerror or str(error)
                if isinstance(error, socket.gaierror) or error.errno == errno.EADDRNOTAVAIL:  # not an address here
                    self._started.emit(None, None, f"cannot listen on {host}:{port}: {reason} (the address must be "
                                       "one of this computer's, such as 127.0.0.1)")
                else:
                    self._started.emit(None, None, f"cannot listen on {host}:{port}: {reason} "
                                       "(is `cosydesk serve` or another program using it? choose another port)")
                return
            api_view = GatedSynth(synth.inner, synth.gate, who="api")  # the same model and gate as the app's
            engine = SpeechEngine(api_view, max_waiting=DEFAULT_QUEUE)
            config = ServeConfig(model_id=Path(self.model_dir).name or "cosydesk", api_key=key, bind_host=host,
                                 voices_dir=self.voices_dir)
            activity = _Activity(create_app(engine, config))
            server = ServerThread(activity, sock, connection_limit=4 * (DEFAULT_QUEUE + 1))
            server.activity = activity
            try:
                server.start()
            except RuntimeError as error:
                engine.close()
                sock.close()
                self._started.emit(None, None, str(error))
                return
            self._started.emit(server, engine, "")
        except Exception as error:  # noqa: BLE001 - e.g. FastAPI missing: one message, the app keeps running
            log.exception("in-app speech server failed to start")
            self._started.emit(None, None, f"the speech server could not start ({type(error).__name__}: {error})")

    @Slot(object, object, str)
    def _on_started(self, server, engine, why: str) -> None:
        self._busy_thread = None
        if server is None:
            self._fail(why)
            return
        self.server, self.engine, self.activity, self.url = server, engine, server.activity, server.base_url
        if not self.enabled or self._restart_when_stopped or self._awaiting_model:  # switched off / model changed
            self._stop()
            return
        log.info("in-app speech server on %s", self.url)
        self._set_state("on")

    # -- stopping ------------------------------------------------------------------------------------------------
    def _stop(self) -> None:
        if self.state == "starting":
            return  # _on_started stops it once it is up
        server, engine = self.server, self.engine
        self.server = self.engine = None
        if server is None:
            self._set_state("waiting" if self.enabled and self.state == "waiting" else "off")
            return
        self._set_state("stopping")

        def stop() -> None:
            engine.close(timeout=5.0)  # cancels every request (each ends within one chunk)
            server.stop()
            self._stopped.emit()

        self._busy_thread = threading.Thread(target=stop, name="cosydesk-serve-stop", daemon=True)
        self._busy_thread.start()

    @Slot()
    def _on_stopped(self) -> None:
        self._busy_thread = None
        self._set_state("off")
        if self.enabled:
            self._restart_when_stopped = False
            self._start()  # or "waiting", while a model loads

    @Slot(str)
    def _on_load_starting(self, model_dir: str) -> None:
        self._awaiting_model = True
        if self.engine is not None:  # cancel its requests now: the worker's load waits for the turn
            self._stop()
        elif self.enabled and self.state in ("off", "failed"):
            self._set_state("waiting")

    @Slot(object)
    def _on_model_loaded(self, summary) -> None:
        self._awaiting_model = False
        self.model_dir = summary.model_dir
        if not self.enabled:
            return
        if self.state in ("off", "waiting", "failed"):
            self._start()
        elif self.state in ("stopping", "starting"):  # restart on the new model once that is done
            self._restart_when_stopped = True

    def shutdown(self, timeout_s: float = 10.0) -> None:
        """Stop the server and wait for it (the app is closing). Safe to call twice."""
        self.timer.stop()
        deadline = time.monotonic() + timeout_s
        thread = self._busy_thread
        if thread is not None:
            thread.join(max(0.0, deadline - time.monotonic()))
        server, engine = self.server, self.engine
        self.server = self.engine = None
        if engine is not None:
            engine.close(timeout=max(0.1, deadline - time.monotonic()))
        if server is not None:
            server.stop(timeout=max(0.1, deadline - time.monotonic()))

    # -- status ------------------------------------------------------------------------------------------------
    def in_flight(self) -> int:
        engine = self.engine
        if engine is None:
            return 0
        stats = engine.stats
        return max(0, stats.submitted - stats.done - stats.cancelled - stats.failed)

    def status_text(self) -> str:
        if self.state == "on":
            busy = self.in_flight()
            text = (self.tr("API: 1 request") if busy == 1 else self.tr("API: {n} requests").format(n=busy) if busy
                    else self.tr("API: on {url}").format(url=self.url))
            last = self.activity.last_client if self.activity else ""
            return text + (self.tr(" · last: {client}").format(client=last) if last else "")
        return {"starting": self.tr("API: starting…"), "stopping": self.tr("API: stopping…"),
                "waiting": self.tr("API: waiting for a model")}.get(self.state, "")

    def _report(self) -> None:
        self.statusText.emit(self.status_text())
