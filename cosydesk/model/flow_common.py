"""What every flow model (v1 and v2 in flow.py, v3 in flow_v3.py) shares: the sampler's conditioning, the yaml's
cfg rate, the fixed-noise slice and the speaker projection. Pure torch math, no model classes here, so flow.py
and flow_v3.py both import it and never each other."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from cosydesk.model.config import Node

MEL_CHANNELS = 80


@dataclass
class FlowConditioning:
    """What the CFM sampler gets: mu/cond [1,80,T], mask [1,1,T], spks [1,80], prompt_frames = mel_len1."""

    mu: torch.Tensor
    spks: torch.Tensor
    cond: torch.Tensor
    mask: torch.Tensor
    prompt_frames: int


def cfg_rate(decoder_node: Any) -> float:
    """inference_cfg_rate from the yaml's ``cfm_params: !new:omegaconf.DictConfig {content: {...}}`` (v1, v2, v3);
    0.7, the release's value, when absent."""
    params = decoder_node.get("cfm_params")
    if isinstance(params, Node):
        params = params.get("content", params.args)
    if isinstance(params, dict):
        return float(params.get("inference_cfg_rate", 0.7))
    return 0.7


def prompt_conditioning(mu_frames_last: torch.Tensor, spks: torch.Tensor, prompt_feat: torch.Tensor,
                        channels: int = MEL_CHANNELS) -> FlowConditioning:
    """Sampler inputs from mu [1, T, C] (frames first) and the prompt mel [1, P, C]: cond holds the prompt in its
    first frames and zeros after; the mask is all ones (one utterance, no padding). Shared by v1/v2/v3."""
    total = mu_frames_last.shape[1]
    prompt_frames = prompt_feat.shape[1]
    cond = torch.zeros(1, total, channels, device=mu_frames_last.device, dtype=mu_frames_last.dtype)
    cond[:, :prompt_frames] = prompt_feat.to(device=cond.device, dtype=cond.dtype)
    mask = torch.ones(1, 1, total, device=mu_frames_last.device, dtype=mu_frames_last.dtype)
    return FlowConditioning(
        mu=mu_frames_last.transpose(1, 2).contiguous(),
        spks=spks,
        cond=cond.transpose(1, 2).contiguous(),
        mask=mask,
        prompt_frames=prompt_frames,
    )


def start_noise(table: torch.Tensor, noise: torch.Tensor | None, mu: torch.Tensor) -> torch.Tensor:
    """The CFM's starting z for ``mu`` [1, 80, T]: the first T frames of the fixed noise ``table`` (v2/v3), or of
    ``noise`` when given (tests), on mu's device and dtype."""
    frames = mu.shape[2]
    source = table if noise is None else noise
    if source.shape[2] < frames:
        where = f"the {source.shape[2]}-frame noise table" if noise is None else f"the given {source.shape[2]}-frame noise"
        raise ValueError(f"utterance of {frames} mel frames exceeds {where}")
    return source[:, :, :frames].to(device=mu.device, dtype=mu.dtype)


def project_speaker(layer: nn.Linear, embedding: torch.Tensor) -> torch.Tensor:
    """[1, 192] speaker embedding -> [1, 80] through ``layer`` (L2-normalised first, as the official flows do)."""
    return layer(F.normalize(embedding.to(layer.weight.dtype), dim=1))
