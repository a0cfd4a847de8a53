"""TurnGate / GatedSynth (serve/turns.py): one synthesis at a time on a shared model, turns in arrival order,
a cancelled waiter leaves the line. Plain threads; no server, no Qt."""

from __future__ import annotations

import threading

from cosydesk.serve.turns import GatedSynth, TurnGate


class Recorder:
    def __init__(self) -> None:
        self.log: list[str] = []
        self.inside = 0
        self.max_inside = 0

    def stream(self, request, cancel=None):
        self.inside += 1
        self.max_inside = max(self.max_inside, self.inside)
        self.log.append(f"{request}:start")
        try:
            yield request
        finally:
            self.inside -= 1
            self.log.append(f"{request}:end")

    def speakers(self):
        return ["a"]


def _wait_until(predicate, timeout: float = 10.0) -> None:
    done = threading.Event()
    for _ in range(int(timeout / 0.01)):
        if predicate():
            return
        done.wait(0.01)
    raise AssertionError("condition not reached")


def test_turns_are_granted_in_arrival_order_and_never_overlap():
    gate = TurnGate()
    inner = Recorder()
    synth = GatedSynth(inner, gate)
    assert synth.speakers() == ["a"]  # everything but stream/synthesize/warmup is the inner one's
    first = synth.stream("first")
    assert next(first) == "first" and gate.holder() == ""
    threads = []
    for index, name in enumerate(("second", "third", "fourth")):
        thread = threading.Thread(target=lambda n=name: list(synth.stream(n)))
        thread.start()
        threads.append(thread)
        _wait_until(lambda i=index: gate.waiting() == i + 1)  # each in the line before the next arrives
    first.close()  # the first stream ends: the others follow in the order they asked
    for thread in threads:
        thread.join(10)
    assert inner.max_inside == 1
    assert inner.log == [f"{n}:{e}" for n in ("first", "second", "third", "fourth") for e in ("start", "end")]
    assert gate.holder() is None and gate.waiting() == 0


def test_a_cancelled_waiter_leaves_the_line_without_synthesising():
    gate = TurnGate()
    inner = Recorder()
    synth = GatedSynth(inner, gate)
    holder = synth.stream("holder")
    next(holder)
    cancel = threading.Event()
    got: list = []
    thread = threading.Thread(target=lambda: got.extend(synth.stream("waiter", cancel)))
    thread.start()
    _wait_until(lambda: gate.waiting() == 1)
    cancel.set()
    thread.join(5)
    assert not thread.is_alive() and got == [] and gate.waiting() == 0
    assert "waiter:start" not in inner.log
    holder.close()
    assert list(synth.stream("next")) == ["next"]  # the gate is free again


def test_an_error_inside_a_turn_releases_it():
    gate = TurnGate()

    class Failing(Recorder):
        def stream(self, request, cancel=None):
            raise ValueError("bad text")
            yield  # noqa: unreachable - a generator

    synth = GatedSynth(Failing(), gate)
    try:
        list(synth.stream("x"))
    except ValueError:
        pass
    assert gate.holder() is None
    with gate.turn() as granted:
        assert granted
