"""v2 full size: the token selector as slices + merge (and the embedding folded into it) vs the one-program kernel.

A: the select kernels alone, 50 calls per graph, per-call us, several launch shapes + the old kernel.
B: the decode graph replayed back to back (per-step us), three variants recaptured in one process.
C: whole sentences (synthesize_one), variants alternated, 2 rounds x 40 sentences.
"""
import dataclasses, functools, importlib.util, json, os, statistics, sys, time
import numpy as np
import torch
sys.path.insert(0, os.getcwd())
from cosydesk.bench import DEFAULT_CORPUS, LLMStats, make_forced_sentences, read_corpus, synthesize_one
from cosydesk.runtime.backends import accelerate
from cosydesk.runtime.cudagraph import select_kernel as sk
from cosydesk.runtime.cudagraph.capture import capture_graphs
from cosydesk.runtime.host_copy import PinnedCopier
from cosydesk.synthetic.full_size import random_model

spec = importlib.util.spec_from_file_location("select_old", "exp/select_kernel_old.py")
old = importlib.util.module_from_spec(spec); spec.loader.exec_module(old)
OUT = os.environ.get("OUT", ".")
res = {}
t0 = time.time()
master = random_model("v2", device="cpu", dtype=torch.float32, seed=0)
for m in (master.llm, master.flow, master.hift):
    m.to(device="cuda", dtype=torch.float16)
model = accelerate(dataclasses.replace(master, device=torch.device("cuda")), "cudagraph")
llm = model.llm
print("loaded", round(time.time() - t0, 1), "s; select_embeds", llm.select_embeds, "pdl", llm.triton_decoder.uses_pdl, flush=True)


def timed(fn, reps=20, warm=3):
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record(); fn(); b.record(); b.synchronize()
        times.append(a.elapsed_time(b))
    return statistics.median(times)


# --- A: select kernels alone ---------------------------------------------------------------------------
sel = llm.selector
g = torch.Generator().manual_seed(0)
logits = (torch.randn(6564, generator=g) * 3).cuda()
sel.start(0, False, torch.rand(400, 2, generator=g))
variants = {"old-one-program": lambda: old.select_next(sel, logits)}
for slc in (128, 256, 512):
    for sw in (1, 2, 4):
        for mw in (4, 8):
            scratch = sk.SelectScratch(6564, 25, "cuda", sk.SelectConfig(slc, sw, mw))
            variants[f"slice{slc}-w{sw}-m{mw}"] = functools.partial(sk.select_next, sel, logits, scratch, pdl=True)
res["select_us"] = {}
for name, fn in variants.items():
    try:
        graph = capture_graphs([("g", lambda: [fn() for _ in range(50)])], torch.device("cuda"))["g"]
        def run():
            sel.step.zero_(); sel.recent.fill_(-1)
            graph.replay()
        us = timed(run) * 1e3 / 50
    except Exception as e:  # noqa
        us = repr(e)[:200]
    res["select_us"][name] = us
    print("select", name, us, flush=True)

# --- B: decode graph variants ----------------------------------------------------------------------------
scratch_default = sk.SelectScratch(6564, 25, "cuda")
def configure(name):
    if name == "new-embed":
        llm.select = functools.partial(sk.select_next, sel, scratch=scratch_default, embed=sk.Embed(
            llm.lm.speech_embedding.weight, llm.triton_decoder.x.view(llm.hidden), llm.position), pdl=True)
        llm.select_embeds = True
    elif name == "new":
        llm.select = functools.partial(sk.select_next, sel, scratch=scratch_default, pdl=True)
        llm.select_embeds = False
    else:
        llm.select = functools.partial(old.select_next, sel)
        llm.select_embeds = False

graphs = {}
for name in ("old", "new", "new-embed"):
    configure(name)
    graphs[name] = capture_graphs([("decode", llm._decode_body), ("select_prefill", llm._select_prefill_body)],
                                  torch.device("cuda"), warmup_rounds=2)
llm.k_cache.zero_(); llm.v_cache.zero_()

def decode_run(name):
    def run():
        llm.position.fill_(70); sel.step.zero_()
        for _ in range(100):
            graphs[name]["decode"].replay()
    return run
res["decode_step_us"] = {}
for rnd in range(3):
    for name in graphs:
        configure(name)
        us = timed(decode_run(name), reps=10) * 1e3 / 100
        res["decode_step_us"].setdefault(name, []).append(us)
        print("decode", rnd, name, round(us, 2), flush=True)

# --- C: whole sentences ----------------------------------------------------------------------------------
sentences = make_forced_sentences("v2", read_corpus(DEFAULT_CORPUS, 120), seed=0)
streams = (torch.cuda.Stream(), torch.cuda.Stream())
copier = PinnedCopier(torch.device("cuda"))
res["sentences"] = {}
for rnd in range(2):
    block = sentences[10 + rnd * 40: 10 + rnd * 40 + 40]
    for name in ("old", "new-embed", "new"):
        configure(name)
        llm.graphs["decode"], llm.graphs["select_prefill"] = graphs[name]["decode"], graphs[name]["select_prefill"]
        for i in range(2):
            synthesize_one(model, sentences[i], LLMStats(), copier, streams, seed=i)
        stats, firsts, totals, audio = LLMStats(), [], [], 0.0
        for i, s in enumerate(block):
            first, total, wave = synthesize_one(model, s, stats, copier, streams, seed=i)
            firsts.append(first * 1e3); totals.append(total * 1e3); audio += wave.shape[0] / model.sample_rate
        row = {"round": rnd, "first_p50": float(np.percentile(firsts, 50)), "first_p99": float(np.percentile(firsts, 99)),
               "total_mean": float(np.mean(totals)), "total_p50": float(np.percentile(totals, 50)),
               "rtf": sum(totals) / 1e3 / audio, "llm_ms_per_token": 1e3 * stats.decode_s / max(stats.decode_steps, 1)}
        res["sentences"].setdefault(name, []).append(row)
        print("sent", name, {k: round(v, 4) for k, v in row.items()}, flush=True)
json.dump(res, open(os.path.join(OUT, "probe55.json"), "w"), indent=1)
print("done", round(time.time() - t0, 1), "s")
