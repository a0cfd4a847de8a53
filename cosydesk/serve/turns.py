"""Taking turns on one Synthesizer: the desktop app's own speech and the speech server's requests, one at a time.

    gate = TurnGate()
    synth = GatedSynth(Synthesizer(...), gate)    # what the app's worker and the server's SpeechEngine both use
    for chunk in synth.stream(request, cancel):   # waits for its turn (arrival order), then streams
        ...

A Synthesizer runs one request at a time (its caches, CUDA graphs and buffers are per engine). The app's worker
thread and the server's engine thread each ask for a turn before they stream, and turns are granted in the order
they were asked for; a waiter whose cancel event is set leaves the line within POLL_S. The server's own queue
(SpeechEngine) stays in front of the gate, so the app waits at most for the request being spoken, never for the
whole API queue. Plain threading; no Qt, FastAPI or torch imports here.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager

POLL_S = 0.05  # how soon a cancelled waiter notices (cancel is a plain threading.Event set by another thread)


class TurnGate:
    """A first-come, first-served lock whose waiters can give up (cancel) while they wait."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._line: deque[object] = deque()
        self._holder: object | None = None
        self._holder_name = ""

    @contextmanager
    def turn(self, cancel: threading.Event | None = None, who: str = "") -> Iterator[bool]:
        """Hold the turn inside the block (True), or False at once when `cancel` was set while waiting."""
        ticket = object()
        with self._cond:
            self._line.append(ticket)
            while self._holder is not None or self._line[0] is not ticket:
                if cancel is not None and cancel.is_set():
                    self._line.remove(ticket)
                    self._cond.notify_all()
                    break
                self._cond.wait(POLL_S if cancel is not None else None)
            else:
                self._line.popleft()
                self._holder, self._holder_name = ticket, who
        if self._holder is not ticket:
            yield False
            return
        try:
            yield True
        finally:
            with self._cond:
                self._holder, self._holder_name = None, ""
                self._cond.notify_all()

    def holder(self) -> str | None:
        """Who holds the turn now ('' when unnamed), or None when nobody does."""
        with self._cond:
            return None if self._holder is None else self._holder_name

    def waiting(self) -> int:
        with self._cond:
            return len(self._line)


class GatedSynth:
    """A Synthesizer whose stream/synthesize/warmup take a turn at `gate` first; everything else is delegated."""

    def __init__(self, synth, gate: TurnGate, who: str = "") -> None:
        self.inner = synth
        self.gate = gate
        self._who = who

    def __getattr__(self, name: str):
        value = getattr(self.inner, name)  # AttributeError when the inner one lacks it (e.g. no warmup)
        if name == "warmup":
            def warmup(*args, **kwargs):
                with self.gate.turn(who="warm-up"):
                    return value(*args, **kwargs)

            return warmup
        return value

    def stream(self, request, cancel: threading.Event | None = None, who: str | None = None):
        """The inner stream, started once this caller's turn comes (nothing, if cancelled while waiting)."""
        with self.gate.turn(cancel, self._who if who is None else who) as granted:
            if not granted:
                return
            yield from self.inner.stream(request, cancel)

    def synthesize(self, request):
        with self.gate.turn():
            return self.inner.synthesize(request)
