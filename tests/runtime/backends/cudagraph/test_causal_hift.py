"""v3's causal vocoder stream with padded window graphs (``causal_hift``): a window padded to its bucket gives the
eager window's samples and phase, the stream built on it gives the eager stream's audio, and the buckets cover
every window a streamed sentence makes."""

from __future__ import annotations

import copy
import functools
from types import SimpleNamespace

import pytest
import torch

from cosydesk.model import load
from cosydesk.model.hift_stream import CausalHiFTStream
from tests.conftest import cuda
from tests.support.paths import fixture_dir

BUCKETS = [16, 32, 48, 64, 96, 128]


@functools.lru_cache(maxsize=None)
def _model():
    return load(fixture_dir("v3") / "model")


def _replayed_eagerly(jobs, *args, **kwargs):
    """``capture_graphs`` stand-in for the CPU: each 'graph' replays its captured body eagerly."""
    return {key: SimpleNamespace(replay=body) for key, body in jobs}


@functools.lru_cache(maxsize=None)
def _graphed(buckets=tuple(BUCKETS), device="cpu"):
    """(graphed vocoder, eager copy), made once per device (a window's state lives in the caller's stream)."""
    from cosydesk.runtime.backends.cudagraph.causal_hift import GraphedCausalHift

    _model().hift.fixed_noise.reserve(480 * 500)  # drawn once, then copied with the vocoder
    hift = copy.deepcopy(_model().hift).to(device).eval()
    eager = copy.deepcopy(hift)
    capture = None if device == "cuda" else _replayed_eagerly
    return GraphedCausalHift(hift, list(buckets), capture=capture), eager


def _mel(frames: int, seed: int, device="cpu") -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(1, 80, frames, generator=g) * 2 - 5).to(device)


def _stream(hift, mel: torch.Tensor, sizes: list[int]) -> list[torch.Tensor]:
    """Push ``mel`` in chunks of ``sizes`` (non-final) and the rest as the final call."""
    stream, chunks, start = CausalHiFTStream(hift), [], 0
    for size in sizes:
        chunks.append(stream.push(mel[:, :, start:start + size], finalize=False))
        start += size
    chunks.append(stream.push(mel[:, :, start:], finalize=True))
    return chunks


@pytest.mark.parametrize("frames,finalize,first,valid_from", [
    (20, False, 0, 0),   # a first window (the official initial phase offset), bucket 32
    (32, False, 0, 0),   # a non-final window exactly the bucket's size
    (45, True, 96, 9),   # a final window inside an utterance: carried phase from frame 9 of the window
    (47, True, 0, 0),    # one frame of room left in the bucket
])
def test_a_padded_window_equals_the_eager_window_cpu(frames, finalize, first, valid_from):
    graphed, eager = _graphed()
    mel = _mel(frames, seed=frames)
    phase_in = torch.rand(1, eager.num_harmonics, dtype=torch.float64) * 50
    with torch.inference_mode():
        ref_wave, ref_phase = eager.inference_window(mel, finalize, first, phase_in, valid_from)
    before = graphed.eager_calls
    wave, phase = graphed.inference_window(mel, finalize, first, phase_in, valid_from)
    assert graphed.eager_calls == before
    assert wave.shape == ref_wave.shape and phase.shape == ref_phase.shape
    torch.testing.assert_close(wave, ref_wave, rtol=0, atol=1e-5)
    torch.testing.assert_close(phase[:, :, valid_from:], ref_phase[:, :, valid_from:], rtol=0, atol=1e-9)


def test_without_the_final_masks_the_padding_changes_the_last_samples_cpu():
    """What the final window's masks are for: the plain vocoder on the zero-padded mel differs at the end."""
    _, eager = _graphed()
    mel = _mel(40, seed=1)
    padded = torch.nn.functional.pad(mel, (0, 24))
    with torch.inference_mode():
        ref = eager.inference(mel, finalize=True)
        plain = eager.inference(padded, finalize=True)[:, :ref.shape[1]]
    assert float((plain[:, -480:] - ref[:, -480:]).abs().max()) > 1e-3


@pytest.mark.parametrize("sizes,total", [([60, 50], 150), ([13, 1, 40, 9, 3], 90), ([60, 100], 300)])
def test_the_stream_on_window_graphs_gives_the_eager_stream_cpu(sizes, total):
    """Whole streams (chunks too short to release a sample, windows past the largest bucket): the same audio, and
    only windows past every bucket run eager."""
    graphed, eager = _graphed()
    mel = _mel(total, seed=total)
    with torch.inference_mode():
        ref = _stream(eager, mel, sizes)
    before = graphed.eager_calls
    ours = _stream(graphed, mel, sizes)
    assert [c.shape[1] for c in ours] == [c.shape[1] for c in ref]
    torch.testing.assert_close(torch.cat(ours, 1), torch.cat(ref, 1), rtol=0, atol=1e-5)
    # the 100-frame chunk's window is past the largest bucket (the tiny vocoder's left context is long): eager
    assert (graphed.eager_calls > before) == (total == 300)


def test_buckets_cover_every_window_a_streamed_sentence_makes():
    """Every window of streamed v3 sentences (any prompt padding, hops 25 -> 50 -> 100, up to a minute) fits a
    bucket: the windows ``CausalHiFTStream`` plans for the chunk calls the schedule makes, on the full-size and the
    tiny vocoder's contexts."""
    from cosydesk.runtime.backends.cudagraph.causal_hift import causal_window_buckets
    from cosydesk.runtime.schedule import CausalChunkSchedule

    for left, f0_left in ((35, 8), (_model().hift.stream_left_context_frames(), _model().hift.f0_predictor.left_context)):
        fake = SimpleNamespace(stream_left_context_frames=lambda left=left: left,
                               f0_predictor=SimpleNamespace(left_context=f0_left))
        buckets = causal_window_buckets(fake)
        assert len(buckets) <= 10
        for prompt in range(0, 25):
            for tokens in range(1, 1500, 11):
                schedule, out, spf = CausalChunkSchedule(prompt), 0, 480
                while True:
                    call = schedule.next_call(tokens, done=True)
                    total = 2 * (call.end - (0 if call.finalize else schedule.lookahead))
                    valid_from = max(0, out // spf - left)
                    window = total - max(0, valid_from - f0_left)
                    if call.finalize:
                        assert any(b > window for b in buckets), (prompt, tokens, window)
                        break
                    if (total - 8) * spf > out:
                        assert any(b >= window for b in buckets), (prompt, tokens, window)
                        out = (total - 8) * spf


def test_window_graphs_are_on_unless_turned_off(monkeypatch):
    from cosydesk.runtime.options import EngineOptions

    monkeypatch.delenv("COSYDESK_V3_HIFT_GRAPHS", raising=False)
    assert EngineOptions.from_env().v3_hift_graphs
    monkeypatch.setenv("COSYDESK_V3_HIFT_GRAPHS", "0")
    assert not EngineOptions.from_env().v3_hift_graphs


@cuda
@pytest.mark.gpu
def test_window_graphs_replay_the_eager_stream_on_the_gpu():
    """Captured for real: the stream's windows replay graphs (none eager), the audio is the eager float32 stream's
    within kernel rounding, and further streams allocate nothing."""
    graphed, eager = _graphed(device="cuda")
    assert len(graphed.graphs) == 2 * len(BUCKETS)
    before = graphed.eager_calls
    mel = _mel(230, seed=3, device="cuda")
    with torch.inference_mode():
        ref = torch.cat(_stream(eager, mel, [60, 50, 50]), 1)
    ours = torch.cat(_stream(graphed, mel, [60, 50, 50]), 1)
    assert graphed.eager_calls == before and ours.shape == ref.shape
    assert float((ours - ref).abs().max()) < 1e-4
    torch.cuda.synchronize()
    reserved = torch.cuda.memory_stats()["reserved_bytes.all.current"]
    for _ in range(3):
        again = torch.cat(_stream(graphed, mel, [60, 50, 50]), 1)
    torch.cuda.synchronize()
    assert torch.equal(again, ours)
    assert torch.cuda.memory_stats()["reserved_bytes.all.current"] == reserved
