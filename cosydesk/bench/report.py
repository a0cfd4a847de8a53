"""The bench report: machine facts, the commit, per-sentence series, the PNG, and the whole run."""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
from pathlib import Path

from cosydesk.bench.backend_run import fidelity, float32_reference, run_backend
from cosydesk.bench.inputs import CORPORA, PROMPT, TOKENS_PER_SECOND, CHARS_PER_SECOND, LoopOptions, corpus_path, corpus_stats, make_forced_sentences, read_corpus

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
            from cosydesk.telemetry import nvml

            lib = nvml.library()
            lib.nvmlInit()
            info["driver"] = nvml.driver_version(lib)
        except Exception:  # noqa: BLE001
            pass
    return info


def git_commit() -> str | None:
    """The checkout's commit; $COSYDESK_COMMIT where the tree was copied without its history (device runs)."""
    if os.environ.get("COSYDESK_COMMIT"):
        return os.environ["COSYDESK_COMMIT"]
    try:
        root = Path(__file__).resolve().parents[2]
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


def plot(report: dict, path: Path) -> bool:
    """Latency CDF per backend and VRAM per sentence, one colour per backend (NVML dashed); False (no PNG)
    where matplotlib, the ``bench`` extra, is not installed."""
    try:
        import matplotlib
    except ImportError:
        return False

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
    return True


def run_bench(args: argparse.Namespace, log=print) -> dict:
    import torch

    from cosydesk.runtime.pipeline import first_chunk_shared_steps

    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    device = torch.device(args.device if args.device != "auto" else ("cuda" if torch.cuda.is_available() else "cpu"))
    if device.type != "cuda" and any(b != "eager-fp32" for b in backends):
        raise ValueError("without CUDA only the eager-fp32 backend runs")
    if args.random:
        from cosydesk.synthetic.full_size import random_model

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
        with float32_reference(name == "eager-fp32"):  # the reference: float32, no TF32
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
                     "zero_noise": True, "seed": args.seed, "reference_tf32": False,
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
    if plot(report, out / f"{stem}.png"):
        log(f"wrote {out / (stem + '.json')} and {stem}.png")
    else:
        log(f"wrote {out / (stem + '.json')} (no PNG: matplotlib is not installed; pip install \"cosydesk[bench]\")")
    return report
