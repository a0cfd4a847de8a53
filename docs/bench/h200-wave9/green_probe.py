"""GPU probe: could an SM partition (a CUDA green context) replace holding the LLM back during a request's
first chunk?

The app holds the LLM while a request's first chunk runs (flow + vocoder), because decode steps beside the flow
slow it (first audio). That hold costs every single-sentence request ~17 ms (RTF of the short corpus +25 %).
Here the decode step is captured a second time inside a green context of K SMs, so its kernels can occupy at
most K SMs, and the first chunk keeps the rest. Sentences run as the bench runs them (forced tokens, the app's
streams), never held, with:

* ``green-all``: the partitioned decode graph for the whole sentence (does a captured graph keep the partition
  when replayed on the app's LLM stream? the decode time per token says);
* ``green-first``: the partitioned graph until the first chunk is on the host, then the full one;
* ``green-first-chunk`` (added after call 1, not run yet): the full graph for the decode steps that choose the
  first chunk's tokens, the partitioned one from then until the chunk is on the host, the full one again;
* baselines ``held`` (the app's default) and ``free`` (never held, full graph).

    python3 docs/bench/h200-wave9/green_probe.py --version v2 --sms 16,32,48 > $OUT/green-v2.log
    python3 docs/bench/h200-wave9/green_probe.py --version v2 --sms 32,48,66 --modes green-first-chunk

Lines of JSON on stdout. Measurement tool only.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import threading
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from cosydesk.runtime.allocator import prefer_expandable_segments  # noqa: E402

prefer_expandable_segments()

from cosydesk.bench.inputs import LLMStats, forced_token_source, make_forced_sentences, read_corpus  # noqa: E402
from cosydesk.runtime.backends import accelerate, place_model  # noqa: E402
from cosydesk.runtime.host_copy import PinnedCopier  # noqa: E402
from cosydesk.runtime.pipeline import run_sentence  # noqa: E402
from cosydesk.runtime.schedule import make_schedule  # noqa: E402
from cosydesk.synthetic.full_size import random_model  # noqa: E402


class SwitchGraph:
    """Stands in for the LLM's decode graph: ``full`` for a sentence's first ``full_steps`` replays, then
    ``green`` until ``use_later`` is set (the first chunk is on the host), then ``full`` again. With
    ``after_first_tokens`` the full steps are those that choose the first chunk's tokens; without, none."""

    def __init__(self, green, full, after_first_tokens: bool = False) -> None:
        self.green, self.full, self.after_first_tokens = green, full, after_first_tokens
        self.use_later = threading.Event()
        self.replays = self.full_steps = 0

    def start(self, full_steps: int) -> None:
        self.use_later.clear()
        self.replays, self.full_steps = 0, full_steps

    def replay(self) -> None:
        self.replays += 1
        partitioned = self.replays > self.full_steps and not self.use_later.is_set()
        (self.green if partitioned else self.full).replay()


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--version", choices=["v2", "v3"], default="v2")
    parser.add_argument("--sentences", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--sms", default="16,32,48")
    parser.add_argument("--modes", default="green-all,green-first",
                        help="of green-all, green-first (call 1 ran these two), green-first-chunk")
    args = parser.parse_args()
    device = torch.device("cuda")
    props = torch.cuda.get_device_properties(device)
    print(json.dumps({"gpu": props.name, "sms": props.multi_processor_count, "torch": torch.__version__}), flush=True)
    master = random_model(args.version, device="cpu", dtype=torch.float32, seed=0)
    sentences = make_forced_sentences(master.version, read_corpus("short", args.sentences), seed=0)
    model = accelerate(place_model(master, device, "cudagraph"), "cudagraph")
    torch.cuda.empty_cache()
    llm = model.llm
    full_graph = llm.table.graphs["decode"]
    copier = PinnedCopier(device)
    sr = model.sample_rate

    def sentence(i, forced, held: bool, switch: SwitchGraph | None, stats: LLMStats):
        torch.manual_seed(i)
        if switch is not None:  # decode step s chooses token s + 1 (the prefill chose token 0)
            needed = make_schedule(model.version, forced.inputs.flow_prompt_speech_token.shape[1]).tokens_needed()
            switch.start(needed - 1 if switch.after_first_tokens else 0)
        submit = time.perf_counter()
        first, chunks = None, []
        source = forced_token_source(model, forced.speech_ids, stats, sampler="argmax", seed=i)
        for result in run_sentence(model, forced.inputs, source, stream=True, zero_noise=True, first_chunk_alone=held):
            chunks.append(copier(result.pcm))
            if first is None:
                first = time.perf_counter() - submit
                if switch is not None:
                    switch.use_later.set()
        total = time.perf_counter() - submit
        return first, total, sum(c.shape[0] for c in chunks) / sr

    def run(label: str, held: bool, graph=None, switch: SwitchGraph | None = None, **extra) -> None:
        llm.table.graphs["decode"] = switch if switch is not None else (graph or full_graph)
        try:
            for i in range(3):
                sentence(i, sentences[i], held, switch, LLMStats())
            stats, firsts, totals, audio = LLMStats(), [], [], []
            for _ in range(args.rounds):
                for i, forced in enumerate(sentences):
                    f, t, a = sentence(i, forced, held, switch, stats)
                    firsts.append(f)
                    totals.append(t)
                    audio.append(a)
        finally:
            llm.table.graphs["decode"] = full_graph
        print(json.dumps({"run": label, "held": held, **extra, "sentences": len(firsts),
                          "first_ms_p50": round(1e3 * pct(firsts, 50), 2), "first_ms_p99": round(1e3 * pct(firsts, 99), 2),
                          "total_ms_mean": round(1e3 * statistics.mean(totals), 2), "rtf": round(sum(totals) / sum(audio), 5),
                          "llm_ms_per_token": round(1e3 * stats.decode_s / max(stats.decode_steps, 1), 4)}), flush=True)

    run("held", True)
    run("free", False)
    from torch.cuda.green_contexts import GreenContext

    for k in [int(s) for s in args.sms.split(",") if s.strip()]:
        try:
            green = GreenContext.create(num_sms=k, device_id=device.index or 0)
            green_stream = green.Stream()
            graph = torch.cuda.CUDAGraph()
            green.set_context()
            try:
                with torch.inference_mode(), torch.cuda.graph(graph, stream=green_stream):
                    llm._decode_body()
            finally:
                green.pop_context()
            torch.cuda.synchronize()
            llm.k_cache.zero_()
            llm.v_cache.zero_()
        except Exception as err:  # noqa: BLE001 - a probe reports what did not work
            print(json.dumps({"run": f"green {k}", "error": f"{type(err).__name__}: {err}"}), flush=True)
            continue
        modes = {m.strip() for m in args.modes.split(",")}
        if "green-all" in modes:
            run(f"green-all {k}", False, graph=graph, sms=k)
        if "green-first" in modes:
            run(f"green-first {k}", False, switch=SwitchGraph(graph, full_graph), sms=k)
        if "green-first-chunk" in modes:
            run(f"green-first-chunk {k}", False, switch=SwitchGraph(graph, full_graph, after_first_tokens=True), sms=k)
    run("held again", True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
