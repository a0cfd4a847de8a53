"""`cosydesk bench`: a sentence corpus through several backends, side by side, in one process and one run.

    cosydesk bench --random v2 --backends eager-fp32,eager-fp16,cudagraph --out docs/bench
    cosydesk bench --model DIR --backends eager-fp32 --runs 1 --limit 5      # CPU works (eager-fp32 only)

Every backend sees identical inputs: forced speech-token ids (random weights never emit eos, so the count is
forced: 25 tokens per second of audio, audio seconds = characters / 4), random text ids, a 20-token zero-shot
prompt with 40 prompt mel frames (v1: 20 tokens / 34 frames), zero HiFT noise. Sentences stream exactly as the
runtime streams them (``cosydesk.runtime.pipeline.run_sentence``: an LLM producer thread feeding Token2Wav with
the official chunk schedule); the producer runs the LLM's real generation loop with its sampler - argmax, or the
app's repetition-aware sampler with ``--sampler ras`` - and reads every chosen id on the host as the stop check
does, but the forced id is what the LLM consumes and what is pushed (the cudagraph LLM runs its own loop, which
chooses ids on the device, with the forced ids overriding the choice). ``--first-chunk alone`` (default, as the
app runs a request's first sentence) holds the LLM while the first chunk runs. On CUDA the streams are the app's:
the producer on the pipeline's LLM stream, token2wav on the calling thread's current stream (the one the backend
was built on); each chunk is copied into a pinned host buffer before it counts as "arrived".

Per backend: first-audio latency (submit -> first chunk on the host), full-sentence latency, RTF, sentences/s,
peak VRAM (torch reserved, NVML process memory), VRAM drift (first vs last 100 sentences), fidelity against
eager-fp32 on the same tokens and noise (a second, untimed pass over the first --fidelity sentences that also
times each stage with device syncs), and from the timed run each sentence's tail: last token -> final call
starting, -> final chunk on the host. Writes bench.json-style JSON and a PNG (latency CDF, VRAM over time).
This module must not change model or runtime code: backends come from ``cosydesk.runtime.backends``.
"""

from __future__ import annotations

import argparse
import sys

from cosydesk.bench.backend_run import fidelity, kernel_paths, run_backend, synthesize_one
from cosydesk.bench.inputs import (CHARS_PER_SECOND, CORPORA, DEFAULT_CORPUS, PROMPT, SAMPLERS, TOKENS_PER_SECOND,
                                   ForcedSentence, LLMStats, LoopOptions, corpus_path, corpus_stats,
                                   forced_token_count, forced_token_source, make_chooser, make_forced_sentences,
                                   read_corpus)
from cosydesk.bench.probes import FlowRecorder, HiftRecorder, MemoryProbe
from cosydesk.bench.report import git_commit, machine_info, plot, run_bench, series

__all__ = ["CHARS_PER_SECOND", "CORPORA", "DEFAULT_CORPUS", "PROMPT", "SAMPLERS", "TOKENS_PER_SECOND", "FlowRecorder",
           "ForcedSentence", "HiftRecorder", "LLMStats", "LoopOptions", "MemoryProbe", "add_parser", "cmd_bench",
           "corpus_path", "corpus_stats", "fidelity", "forced_token_count", "forced_token_source", "git_commit",
           "kernel_paths", "machine_info", "make_chooser", "make_forced_sentences", "plot", "read_corpus",
           "run_backend", "run_bench", "series", "synthesize_one"]


def cmd_bench(args: argparse.Namespace) -> int:
    if bool(args.model) == bool(args.random):
        print("cosydesk: error: give exactly one of --model DIR or --random v1|v2|v3", file=sys.stderr)
        return 2
    if not corpus_path(args.corpus).is_file():
        print(f"cosydesk: error: corpus {args.corpus} does not exist", file=sys.stderr)
        return 2
    run_bench(args)
    return 0


def add_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser("bench", help="latency / RTF / VRAM / fidelity benchmark over a corpus, per backend")
    p.add_argument("--model", help="model folder")
    p.add_argument("--random", choices=["v1", "v2", "v3"], help="full-size released layout, seeded random weights")
    p.add_argument("--backends", default="eager-fp32", help="comma list of eager-fp32, eager-fp16, cudagraph")
    p.add_argument("--corpus", default="short",
                   help="short (8-20 characters a sentence), long (20-80: paragraph segments) or a text file")
    p.add_argument("--runs", type=int, default=1)
    p.add_argument("--limit", type=int, default=None, help="first N sentences only")
    p.add_argument("--warmup", type=int, default=3, help="untimed sentences per backend first")
    p.add_argument("--fidelity", type=int, default=20, help="sentences in the fidelity / stage-timing pass")
    p.add_argument("--eager-limit", type=int, default=None,
                   help="eager backends run only the first N sentences (they are ~100x slower); reported per backend")
    p.add_argument("--soak", type=int, default=0,
                   help="N further sentences after the timed pass (backends not cut by --eager-limit), VRAM drift reported")
    p.add_argument("--sampler", choices=SAMPLERS, default="argmax",
                   help="per-token id read by the LLM thread: argmax (bare host sync) or ras (the app's sampler)")
    p.add_argument("--first-chunk", choices=("alone", "shared"), default="alone",
                   help="alone (as the app runs a request's first sentence): the LLM waits while the first chunk "
                        "runs; shared: both run at once")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default="auto")
    p.add_argument("--out", default="bench-out")
    p.add_argument("--name", default=None, help="output file stem (default bench-<version>)")
    p.set_defaults(func=cmd_bench)
    return p
