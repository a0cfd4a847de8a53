"""One engine, many clients: a worker thread that runs speech requests one at a time in arrival order.

    engine = SpeechEngine(synth, max_waiting=16)
    job = engine.submit(Request("Hello."), sink)      # QueueFull when max_waiting requests already wait
    # the worker calls sink(JobEvent) from its thread: chunk, chunk, ..., end (or error)
    job.cancel()                                      # the worker stops within one chunk

The queue is bounded (`max_waiting` requests waiting, plus the one being synthesised); the caller turns
QueueFull into 429 + Retry-After. A failing request never stops the worker. The sink must not block (the
server's hands each event to its event loop). The app can share the engine with the server: both submit.
No FastAPI, Qt or torch imports here (the Synthesizer brings torch).
"""

from __future__ import annotations

import itertools
import logging
import math
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from cosydesk.runtime.errors import SynthesisError
from cosydesk.runtime.types import AudioChunk, Request

log = logging.getLogger("cosydesk.serve")


class QueueFull(Exception):
    def __init__(self, waiting: int, retry_after_s: int) -> None:
        super().__init__(f"{waiting} requests are waiting")
        self.waiting = waiting
        self.retry_after_s = retry_after_s


class EngineClosed(Exception):
    pass


@dataclass
class JobEvent:
    kind: str  # "chunk", "end" or "error"
    chunk: AudioChunk | None = None
    error: BaseException | None = None


@dataclass
class Job:
    id: int
    request: Request
    sink: Callable[[JobEvent], None]
    submitted: float = field(default_factory=time.perf_counter)
    started: float | None = None
    finished: float | None = None
    state: str = "waiting"  # waiting, running, done, cancelled, failed
    chunks: int = 0
    samples: int = 0  # audio samples handed over (at the model's rate)
    chunk_times: list[float] = field(default_factory=list)  # perf_counter when each chunk was handed over
    cancel_event: threading.Event = field(default_factory=threading.Event)
    cancelled_at_chunk: int | None = None  # chunks handed over when cancel() was called

    def cancel(self) -> None:
        """Stop this request (a client went away): dropped if waiting, stopped within one chunk if running."""
        if not self.cancel_event.is_set() and self.state in ("waiting", "running"):
            self.cancelled_at_chunk = self.chunks
            self.cancel_event.set()


@dataclass
class EngineStats:
    submitted: int = 0
    rejected: int = 0  # QueueFull
    done: int = 0
    cancelled: int = 0
    failed: int = 0
    max_waiting_seen: int = 0  # most requests ever waiting behind others (never above max_waiting)


class SpeechEngine:
    """Runs `synth.stream(request, cancel)` for one job at a time, in the order jobs were submitted."""

    def __init__(self, synth, max_waiting: int = 16, keep_finished: int = 64) -> None:
        if max_waiting < 0:
            raise ValueError("max_waiting must be >= 0")
        self.synth = synth
        self.max_waiting = max_waiting
        self.stats = EngineStats()
        self.finished: deque[Job] = deque(maxlen=keep_finished)  # recent jobs, for tests and the app's status
        self._waiting: deque[Job] = deque()
        self._running: Job | None = None
        self._ids = itertools.count(1)
        self._seconds_per_job = 1.0  # running mean of recent jobs' durations: the Retry-After estimate
        self._cond = threading.Condition()
        self._closed = False
        self._thread = threading.Thread(target=self._work, name="cosydesk-serve-engine", daemon=True)
        self._thread.start()

    # -- callers --------------------------------------------------------------------------------------------
    def submit(self, request: Request, sink: Callable[[JobEvent], None]) -> Job:
        with self._cond:
            if self._closed:
                raise EngineClosed("the speech engine has been shut down")
            ahead = len(self._waiting) + (self._running is not None)  # requests this one would wait behind
            if ahead > self.max_waiting:  # room: the one being synthesised plus max_waiting waiting
                self.stats.rejected += 1
                raise QueueFull(len(self._waiting), self._retry_after_locked())
            job = Job(id=next(self._ids), request=request, sink=sink)
            self._waiting.append(job)
            self.stats.submitted += 1
            self.stats.max_waiting_seen = max(self.stats.max_waiting_seen, ahead)
            self._cond.notify_all()
            return job

    def waiting(self) -> int:
        with self._cond:
            return len(self._waiting)

    def busy(self) -> bool:
        with self._cond:
            return self._running is not None or bool(self._waiting)

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Block until no job waits or runs (True), or the timeout passes (False)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while self._running is not None or self._waiting:
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return False
                self._cond.wait(left)
            return True

    def close(self, timeout: float = 10.0) -> None:
        """Cancel every job and stop the worker."""
        with self._cond:
            self._closed = True
            jobs = list(self._waiting) + ([self._running] if self._running else [])
            self._cond.notify_all()
        for job in jobs:
            job.cancel()
        self._thread.join(timeout)

    def _retry_after_locked(self) -> int:
        ahead = len(self._waiting) + (self._running is not None)
        return max(1, min(60, math.ceil(self._seconds_per_job * ahead)))

    # -- the worker -----------------------------------------------------------------------------------------
    def _work(self) -> None:
        while True:
            with self._cond:
                while not self._waiting and not self._closed:
                    self._cond.wait()
                if not self._waiting:  # closed and drained
                    return
                job = self._waiting.popleft()
                self._running = job
                job.state = "running"
            try:
                self._run(job)
            finally:
                with self._cond:
                    self._running = None
                    self.finished.append(job)
                    self._cond.notify_all()

    def _run(self, job: Job) -> None:
        job.started = time.perf_counter()
        try:
            if not job.cancel_event.is_set():
                for chunk in self.synth.stream(job.request, cancel=job.cancel_event):
                    if job.cancel_event.is_set():
                        break
                    job.chunks += 1
                    job.samples += len(chunk.pcm)
                    job.chunk_times.append(time.perf_counter())
                    _deliver(job, JobEvent("chunk", chunk=chunk))
        except Exception as err:  # noqa: BLE001 - reported to this request's client; the worker goes on
            job.state = "failed"
            self.stats.failed += 1
            if not isinstance(err, SynthesisError):  # bad input is the client's news, not the log's
                log.exception("speech request %d failed", job.id)
            _deliver(job, JobEvent("error", error=err))
        else:
            if job.cancel_event.is_set():
                job.state = "cancelled"
                self.stats.cancelled += 1
            else:
                job.state = "done"
                self.stats.done += 1
            _deliver(job, JobEvent("end"))
        finally:
            job.finished = time.perf_counter()
            job.sink = _drop  # the client's queue (and any audio left in it) is not kept alive by the history
            if job.state == "done":
                self._seconds_per_job = 0.8 * self._seconds_per_job + 0.2 * (job.finished - job.started)


def _drop(event: JobEvent) -> None:
    pass


def _deliver(job: Job, event: JobEvent) -> None:
    try:
        job.sink(event)
    except Exception:  # noqa: BLE001 - a broken sink (e.g. the server stopping) must not stop the engine
        log.debug("speech request %d: its sink failed", job.id, exc_info=True)
