"""`cosydesk bench` on the CPU with a tiny v2 model: valid JSON with the issue-4 key names, and a PNG."""

from __future__ import annotations

import json

import pytest

from cosydesk.bench import forced_token_count, make_forced_sentences, read_corpus
from cosydesk.cli import main


@pytest.fixture(scope="module")
def tiny_v2(tmp_path_factory):
    from cosydesk.synthetic.tiny_model import write_tiny_model

    return write_tiny_model(tmp_path_factory.mktemp("tiny") / "v2", "v2")


def test_shipped_corpus_shape():
    lines = read_corpus(__import__("cosydesk.bench", fromlist=["x"]).DEFAULT_CORPUS)
    lengths = [len(line) for line in lines]
    assert len(lines) == 500 and len(set(lines)) == 500
    assert min(lengths) >= 8 and max(lengths) <= 20
    assert 11 <= sum(lengths) / len(lengths) <= 13


def test_shipped_long_corpus_shape():
    """`--corpus long`: paragraph segments of 20-80 characters (5-20 s of audio), spread over the range."""
    from cosydesk.bench import CORPORA, corpus_path, corpus_stats

    assert corpus_path("long") == CORPORA["long"] and corpus_path("x/y.txt").name == "y.txt"
    lines = read_corpus("long")
    lengths = [len(line) for line in lines]
    assert len(lines) == 200 and len(set(lines)) == 200
    assert min(lengths) >= 20 and max(lengths) <= 80
    assert sum(length > 60 for length in lengths) >= 40  # long ones are not rare: the O(length^2) cases
    assert corpus_stats(lines) == {"min": min(lengths), "mean": sum(lengths) / 200, "max": max(lengths)}


def test_forced_inputs_are_seeded_and_sized():
    a = make_forced_sentences("v2", ["今天天气真不错。", "我想喝一杯热咖啡。"], seed=3)
    b = make_forced_sentences("v2", ["今天天气真不错。", "我想喝一杯热咖啡。"], seed=3)
    assert [s.speech_ids for s in a] == [s.speech_ids for s in b]
    assert len(a[0].speech_ids) == forced_token_count("今天天气真不错。") == 50  # 8 chars / 4 * 25
    assert a[0].inputs.flow_prompt_speech_token.shape == (1, 20)
    assert a[0].inputs.prompt_speech_feat.shape == (1, 40, 80)
    assert max(max(s.speech_ids) for s in a) < 6561


@pytest.mark.slow  # ~20-60 s on 2 shared CPU cores: the tiny model streams a whole sentence
def test_bench_cpu_writes_json_and_png(tiny_v2, tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("今天天气真不错。\n", encoding="utf-8")
    out = tmp_path / "out"
    rc = main(["bench", "--model", str(tiny_v2), "--backends", "eager-fp32", "--runs", "1", "--corpus", str(corpus),
               "--warmup", "0", "--fidelity", "1", "--soak", "2", "--sampler", "ras", "--out", str(out),
               "--name", "cpu"])
    assert rc == 0
    report = json.loads((out / "cpu.json").read_text(encoding="utf-8"))
    assert set(report["machine"]) >= {"gpu", "driver", "torch", "cuda"}
    assert {"commit", "model", "corpus", "sentences", "backends"} <= set(report)
    assert report["corpus_chars"] == {"min": 8, "mean": 8.0, "max": 8}
    assert report["sentences"] == 1 and report["settings"]["sampler"] == "ras"
    assert report["settings"]["first_chunk"] == "alone"  # the default, as the app runs a request's first sentence
    m = report["backends"]["eager-fp32"]
    assert set(m["first_audio_ms"]) >= {"mean", "p50", "p99"} and set(m["total_ms"]) >= {"mean", "p99"}
    for key in ("rtf", "sentences_per_s", "peak_reserved_gb", "peak_nvml_gb", "vram_drift_pct"):
        assert key in m
    assert 0 < m["first_audio_ms"]["p50"] <= m["total_ms"]["p99"] + 1e-6
    assert m["rtf"] > 0 and m["fidelity"]["nan_count"] == 0
    assert m["stages"]["llm_ms_per_token"] > 0 and m["stages"]["llm_prefill_ms"] > 0
    # the tail after the last token: waiting for the final call, then the whole call (at least as long)
    assert 0 <= m["stages"]["final_call_wait_ms"] < m["stages"]["after_last_token_ms"] <= m["total_ms"]["p99"] + 1e-6
    assert m["kernels"] == {"flow_graphs": 0, "flow_max_bucket": None, "flow_eager_calls": None,
                            "encoder_eager_calls": None, "llm_decode": "module", "token_select": "host", "llm_decode_ahead": None,
                            "flow_triton_blocks": 0, "dit_conv_kernels": False, "dit_compiled_blocks": 0,
                            "flow_row_estimator": False, "flow_encoder_graphs": 0,
                            "hift_final_graphs": 0, "hift_window_graphs": 0,
                            "hift_eager_calls": None}  # eager: the plain modules
    assert set(m["fidelity"]) >= {"mel_rel_err", "snr_db", "nan_count"}
    assert m["soak"]["sentences"] == 2 and m["soak"]["nan_count"] == 0
    assert len(report["series"]["eager-fp32"]["soak_reserved_gb"]) == 2
    assert (out / "cpu.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_bench_choosers_read_one_id_per_step():
    import torch

    from cosydesk.bench import make_chooser

    logits = torch.tensor([0.0, 5.0, 1.0, -2.0])
    assert make_chooser("argmax", 0)(logits, []) == 1
    ras = make_chooser("ras", 0)
    assert ras(logits, []) in (1, 2) and ras(logits, [1] * 10) != 1  # nucleus pick; a repeat falls back
    with pytest.raises(ValueError, match="argmax or ras"):
        make_chooser("top1", 0)


def test_bench_rejects_gpu_backends_without_cuda(tiny_v2, tmp_path):
    import torch

    if torch.cuda.is_available():
        pytest.skip("CUDA present")
    with pytest.raises(ValueError, match="eager-fp32"):
        main(["bench", "--model", str(tiny_v2), "--backends", "cudagraph", "--limit", "1", "--out", str(tmp_path)])


def test_plot_is_optional_without_matplotlib(monkeypatch, tmp_path):
    """matplotlib is the `bench` extra: without it the bench still writes its JSON, and plot says it drew nothing."""
    import sys

    from cosydesk.bench import plot

    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError
    assert plot({"series": {}}, tmp_path / "x.png") is False
    assert not (tmp_path / "x.png").exists()


def test_the_reference_runs_without_tf32_and_the_flags_come_back(tiny_v2, tmp_path, monkeypatch):
    """cuDNN's default TF32 convolutions made the eager-fp32 reference an approximation: the bench turns TF32 off
    for that backend only, and restores the process-wide flags afterwards, also when the run fails."""
    import torch

    from cosydesk.bench import report
    from cosydesk.bench.backend_run import float32_reference

    seen = {}

    def fake_run_backend(name, *args, **kwargs):
        seen[name] = (torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32)
        raise RuntimeError("stop after recording the flags")

    monkeypatch.setattr(report, "run_backend", fake_run_backend)
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("今天天气真不错。\n", encoding="utf-8")
    before = torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32
    # torch's flag objects are not plain attributes (monkeypatch cannot undo them): set and restored by hand
    torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = True
    try:
        with pytest.raises(RuntimeError, match="stop after"):
            main(["bench", "--model", str(tiny_v2), "--backends", "eager-fp32", "--corpus", str(corpus),
                  "--out", str(tmp_path / "out")])
        assert seen == {"eager-fp32": (False, False)}
        assert torch.backends.cudnn.allow_tf32 and torch.backends.cuda.matmul.allow_tf32  # restored after the failure
        with float32_reference(False):  # any other backend: the flags as they were
            assert torch.backends.cudnn.allow_tf32 and torch.backends.cuda.matmul.allow_tf32
    finally:
        torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = before
