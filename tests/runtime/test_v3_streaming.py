"""v3 bounded-work streaming vocoder (CausalHiFTStream) against the official re-vocoding of the whole mel."""

from __future__ import annotations

import functools

import pytest
import torch

import cosydesk.runtime.token2wav as token2wav_module
from cosydesk.model import load
from cosydesk.model.hift_stream import CausalHiFTStream
from cosydesk.runtime.schedule import CausalChunkSchedule
from cosydesk.runtime.token2wav import Token2Wav
from tests.support.paths import fixture_dir, load_golden

WAVE_ATOL = 1e-3  # task bound; measured on the tiny model: <= 5e-6


@functools.lru_cache(maxsize=None)
def _model():
    return load(fixture_dir("v3") / "model")


def official_revocoding(hift, pushes: list[tuple[torch.Tensor, bool]]) -> tuple[list[torch.Tensor], list[int]]:
    """The official CosyVoice3 token2wav vocoding: append the chunk's mel to the session mel, re-run HiFT over
    the whole accumulated mel with the call's finalize flag, return the samples beyond those already returned.
    Also returns the mel frames HiFT processed per call."""
    accumulated, returned, chunks, frames = None, 0, [], []
    for mel, finalize in pushes:
        accumulated = mel if accumulated is None else torch.cat([accumulated, mel], dim=2)
        wave = hift.inference(accumulated, finalize=finalize)
        frames.append(accumulated.shape[2])
        chunks.append(wave[:, returned:])
        returned += chunks[-1].shape[1]
    return chunks, frames


def bounded_streaming(hift, pushes: list[tuple[torch.Tensor, bool]]) -> tuple[list[torch.Tensor], list[int]]:
    stream = CausalHiFTStream(hift)
    chunks, frames = [], []
    for mel, finalize in pushes:
        chunks.append(stream.push(mel, finalize))
        frames.append(stream.last_window_frames)
    return chunks, frames


def _window_bound(hift, chunk_frames: int) -> int:
    """Most mel frames one bounded call may vocode: its new frames, the left context, 8 frames of right context."""
    return chunk_frames + hift.stream_left_context_frames() + hift.f0_predictor.left_context + 8


def _random_mel(frames: int, seed: int) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(1, 80, frames, generator=generator) * 2 - 5


def _split(mel: torch.Tensor, sizes: list[int]) -> list[tuple[torch.Tensor, bool]]:
    """Chunks of the given sizes (non-final), then the rest as the finalize call."""
    pushes, start = [], 0
    for size in sizes:
        pushes.append((mel[:, :, start:start + size], False))
        start += size
    pushes.append((mel[:, :, start:], True))
    return pushes


def _compare(hift, pushes):
    ours, our_frames = bounded_streaming(hift, pushes)
    ref, ref_frames = official_revocoding(hift, pushes)
    assert [c.shape[1] for c in ours] == [c.shape[1] for c in ref]
    diff = (torch.cat(ours, 1) - torch.cat(ref, 1)).abs().max().item()
    return diff, our_frames, ref_frames


@pytest.mark.parametrize("sizes", [
    [60, 50, 50],              # constant 25-token hops (as in the fixtures' e2e case)
    [60, 100],                 # hops growing 25 -> 50
    [13, 1, 40, 9, 3],         # odd sizes, including chunks too short to release any sample
])
def test_hift_stream_equals_full_revocoding(sizes):
    hift = _model().hift
    mel = _random_mel(sum(sizes) + 20, seed=len(sizes))
    diff, ours, ref = _compare(hift, _split(mel, sizes))
    assert diff <= WAVE_ATOL, f"max |bounded - official| = {diff:.3g}"
    assert diff <= 1e-5  # same arithmetic, only the window differs: float rounding level
    assert max(ours) <= _window_bound(hift, max(sizes + [20]))
    assert ref[-1] == mel.shape[2]


def test_too_little_left_context_is_detected():
    """The comparison is sharp: with a left context well below the derived one the samples differ."""
    hift = _model().hift
    pushes = _split(_random_mel(130, seed=7), [60, 50])
    ref = torch.cat(official_revocoding(hift, pushes)[0], 1)
    stream = CausalHiFTStream(hift, left_context_frames=5)
    ours = torch.cat([stream.push(mel, finalize) for mel, finalize in pushes], 1)
    assert (ours - ref).abs().max().item() > 1e-4  # vs <= 5e-6 with the derived context


def _token2wav_pushes(num_tokens: int, first_hop: int, max_hop: int, monkeypatch):
    """Run Token2Wav (real flow, real prompt, random speech tokens) and record what it hands the vocoder."""
    golden = load_golden("v3")
    model = _model()
    pushes, outputs = [], []

    class RecordingStream(CausalHiFTStream):
        def push(self, mel, finalize):
            out = super().push(mel, finalize)
            pushes.append((mel.clone(), finalize))
            outputs.append(out.clone())
            return out

    monkeypatch.setattr(token2wav_module, "CausalHiFTStream", RecordingStream)
    prompt_token = torch.from_numpy(golden["spk_zeroshot_prompt_speech_token"])
    state = Token2Wav(model, prompt_token, torch.from_numpy(golden["spk_zeroshot_prompt_speech_feat"]),
                      torch.from_numpy(golden["spk_zeroshot_embedding"]), zero_noise=True, streaming=True)
    tokens = torch.randint(0, 6561, (1, num_tokens), generator=torch.Generator().manual_seed(num_tokens))
    schedule = CausalChunkSchedule(prompt_token.shape[1], first_hop=first_hop, max_hop=max_hop,
                                   scale=2 if max_hop > first_hop else 1)
    returned = []
    with torch.inference_mode():
        while True:
            call = schedule.next_call(num_tokens, done=True)
            returned.append(state(tokens, call))
            if call.finalize:
                break
    assert all(torch.equal(r, o[0]) for r, o in zip(returned, outputs))
    return pushes, outputs


@pytest.mark.parametrize("num_tokens, first_hop, max_hop", [
    (90, 25, 100),
    pytest.param(300, 25, 100, marks=pytest.mark.heavy),
    pytest.param(300, 25, 25, marks=pytest.mark.heavy),
    pytest.param(700, 25, 100, marks=pytest.mark.heavy),
])
def test_token2wav_v3_equals_official_revocoding(num_tokens, first_hop, max_hop, monkeypatch):
    hift = _model().hift
    pushes, outputs = _token2wav_pushes(num_tokens, first_hop, max_hop, monkeypatch)
    ref, ref_frames = official_revocoding(hift, pushes)
    assert [o.shape[1] for o in outputs] == [r.shape[1] for r in ref]
    diff = (torch.cat(outputs, 1) - torch.cat(ref, 1)).abs().max().item()
    print(f"{num_tokens} tokens, hops {first_hop}->{max_hop}: max |bounded - official| = {diff:.3g}")
    assert diff <= WAVE_ATOL
    assert ref_frames[-1] == 2 * num_tokens


class _ShapeOnlyHiFT(torch.nn.Module):
    """Stands in for the vocoder in the long-utterance work count: same output shapes, no arithmetic."""

    def __init__(self, hift):
        super().__init__()
        self.real = hift
        self.samples_per_frame = hift.samples_per_frame
        self.num_harmonics = hift.num_harmonics
        self.f0_predictor = hift.f0_predictor
        self.frames: list[int] = []

    def stream_left_context_frames(self) -> int:
        return self.real.stream_left_context_frames()

    def _count(self, mel, finalize):
        frames = mel.shape[2]
        self.frames.append(frames)
        out = frames if finalize else frames - 8
        return torch.zeros(mel.shape[0], out * self.samples_per_frame), frames if finalize else frames - 3

    def inference(self, mel, finalize=True):
        return self._count(mel, finalize)[0]

    def inference_window(self, mel, finalize, first_frame, phase_in, phase_valid_from):
        wave, f0_frames = self._count(mel, finalize)
        return wave, torch.zeros(mel.shape[0], self.num_harmonics, f0_frames, dtype=torch.float64)


def test_work_per_chunk_is_bounded():
    """Mel frames the vocoder processes per 25-token chunk over a 60 s utterance: constant for the bounded
    stream, growing linearly for the official re-vocoding (shapes only: arithmetic is checked above)."""
    hift = _model().hift
    pushes = _split(torch.zeros(1, 80, 3000), [60] + [50] * 58)  # 60 s of mel at 50 frames/s
    counter = _ShapeOnlyHiFT(hift)
    bounded_streaming(counter, pushes)
    ours = counter.frames
    counter.frames = []
    official_revocoding(counter, pushes)
    official = counter.frames
    bound = _window_bound(hift, 60)
    assert max(ours) <= bound, ours
    assert len(set(ours[2:-1])) == 1  # steady state: the same window every chunk
    assert official[-1] == 3000 and official == sorted(official)
    assert sum(official) > 10 * sum(ours)


def test_work_bound_with_real_vocoder():
    """The real vocoder wrapped to count frames: the window stays at its steady size while the utterance grows."""
    hift = _model().hift
    pushes = _split(_random_mel(280, seed=3), [60] + [50] * 4)
    frames = []
    original = hift.inference_window

    def counting(mel, *args, **kwargs):
        frames.append(mel.shape[2])
        return original(mel, *args, **kwargs)

    hift.inference_window = counting
    try:
        bounded_streaming(hift, pushes)
    finally:
        del hift.inference_window
    assert max(frames) <= _window_bound(hift, 60)
    assert len(set(frames[2:-1])) == 1
