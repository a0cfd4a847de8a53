"""Bounded-work streaming for the v3 causal vocoder (one ``CausalHiFTStream`` per request).

The official v3 streaming path re-vocodes the whole accumulated mel at every chunk and returns only the samples
past those already returned, so its per-chunk cost grows with the utterance. Because the accumulated mel is
append-only and every layer of ``CausalHiFTGenerator`` is causal (apart from fixed right context that a re-run
sees identically), an output sample depends only on:

- mel frames from ``stream_left_context_frames() + f0_predictor.left_context`` frames before its own frame up
  to the fixed right context (conv_pre 4, f0 conv 3 frames; finalize trimming as in ``forward``);
- the harmonic phase, a running sum of per-frame increments from sample 0: we carry it across calls
  (float64 cycles; on CPU that is exactly how torch accumulates the official float32 cumsum);
- the fixed noise tensor at absolute sample positions (read with an offset).

So each call vocodes only a window [start, end) of the mel and returns the same samples as the full re-run.
Per call the window is at most new frames + ~43 frames of left context + 7 of right context.

State only (no threads, no I/O); the math lives in ``CausalHiFTGenerator.window_forward``.
"""

from __future__ import annotations

import torch


class CausalHiFTStream:
    """Per-request vocoder state: ``push(new_mel, finalize)`` -> the new waveform samples [B, n]."""

    def __init__(self, hift, left_context_frames: int | None = None):
        self.hift = hift
        if left_context_frames is None:
            left_context_frames = hift.stream_left_context_frames()
        self.left_context = int(left_context_frames)
        self.f0_context = hift.f0_predictor.left_context
        self.samples_per_frame = hift.samples_per_frame
        self.mel: torch.Tensor | None = None  # tail of the accumulated mel: absolute frames [mel_start, ...)
        self.mel_start = 0
        self.phase_carry: torch.Tensor | None = None  # running phase [B, H] (float64) before frame carry_frame
        self.carry_frame = 0
        self.samples_out = 0
        self.last_window_frames = 0  # mel frames the vocoder processed in the last call (for measurements)

    @property
    def total_frames(self) -> int:
        return self.mel_start + (0 if self.mel is None else self.mel.shape[2])

    def _plan(self) -> tuple[int, int]:
        """(phase_valid_from, window_start) in absolute frames for the next call."""
        first_needed = self.samples_out // self.samples_per_frame
        valid_from = max(0, first_needed - self.left_context)
        return valid_from, max(0, valid_from - self.f0_context)

    @torch.inference_mode()
    def push(self, mel: torch.Tensor, finalize: bool) -> torch.Tensor:
        """Append ``mel`` [B, 80, n] to the utterance and return the samples that are now final [B, k]
        (everything up to the end when ``finalize``)."""
        self.mel = mel if self.mel is None else torch.cat([self.mel, mel], dim=2)
        if self.phase_carry is None:
            self.phase_carry = torch.zeros(mel.shape[0], self.hift.num_harmonics, dtype=torch.float64,
                                           device=mel.device)
        spf = self.samples_per_frame
        valid_from, start = self._plan()
        if valid_from != self.carry_frame:
            raise RuntimeError("internal: the phase carry does not match the window plan")
        total = self.total_frames
        # A non-final call needs 8 frames of right context (f0 3, conv_pre 4, trimmed 1) beyond its output.
        if not finalize and (total - 8) * spf <= self.samples_out:
            self.last_window_frames = 0
            return mel.new_zeros(mel.shape[0], 0)
        window = self.mel[:, :, start - self.mel_start:]
        self.last_window_frames = window.shape[2]
        wave, phase = self.hift.inference_window(window, finalize, start, self.phase_carry, valid_from - start)
        new = wave[:, self.samples_out - start * spf:]
        self.samples_out += new.shape[1]
        self._advance(phase, start, valid_from)
        return new

    def _advance(self, phase: torch.Tensor, start: int, valid_from: int) -> None:
        """Keep only the phase carry and the mel tail the next window needs."""
        next_valid_from, next_start = self._plan()
        if next_valid_from > valid_from:
            # Running phase after frame next_valid_from - 1, which this window computed with full context.
            index = next_valid_from - 1 - start
            if not valid_from - start <= index < phase.shape[2]:
                raise RuntimeError("internal: the phase carry lies outside the vocoded window")
            self.phase_carry = phase[:, :, index].clone()
            self.carry_frame = next_valid_from
        self.mel = self.mel[:, :, next_start - self.mel_start:]
        self.mel_start = next_start
