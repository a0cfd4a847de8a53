"""Measure the server's time to first byte (pcm over loopback) against the engine's own first audio.

    python -m cosydesk.serve.ttfb --model DIR [--device cuda] [--requests 30] [--text "..."]

One process: a ServerThread on 127.0.0.1, a stdlib HTTP client, and the engine's timestamps on the same clock.
Per request: ttfb = first body byte at the client - request sent; first audio = the engine's first chunk
handed over - request submitted to the engine; their difference is what the HTTP layer adds (the issue's goal:
at most 5 ms), split into to_engine (request sent -> job queued) and to_client (chunk handed over -> first
byte read). The first 3 requests warm up and are not counted.
"""

from __future__ import annotations

import argparse
import http.client
import json
import statistics
import time

DEFAULT_TEXT = "今天天气很好，我们去公园散步吧。" * 4
WARMUP = 3


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def measure(model_dir: str, device: str, requests: int, text: str, backend: str = "auto") -> dict[str, list[float]]:
    from cosydesk.runtime import Synthesizer
    from cosydesk.serve import ServeConfig, ServerThread, SpeechEngine, create_app

    synth = Synthesizer(model_dir, device=device, backend=backend)
    engine = SpeechEngine(synth, max_waiting=1, keep_finished=requests + WARMUP)
    rows: dict[str, list[float]] = {"ttfb_ms": [], "first_audio_ms": [], "overhead_ms": [], "to_engine_ms": [],
                                    "to_client_ms": []}
    body = json.dumps({"model": "tts-1", "voice": "alloy", "input": text, "response_format": "pcm"})
    try:
        with ServerThread(create_app(engine, ServeConfig(model_id="measured"))) as server:
            port = int(server.url.rsplit(":", 1)[1])
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
            for index in range(requests + WARMUP):
                sent = time.perf_counter()
                connection.request("POST", "/v1/audio/speech", body, {"Content-Type": "application/json"})
                response = connection.getresponse()
                if response.status != 200:
                    raise SystemExit(f"request failed: {response.status} {response.read()[:300]!r}")
                response.read1(65536)
                first_byte = time.perf_counter()
                response.read()
                job_id = int(response.getheader("x-request-id"))
                engine.wait_idle(60)
                job = next(job for job in engine.finished if job.id == job_id)
                if index >= WARMUP:
                    ttfb = 1000 * (first_byte - sent)
                    first_audio = 1000 * (job.chunk_times[0] - job.submitted)
                    rows["ttfb_ms"].append(ttfb)
                    rows["first_audio_ms"].append(first_audio)
                    rows["overhead_ms"].append(ttfb - first_audio)
                    rows["to_engine_ms"].append(1000 * (job.submitted - sent))  # request parsed, job queued
                    rows["to_client_ms"].append(1000 * (first_byte - job.chunk_times[0]))  # chunk -> bytes read
            connection.close()
    finally:
        engine.close()
    rows["device"] = [f"{synth.device} {synth.backend}"]  # type: ignore[list-item]
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--device", default="auto")
    parser.add_argument("--backend", default="auto")
    parser.add_argument("--requests", type=int, default=30)
    parser.add_argument("--text", default=DEFAULT_TEXT)
    args = parser.parse_args(argv)
    rows = measure(args.model, args.device, args.requests, args.text, args.backend)
    print(f"{args.requests} pcm requests over loopback ({rows.pop('device')[0]}):")
    for name, values in rows.items():
        print(f"  {name:15s} median {statistics.median(values):8.2f}  p90 {_percentile(values, 0.9):8.2f}  "
              f"max {max(values):8.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
