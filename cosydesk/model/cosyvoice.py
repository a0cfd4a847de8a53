"""One loaded CosyVoice model: the three networks built from the folder's yaml, with their weights.

This module only wires things together: it picks the classes for the version, builds them from the yaml
sizes, loads llm.pt / flow.pt / hift.pt strictly and moves them to a device/dtype. No threads, no caches.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from cosydesk.model.checkpoint import CheckpointError
from cosydesk.model.config import ConfigError
from cosydesk.model.networks import build_llm, build_networks, count_parameters  # noqa: F401 - re-exported

if TYPE_CHECKING:
    from cosydesk.model.validate import CheckedFolder


@dataclass
class CosyVoiceModel:
    """The networks of one model folder. ``llm``, ``flow``, ``hift`` are torch modules in eval mode."""

    version: str
    model_dir: Path
    config: dict[str, Any]
    llm: nn.Module
    flow: nn.Module
    hift: nn.Module
    device: torch.device
    dtype: torch.dtype
    spk2info: dict[str, dict[str, torch.Tensor]] = field(default_factory=dict)

    @property
    def sample_rate(self) -> int:
        return int(self.config["sample_rate"])

    @property
    def token_mel_ratio(self) -> int:
        return int(self.config.get("token_mel_ratio", 1) or 1)

    def parameter_counts(self) -> dict[str, int]:
        """Parameters per network, shared (tied) tensors counted once, as the official numbers are."""
        return {name: count_parameters(getattr(self, name)) for name in ("llm", "flow", "hift")}


def read_spk2info(path: Path) -> dict[str, dict[str, torch.Tensor]]:
    """spk2info.pt: {speaker: {'embedding': [1,192], ...zero-shot prompt tensors...}}; missing file -> {}.
    Only read here; ``load`` checks each entry against the model (validate.check_speaker_table)."""
    from cosydesk.model.validate import read_speaker_table

    table = read_speaker_table(path)
    if not all(isinstance(v, dict) for v in table.values()):
        raise CheckpointError(f"{path}: does not hold a speaker table (dict of dicts)")
    return table


def load(model_dir: "str | Path | CheckedFolder", device: str | torch.device = "cpu",
         dtype: torch.dtype = torch.float32) -> CosyVoiceModel:
    """Open an official model folder (v1 cosyvoice.yaml, v2 cosyvoice2.yaml or v3 cosyvoice3.yaml).

    The folder is validated first (validate.check_model_folder: every setting, checkpoint and table, before
    anything is allocated); pass a CheckedFolder to reuse a validation already done."""
    from cosydesk.model.validate import CheckedFolder, check_model_folder

    checked = model_dir if isinstance(model_dir, CheckedFolder) else check_model_folder(model_dir)
    version, config, model_dir = checked.version, checked.config, checked.model_dir
    llm, flow, hift = build_networks(version, config, model_dir)
    for name, module in (("llm", llm), ("flow", flow), ("hift", hift)):
        module.load_state_dict(checked.states[name], strict=True)  # keys, shapes, dtypes and values checked
    device = torch.device(device)
    for module in (llm, flow, hift):
        module.to(device=device, dtype=dtype).eval()
        module.requires_grad_(False)
    return CosyVoiceModel(
        version=version,
        model_dir=model_dir,
        config=config,
        llm=llm,
        flow=flow,
        hift=hift,
        device=device,
        dtype=dtype,
        spk2info=checked.spk2info,
    )


__all__ = ["CosyVoiceModel", "load", "build_networks", "count_parameters", "ConfigError", "CheckpointError"]
