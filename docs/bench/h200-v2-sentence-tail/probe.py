"""v2 full-size cudagraph: where the time after the last token goes (host vs GPU), per sentence."""
import dataclasses, json, os, sys, time
import numpy as np
import torch
sys.path.insert(0, os.getcwd())
from cosydesk.bench import DEFAULT_CORPUS, LLMStats, make_forced_sentences, read_corpus, synthesize_one
from cosydesk.runtime import pipeline, token2wav
from cosydesk.runtime.backends import accelerate
from cosydesk.runtime.host_copy import PinnedCopier
from cosydesk.synthetic.full_size import random_model

t0 = time.time()
master = random_model("v2", device="cpu", dtype=torch.float32, seed=0)
for m in (master.llm, master.flow, master.hift):
    m.to(device="cuda", dtype=torch.float16)
model = accelerate(dataclasses.replace(master, device=torch.device("cuda")), "cudagraph")
print("loaded", round(time.time() - t0, 1), "s", flush=True)
sentences = make_forced_sentences("v2", read_corpus(DEFAULT_CORPUS, 120), seed=0)
streams = (torch.cuda.Stream(), torch.cuda.Stream())
copier = PinnedCopier(torch.device("cuda"))

rec = {}
def ev():
    e = torch.cuda.Event(enable_timing=True); e.record(); return e
orig_push, orig_finish = pipeline.TokenBuffer.push, pipeline.TokenBuffer.finish
def push(self, t):
    orig_push(self, t); rec.setdefault("push", []).append(time.perf_counter())
def finish(self, error=None):
    rec["finish"] = time.perf_counter(); orig_finish(self, error)
pipeline.TokenBuffer.push, pipeline.TokenBuffer.finish = push, finish
T = token2wav.Token2Wav
orig_call, orig_flow, orig_hift = T.__call__, T._flow, T._hift
def call(self, tokens, c):
    calls = rec.setdefault("calls", [])
    calls.append({"final": c.finalize, "n": int(c.end), "t_enter": time.perf_counter(), "e_enter": ev()})
    out = orig_call(self, tokens, c)
    calls[-1]["t_exit"] = time.perf_counter(); calls[-1]["e_exit"] = ev()
    return out
def flow(self, *a, **k):
    out = orig_flow(self, *a, **k)
    rec["calls"][-1].update(t_flow=time.perf_counter(), e_flow=ev()); return out
def hift(self, *a, **k):
    rec["calls"][-1].update(t_hift0=time.perf_counter(), e_hift0=ev())
    out = orig_hift(self, *a, **k)
    rec["calls"][-1].update(t_hift=time.perf_counter(), e_hift=ev()); return out
T.__call__, T._flow, T._hift = call, flow, hift
def copy(pcm):
    out = copier(pcm); rec.setdefault("copied", []).append(time.perf_counter()); return out

for i in range(3):
    synthesize_one(model, sentences[i], LLMStats(), copy, streams, seed=i)
rows = []
for i, s in enumerate(sentences[10:90]):
    rec.clear()
    t_sub = time.perf_counter()
    first, total, wave = synthesize_one(model, s, LLMStats(), copy, streams, seed=i)
    torch.cuda.synchronize()
    ms = lambda a, b: 1e3 * (b - a)
    f = rec["calls"][-1]
    row = {"tokens": len(s.speech_ids), "calls": len(rec["calls"]), "first": first * 1e3, "total": total * 1e3,
           "last_push": ms(t_sub, rec["push"][-1]), "finish": ms(t_sub, rec["finish"]),
           "final_enter": ms(t_sub, f["t_enter"]), "final_flow_host": ms(f["t_enter"], f["t_flow"]),
           "final_hift_host_start": ms(f["t_enter"], f["t_hift0"]), "final_hift_host": ms(f["t_enter"], f["t_hift"]),
           "final_exit_host": ms(f["t_enter"], f["t_exit"]), "final_copied": ms(f["t_enter"], rec["copied"][-1]),
           "gpu_flow": f["e_enter"].elapsed_time(f["e_flow"]), "gpu_mid": f["e_flow"].elapsed_time(f["e_hift0"]),
           "gpu_hift": f["e_hift0"].elapsed_time(f["e_hift"]), "gpu_tail": f["e_hift"].elapsed_time(f["e_exit"]),
           "gpu_enter_after_prev_exit": rec["calls"][-2]["e_exit"].elapsed_time(f["e_enter"]) if len(rec["calls"]) > 1 else None,
           "prev_calls": [(c["n"], round(c["e_enter"].elapsed_time(c["e_exit"]), 2), round(ms(c["t_enter"], c["t_exit"]), 2)) for c in rec["calls"][:-1]],
           "push_gaps_last5": [round(ms(a, b), 3) for a, b in zip(rec["push"][-6:-1], rec["push"][-5:])]}
    rows.append(row)
    if i < 6:
        print(json.dumps({k: (round(v, 2) if isinstance(v, float) else v) for k, v in row.items()}), flush=True)
keys = [k for k in rows[0] if isinstance(rows[0][k], float)]
summary = {k: round(float(np.median([r[k] for r in rows if r[k] is not None])), 3) for k in keys}
print("MEDIAN", json.dumps(summary), flush=True)
json.dump({"rows": rows, "median": summary}, open(os.path.join(os.environ.get("OUT", "."), "probe48.json"), "w"), indent=1)

# kernel table of whole sentences (all streams), to see which kernels the time goes to
from torch.profiler import ProfilerActivity, profile
with profile(activities=[ProfilerActivity.CUDA, ProfilerActivity.CPU]) as prof:
    for i, s in enumerate(sentences[90:95]):
        synthesize_one(model, s, LLMStats(), copy, streams, seed=i)
    torch.cuda.synchronize()
table = prof.key_averages().table(sort_by="cuda_time_total", row_limit=45, max_name_column_width=70)
open(os.path.join(os.environ.get("OUT", "."), "probe48-kernels.txt"), "w").write(table)
print(table[:6000], flush=True)
