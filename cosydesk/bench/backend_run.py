"""One backend over the corpus: the timed pass, the soak, the fidelity / stage pass, and their metrics."""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import gc
import time

from cosydesk.bench.inputs import ForcedSentence, LLMStats, LoopOptions, forced_token_source
from cosydesk.bench.probes import FlowRecorder, HiftRecorder, MemoryProbe

# --------------------------------------------------------------------------------------------------------
# one backend
# --------------------------------------------------------------------------------------------------------
def _percentile(values, q):
    import numpy as np

    return float(np.percentile(np.asarray(values, dtype=np.float64), q)) if len(values) else None


def synthesize_one(model, sentence: ForcedSentence, stats: LLMStats, copier, seed: int,
                   loop: LoopOptions = LoopOptions(), tails: list | None = None):
    """Stream one sentence on the app's streams (the LLM on the pipeline's stream, token2wav on this thread's
    current one, where the backend was built); returns (first_s, total_s, waveform np.ndarray). ``tails`` gets one
    (wait_s, after_s) pair: from the last token to the final token2wav call starting, and to its chunk being on
    the host."""
    import numpy as np
    import torch

    from cosydesk.runtime.pipeline import run_sentence

    torch.manual_seed(seed)  # v1 draws flow noise from the global RNG: same per sentence on every backend
    chunks, first = [], None
    submit = time.perf_counter()
    source = forced_token_source(model, sentence.speech_ids, stats, sampler=loop.sampler, seed=seed)
    for result in run_sentence(model, sentence.inputs, source, stream=True, zero_noise=True,
                               first_chunk_alone=loop.first_chunk_alone):
        chunks.append(copier(result.pcm))
        if first is None:
            first = time.perf_counter() - submit
        if result.final and tails is not None:
            last = result.timings["last_token"]
            tails.append((result.timings["tokens_ready"] - last, time.perf_counter() - last))
    total = time.perf_counter() - submit
    wave = np.concatenate(chunks) if chunks else np.zeros(0, np.float32)
    return first, total, wave


def _drift(reserved: list, nvml: list, cuda: bool) -> float | None:
    """VRAM drift in percent: mean of the last 100 readings vs the first 100 (NVML when every reading has it)."""
    nvml_vals = [v for v in nvml if v is not None]
    track = nvml_vals if len(nvml_vals) == len(reserved) and nvml_vals else reserved
    k = min(100, max(1, len(track) // 2))
    if not (cuda and track and track[0] > 0):
        return None
    return 100.0 * (sum(track[-k:]) / k - sum(track[:k]) / k) / (sum(track[:k]) / k)


def _cuda_sync_all(model):
    import torch

    if model.device.type == "cuda":
        torch.cuda.synchronize()


def kernel_paths(model) -> dict:
    """Which decode / estimator paths a backend model runs, so the JSON says what was measured: the LLM
    decode step as Triton kernels, a static graph of torch ops, or the plain module; the next id chosen by the
    Triton selector, its compiled torch form on the device, or on the host; how many of the estimator's
    transformer blocks run the Triton flow kernels, whether the estimator computes on rows (conv kernels), how many
    decode steps the LLM queues ahead of each read (``COSYDESK_DECODE_AHEAD``; None: no decode-ahead loop), and how
    many padded graphs serve the vocoder's free-length calls (v2's final chunks, ``COSYDESK_FINAL_HIFT_GRAPHS``;
    v1's calls, ``COSYDESK_V1_HIFT_GRAPHS``)."""
    import sys

    from cosydesk.runtime.backends.cudagraph.causal_hift import GraphedCausalHift
    from cosydesk.runtime.backends.cudagraph.cfm import GraphedSampler
    from cosydesk.runtime.backends.cudagraph.encoder import GraphedEncoder, GraphedFullAttentionEncoder
    from cosydesk.runtime.backends.cudagraph.hift import GraphedHift
    from cosydesk.runtime.backends.cudagraph.qwen import StaticQwenLM
    from cosydesk.runtime.backends.cudagraph.static_lm import StaticSpeechLM

    llm = model.llm
    static = isinstance(llm, StaticSpeechLM)
    if isinstance(llm, StaticQwenLM) and llm.triton_decoder is not None:
        decode = "triton"
    elif static:
        decode = "static torch"
    else:
        decode = "module"
    select = ("triton" if llm.select_kernel is not None else "device torch") if static else "host"
    decoder = model.flow.decoder
    estimator = decoder.estimator
    # the Triton rewrites exist only once their modules were imported (they need Triton)
    kernels = sys.modules.get("cosydesk.runtime.backends.cudagraph.flow_kernels")
    rows = sys.modules.get("cosydesk.runtime.backends.cudagraph.row_estimator")
    blocks = 0 if kernels is None else sum(isinstance(m, kernels.KernelTransformerBlock) for m in estimator.modules())
    graphed = isinstance(decoder, GraphedSampler)
    encoder = getattr(model.flow, "encoder", None)  # v3's flow has none
    encoder_graphed = isinstance(encoder, (GraphedEncoder, GraphedFullAttentionEncoder))
    causal_hift = isinstance(model.hift, GraphedCausalHift)
    return {"flow_graphs": len(decoder.graphs) if graphed else 0,
            "flow_max_bucket": decoder.buckets[-1] if graphed and decoder.buckets else None,
            # calls that ran the eager solver (longer than every bucket, or not captured), timed and fidelity passes
            "flow_eager_calls": decoder.eager_calls if graphed else None,
            "encoder_eager_calls": encoder.eager_calls if encoder_graphed else None,
            "llm_decode": decode, "token_select": select, "llm_decode_ahead": llm.ahead if static else None,
            "flow_triton_blocks": blocks,
            # v3: the DiT's position convs as the Triton kernel, and its blocks under torch.compile (Inductor)
            "dit_conv_kernels": type(getattr(getattr(getattr(estimator, "dit", None), "input_embed", None),
                                             "conv_pos_embed", None)).__name__ == "RowPositionConvs",
            "dit_compiled_blocks": sum(type(m).__name__ == "ModulatedDiTBlock" and getattr(m, "_compiled_call_impl", None)
                                       is not None for m in estimator.modules()),
            "flow_row_estimator": rows is not None and isinstance(estimator, rows.RowCausalDecoder),
            "flow_encoder_graphs": len(encoder.graphs) if encoder_graphed else 0,
            "hift_final_graphs": len(model.hift.padded) if isinstance(model.hift, GraphedHift) else 0,
            # v3: the causal vocoder stream's window graphs, and its windows that ran eager
            "hift_window_graphs": len(model.hift.graphs) if causal_hift else 0,
            "hift_eager_calls": model.hift.eager_calls if causal_hift or isinstance(model.hift, GraphedHift) else None}


@contextlib.contextmanager
def float32_reference(on: bool):
    """While ``on``: float32 convolutions and products without TF32. torch lets cuDNN round a float32 convolution's
    operands to TF32 (10 mantissa bits) by default, which made the eager-fp32 reference itself an approximation: on
    the H200 its vocoder's f0 moved 0.12 Hz from float32 (docs/bench/h200-wave13). The official fixtures are
    float32 on the host, with no TF32. Restored on exit (the flags are process-wide)."""
    import torch

    if not on:
        yield
        return
    before = torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32
    torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = False
    try:
        yield
    finally:
        torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = before


def run_backend(name: str, master, sentences: list[ForcedSentence], runs: int, warmup: int,
                fidelity_sentences: list[ForcedSentence], device, log=print, soak: int = 0,
                loop: LoopOptions = LoopOptions()) -> tuple[dict, dict]:
    """Timed pass + fidelity pass (+ an optional soak) for one backend. Returns (metrics, artefacts).

    ``fidelity_sentences`` may differ from the timed ``sentences`` (eager backends time a few sentences but
    serve as the fidelity reference on more). ``soak``: that many further sentences (the corpus cycled) after
    the timed pass, VRAM read after each, reported as ``soak`` (drift first vs last 100)."""
    import numpy as np
    import torch

    from cosydesk.runtime.backends import accelerate, place_model
    from cosydesk.runtime.host_copy import PinnedCopier

    cuda = device.type == "cuda"
    if cuda:
        gc.collect()
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    probe = MemoryProbe(device)
    t_load = time.perf_counter()
    base = dataclasses.replace(master, llm=copy.deepcopy(master.llm), flow=copy.deepcopy(master.flow),
                               hift=copy.deepcopy(master.hift))
    base = place_model(base, device, name)  # as the app places it: cast on the way, host-side preparation first
    model = accelerate(base, name, progress=lambda done, total, what="": log(f"  [{name}] warm-up {what} {done}/{total}")
                       if done == total or done % 10 == 0 else None)
    del base
    copier = PinnedCopier(device)
    stats = LLMStats()
    for i in range(min(warmup, len(sentences))):
        synthesize_one(model, sentences[i], stats, copier, seed=i, loop=loop)
    load_s = time.perf_counter() - t_load
    stats = LLMStats()
    sr = model.sample_rate
    firsts, totals, audio_s, reserved, nvml, nan_count, tails = [], [], [], [], [], 0, []
    wall0 = time.perf_counter()
    for run in range(runs):
        for i, sentence in enumerate(sentences):
            first, total, wave = synthesize_one(model, sentence, stats, copier, seed=i, loop=loop,
                                                tails=tails)
            firsts.append(first)
            totals.append(total)
            audio_s.append(wave.shape[0] / sr)
            nan_count += int((~np.isfinite(wave)).sum())
            reserved.append(probe.reserved_gb())
            nvml.append(probe.nvml_gb())
            if (len(firsts)) % 100 == 0:
                log(f"  [{name}] {len(firsts)}/{runs * len(sentences)} sentences, first audio p50 "
                    f"{1e3 * _percentile(firsts, 50):.1f} ms")
    wall = time.perf_counter() - wall0
    soak_report = None
    soak_reserved, soak_nvml = [], []
    if soak:
        soak_nan = 0
        for i in range(soak):
            wave = synthesize_one(model, sentences[i % len(sentences)], LLMStats(), copier, seed=i,
                                  loop=loop)[2]
            soak_nan += int((~np.isfinite(wave)).sum())
            soak_reserved.append(probe.reserved_gb())
            soak_nvml.append(probe.nvml_gb())
            if (i + 1) % 250 == 0:
                log(f"  [{name}] soak {i + 1}/{soak}")
        soak_report = {"sentences": soak, "nan_count": soak_nan, "drift": _drift(soak_reserved, soak_nvml, cuda),
                       "peak_reserved_gb": max(soak_reserved) if cuda else None,
                       "peak_nvml_gb": max((v for v in soak_nvml if v is not None), default=None)}
    peak_reserved = torch.cuda.max_memory_reserved() / 1e9 if cuda else None
    nvml_vals = [v for v in nvml if v is not None]

    # fidelity / stage pass (untimed for the metrics above; syncs around every stage)
    record: dict = {}
    # v3's causal HiFT streams through CausalHiFTStream, which never calls the recorded methods: left unwrapped
    hift = model.hift if model.version == "v3" else HiftRecorder(model.hift, lambda: _cuda_sync_all(model), record, "hift")
    fid_model = dataclasses.replace(model, flow=FlowRecorder(model.flow, lambda: _cuda_sync_all(model), record, "flow"),
                                    hift=hift)
    waves = []
    fid_stats = LLMStats()
    fidelity_n = len(fidelity_sentences)
    for i, sentence in enumerate(fidelity_sentences):
        waves.append(synthesize_one(fid_model, sentence, fid_stats, copier, seed=i, loop=loop)[2])
        nan_count += int((~np.isfinite(waves[-1])).sum())
    nan_count += sum(int((~torch.isfinite(m)).sum()) for m in record.get("mels", []))

    drift = _drift(reserved, nvml, cuda)
    ms = lambda xs: [1e3 * x for x in xs]  # noqa: E731
    metrics = {
        "first_audio_ms": {"mean": 1e3 * float(np.mean(firsts)), "p50": _percentile(ms(firsts), 50),
                           "p99": _percentile(ms(firsts), 99)},
        "total_ms": {"mean": 1e3 * float(np.mean(totals)), "p50": _percentile(ms(totals), 50),
                     "p99": _percentile(ms(totals), 99)},
        "rtf": float(sum(totals) / max(sum(audio_s), 1e-9)),
        "sentences_per_s": len(firsts) / wall,
        "peak_reserved_gb": peak_reserved,
        "peak_nvml_gb": max(nvml_vals) if nvml_vals else None,
        "nvml_source": probe.nvml_source,
        "vram_drift_pct": drift,
        "fidelity": {"mel_rel_err": None, "snr_db": None, "nan_count": nan_count},
        "stages": {
            "llm_ms_per_token": 1e3 * stats.decode_s / max(stats.decode_steps, 1),
            "llm_prefill_ms": 1e3 * float(np.median(stats.prefill_s)) if stats.prefill_s else None,
            "flow_first_chunk_ms": float(np.median(record["flow_ms"][::max(1, len(record["flow_ms"]) // max(1, fidelity_n))]))
            if record.get("flow_ms") else None,
            "flow_ms_per_call": float(np.median(record["flow_ms"])) if record.get("flow_ms") else None,
            "hift_ms_per_call": float(np.median(record["hift_ms"])) if record.get("hift_ms") else None,
            # the timed run's sentence tails (medians): last token -> final call starting (waiting for the LLM
            # thread's hand-over or an earlier chunk still running), and -> the final chunk on the host
            "final_call_wait_ms": _percentile(ms([wait for wait, _ in tails]), 50),
            "after_last_token_ms": _percentile(ms([after for _, after in tails]), 50),
        },
        "soak": soak_report,
        "kernels": kernel_paths(model),
        "load_and_warmup_s": load_s,
        "audio_s": float(sum(audio_s)),
    }
    artefacts = {"first_ms": ms(firsts), "reserved": reserved, "nvml": nvml, "mels": record.get("mels", []),
                 "waves": waves, "soak_reserved": soak_reserved, "soak_nvml": soak_nvml}
    del model, fid_model
    gc.collect()
    return metrics, artefacts


def fidelity(test: dict, ref: dict) -> dict:
    """mel relative error and waveform SNR of ``test`` against ``ref`` (the same calls, in order)."""
    import numpy as np

    num = den = 0.0
    for a, b in zip(test["mels"], ref["mels"]):
        if a.shape != b.shape:
            return {"mel_rel_err": None, "snr_db": None, "error": "mel shapes differ"}
        a, b = a.double().numpy(), b.double().numpy()
        num += float(((a - b) ** 2).sum())
        den += float((b ** 2).sum())
    mel_rel = (num / den) ** 0.5 if den > 0 else None
    sig = noise = 0.0
    for a, b in zip(test["waves"], ref["waves"]):
        n = min(a.shape[0], b.shape[0])
        a64, b64 = a[:n].astype(np.float64), b[:n].astype(np.float64)
        sig += float((b64 ** 2).sum())
        noise += float(((a64 - b64) ** 2).sum())
    snr = 10 * np.log10(sig / noise) if noise > 0 else float("inf")
    return {"mel_rel_err": mel_rel, "snr_db": float(snr) if np.isfinite(snr) else 999.0}
