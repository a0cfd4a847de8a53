"""The v2 / v1 vocoder on a mel padded to a bucket (``hift_padded``): exact on the valid frames, so a free-length
call (v2's final chunk, any v1 call) can replay a captured graph; the padded buckets cover every such call the
streaming schedules make."""

from __future__ import annotations

import pytest
import torch

from cosydesk.model.hift_source import NsfDraws
from cosydesk.runtime.backends.cudagraph.hift_padded import ValidFrames, padded_forward, reflect_valid_end
from tests.conftest import cuda


@pytest.fixture(scope="module")
def tiny_v2(tmp_path_factory):
    from cosydesk.synthetic.full_size import random_model

    return random_model("v2", "cpu", torch.float32, seed=0, workdir=tmp_path_factory.mktemp("pad"), tiny=True)


@pytest.fixture(scope="module")
def tiny_v1(tmp_path_factory):
    from cosydesk.synthetic.full_size import random_model

    return random_model("v1", "cpu", torch.float32, seed=0, workdir=tmp_path_factory.mktemp("pad1"), tiny=True)


CACHE = {"v2": 3840, "v1": 5120}  # source-cache samples of a call after the first (8 x 480, 20 x 256)


def _padded_case(hift, frames: int, bucket: int, cache: int, zero: bool, seed: int = 0):
    """(reference wave, source) of ``frames`` frames and the padded call's (wave, source) in the ``bucket``."""
    g = torch.Generator().manual_seed(seed)
    mel = torch.randn(1, 80, frames, generator=g)
    padded = torch.zeros(1, 80, bucket)
    padded[:, :, :frames] = mel
    draws = hift.zero_draws(padded) if zero else hift.random_draws(padded, g)
    # the unpadded call consumes the first frames' worth of the bucket's draws
    cut = NsfDraws(draws.initial_phase, draws.noise[:, :frames * hift.samples_per_frame].contiguous())
    cache_source = torch.randn(1, 1, cache, generator=g) * 0.1 if cache else None
    valid = ValidFrames(bucket, torch.device("cpu"))
    valid.frames.fill_(frames)
    with torch.inference_mode():
        return hift(mel, cut, cache_source), padded_forward(hift, padded, valid, draws, cache_source)


@pytest.mark.parametrize("frames,bucket,cache,zero", [
    (5, 6, 0, True),  # one frame of room: the written reflection ends at the bucket's end
    (12, 32, 0, False),
    (30, 48, 720, False),  # a source cache shorter than the call
    (47, 48, 960, True),
    (10, 16, 3840, False),  # the app's 8-frame cache: the smallest final chunk after a first one
])
def test_padded_vocoder_equals_the_unpadded_call_on_the_valid_samples_cpu(tiny_v2, frames, bucket, cache, zero):
    hift = tiny_v2.hift.eval()
    (ref_wave, ref_source), (wave, source) = _padded_case(hift, frames, bucket, cache, zero)
    samples = frames * hift.samples_per_frame
    assert wave.shape == (1, bucket * hift.samples_per_frame)
    torch.testing.assert_close(wave[:, :samples], ref_wave, rtol=0, atol=1e-6)
    torch.testing.assert_close(source[:, :, :samples], ref_source, rtol=0, atol=1e-6)
    assert not wave[:, samples:].any() and not source[:, :, samples:].any()  # silence past the end, no NaN


def test_the_padded_form_holds_for_the_v1_vocoder_too_cpu(tiny_v1):
    """v1's vocoder (22.05 kHz, per-sample phase source, 8 x 8 upsampling) under the same masks: exact as well."""
    hift = tiny_v1.hift.eval()
    g = torch.Generator().manual_seed(0)
    mel = torch.randn(1, 80, 12, generator=g)
    padded = torch.zeros(1, 80, 32)
    padded[:, :, :12] = mel
    draws = hift.random_draws(padded, g)
    samples = 12 * hift.samples_per_frame
    cut = NsfDraws(draws.initial_phase, draws.noise[:, :, :samples].contiguous())  # v1 noise is [B, H, L]
    valid = ValidFrames(32, torch.device("cpu"))
    valid.frames.fill_(12)
    with torch.inference_mode():
        ref, _ = hift(mel, cut)
        wave, _ = padded_forward(hift, padded, valid, draws)
    torch.testing.assert_close(wave[:, :samples], ref, rtol=0, atol=1e-6)


def test_without_the_masks_the_padding_changes_the_last_samples_cpu(tiny_v2):
    """What the masks are for: the plain vocoder on the zero-padded mel differs from the unpadded call at the end."""
    hift = tiny_v2.hift.eval()
    (ref_wave, _), _ = _padded_case(hift, 12, 32, 0, True)
    padded = torch.zeros(1, 80, 32)
    padded[:, :, :12] = torch.randn(1, 80, 12, generator=torch.Generator().manual_seed(0))
    with torch.inference_mode():
        plain, _ = hift(padded, hift.zero_draws(padded))
    tail = slice(ref_wave.shape[1] - 480, ref_wave.shape[1])
    assert float((plain[:, tail] - ref_wave[:, tail]).abs().max()) > 1e-3


def test_the_written_reflection_is_what_the_stft_pads_an_unpadded_source_with():
    g = torch.Generator().manual_seed(1)
    source = torch.randn(1, 1, 5 * 16, generator=g)
    bucket = torch.zeros(1, 1, 8 * 16)
    bucket[:, :, :80] = source
    valid = ValidFrames(8, torch.device("cpu"))
    valid.frames.fill_(5)
    written = reflect_valid_end(bucket, valid, samples_per_frame=16, width=8)
    window = torch.hann_window(16)
    ref = torch.stft(source[:, 0], 16, 4, 16, window=window, return_complex=True)
    ours = torch.stft(written[:, 0], 16, 4, 16, window=window, return_complex=True)[:, :, :ref.shape[2]]
    torch.testing.assert_close(ours, ref)
    assert torch.equal(written[:, :, :80], source)  # the valid samples are untouched


def test_a_fresh_bucket_runs_before_any_length_is_set_cpu(tiny_v2):
    """A capture warms up and records the body before a request sets the length: a fresh ``ValidFrames`` holds the
    bucket's longest length (not 0, which would reflect samples before the source's start)."""
    valid = ValidFrames(16, torch.device("cpu"))
    assert int(valid.frames) == 15
    padded = torch.zeros(1, 80, 16)
    with torch.inference_mode():
        wave, _ = padded_forward(tiny_v2.hift.eval(), padded, valid, tiny_v2.hift.zero_draws(padded))
    assert torch.isfinite(wave).all()
    with pytest.raises(ValueError, match="2 frames"):
        ValidFrames(1, torch.device("cpu"))


def test_masks_follow_each_stage_length():
    valid = ValidFrames(10, torch.device("cpu"))
    valid.frames.fill_(7)
    assert int(valid.mask(10).sum()) == 7
    assert int(valid.mask(80).sum()) == 56  # an 8x upsampled stage
    assert int(valid.mask(1201).sum()) == 841  # 120x frames + the reflect-padded one
    valid.frames.fill_(3)
    valid.reset()  # a new call: masks are made again from the new length
    assert int(valid.mask(80).sum()) == 24
    with pytest.raises(ValueError, match="bucket"):
        padded_forward(None, torch.zeros(1, 80, 9), valid, None)


def test_final_hift_shapes_cover_every_final_v2_call():
    """Every final v2 HiFT call the streaming schedule makes (any prompt length, any sentence length up to a
    minute) finds a padded bucket with room and the same source cache."""
    from cosydesk.runtime.backends.cudagraph.hift import final_hift_shapes
    from cosydesk.runtime.schedule import make_schedule
    from cosydesk.runtime.token2wav import V2_MEL_CACHE_FRAMES, V2_SOURCE_CACHE_SAMPLES

    shapes = final_hift_shapes()
    assert len(shapes) == len(set(shapes)) <= 24  # each one a graph held for the whole session
    for prompt in range(0, 60, 3):
        for tokens in range(1, 1500, 7):
            schedule = make_schedule("v2", prompt)
            chunks = 0
            while True:
                call = schedule.next_call(tokens, done=True)
                if call.finalize:
                    break
                chunks += 1
            frames = 2 * (tokens - call.token_offset) + (V2_MEL_CACHE_FRAMES if chunks else 0)
            cache = V2_SOURCE_CACHE_SAMPLES if chunks else 0
            assert any(b > frames and c == cache for b, c in shapes), (prompt, tokens, frames, cache)


@pytest.mark.parametrize("version,small,large", [("v2", 16, 32), ("v1", 32, 64)])  # v1: 20 cached frames
def test_graphed_hift_routes_free_lengths_to_the_padded_buckets_cpu(request, version, small, large, monkeypatch):
    """``GraphedHift``'s dispatch with graphs that replay their captured body eagerly (no CUDA here): a free length
    with a cache goes to the smallest padded bucket with room, one past every bucket stays eager, and both give
    the unpadded vocoder's samples; random draws are drawn afresh into the graph's buffers at each call."""
    import copy
    from types import SimpleNamespace

    from cosydesk.runtime.backends import HalfHift
    from cosydesk.runtime.backends.cudagraph import hift as graphed

    monkeypatch.setattr(graphed, "capture_graphs", lambda jobs, *args, **kwargs: {
        key: SimpleNamespace(replay=body) for key, body in jobs})
    half = HalfHift(copy.deepcopy(request.getfixturevalue(f"tiny_{version}").hift).eval(), torch.float32)
    n = CACHE[version]
    hift = graphed.GraphedHift(half, [(20, 0)], padded_shapes=[(small, n), (large, n), (large, 0)])
    g = torch.Generator().manual_seed(3)
    cache = torch.randn(1, 1, n, generator=g) * 0.1
    for frames, cache_source, bucket in ((small - 6, cache, small), (small, cache, large), (large - 1, None, large),
                                         (large + 8, cache, None)):
        mel = torch.randn(1, 80, frames, generator=g)
        before = hift.eager_calls
        wave, _ = hift.inference_with_source(mel, cache_source=cache_source, zero_noise=True)
        ref, _ = half.inference_with_source(mel, cache_source=cache_source, zero_noise=True)
        assert hift._padded_key(frames, 0 if cache_source is None else n) == (
            None if bucket is None else (bucket, 0 if cache_source is None else n))
        assert hift.eager_calls - before == (bucket is None)
        torch.testing.assert_close(wave, ref, rtol=0, atol=1e-6)
    mel = torch.randn(1, 80, small - 4, generator=g)
    first, second = (hift.inference_with_source(mel, cache_source=cache)[0] for _ in range(2))
    assert hift.eager_calls == 1 and torch.isfinite(first).all() and not torch.equal(first, second)


def test_final_chunk_graphs_are_on_unless_turned_off(monkeypatch):
    """On by default (timed on the H200); ``COSYDESK_FINAL_HIFT_GRAPHS=0`` keeps the final chunk eager."""
    from cosydesk.runtime.backends.cudagraph.hift import final_hift_graphs_wanted

    monkeypatch.delenv("COSYDESK_FINAL_HIFT_GRAPHS", raising=False)
    assert final_hift_graphs_wanted()
    monkeypatch.setenv("COSYDESK_FINAL_HIFT_GRAPHS", "0")
    assert not final_hift_graphs_wanted()


@cuda
@pytest.mark.gpu
@pytest.mark.parametrize("version,calls", [("v2", ((10, 3840), (57, 3840), (100, 0), (211, 3840))),
                                           ("v1", ((54, 5120), (106, 5120), (172, 0), (204, 0), (224, 5120)))])
def test_free_length_calls_replay_padded_graphs_on_the_gpu(request, version, calls, monkeypatch):
    """With the padded graphs on (v2's final chunks and v1's calls, both by default) a free-length call replays
    a padded graph (no eager call) and gives what the same float16 vocoder gives eagerly on the unpadded mel;
    repeated calls allocate nothing."""
    from tests.runtime.backends.cudagraph.test_cudagraph import _graph_model

    monkeypatch.setenv("COSYDESK_FINAL_HIFT_GRAPHS", "1")
    monkeypatch.setenv("COSYDESK_V1_HIFT_GRAPHS", "1")
    model = _graph_model(request.getfixturevalue(f"tiny_{version}"))
    hift = model.hift
    assert any(key[:1] == ("padded",) for key in hift.graphs)
    g = torch.Generator(device="cuda").manual_seed(0)
    for frames, cache in calls:
        mel = torch.randn(1, 80, frames, device="cuda", generator=g)
        cache_source = torch.randn(1, 1, cache, device="cuda", generator=g) * 0.1 if cache else None
        before = hift.eager_calls
        wave, _ = hift.inference_with_source(mel, cache_source=cache_source, zero_noise=True)
        assert hift.eager_calls == before, frames
        eager, _ = hift.half.inference_with_source(mel, cache_source=cache_source, zero_noise=True)
        assert wave.shape == eager.shape
        assert float((wave - eager).abs().max()) < 2e-3, frames
    torch.cuda.synchronize()
    reserved = torch.cuda.memory_stats()["reserved_bytes.all.current"]
    for _ in range(3):
        hift.inference_with_source(torch.randn(1, 80, 57, device="cuda", generator=g), zero_noise=True)
    torch.cuda.synchronize()
    assert torch.cuda.memory_stats()["reserved_bytes.all.current"] == reserved


@cuda
@pytest.mark.gpu
def test_v1_streamed_requests_replay_vocoder_graphs_and_reserve_nothing_new(tiny_v1, monkeypatch):
    """Default settings, whole streamed v1 requests (two windows and a final one): every vocoder call replays a
    padded graph, and after one warm-up request further ones give the same audio and reserve no new memory."""
    import numpy as np

    from cosydesk.runtime.token2wav import stream_token2wav
    from tests.runtime.backends.cudagraph.test_cudagraph import _graph_model

    monkeypatch.delenv("COSYDESK_V1_HIFT_GRAPHS", raising=False)
    model = _graph_model(tiny_v1)
    g = torch.Generator().manual_seed(0)
    prompt_token = torch.randint(0, 4096, (1, 20), generator=g)
    prompt_feat, embedding = torch.randn(1, 40, 80, generator=g), torch.randn(1, 192, generator=g)
    tokens = torch.randint(0, 4096, (1, 250), generator=g)

    def request():
        torch.manual_seed(0)  # v1's flow draws its starting noise per call (the official v1 does too)
        return [c for c in stream_token2wav(model, tokens, prompt_token, prompt_feat, embedding, zero_noise=True)]

    first = request()
    torch.cuda.synchronize()
    stats = torch.cuda.memory_stats()
    reserved, segments = stats["reserved_bytes.all.current"], stats["segment.all.current"]
    for _ in range(3):
        again = request()
        assert len(again) == len(first) >= 3 and all(np.array_equal(a, b) for a, b in zip(first, again))
    torch.cuda.synchronize()
    stats = torch.cuda.memory_stats()
    assert stats["reserved_bytes.all.current"] == reserved and stats["segment.all.current"] == segments
    assert model.hift.eager_calls == 0


def _v1_calls(tokens: int) -> list[tuple[int, int]]:
    """(mel frames, source-cache samples) of each v1 vocoder call for a streamed sentence of ``tokens`` tokens:
    120-token windows (hop 100) at 22050 / 256 frames per 50 tokens, 34 frames held back from each non-final
    window, 20 cached frames in front after the first call."""
    from cosydesk.model.length_regulator import frames_for_tokens
    from cosydesk.runtime.schedule import make_schedule

    schedule, calls = make_schedule("v1", 0), []
    while True:
        call = schedule.next_call(tokens, done=True)
        frames = frames_for_tokens(call.end - call.start, 50) - (0 if call.finalize else 34)
        calls.append((frames + (20 if calls else 0), 5120 if calls else 0))
        if call.finalize:
            return calls


def test_v1_hift_shapes_cover_every_streamed_v1_call(tiny_v1):
    """Every v1 vocoder call of a streamed sentence up to a minute lands in a padded bucket with room and the same
    cache; the call list is what ``stream_token2wav`` really makes (checked on the tiny v1 model)."""
    import dataclasses

    from cosydesk.runtime import stream_token2wav
    from cosydesk.runtime.backends.cudagraph.hift import v1_hift_shapes

    shapes = v1_hift_shapes()
    assert len(shapes) == len(set(shapes)) <= 24
    for tokens in range(1, 3000, 3):
        for frames, cache in _v1_calls(tokens):
            assert any(b > frames and c == cache for b, c in shapes), (tokens, frames, cache)
    model, seen = tiny_v1, []

    class Recording:
        def inference_with_source(self, mel, cache_source=None, **kwargs):
            seen.append((mel.shape[2], 0 if cache_source is None else cache_source.shape[2]))
            return model.hift.inference_with_source(mel, cache_source=cache_source, **kwargs)

    recorded = dataclasses.replace(model, hift=Recording())
    g = torch.Generator().manual_seed(0)
    for tokens in (30, 150, 250):
        seen.clear()
        list(stream_token2wav(recorded, torch.randint(0, 4096, (1, tokens), generator=g),
                              torch.zeros(1, 0, dtype=torch.int32), torch.zeros(1, 0, 80),
                              torch.randn(1, 192, generator=g), stream=True, zero_noise=True))
        assert seen == _v1_calls(tokens), tokens


def test_redraw_writes_fresh_draws_of_the_official_kinds_in_place(tiny_v2, tiny_v1):
    """What a graph's static draws get per call: v1 phases in radians [-pi, pi), v2 in cycles [0, 1), standard
    normal noise, written into the same tensors."""
    import math

    torch.manual_seed(0)
    for hift, low, high in ((tiny_v1.hift, -math.pi, math.pi), (tiny_v2.hift, 0.0, 1.0)):
        draws = hift.zero_draws(torch.zeros(1, 80, 200))
        phase, noise = draws.initial_phase, draws.noise
        hift.redraw(draws)
        assert draws.initial_phase is phase and draws.noise is noise
        assert low <= float(phase.min()) and float(phase.max()) < high and float(phase.std()) > 0.1 * (high - low)
        assert abs(float(noise.mean())) < 0.02 and abs(float(noise.std()) - 1) < 0.02


def test_v1_vocoder_graphs_are_on_unless_turned_off(monkeypatch):
    from cosydesk.runtime.backends.cudagraph.hift import v1_hift_graphs_wanted

    monkeypatch.delenv("COSYDESK_V1_HIFT_GRAPHS", raising=False)
    assert v1_hift_graphs_wanted()
    monkeypatch.setenv("COSYDESK_V1_HIFT_GRAPHS", "0")
    assert not v1_hift_graphs_wanted()
