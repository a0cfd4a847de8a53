"""Seeded random flow networks between the tiny test size and the released size, for tests and CPU probes.

    flow = random_flow("v2")            # MID sizes, float32, eval mode
    flow = random_flow("v3", seed=1)

Built from the same yaml template as the tiny and full-size models (``model_yaml``), so only the sizes differ.
Every parameter gets a seeded perturbation on top of its default init (as the official-reference fixtures do),
so zero biases and unit norm gains cannot hide a mistake. Only the flow is built: no LLM, no vocoder.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import torch
from torch import nn

from cosydesk.synthetic.model_yaml import TINY, model_yaml

# Wide and deep enough that every layer kind appears more than once (several conformer / up-encoder layers,
# several transformer blocks per U-Net stage, several DiT blocks, more than one attention head), still quick
# on a 2-core CPU.
MID = dict(
    TINY, enc_dim=128, enc_heads=4, enc_units=256, enc_blocks=3, unet_head_dim=32, unet_blocks=2, unet_mid=3,
    unet_heads=4, unet_channels_v2="[128]", lookahead_channels=128, dit_dim=128, dit_depth=4, dit_heads=4,
    dit_head_dim=32,
)


def perturb(module: nn.Module, generator: torch.Generator, scale: float = 0.1) -> None:
    """Add N(0, (scale * std)^2) to every parameter (std 1 for constant tensors such as zero biases)."""
    with torch.no_grad():
        for param in module.parameters():
            std = param.float().std().item() if param.numel() > 1 else 0.0
            noise = torch.randn(param.shape, generator=generator) * scale * (std if std > 0 else 1.0)
            param.add_(noise.to(param.dtype))


def random_flow(version: str, sizes: dict | None = None, seed: int = 0) -> nn.Module:
    """A v1/v2/v3 flow network of ``sizes`` (default `MID`) with seeded random weights, float32, eval mode."""
    from cosydesk.model.config import read_yaml
    from cosydesk.model.flow import build_flow

    name, text = model_yaml(version, MID if sizes is None else sizes)
    with tempfile.TemporaryDirectory(prefix="cosydesk-flow-") as folder:
        path = Path(folder) / name
        path.write_text(text, encoding="utf-8")
        config = read_yaml(path)
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        flow = build_flow(config["flow"])
    perturb(flow, torch.Generator().manual_seed(seed + 1))
    return flow.eval().requires_grad_(False)
