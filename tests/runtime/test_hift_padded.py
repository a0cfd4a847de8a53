"""The v2 vocoder on a mel padded to a bucket (``hift_padded``): exact on the valid frames, so the final chunk of
a sentence can replay a captured graph; the padded buckets cover every final call the streaming schedule makes."""

from __future__ import annotations

import pytest
import torch

from cosydesk.model.hift_source import NsfDraws
from cosydesk.runtime.cudagraph.hift_padded import ValidFrames, padded_forward, reflect_valid_end
from tests.conftest import cuda


@pytest.fixture(scope="module")
def tiny_v2(tmp_path_factory):
    from cosydesk.testing.full_size import random_model

    return random_model("v2", "cpu", torch.float32, seed=0, workdir=tmp_path_factory.mktemp("pad"), tiny=True)


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


def test_the_padded_form_holds_for_the_v1_vocoder_too_cpu(tmp_path):
    """v1's vocoder (22.05 kHz, per-sample phase source, 8 x 8 upsampling) under the same masks: exact as well."""
    from cosydesk.testing.full_size import random_model

    hift = random_model("v1", "cpu", torch.float32, seed=0, workdir=tmp_path, tiny=True).hift.eval()
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
    from cosydesk.runtime.cudagraph.hift import final_hift_shapes
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


def test_graphed_hift_routes_free_lengths_to_the_padded_buckets_cpu(tiny_v2, monkeypatch):
    """``GraphedHift``'s dispatch with graphs that replay their captured body eagerly (no CUDA here): a free length
    with a cache goes to the smallest padded bucket with room, one past every bucket stays eager, and both give
    the unpadded vocoder's samples."""
    import copy
    from types import SimpleNamespace

    from cosydesk.runtime.backends import HalfHift
    from cosydesk.runtime.cudagraph import hift as graphed

    monkeypatch.setattr(graphed, "capture_graphs", lambda jobs, *args, **kwargs: {
        key: SimpleNamespace(replay=body) for key, body in jobs})
    half = HalfHift(copy.deepcopy(tiny_v2.hift).eval(), torch.float32)
    hift = graphed.GraphedHift(half, [(20, 0)], final_shapes=[(16, 3840), (32, 3840), (32, 0)])
    g = torch.Generator().manual_seed(3)
    cache = torch.randn(1, 1, 3840, generator=g) * 0.1
    for frames, cache_source, bucket in ((10, cache, 16), (16, cache, 32), (31, None, 32), (40, cache, None)):
        mel = torch.randn(1, 80, frames, generator=g)
        before = hift.eager_calls
        wave, _ = hift.inference_with_source(mel, cache_source=cache_source, zero_noise=True)
        ref, _ = half.inference_with_source(mel, cache_source=cache_source, zero_noise=True)
        assert hift._padded_key(frames, 0 if cache_source is None else 3840) == (
            None if bucket is None else (bucket, 0 if cache_source is None else 3840))
        assert hift.eager_calls - before == (bucket is None)
        torch.testing.assert_close(wave, ref, rtol=0, atol=1e-6)


def test_final_chunk_graphs_are_on_unless_turned_off(monkeypatch):
    """On by default (timed on the H200); ``COSYDESK_FINAL_HIFT_GRAPHS=0`` keeps the final chunk eager."""
    from cosydesk.runtime.cudagraph.hift import final_hift_graphs_wanted

    monkeypatch.delenv("COSYDESK_FINAL_HIFT_GRAPHS", raising=False)
    assert final_hift_graphs_wanted()
    monkeypatch.setenv("COSYDESK_FINAL_HIFT_GRAPHS", "0")
    assert not final_hift_graphs_wanted()


@cuda
@pytest.mark.gpu
def test_final_chunks_replay_padded_graphs_on_the_gpu(tiny_v2, monkeypatch):
    """With the padded graphs on (the default) a free-length final call replays a padded graph (no eager call) and
    gives what the same float16 vocoder gives eagerly on the unpadded mel; repeated calls allocate nothing."""
    from tests.runtime.test_cudagraph import _graph_model

    monkeypatch.setenv("COSYDESK_FINAL_HIFT_GRAPHS", "1")
    model = _graph_model(tiny_v2)
    hift = model.hift
    assert any(key[:1] == ("padded",) for key in hift.graphs)
    g = torch.Generator(device="cuda").manual_seed(0)
    for frames, cache in ((10, 3840), (57, 3840), (100, 0), (211, 3840)):
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

