"""The three networks of a model version built from its parsed yaml (random init, no weights): what loading
(model/cosyvoice.py) and the load-time checks (model/validate.py, on the meta device) both build."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from torch import nn

from cosydesk.model.config import Node


def count_parameters(module: nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())  # parameters() already de-duplicates tied tensors


def build_llm(version: str, node: Node, model_dir: Path) -> nn.Module:
    if version == "v1":
        from cosydesk.model.llm_v1 import TransformerLM

        return TransformerLM.from_config(node)
    from cosydesk.model import llm_qwen

    cls = llm_qwen.Qwen2LM if version == "v2" else llm_qwen.CosyVoice3LM
    return cls.from_config(node, model_dir)


def build_networks(version: str, config: dict[str, Any], model_dir: Path) -> tuple[nn.Module, nn.Module, nn.Module]:
    """Build (llm, flow, hift) with random init from the parsed yaml."""
    from cosydesk.model.flow import build_flow
    from cosydesk.model.hift import build_hift

    return build_llm(version, config["llm"], model_dir), build_flow(config["flow"]), build_hift(config["hift"])
