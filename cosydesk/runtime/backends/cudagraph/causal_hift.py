"""v3's causal HiFT on the fast path: each window call of the bounded-work stream (``CausalHiFTStream``) replays a
CUDA graph of the window padded to a frame bucket, instead of ~1,000 kernels launched from Python (H200: 43.5 ms
eager for a sentence's first two chunks).

Why padding is exact here (unlike v2's symmetric vocoder, ``hift_padded``):
- a *non-final* window (``finalize=False``) already treats its last 8 frames as right context only, and every
  layer is causal past that look-ahead, so its first ``(T - 8) * samples_per_frame`` samples do not depend on what
  follows frame T: the window zero-padded to the bucket and run with ``finalize=False`` gives them unchanged;
- the *final* window (``finalize=True``) pads its end with zeros for the f0 look-ahead and ``conv_pre`` (the
  bucket's zeros are the same zeros), but the source STFT reflects the tensor's end and the iSTFT overlap-adds
  frames past it: the source gets the reflection of its *valid* end written after it, spectrum frames past the
  end are zeroed and the iSTFT envelope counts only valid frames (``hift_padded.ValidFrames`` masks, one rule
  for every stage length);
- what the eager window takes as Python ints becomes device scalars set before each replay: the first frame whose
  phase increments count (``carried_phase``'s slice becomes a mask: the same zeros, so the same sums), the fixed
  noise slice at the window's absolute position (copied from pinned host memory into the graph's buffer, which
  every graph shares) and the initial phase offset
  (the official one at sample 0, zeros for a window starting later).
The vocoder stays float32 (its float64 f0 predictor and carried float64 phase as eager), so the graphs give the
eager samples up to kernel-choice rounding (tests: <= 1e-4 on the GPU, exact on the CPU).

``EngineOptions.v3_hift_graphs`` (``COSYDESK_V3_HIFT_GRAPHS=0``) keeps the eager stream.
"""

from __future__ import annotations

import functools

import torch

from cosydesk.model.hift_source import frame_cycles, harmonics_from_phase, merge_harmonics
from cosydesk.runtime.buckets import copy_padded
from cosydesk.runtime.backends.cudagraph.capture import capture_graphs
from cosydesk.runtime.backends.cudagraph.graph_table import GraphTable, TableViews, shared_prefix_views
from cosydesk.runtime.backends.cudagraph.hift_padded import ValidFrames, reflect_valid_end

BUCKET_STEP = 32  # frames: the vocoder is launch-bound, so coarse buckets cost little and save graphs
RIGHT_CONTEXT_FRAMES = 8  # a non-final window's frames that only serve as look-ahead (f0 3, conv_pre 4, 1 trimmed)


def causal_window_buckets(hift, max_hop_tokens: int = 100, first_pad_tokens: int = 24, lookahead_tokens: int = 3,
                          token_mel_ratio: int = 2, step: int = BUCKET_STEP) -> list[int]:
    """Frame buckets serving every window the v2/v3 chunk schedule (hops of 25 + pad, 50, 100 tokens) makes the
    stream vocode: a window holds a call's new frames (at most the largest hop plus the look-ahead, or the first
    hop with its prompt padding) behind the left context and the right context the previous call held back;
    a final window needs one frame of room (the written reflection). Longer windows (a whole sentence vocoded at
    once, outside streaming) run eager."""
    new = token_mel_ratio * (max(max_hop_tokens, 25 + first_pad_tokens) + lookahead_tokens)
    longest = new + hift.stream_left_context_frames() + hift.f0_predictor.left_context + RIGHT_CONTEXT_FRAMES
    top = -(-(longest + 1) // step) * step
    return list(range(step, top + 1, step))


def padded_window_forward(hift, b: dict, finalize: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """``CausalHiFTGenerator.window_forward`` on the static buffers ``b`` of one bucket (mel zero-padded past the
    valid frames, noise at the window's position, initial offset, carried phase and its first valid frame as
    device values): (wave of the bucket, running phase [B, H, frames] float64), exact on the valid part."""
    mel, valid = b["mel"], b["valid"]
    valid.reset()
    f0 = hift.predict_f0(mel, finalize).float()
    per_sample = hift._upsample_f0(f0)
    per_frame = frame_cycles(per_sample, b["rand_ini"], hift.sampling_rate, hift.samples_per_frame,
                             hift.num_harmonics)
    counted = torch.arange(per_frame.shape[2], device=mel.device) >= b["valid_from"]
    increments = per_frame.double() * counted.double()  # carried_phase's F.pad(x[..., valid_from:]): same zeros
    phase = torch.cumsum(torch.cat([b["phase_in"].unsqueeze(-1), increments], dim=2), dim=2)[:, :, 1:]
    noise = b["noise"][:, :per_sample.shape[1]]
    harmonics = harmonics_from_phase(per_sample, phase, noise, hift.samples_per_frame, hift.sine_amp,
                                     hift.noise_std, hift.voiced_threshold, phase_upsample_mode="nearest")
    source = merge_harmonics(harmonics, hift.m_source.l_linear)
    if not finalize:
        wave = hift.decode(mel[:, :, : mel.shape[2] - hift.f0_predictor.look_ahead], source, finalize=False)
        return wave.to(mel.dtype), phase
    source = reflect_valid_end(source, valid, hift.samples_per_frame, hift.n_fft // 2)
    spectrum = hift._source_spectrum(source)
    spectrum = spectrum * valid.mask(spectrum.shape[2])
    head = hift._fused_upsampling(hift.conv_pre(mel, finalize=True), spectrum)
    wave = hift._spectrum_to_wave(head, valid.mask(head.shape[2])).clamp(-hift.audio_limit, hift.audio_limit)
    return wave.to(mel.dtype), phase


class GraphedCausalHift(TableViews):
    """Drop-in for the v3 ``CausalHiFTGenerator`` under ``CausalHiFTStream``: ``inference_window`` replays a graph
    per (bucket, finalize); the rest of the ``CausalVocoder`` contract (runtime/backends/protocols.py) is the
    vocoder's own."""

    def __init__(self, hift, buckets: list[int] | None = None, pool=None, progress=None, capture=None):
        from cosydesk.model.hift import Snake
        from cosydesk.runtime.backends.cudagraph.compile import compile_blocks
        from cosydesk.runtime.backends.cudagraph.hift import fold_weight_norms

        self.hift = hift
        param = next(hift.parameters())
        self.device, self.dtype = param.device, param.dtype
        # constant weights computed once, not a kernel per conv per call; not the f0 predictor's: it recomputes its
        # weight norms in float64 from the raw parts (``weight_in_dtype``), a folded float32 weight would round them
        for name, child in hift.named_children():
            if name != "f0_predictor":
                fold_weight_norms(child)
        compile_blocks(hift, (Snake,), self.device)
        self.table = GraphTable("vocoder", self.device, buckets or causal_window_buckets(hift))
        spf, harmonics = hift.samples_per_frame, hift.num_harmonics
        # One noise buffer for every graph, each reading its bucket's prefix: windows run one at a time and each
        # copies its own slice in first (one per graph held 50 MB at full size, 18 graphs of up to 5 MB).
        noise = shared_prefix_views({b: (1, b * spf, harmonics) for b in self.buckets}, self.device, torch.float32)
        for bucket in self.buckets:
            for finalize in (False, True):
                self.bufs[(bucket, finalize)] = {
                    "mel": torch.zeros(1, 80, bucket, device=self.device, dtype=self.dtype),
                    "valid": ValidFrames(bucket, self.device),
                    "rand_ini": torch.zeros(1, harmonics, device=self.device),
                    "noise": noise[bucket],
                    "phase_in": torch.zeros(1, harmonics, device=self.device, dtype=torch.float64),
                    "valid_from": torch.zeros((), device=self.device, dtype=torch.long)}
        self._noise_source: torch.Tensor | None = None  # the host noise tensor the pinned copy below was made from
        self._pinned: tuple[torch.Tensor, torch.Tensor] | None = None
        # drawn and pinned at load, not during the first request
        self._host_noise(min(self.buckets[-1] * spf, hift.fixed_noise.limit))
        jobs = [(key, functools.partial(self._body, key)) for key in self.bufs]
        self.table.capture(jobs, pool, progress, capture=capture or capture_graphs)

    def _body(self, key) -> None:
        b = self.bufs[key]
        b["wave"], b["phase"] = padded_window_forward(self.hift, b, finalize=key[1])

    def _bucket(self, frames: int, finalize: bool) -> int | None:
        """The smallest bucket for a window of ``frames`` (a final one needs a frame of room)."""
        fits = [b for b in self.buckets if b > frames or (b == frames and not finalize)]
        return min(fits) if fits else None

    @torch.inference_mode()
    def inference_window(self, mel: torch.Tensor, finalize: bool, first_frame: int, phase_in: torch.Tensor,
                         phase_valid_from: int) -> tuple[torch.Tensor, torch.Tensor]:
        """What ``CausalHiFTGenerator.inference_window`` returns, from a graph where one fits the window."""
        frames = mel.shape[2]
        bucket = self._bucket(frames, finalize) if mel.shape[0] == 1 else None
        if bucket is None or frames <= RIGHT_CONTEXT_FRAMES:
            return self.table.eager(self.hift.inference_window, mel, finalize, first_frame, phase_in, phase_valid_from)
        b = self.bufs[(bucket, finalize)]
        hift = self.hift
        f0_frames = frames if finalize else frames - hift.f0_predictor.look_ahead
        spf = hift.samples_per_frame
        start = first_frame * spf
        rand_ini, noise = self._host_noise(start + f0_frames * spf)
        copy_padded(b["mel"], mel)
        b["noise"][:, :f0_frames * spf].copy_(noise[:, start:start + f0_frames * spf], non_blocking=True)
        if first_frame > 0:  # the official initial offset sits on absolute sample 0 only
            b["rand_ini"].zero_()
        else:
            b["rand_ini"].copy_(rand_ini, non_blocking=True)
        b["phase_in"].copy_(phase_in)
        b["valid_from"].fill_(phase_valid_from)
        b["valid"].frames.fill_(frames)
        self.table.run((bucket, finalize), functools.partial(self._body, (bucket, finalize)))
        samples = (frames if finalize else frames - RIGHT_CONTEXT_FRAMES) * spf
        # copies: the buffers are the next call's
        return b["wave"][:, :samples].clone(), b["phase"][:, :, :f0_frames].clone()

    def _host_noise(self, samples: int) -> tuple[torch.Tensor, torch.Tensor]:
        """The fixed noise's (rand_ini, noise) covering ``samples``, in page-locked host memory on a GPU: a window's
        slice goes straight into the graph's buffer, so no copy of the noise is kept on the device (it was, in
        5-s steps, each growth mapping new memory during a request). The pinned copy is redone only when the
        host noise is regrown or replaced."""
        rand_ini, host = self.hift.fixed_noise.host(samples)
        if host is not self._noise_source:
            pin = self.device.type == "cuda"
            self._pinned = (rand_ini.pin_memory(), host.pin_memory()) if pin else (rand_ini, host)
            self._noise_source = host
        return self._pinned

    @property
    def samples_per_frame(self) -> int:
        return self.hift.samples_per_frame

    @property
    def num_harmonics(self) -> int:
        return self.hift.num_harmonics

    @property
    def f0_predictor(self):
        return self.hift.f0_predictor

    def stream_left_context_frames(self) -> int:
        return self.hift.stream_left_context_frames()
