"""Pure-torch CosyVoice v1 / v2 / v3 networks and their loading.

Stable parity entry (used by our tests and by outside checks against the official implementation):

    m = cosydesk.model.load(model_dir, device="cpu", dtype=torch.float32)
    m.version                      # "v1" | "v2" | "v3"
    m.flow.estimator(x, mask, mu, t, spks, cond, streaming=False)          # -> [2, 80, T]
    m.flow.inference(token, token_len, prompt_token, prompt_token_len,
                     prompt_feat, prompt_feat_len, embedding,
                     streaming=False, finalize=True, noise=None)            # -> generated mel [1, 80, T]
    m.hift.inference(mel, zero_noise=False)                                # v1/v2 -> waveform [1, L]
    m.hift.inference(mel, finalize=True)                                   # v3    -> waveform [1, L]
    m.llm.greedy_tokens(text, prompt_text, prompt_speech_token, embedding, n)  # -> first n argmax ids

Tensors use the dtypes stored in the fixtures' golden.npz (int32 ids and lengths, float32 features).
``noise`` injects v1's starting noise; v2/v3 use their fixed noise buffer. This package holds no threads,
no caches across calls and no GPU-specific tricks: those live in cosydesk.runtime.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # keep `import cosydesk.model` cheap: torch is imported on first use
    from cosydesk.model.cosyvoice import CosyVoiceModel


def load(model_dir, device="cpu", dtype=None) -> "CosyVoiceModel":
    """Load an official model folder; see the module docstring for what the result offers."""
    import torch

    from cosydesk.model.cosyvoice import load as _load

    return _load(model_dir, device=device, dtype=dtype or torch.float32)


__all__ = ["load"]
