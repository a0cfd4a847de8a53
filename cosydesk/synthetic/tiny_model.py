"""Write complete tiny CosyVoice model folders in the official on-disk format, for tests and demos.

    python -m cosydesk.synthetic.tiny_model OUT_DIR --version v1|v2|v3 [--seed N]

The folder has everything a downloaded model has — yaml, llm.pt / flow.pt / hift.pt, spk2info.pt with SFT
speakers and a zero-shot entry, campplus.onnx, speech_tokenizer_v*.onnx and (v2/v3) a CosyVoice-BlankEN
folder with a real Qwen tokenizer — so it drives exactly the loading path a user's folder takes.
Weights are random (seeded): the "speech" is noise, but every stage runs for real. The LLM's end-of-speech
logit is biased up so that utterances end right after the official minimum length (short, fast tests).
Text vocabularies keep their real sizes (the tokenizers are real), so llm.pt is a few MB.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from cosydesk.synthetic.model_yaml import TINY, YAML_NAME, model_yaml

YAML = {version: model_yaml(version, TINY) for version in YAML_NAME}

# A Qwen2 config of the real vocabulary size, shrunk in width and depth.
BLANKEN_CONFIG = {
    "architectures": ["Qwen2ForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 151643, "eos_token_id": 151643,
    "hidden_act": "silu", "hidden_size": 32, "initializer_range": 0.02, "intermediate_size": 64,
    "max_position_embeddings": 32768, "max_window_layers": 28, "model_type": "qwen2", "num_attention_heads": 2,
    "num_hidden_layers": 1, "num_key_value_heads": 1, "rms_norm_eps": 1e-06, "rope_theta": 1000000.0,
    "sliding_window": 32768, "tie_word_embeddings": True, "torch_dtype": "float32", "use_cache": True,
    "use_sliding_window": False, "vocab_size": 151936,
}

SFT_SPEAKERS = ["中文女", "中文男", "英文女", "英文男"]
EOS_BIAS = 12.0  # makes the random LLM stop right after the minimum length


def init_qwen_backbone(llm, std: float = 0.1, bias_std: float = 0.1) -> None:
    """Give a v2/v3 LLM's Qwen2 backbone seeded random values (global torch RNG).

    The loader allocates the backbone uninitialised, since llm.pt overwrites it; a random model has no llm.pt.
    Norm gains are 1, matrices N(0, std), biases N(0, bias_std)."""
    import torch

    with torch.no_grad():
        for name, param in llm.llm.named_parameters():
            if name.endswith("norm.weight"):
                param.fill_(1.0)
            else:
                param.normal_(0.0, bias_std if name.endswith(".bias") else std)


def _bias_towards_stop(llm, version: str) -> None:
    import torch

    with torch.no_grad():
        decoder = llm.llm_decoder
        eos = {"v1": 4096, "v2": 6561, "v3": 6562}[version]
        if decoder.bias is not None:
            decoder.bias[eos] += EOS_BIAS
            if version == "v2":
                decoder.bias[6562:] -= EOS_BIAS  # other stop ids stay rare, as in a trained model
        else:  # v3 has no bias: make the eos row dominate through the weights
            decoder.weight[eos] *= 6.0
            decoder.weight[6563:] *= 0.1


def write_tiny_model(out_dir: str | Path, version: str = "v2", seed: int = 0) -> Path:
    """Create a complete tiny model folder; returns its path."""
    import torch

    from cosydesk.model.config import read_yaml
    from cosydesk.model.cosyvoice import build_networks
    from cosydesk.synthetic import tiny_assets

    if version not in YAML:
        raise ValueError(f"version must be one of v1, v2, v3 (got {version!r})")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    yaml_name, yaml_text = YAML[version]
    (out / yaml_name).write_text(yaml_text, encoding="utf-8")
    if version != "v1":
        blanken = out / "CosyVoice-BlankEN"
        blanken.mkdir(exist_ok=True)
        (blanken / "config.json").write_text(json.dumps(BLANKEN_CONFIG, indent=2), encoding="utf-8")
        tiny_assets.write_blanken_tokenizer(blanken)
    config = read_yaml(out / yaml_name)
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        llm, flow, hift = build_networks(version, config, out)
        if version != "v1":
            init_qwen_backbone(llm)
        _bias_towards_stop(llm, version)
        torch.save(llm.state_dict(), out / "llm.pt")
        torch.save(flow.state_dict(), out / "flow.pt")
        torch.save(hift.state_dict(), out / "hift.pt")
        generator = torch.Generator().manual_seed(seed + 1)
        spk2info = {name: {"embedding": torch.randn(1, 192, generator=generator) * 5} for name in SFT_SPEAKERS}
        torch.save(spk2info, out / "spk2info.pt")
    tiny_assets.write_tiny_campplus(out / "campplus.onnx", seed=seed)
    tiny_assets.write_tiny_speech_tokenizer(out / f"speech_tokenizer_{version}.onnx", version=version, seed=seed)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m cosydesk.synthetic.tiny_model", description=__doc__.splitlines()[0])
    parser.add_argument("out_dir")
    parser.add_argument("--version", choices=["v1", "v2", "v3"], default="v2")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    path = write_tiny_model(args.out_dir, args.version, args.seed)
    print(f"wrote tiny {args.version} model to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
