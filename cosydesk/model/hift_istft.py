"""HiFT's spectral head helpers: the periodic Hann window and a graph-capturable inverse STFT (irfft + fold).

Must not: sync with the host (``torch.istft`` checks its window envelope on the host, which a CUDA graph cannot
capture; this module's overlap-add never does).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

__all__ = ["periodic_hann", "overlap_add_istft"]


def periodic_hann(n_fft: int) -> torch.Tensor:
    # Computed in float64 then rounded, like scipy's get_window("hann", n, fftbins=True) used officially.
    return torch.hann_window(n_fft, periodic=True, dtype=torch.float64).float()


def overlap_add_istft(spec: torch.Tensor, n_fft: int, hop: int, window: torch.Tensor,
                      frame_mask: torch.Tensor | None = None) -> torch.Tensor:
    """torch.istft(spec, n_fft, hop, n_fft, window, center=True) for spec [B, n_fft/2 + 1, F] -> [B, (F-1)*hop].

    Written with irfft + fold because torch.istft checks its window envelope with a host sync
    (not capturable in a CUDA graph). The Hann envelope is > 0 everywhere inside the kept span.
    ``frame_mask`` [F] (1 for the first valid frames, 0 after; their spectrum must be zero): the envelope counts
    only valid frames, so the samples of the valid frames are those of an istft of the valid frames alone
    (and the samples past them are 0).
    """
    frames = torch.fft.irfft(spec, n=n_fft, dim=1) * window.view(1, -1, 1)  # [B, n_fft, F]
    num_frames = frames.shape[2]
    full = n_fft + hop * (num_frames - 1)
    fold = dict(output_size=(1, full), kernel_size=(1, n_fft), stride=(1, hop))
    signal = F.fold(frames, **fold).flatten(1)
    weights = (window * window).view(1, -1, 1).expand(1, n_fft, num_frames)
    if frame_mask is not None:
        weights = weights * frame_mask.view(1, 1, -1)
    envelope = F.fold(weights, **fold).flatten(1)
    trim = n_fft // 2
    envelope = envelope[:, trim: full - trim]
    if frame_mask is not None:  # past the valid frames the envelope is 0 (and so is the signal): 0 out, not NaN
        envelope = envelope.clamp_min(1e-12)
    return signal[:, trim: full - trim] / envelope
