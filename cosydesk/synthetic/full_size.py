"""Full-size CosyVoice v1 / v2 / v3 models with seeded random weights, for benchmarks (no download).

    model = random_model("v2", device="cuda", dtype=torch.float16, seed=0)
    path = write_full_size_model(out_dir, "v2", seed=0, weights=True)   # an official-format folder

The yaml text carries the released sizes (docs: cosyvoice-reference.md section 3), so the same builders that
load a downloaded model build these; only the weights are random. The Qwen2 backbone is allocated empty by
``build_qwen_backbone`` (llm.pt normally overwrites it), so it is initialised here: N(0, 0.02) matrices, unit
norm weights, zero biases. Not here: tokenizers, onnx frontends (a bench drives the networks with forced ids).
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from cosydesk.synthetic.model_yaml import FULL, YAML_NAME, model_yaml
from cosydesk.synthetic.tiny_model import BLANKEN_CONFIG, init_qwen_backbone

FULL_YAML = {version: model_yaml(version, FULL) for version in YAML_NAME}

# Qwen2-0.5B as CosyVoice2/3 use it (hidden 896, 24 layers, 14 q / 2 kv heads, ffn 4864)
QWEN_FULL_CONFIG = dict(BLANKEN_CONFIG, hidden_size=896, intermediate_size=4864, num_attention_heads=14,
                        num_hidden_layers=24, num_key_value_heads=2, max_window_layers=24)


def write_full_size_config(out_dir: str | Path, version: str, tiny: bool = False) -> Path:
    """Write the yaml (and for v2/v3 the BlankEN config.json) of a full-size model; no weights.
    ``tiny=True`` writes the tiny test sizes instead (no tokenizer files: nothing here needs them)."""
    from cosydesk.synthetic import tiny_model

    if version not in FULL_YAML:
        raise ValueError(f"version must be one of v1, v2, v3 (got {version!r})")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    name, text = (tiny_model.YAML if tiny else FULL_YAML)[version]
    (out / name).write_text(text, encoding="utf-8")
    if version != "v1":
        blanken = out / "CosyVoice-BlankEN"
        blanken.mkdir(exist_ok=True)
        qwen = BLANKEN_CONFIG if tiny else QWEN_FULL_CONFIG
        (blanken / "config.json").write_text(json.dumps(qwen, indent=2), encoding="utf-8")
    return out


def build_random_networks(version: str, seed: int = 0, workdir: str | Path | None = None, tiny: bool = False):
    """(version, config, model_dir, llm, flow, hift) in float32 on the CPU, seeded."""
    import torch

    from cosydesk.model.config import load_model_config
    from cosydesk.model.cosyvoice import build_networks

    model_dir = Path(workdir) if workdir is not None else Path(tempfile.mkdtemp(prefix=f"cosydesk-full-{version}-"))
    write_full_size_config(model_dir, version, tiny=tiny)
    version_read, config = load_model_config(model_dir)
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        llm, flow, hift = build_networks(version_read, config, model_dir)
        if version_read != "v1":
            init_qwen_backbone(llm, std=0.02, bias_std=0.0)
    for module in (llm, flow, hift):
        module.eval().requires_grad_(False)
    if not tiny:  # the tiny models' exactness tests keep the silent sine source they were written for
        voice_random_f0(hift)
    return version_read, config, model_dir, llm, flow, hift


# An untrained f0 head predicts ~0.1 Hz, below the vocoder's 10 Hz voiced threshold on every frame: the sine
# source and its phase accumulation would then never reach the output, and a bench's waveform fidelity could
# not see their precision. The official-format fixtures are calibrated the same way (their README, step 4).
F0_MEAN_HZ, F0_STD_HZ = 120.0, 60.0


def voice_random_f0(hift, seed: int = 0, frames: int = 200) -> tuple[float, float]:
    """Rescale ``hift``'s f0 head (in place) so that on a seeded N(0, 1) mel its output before ``abs`` has mean
    ``F0_MEAN_HZ`` and std ``F0_STD_HZ``: most frames voiced, a few (|f0| < 10 Hz) not. Returns (scale, bias)."""
    import torch

    head = hift.f0_predictor.classifier
    mel = torch.randn(1, 80, frames, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    offset = 1e4  # larger than any |W h|, so abs() is the identity and the head's output minus it is W h
    with torch.no_grad():
        head.bias.fill_(offset)
        projected = hift.f0_predictor(mel) - offset  # float64 for a float64 mel (both predictor kinds)
        scale = F0_STD_HZ / float(projected.std())
        head.weight.mul_(scale)
        head.bias.fill_(F0_MEAN_HZ - scale * float(projected.mean()))
    return scale, float(head.bias.detach()[0])


def random_model(version: str, device="cpu", dtype=None, seed: int = 0, workdir: str | Path | None = None,
                 tiny: bool = False):
    """A CosyVoiceModel of the released size (or the tiny test size) with seeded random weights."""
    import torch

    from cosydesk.model.cosyvoice import CosyVoiceModel

    dtype = dtype or torch.float32
    version, config, model_dir, llm, flow, hift = build_random_networks(version, seed, workdir, tiny)
    device = torch.device(device)
    for module in (llm, flow, hift):
        module.to(device=device, dtype=dtype)
    return CosyVoiceModel(version=version, model_dir=model_dir, config=config, llm=llm, flow=flow, hift=hift,
                          device=device, dtype=dtype)


def write_full_size_model(out_dir: str | Path, version: str = "v2", seed: int = 0) -> Path:
    """An official-format folder (yaml + llm.pt/flow.pt/hift.pt) with seeded random full-size weights."""
    import torch

    out = write_full_size_config(out_dir, version)
    _, _, _, llm, flow, hift = build_random_networks(version, seed, out)
    torch.save(llm.state_dict(), out / "llm.pt")
    torch.save(flow.state_dict(), out / "flow.pt")
    torch.save(hift.state_dict(), out / "hift.pt")
    return out
