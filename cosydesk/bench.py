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
app runs a request's first sentence) holds the LLM while the first chunk runs. On CUDA the producer runs on its
own stream and token2wav on another; each chunk is copied into a pinned host buffer before it counts as
"arrived".

Per backend: first-audio latency (submit -> first chunk on the host), full-sentence latency, RTF, sentences/s,
peak VRAM (torch reserved, NVML process memory), VRAM drift (first vs last 100 sentences), fidelity against
eager-fp32 on the same tokens and noise (a second, untimed pass over the first --fidelity sentences that also
times each stage with device syncs), and from the timed run each sentence's tail: last token -> final call
starting, -> final chunk on the host. Writes bench.json-style JSON and a PNG (latency CDF, VRAM over time).
This module must not change model or runtime code: backends come from ``cosydesk.runtime.backends``.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import dataclasses
import gc
import json
import os
import platform
import subprocess
import sys
import threading
import time
from pathlib import Path

_RESOURCES = Path(__file__).resolve().parent.parent / "resources"
# Named corpora: `short` (8-20 characters, the app's typical line) and `long` (20-80 characters, what the
# frontend's splitter makes of paragraphs); --corpus also takes a file.
CORPORA = {"short": _RESOURCES / "bench_corpus_zh.txt", "long": _RESOURCES / "bench_corpus_zh_long.txt"}
DEFAULT_CORPUS = CORPORA["short"]
TOKENS_PER_SECOND = 25
CHARS_PER_SECOND = 4
PROMPT = {"v1": (20, 34), "v2": (20, 40), "v3": (20, 40)}  # (prompt speech tokens, prompt mel frames)
SPEECH_VOCAB = {"v1": 4096, "v2": 6561, "v3": 6561}
PROMPT_TEXT_IDS = 8


# --------------------------------------------------------------------------------------------------------
# inputs
# --------------------------------------------------------------------------------------------------------
def corpus_path(name_or_path: str | Path) -> Path:
    """A named corpus (short, long) or a file path."""
    return CORPORA.get(str(name_or_path), Path(name_or_path))


def read_corpus(path: str | Path, limit: int | None = None) -> list[str]:
    lines = [line.strip() for line in corpus_path(path).read_text(encoding="utf-8").splitlines()]
    lines = [line for line in lines if line and not line.startswith("#")]
    return lines[:limit] if limit else lines


def corpus_stats(texts: list[str]) -> dict[str, float]:
    """Sentence lengths in characters (min / mean / max): which shape a run measured."""
    lengths = [len(text) for text in texts] or [0]
    return {"min": min(lengths), "mean": sum(lengths) / len(lengths), "max": max(lengths)}


def forced_token_count(text: str) -> int:
    """25 tokens per second of audio, audio seconds = characters / 4."""
    return max(1, round(TOKENS_PER_SECOND * len(text) / CHARS_PER_SECOND))


@dataclasses.dataclass
class ForcedSentence:
    text: str
    inputs: object          # runtime.pipeline.SentenceInputs (CPU tensors)
    speech_ids: list[int]   # forced LLM output


def make_forced_sentences(version: str, texts: list[str], seed: int = 0) -> list[ForcedSentence]:
    """Seeded, backend-independent inputs: one shared zero-shot prompt, per-sentence text ids and tokens."""
    import torch

    from cosydesk.runtime.pipeline import SentenceInputs

    gen = torch.Generator().manual_seed(seed)
    n_prompt, n_frames = PROMPT[version]
    vocab = SPEECH_VOCAB[version]
    prompt_speech = torch.randint(0, vocab, (1, n_prompt), generator=gen, dtype=torch.int32)
    prompt_text = torch.randint(1000, 20000, (1, PROMPT_TEXT_IDS), generator=gen, dtype=torch.int32)
    prompt_feat = torch.randn(1, n_frames, 80, generator=gen) * 0.5 - 5.0  # log-mel-like range
    embedding = torch.randn(1, 192, generator=gen)
    out = []
    for text in texts:
        text_ids = torch.randint(1000, 20000, (1, len(text)), generator=gen, dtype=torch.int32)
        speech = torch.randint(0, vocab, (forced_token_count(text),), generator=gen).tolist()
        inputs = SentenceInputs(text=text_ids, prompt_text=prompt_text, llm_prompt_speech_token=prompt_speech,
                                llm_embedding=embedding, flow_prompt_speech_token=prompt_speech,
                                prompt_speech_feat=prompt_feat, flow_embedding=embedding)
        out.append(ForcedSentence(text, inputs, speech))
    return out


class LLMStats:
    """Time per token the producer thread spends getting the next id (after prefill, incl. the per-token sync)."""

    def __init__(self) -> None:
        self.prefill_s: list[float] = []
        self.decode_s = 0.0
        self.decode_steps = 0
        self.lock = threading.Lock()


SAMPLERS = ("argmax", "ras")


@dataclasses.dataclass(frozen=True)
class LoopOptions:
    """How each sentence runs: the sampler the LLM thread uses, and whether the first chunk runs alone."""

    sampler: str = "argmax"
    first_chunk_alone: bool = True  # as the app runs a request's first sentence


def make_chooser(sampler: str, seed: int):
    """How the producer reads each step's id (then discarded for the forced one): ``argmax`` is the bare host sync
    a stop check needs; ``ras`` runs the app's own sampler (repetition-aware, on the host) for its real cost."""
    import torch

    if sampler == "argmax":
        return lambda logits, decoded: int(torch.argmax(logits))
    if sampler != "ras":
        raise ValueError(f"unknown sampler {sampler!r} (choose {' or '.join(SAMPLERS)})")
    from cosydesk.model.sampling import RepetitionAwareSampler
    from cosydesk.runtime.host_sampler import HostSampler

    ras, generator = HostSampler(RepetitionAwareSampler()), torch.Generator().manual_seed(seed)
    return lambda logits, decoded: int(ras(logits, decoded, generator))


def forced_token_source(model, speech_ids: list[int], stats: LLMStats, llm_stream=None, sampler: str = "argmax",
                        seed: int = 0):
    """A runtime TokenSource running the real LLM (and ``sampler``, see make_chooser) but emitting the forced ids."""
    import torch

    choose = make_chooser(sampler, seed)  # also rejects an unknown sampler name for either loop
    own_loop = getattr(model.llm, "generate_speech_tokens", None)

    def generic_loop(args):
        logits, state = model.llm.prefill(*args)
        decoded: list[int] = []
        choose(logits, decoded)  # the sampler's host sync
        for token in speech_ids:
            yield token
            decoded.append(token)
            logits, state = model.llm.decode_step(token, state)
            choose(logits, decoded)  # one host sync per token, as the stop check needs

    def source(inputs, stop):
        device = model.device
        ctx = torch.cuda.stream(llm_stream) if llm_stream is not None else contextlib.nullcontext()
        with ctx:
            t0 = time.perf_counter()
            args = (inputs.text.to(device), inputs.prompt_text.to(device), inputs.llm_prompt_speech_token.to(device),
                    inputs.llm_embedding.to(device=device, dtype=model.dtype))
            if own_loop is not None:
                tokens = own_loop(*args, greedy=sampler == "argmax", generator=torch.Generator().manual_seed(seed),
                                  forced=speech_ids)
            else:
                tokens = generic_loop(args)
            # time spent producing ids only: not while suspended at ``yield`` (the pipeline may hold the LLM
            # while the first chunk runs, or the consumer may be slow to ask)
            prefill_s, decode_s, steps = None, 0.0, 0
            tokens = iter(tokens)
            while True:
                t = time.perf_counter()
                token = next(tokens, None)
                if token is None:
                    break
                if prefill_s is None:
                    prefill_s = time.perf_counter() - t0  # the first id read: prefill (and its choice) done
                else:
                    decode_s, steps = decode_s + time.perf_counter() - t, steps + 1
                if stop.is_set():
                    return
                yield token
            with stats.lock:
                if prefill_s is not None:
                    stats.prefill_s.append(prefill_s)
                stats.decode_s += decode_s
                stats.decode_steps += steps

    return source


# --------------------------------------------------------------------------------------------------------
# memory probes
# --------------------------------------------------------------------------------------------------------
class MemoryProbe:
    """torch reserved bytes and NVML process memory (device-wide used memory when per-process is unavailable)."""

    def __init__(self, device) -> None:
        import torch

        self.cuda = device.type == "cuda" and torch.cuda.is_available()
        self.handle = None
        self.nvml_source = None
        if self.cuda:
            try:
                import pynvml

                pynvml.nvmlInit()
                index = device.index if device.index is not None else torch.cuda.current_device()
                self.handle = pynvml.nvmlDeviceGetHandleByIndex(index)
                self.pynvml = pynvml
            except Exception:  # noqa: BLE001 - NVML is optional telemetry
                self.handle = None

    def reserved_gb(self) -> float:
        import torch

        return torch.cuda.memory_reserved() / 1e9 if self.cuda else 0.0

    def nvml_gb(self) -> float | None:
        if self.handle is None:
            return None
        nv = self.pynvml
        try:
            for proc in nv.nvmlDeviceGetComputeRunningProcesses(self.handle):
                if proc.pid == os.getpid() and proc.usedGpuMemory:
                    self.nvml_source = "process"
                    return proc.usedGpuMemory / 1e9
        except Exception:  # noqa: BLE001
            pass
        self.nvml_source = "device_used"  # pid namespaces can hide our pid: whole-device use is an upper bound
        return nv.nvmlDeviceGetMemoryInfo(self.handle).used / 1e9


# --------------------------------------------------------------------------------------------------------
# stage timing / recording proxies (fidelity pass only: they synchronise)
# --------------------------------------------------------------------------------------------------------
class _Recorder:
    def __init__(self, inner, sync, log: dict, name: str):
        self._inner, self._sync, self._log, self._name = inner, sync, log, name

    def __getattr__(self, item):
        return getattr(self._inner, item)

    def _timed(self, method: str, *args, **kwargs):
        self._sync()
        t0 = time.perf_counter()
        out = getattr(self._inner, method)(*args, **kwargs)
        self._sync()
        self._log.setdefault(f"{self._name}_ms", []).append(1e3 * (time.perf_counter() - t0))
        return out


class FlowRecorder(_Recorder):
    def _keep(self, mel):
        self._log.setdefault("mels", []).append(mel.detach().float().cpu())

    def inference(self, *args, **kwargs):
        mel = self._timed("inference", *args, **kwargs)
        self._keep(mel)
        return mel

    def inference_with_cache(self, *args, **kwargs):
        mel, cache = self._timed("inference_with_cache", *args, **kwargs)
        self._keep(mel)
        return mel, cache


class HiftRecorder(_Recorder):
    def inference_with_source(self, *args, **kwargs):
        return self._timed("inference_with_source", *args, **kwargs)

    def inference(self, *args, **kwargs):
        return self._timed("inference", *args, **kwargs)


# --------------------------------------------------------------------------------------------------------
# one backend
# --------------------------------------------------------------------------------------------------------
def _percentile(values, q):
    import numpy as np

    return float(np.percentile(np.asarray(values, dtype=np.float64), q)) if len(values) else None


def synthesize_one(model, sentence: ForcedSentence, stats: LLMStats, copier, streams, seed: int,
                   loop: LoopOptions = LoopOptions(), tails: list | None = None):
    """Stream one sentence; returns (first_s, total_s, waveform np.ndarray). ``tails`` gets one (wait_s, after_s)
    pair: from the last token to the final token2wav call starting, and to its chunk being on the host."""
    import numpy as np
    import torch

    from cosydesk.runtime.pipeline import run_sentence

    torch.manual_seed(seed)  # v1 draws flow noise from the global RNG: same per sentence on every backend
    llm_stream, t2w_stream = streams
    ctx = torch.cuda.stream(t2w_stream) if t2w_stream is not None else contextlib.nullcontext()
    chunks, first = [], None
    submit = time.perf_counter()
    with ctx:
        source = forced_token_source(model, sentence.speech_ids, stats, llm_stream, sampler=loop.sampler, seed=seed)
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
    llm = model.llm
    if getattr(llm, "triton_decoder", None) is not None:
        decode = "triton"
    elif hasattr(llm, "decode_layer"):
        decode = "static torch"
    else:
        decode = "module"
    estimator = getattr(getattr(model.flow, "decoder", None), "estimator", None)
    blocks = 0 if estimator is None else sum(type(m).__name__ == "KernelTransformerBlock" for m in estimator.modules())
    if getattr(llm, "select_kernel", None) is not None:
        select = "triton"
    else:
        select = "device torch" if hasattr(llm, "selector") else "host"
    rows = type(estimator).__name__ == "RowCausalDecoder"
    encoder_graphs = len(getattr(getattr(model.flow, "encoder", None), "graphs", None) or {})
    return {"llm_decode": decode, "token_select": select, "llm_decode_ahead": getattr(llm, "ahead", None),
            "flow_triton_blocks": blocks, "flow_row_estimator": rows, "flow_encoder_graphs": encoder_graphs,
            "hift_final_graphs": len(getattr(model.hift, "padded", {}))}


def run_backend(name: str, master, sentences: list[ForcedSentence], runs: int, warmup: int,
                fidelity_sentences: list[ForcedSentence], device, log=print, soak: int = 0,
                loop: LoopOptions = LoopOptions()) -> tuple[dict, dict]:
    """Timed pass + fidelity pass (+ an optional soak) for one backend. Returns (metrics, artefacts).

    ``fidelity_sentences`` may differ from the timed ``sentences`` (eager backends time a few sentences but
    serve as the fidelity reference on more). ``soak``: that many further sentences (the corpus cycled) after
    the timed pass, VRAM read after each, reported as ``soak`` (drift first vs last 100)."""
    import numpy as np
    import torch

    from cosydesk.runtime.backends import accelerate
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
    target = torch.float32 if name in ("eager", "eager-fp32") else torch.float16
    for module in (base.llm, base.flow, base.hift):
        keep32 = module is base.hift and master.version == "v3"  # the backend keeps v3's HiFT in float32
        module.to(device=device, dtype=torch.float32 if keep32 else target)  # cast on the way: no float32 copy on the GPU for fp16 backends
    base = dataclasses.replace(base, device=device)
    model = accelerate(base, name, progress=lambda done, total, what="": log(f"  [{name}] warm-up {what} {done}/{total}")
                       if done == total or done % 10 == 0 else None)
    del base
    streams = (torch.cuda.Stream(), torch.cuda.Stream()) if cuda else (None, None)
    copier = PinnedCopier(device)
    stats = LLMStats()
    for i in range(min(warmup, len(sentences))):
        synthesize_one(model, sentences[i], stats, copier, streams, seed=i, loop=loop)
    load_s = time.perf_counter() - t_load
    stats = LLMStats()
    sr = model.sample_rate
    firsts, totals, audio_s, reserved, nvml, nan_count, tails = [], [], [], [], [], 0, []
    wall0 = time.perf_counter()
    for run in range(runs):
        for i, sentence in enumerate(sentences):
            first, total, wave = synthesize_one(model, sentence, stats, copier, streams, seed=i, loop=loop,
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
            wave = synthesize_one(model, sentences[i % len(sentences)], LLMStats(), copier, streams, seed=i,
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
    fid_model = dataclasses.replace(model, flow=FlowRecorder(model.flow, lambda: _cuda_sync_all(model), record, "flow"),
                                    hift=HiftRecorder(model.hift, lambda: _cuda_sync_all(model), record, "hift"))
    waves = []
    fid_stats = LLMStats()
    fidelity_n = len(fidelity_sentences)
    for i, sentence in enumerate(fidelity_sentences):
        waves.append(synthesize_one(fid_model, sentence, fid_stats, copier, streams, seed=i, loop=loop)[2])
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


# --------------------------------------------------------------------------------------------------------
# report
# --------------------------------------------------------------------------------------------------------
def machine_info(device) -> dict:
    import torch

    info = {"gpu": None, "driver": None, "torch": torch.__version__, "cuda": torch.version.cuda,
            "cpu": platform.processor() or platform.machine(), "python": platform.python_version()}
    if device.type == "cuda":
        info["gpu"] = torch.cuda.get_device_name(device)
        try:
            import pynvml

            pynvml.nvmlInit()
            driver = pynvml.nvmlSystemGetDriverVersion()
            info["driver"] = driver.decode() if isinstance(driver, bytes) else driver
        except Exception:  # noqa: BLE001
            pass
    return info


def git_commit() -> str | None:
    """The checkout's commit; $COSYDESK_COMMIT where the tree was copied without its history (device runs)."""
    if os.environ.get("COSYDESK_COMMIT"):
        return os.environ["COSYDESK_COMMIT"]
    try:
        root = Path(__file__).resolve().parent.parent
        result = subprocess.run(["git", "rev-parse", "--verify", "--quiet", "HEAD"], cwd=root, capture_output=True,
                                text=True, timeout=10)
        return result.stdout.strip() if result.returncode == 0 and result.stdout.strip() else None
    except Exception:  # noqa: BLE001
        return None


def series(artefacts: dict) -> dict:
    """Per-sentence measurements kept in the JSON, so the plot can be redrawn without the GPU."""
    gb = lambda values: [None if v is None else round(float(v), 4) for v in values]  # noqa: E731
    return {name: {"first_audio_ms": [round(float(v), 3) for v in art["first_ms"]],
                   "reserved_gb": gb(art["reserved"]), "nvml_gb": gb(art["nvml"]),
                   "soak_reserved_gb": gb(art.get("soak_reserved", [])), "soak_nvml_gb": gb(art.get("soak_nvml", []))}
            for name, art in artefacts.items()}


def plot(report: dict, path: Path) -> None:
    """Latency CDF per backend and VRAM per sentence, one colour per backend (NVML dashed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    from matplotlib.ticker import LogLocator, NullFormatter, ScalarFormatter

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.5))
    for index, (name, data) in enumerate(report["series"].items()):
        colour = f"C{index}"
        xs = np.sort(np.asarray(data["first_audio_ms"]))
        ax1.plot(xs, np.arange(1, len(xs) + 1) / len(xs), color=colour, label=name)
        # the timed pass, then the soak (if any) on the same axis
        reserved = data["reserved_gb"] + data.get("soak_reserved_gb", [])
        ax2.plot(reserved, color=colour, label=f"{name} torch reserved")
        nvml = [v for v in data["nvml_gb"] + data.get("soak_nvml_gb", []) if v is not None]
        if nvml:
            ax2.plot(nvml, color=colour, linestyle="--", label=f"{name} NVML process")
        if data.get("soak_reserved_gb"):
            ax2.axvline(len(data["reserved_gb"]), color=colour, linestyle=":", alpha=0.6,
                        label=f"{name} soak starts")
    ax1.set_xscale("log")
    ax1.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    ax1.xaxis.set_major_formatter(ScalarFormatter())
    ax1.xaxis.set_minor_formatter(NullFormatter())
    ax1.set_xlabel("first audio latency (ms, log scale)")
    ax1.set_ylabel("fraction of sentences")
    ax1.set_title(f"first-audio CDF ({report['model']})")
    ax1.grid(True, which="both", alpha=0.3)
    ax1.legend()
    ax2.set_xlabel("sentence (timed pass, then soak)")
    ax2.set_ylabel("GB")
    on_gpu = any(any(data["reserved_gb"]) or any(v for v in data["nvml_gb"] if v) for data in report["series"].values())
    ax2.set_title("VRAM over the run" if on_gpu else "VRAM over the run (no GPU in this run)")
    ax2.grid(True, alpha=0.3)
    ax2.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def run_bench(args: argparse.Namespace, log=print) -> dict:
    import torch

    from cosydesk.runtime.pipeline import first_chunk_shared_steps

    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    device = torch.device(args.device if args.device != "auto" else ("cuda" if torch.cuda.is_available() else "cpu"))
    if device.type != "cuda" and any(b != "eager-fp32" for b in backends):
        raise ValueError("without CUDA only the eager-fp32 backend runs")
    if args.random:
        from cosydesk.testing.full_size import random_model

        master = random_model(args.random, device="cpu", dtype=torch.float32, seed=args.seed)
        model_name = f"random {args.random} full size (seed {args.seed})"
    else:
        from cosydesk.model import load

        master = load(args.model, device="cpu", dtype=torch.float32)
        model_name = str(args.model)
    texts = read_corpus(args.corpus, args.limit)
    sentences = make_forced_sentences(master.version, texts, seed=args.seed)
    log(f"bench: {model_name} ({master.version}), {len(texts)} sentences x {args.runs} run(s), backends {backends}, "
        f"device {device}")
    results, artefacts = {}, {}
    for name in backends:
        log(f"backend {name} ...")
        eager = name.startswith("eager")
        subset = sentences[:args.eager_limit] if (args.eager_limit and eager) else sentences
        metrics, art = run_backend(name, master, subset, args.runs, args.warmup, sentences[:args.fidelity],
                                   device, log=log, soak=0 if (eager and args.eager_limit) else args.soak,
                                   loop=LoopOptions(args.sampler, args.first_chunk == "alone"))
        metrics["sentences"] = len(subset) * args.runs
        results[name], artefacts[name] = metrics, art
        out_partial = Path(args.out)
        out_partial.mkdir(parents=True, exist_ok=True)
        (out_partial / f"{args.name or 'bench-' + master.version}.partial.json").write_text(
            json.dumps(results, indent=2, ensure_ascii=False), encoding="utf-8")
        log(f"  {name}: first audio p50 {metrics['first_audio_ms']['p50']:.1f} / p99 "
            f"{metrics['first_audio_ms']['p99']:.1f} ms, RTF {metrics['rtf']:.4f}, stages {metrics['stages']}")
    ref_name = "eager-fp32" if "eager-fp32" in artefacts else None
    for name, metrics in results.items():
        if ref_name is None:
            continue
        if name == ref_name:
            metrics["fidelity"].update({"mel_rel_err": 0.0, "snr_db": 999.0})
        else:
            metrics["fidelity"].update(fidelity(artefacts[name], artefacts[ref_name]))
    report = {
        "machine": machine_info(device),
        "commit": git_commit(),
        "model": model_name,
        "version": master.version,
        "corpus": str(args.corpus) if str(args.corpus) in CORPORA else str(corpus_path(args.corpus)),
        "corpus_chars": corpus_stats(texts),
        "sentences": len(texts) * args.runs,
        "settings": {"runs": args.runs, "warmup": args.warmup, "fidelity_sentences": args.fidelity, "eager_limit": args.eager_limit, "soak": args.soak,
                     "sampler": args.sampler, "first_chunk": args.first_chunk,
                     "first_chunk_shared_steps": first_chunk_shared_steps(),
                     "tokens_per_second": TOKENS_PER_SECOND, "chars_per_second": CHARS_PER_SECOND,
                     "prompt_tokens": PROMPT[master.version][0], "prompt_frames": PROMPT[master.version][1],
                     "zero_noise": True, "seed": args.seed,
                     "alloc_conf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF")},
        "backends": results,
        "series": series(artefacts),
    }
    if ref_name and "cudagraph" in results:
        ratio = results[ref_name]["first_audio_ms"]["p99"] / results["cudagraph"]["first_audio_ms"]["p99"]
        report["cudagraph_vs_eager_fp32_first_audio_p99_speedup"] = ratio
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    stem = args.name or f"bench-{master.version}"
    (out / f"{stem}.json").write_text(json.dumps(report, indent=2, ensure_ascii=False), encoding="utf-8")
    plot(report, out / f"{stem}.png")
    log(f"wrote {out / (stem + '.json')} and {stem}.png")
    return report


def cmd_bench(args: argparse.Namespace) -> int:
    if bool(args.model) == bool(args.random):
        print("cosydesk: error: give exactly one of --model DIR or --random v1|v2|v3", file=sys.stderr)
        return 2
    if not corpus_path(args.corpus).is_file():
        print(f"cosydesk: error: corpus {args.corpus} does not exist", file=sys.stderr)
        return 2
    os.environ.setdefault("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True")
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
