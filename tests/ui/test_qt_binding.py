"""Guard against a broken Qt binding: PySide6 6.12.0 on Python 3.11 drops a reference to True on every
Signal.emit() and to None on every processEvents(); a long session then aborts with
"Fatal Python error: bool_dealloc". pyproject pins PySide6-Essentials below 6.12 for this reason."""

from __future__ import annotations

import sys

from PySide6.QtCore import QCoreApplication, QObject, Signal


class _Emitter(QObject):
    ping = Signal()


def test_emit_and_process_events_keep_refcounts(qapp):
    emitter = _Emitter()
    before = sys.getrefcount(True), sys.getrefcount(None)
    for _ in range(200):
        emitter.ping.emit()
        QCoreApplication.processEvents()
    after = sys.getrefcount(True), sys.getrefcount(None)
    assert after[0] >= before[0] - 5, f"Signal.emit leaks references to True: {before[0]} -> {after[0]}"
    assert after[1] >= before[1] - 5, f"processEvents leaks references to None: {before[1]} -> {after[1]}"
