"""v1 full size: the flow encoder as graphs vs eager, alternated in one process (same sentences per round)."""
import dataclasses, json, os, sys, time
import numpy as np
import torch
sys.path.insert(0, os.getcwd())
from cosydesk.bench import DEFAULT_CORPUS, LLMStats, make_forced_sentences, read_corpus, synthesize_one
from cosydesk.runtime.backends import accelerate
from cosydesk.runtime.host_copy import PinnedCopier
from cosydesk.synthetic.full_size import random_model

t0 = time.time()
master = random_model("v1", device="cpu", dtype=torch.float32, seed=0)
for m in (master.llm, master.flow, master.hift):
    m.to(device="cuda", dtype=torch.float16)
model = accelerate(dataclasses.replace(master, device=torch.device("cuda")), "cudagraph")
graphed = model.flow.encoder
print("loaded", round(time.time() - t0, 1), "s;", type(graphed).__name__, sorted(graphed.graphs), flush=True)
sentences = make_forced_sentences("v1", read_corpus(DEFAULT_CORPUS, 120), seed=0)
streams = (torch.cuda.Stream(), torch.cuda.Stream())
copier = PinnedCopier(torch.device("cuda"))
out = {}
variants = {"graphs": graphed, "eager": graphed.encoder}
for rnd in range(2):
    block = sentences[10 + rnd * 40: 10 + rnd * 40 + 40]
    for name, enc in variants.items():
        model.flow.encoder = enc
        for i in range(2):
            synthesize_one(model, sentences[i], LLMStats(), copier, streams, seed=i)
        stats, firsts, totals, audio = LLMStats(), [], [], 0.0
        for i, s in enumerate(block):
            first, total, wave = synthesize_one(model, s, stats, copier, streams, seed=i)
            firsts.append(first * 1e3); totals.append(total * 1e3); audio += wave.shape[0] / model.sample_rate
        row = {"round": rnd, "first_p50": float(np.percentile(firsts, 50)), "first_p99": float(np.percentile(firsts, 99)),
               "total_mean": float(np.mean(totals)), "total_p50": float(np.percentile(totals, 50)),
               "rtf": sum(totals) / 1e3 / audio, "llm_ms_per_token": 1e3 * stats.decode_s / max(stats.decode_steps, 1)}
        out.setdefault(name, []).append(row)
        print(name, {k: round(v, 4) for k, v in row.items()}, flush=True)
print("eager calls of the graphed encoder:", graphed.eager_calls)
# the encoder alone: one 150-token call, graph vs eager, CUDA events, median of 50
with torch.inference_mode():
    tokens = model.flow.embed_tokens(torch.randint(0, 4096, (1, 30), device="cuda"), torch.randint(0, 4096, (1, 120), device="cuda"))
    lengths = torch.tensor([150], dtype=torch.int32, device="cuda")
    for name, enc in variants.items():
        times = []
        for i in range(60):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record(); enc(tokens, lengths); b.record(); b.synchronize()
            if i >= 10:
                times.append(a.elapsed_time(b))
        out[f"encoder_ms_{name}"] = float(np.median(times))
        print("encoder alone", name, round(float(np.median(times)), 3), "ms", flush=True)
json.dump(out, open(os.path.join(os.environ.get("OUT", "."), "probe59.json"), "w"), indent=1)
