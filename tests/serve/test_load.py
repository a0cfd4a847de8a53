"""A bounded load test: 32 openai clients against one engine for COSYDESK_LOAD_SECONDS (default 20 s).

Mixed formats, some clients leaving mid-stream and some bad requests. It must show: no 5xx and no broken
connections, 429 + Retry-After once the queue is full, never more requests in the engine than the queue allows
(from the jobs' own timestamps), and flat memory (RSS after the warm-up vs at the end).
"""

from __future__ import annotations

import gc
import os
import threading
import time
from collections import Counter

import psutil
import pytest

from tests.serve.conftest import LONG_TEXT, SHORT_TEXT, openai, openai_client, running_server

CLIENTS = 32
QUEUE = 8
FORMATS = ("pcm", "wav", "mp3", "opus")
RSS_GROWTH_LIMIT_MB = 64


def most_at_once(intervals: list[tuple[float, float]]) -> int:
    events = sorted([(start, 1) for start, _ in intervals] + [(end, -1) for _, end in intervals])
    peak = current = 0
    for _, step in events:
        current += step
        peak = max(peak, current)
    return peak


def describe(err: BaseException) -> str:
    """The error and what caused it (openai's "Connection error." alone does not say what broke)."""
    parts = []
    while err is not None and len(parts) < 4:
        parts.append(f"{type(err).__name__}: {err}")
        err = err.__cause__ or err.__context__
    return " <- ".join(parts)


@pytest.mark.slow
def test_32_clients_bounded_load(tiny_synth):
    seconds = float(os.environ.get("COSYDESK_LOAD_SECONDS", "20"))
    process = psutil.Process()
    with running_server(tiny_synth, max_waiting=QUEUE) as (server, engine), openai_client(server) as client:
        for fmt in FORMATS:  # warm every encoder and code path once
            client.audio.speech.create(model="tts-1", voice="alloy", input=SHORT_TEXT, response_format=fmt)
        gc.collect()
        rss_start_mb = process.memory_info().rss / 2**20
        outcomes: Counter = Counter()
        failures: list[str] = []
        first_byte_ms: list[float] = []
        lock = threading.Lock()
        rss_warm: list[float] = []
        start = time.monotonic()
        stop_at = start + seconds

        def note(what: str) -> None:
            with lock:
                outcomes[what] += 1

        def one_client(number: int) -> None:
            turn = 0
            while time.monotonic() < stop_at:
                turn += 1
                fmt = FORMATS[(number + turn) % len(FORMATS)]
                voice = "no-such-voice" if (number + turn) % 11 == 0 else ("alloy", "nova", "onyx")[turn % 3]
                try:
                    if (number + turn) % 7 == 0:  # a client that listens to the start only, then leaves
                        began = time.perf_counter()
                        with client.audio.speech.with_streaming_response.create(
                                model="tts-1", voice=voice, input=LONG_TEXT,
                                response_format=fmt) as response:
                            next(response.iter_bytes())
                            with lock:
                                first_byte_ms.append(1000 * (time.perf_counter() - began))
                        note("200 (left early)")
                        continue
                    client.audio.speech.create(model="tts-1", voice=voice, input=f"Client {number}, turn {turn}.",
                                               response_format=fmt)
                    note("200")
                except openai.RateLimitError as err:
                    note("429")
                    time.sleep(min(float(err.response.headers["retry-after"]), 1.0))
                except openai.APIStatusError as err:
                    note(str(err.status_code))
                    if err.status_code >= 500:
                        with lock:
                            failures.append(f"{err.status_code}: {err.message}")
                except Exception as err:  # noqa: BLE001 - a broken connection is a failure of the server
                    note("broken")
                    with lock:
                        failures.append(describe(err))

        def sample_rss() -> None:
            time.sleep(seconds / 4)  # after the warm-up quarter
            gc.collect()
            rss_warm.append(process.memory_info().rss / 2**20)

        threads = [threading.Thread(target=one_client, args=(n,)) for n in range(CLIENTS)]
        threads.append(threading.Thread(target=sample_rss))
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(seconds + 180)
        assert engine.wait_idle(120)
        elapsed = time.monotonic() - start
        gc.collect()
        rss_end_mb = process.memory_info().rss / 2**20
        after = client.audio.speech.create(model="tts-1", voice="alloy", input=SHORT_TEXT, response_format="pcm")
        assert len(after.content) > 0  # still serving
        jobs = list(engine.finished)

    intervals = [(job.submitted, job.finished) for job in jobs if job.finished is not None]
    peak = most_at_once(intervals)
    total = sum(outcomes.values())
    server_errors = sum(count for status, count in outcomes.items() if status[:1] == "5")
    print(f"\nload: {CLIENTS} clients, {elapsed:.1f} s, {total} requests: {dict(outcomes)}; 5xx {server_errors}; "
          f"engine done {engine.stats.done} cancelled {engine.stats.cancelled} failed {engine.stats.failed} "
          f"rejected {engine.stats.rejected}; most requests in the engine at once {peak} (limit {QUEUE + 1}); "
          f"RSS {rss_start_mb:.0f} MB at start, {rss_warm[0]:.0f} MB after warm-up, {rss_end_mb:.0f} MB at end; "
          f"first byte of early-leaving streams median "
          f"{sorted(first_byte_ms)[len(first_byte_ms) // 2] if first_byte_ms else float('nan'):.0f} ms")
    assert not failures, failures[:5]
    assert server_errors == 0 and outcomes["broken"] == 0
    assert outcomes["200"] >= 10 and outcomes["429"] > 0 and outcomes["400"] > 0
    assert engine.stats.cancelled > 0  # the early leavers stopped their synthesis
    assert peak <= QUEUE + 1 and engine.stats.max_waiting_seen <= QUEUE
    assert rss_end_mb - rss_warm[0] < RSS_GROWTH_LIMIT_MB
