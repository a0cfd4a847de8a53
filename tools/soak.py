"""Soak test: many utterances through ONE Synthesizer, watching resident memory and thread counts.

    python -m tools.soak --model DIR --n 1000 [--device cpu] [--warmup 20] [--json]

The official code keeps per-request state on the model object and grows memory over a session (upstream
issues 1453, 491). This command shows whether ours does: after a warm-up (allocator pools, lazily built
caches and the torch thread pool settle), it records RSS and thread counts, runs `n` requests that vary
text, speaker, streaming and cancellation, and prints the growth. Exit status 1 when RSS grew by more than
--max-growth percent or the thread counts changed (so CI can call it).

What it must not do: change the Synthesizer or keep references to the audio it gets (that would be the
leak it measures); it only reads /proc (or psutil) for the numbers.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

# Short sentences in the languages the models speak, plus the awkward ones users paste.
TEXTS = (
    "你好，世界。",
    "今天天气很好，我们一起去公园散步吧。",
    "Hello there, how are you today?",
    "The meeting starts at 10:30 on 2024-03-05.",
    "这个价格是¥1,234.56元。",
    "こんにちは、世界。",
    "안녕하세요, 반갑습니다.",
    "我很开心😀今天是星期五。",
    "<strong>重要的事情</strong>说三遍。",
    "See https://example.com for details.",
)


def rss_bytes() -> int:
    """Resident set size of this process."""
    try:
        with open("/proc/self/statm") as handle:
            return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:  # not Linux
        import psutil

        return psutil.Process().memory_info().rss


def native_threads() -> int:
    """OS threads of this process (torch/OpenMP pools included), not only Python's."""
    try:
        with open("/proc/self/status") as handle:
            for line in handle:
                if line.startswith("Threads:"):
                    return int(line.split()[1])
    except OSError:
        pass
    import psutil

    return psutil.Process().num_threads()


@dataclass
class SoakReport:
    utterances: int
    warmup: int
    device: str
    rss_start_mb: float
    rss_end_mb: float
    rss_max_mb: float
    rss_growth_pct: float
    python_threads_start: int
    python_threads_end: int
    python_threads_max: int
    native_threads_start: int
    native_threads_end: int
    native_threads_max: int
    audio_s: float
    wall_s: float
    cancelled: int
    errors: int
    rss_trace_mb: list[float] = field(default_factory=list)

    @property
    def threads_constant(self) -> bool:
        return (self.python_threads_end == self.python_threads_start
                and self.native_threads_end == self.native_threads_start)

    def lines(self) -> list[str]:
        return [
            f"utterances: {self.utterances} after {self.warmup} warm-up ({self.device}), "
            f"{self.audio_s:.1f} s of audio in {self.wall_s:.1f} s, {self.cancelled} cancelled mid-way, "
            f"{self.errors} errors",
            f"RSS: start {self.rss_start_mb:.1f} MB, end {self.rss_end_mb:.1f} MB, max {self.rss_max_mb:.1f} MB, "
            f"growth {self.rss_growth_pct:+.2f} %",
            f"python threads: start {self.python_threads_start}, end {self.python_threads_end}, "
            f"max {self.python_threads_max}",
            f"native threads: start {self.native_threads_start}, end {self.native_threads_end}, "
            f"max {self.native_threads_max}",
        ]


def _request(i: int, speakers: list[str]):
    from cosydesk.runtime import Request

    return Request(TEXTS[i % len(TEXTS)], speaker=speakers[i % len(speakers)] if speakers else None, seed=i,
                   stream=i % 3 != 2)


def _one(synth, i: int, speakers: list[str]) -> tuple[float, bool]:
    """One utterance; every 7th is cancelled after its first chunk (as Stop in the app). -> (audio s, cancelled)."""
    cancel = threading.Event()
    samples = 0
    cancelled = False
    for chunk in synth.stream(_request(i, speakers), cancel=cancel):
        samples += chunk.pcm.size
        if i % 7 == 6:
            cancel.set()
            cancelled = True
    return samples / synth.sample_rate, cancelled


def run_soak(model_dir: str | Path, n: int, device: str = "cpu", warmup: int = 20,
             progress: Callable[[int, float], None] | None = None, trace_every: int = 50) -> SoakReport:
    """Load one Synthesizer, warm it up, run n requests; returns the memory/thread report."""
    from cosydesk.runtime import Synthesizer

    synth = Synthesizer(model_dir, device=device)
    speakers = synth.speakers()
    for i in range(warmup):
        _one(synth, i, speakers)
    gc.collect()
    rss_start = rss_max = rss_bytes()
    py_start = py_max = threading.active_count()
    native_start = native_max = native_threads()
    trace = [rss_start / 2**20]
    audio_s = 0.0
    cancelled = errors = 0
    start = time.perf_counter()
    for i in range(n):
        try:
            seconds, was_cancelled = _one(synth, warmup + i, speakers)
            audio_s += seconds
            cancelled += was_cancelled
        except ValueError:  # a bad-input error would be a bug in TEXTS; counted, not fatal
            errors += 1
        py_max = max(py_max, threading.active_count())
        native_max = max(native_max, native_threads())
        rss_max = max(rss_max, rss_bytes())
        if (i + 1) % trace_every == 0:
            trace.append(rss_bytes() / 2**20)
            if progress:
                progress(i + 1, trace[-1])
    wall = time.perf_counter() - start
    gc.collect()
    rss_end = rss_bytes()
    return SoakReport(
        utterances=n, warmup=warmup, device=synth.device, rss_start_mb=rss_start / 2**20, rss_end_mb=rss_end / 2**20,
        rss_max_mb=max(rss_max, rss_end) / 2**20, rss_growth_pct=100.0 * (rss_end - rss_start) / rss_start,
        python_threads_start=py_start, python_threads_end=threading.active_count(), python_threads_max=py_max,
        native_threads_start=native_start, native_threads_end=native_threads(), native_threads_max=native_max,
        audio_s=audio_s, wall_s=wall, cancelled=cancelled, errors=errors, rss_trace_mb=trace,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.soak", description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True, help="model folder (e.g. one written by cosydesk.synthetic.tiny_model)")
    parser.add_argument("--n", type=int, default=1000, help="utterances to measure (after the warm-up)")
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=1,
                        help="torch CPU threads (default 1: the soak measures leaks, not speed; 0 keeps torch's default)")
    parser.add_argument("--max-growth", type=float, default=2.0, help="RSS growth limit in percent")
    parser.add_argument("--json", action="store_true", help="print the report as JSON instead of lines")
    args = parser.parse_args(argv)
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)

    def progress(done: int, rss_mb: float) -> None:
        print(f"  {done}/{args.n} utterances, RSS {rss_mb:.1f} MB", file=sys.stderr, flush=True)

    report = run_soak(args.model, args.n, device=args.device, warmup=args.warmup, progress=progress)
    ok = report.rss_growth_pct <= args.max_growth and report.threads_constant and report.errors == 0
    if args.json:
        print(json.dumps({**asdict(report), "threads_constant": report.threads_constant, "ok": ok}, indent=1))
    else:
        print(f"soak: python -m tools.soak --model {args.model} --n {args.n} --warmup {args.warmup} "
              f"--threads {args.threads}")
        for line in report.lines():
            print(line)
        print("RSS trace (MB, every 50): " + " ".join(f"{mb:.1f}" for mb in report.rss_trace_mb))
        print(f"result: {'PASS' if ok else 'FAIL'} (limit: RSS growth <= {args.max_growth:g} %, "
              f"thread counts constant, no errors)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
