"""Write complete tiny CosyVoice model folders in the official on-disk format, for tests and demos.

    python -m cosydesk.testing.tiny_model OUT_DIR --version v1|v2|v3 [--seed N]

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

_COMMON_HIFT = """\
hift: !new:cosyvoice.hifigan.generator.{hift_class}
    in_channels: 80
    base_channels: 16
    nb_harmonics: 8
    sampling_rate: !ref <sample_rate>
    nsf_alpha: 0.1
    nsf_sigma: 0.003
    nsf_voiced_threshold: 10
    upsample_rates: {up_rates}
    upsample_kernel_sizes: {up_kernels}
    istft_params:
        n_fft: 16
        hop_len: 4
    resblock_kernel_sizes: [3, 7, 11]
    resblock_dilation_sizes: [[1, 3, 5], [1, 3, 5], [1, 3, 5]]
    source_resblock_kernel_sizes: {src_kernels}
    source_resblock_dilation_sizes: {src_dilations}
    lrelu_slope: 0.1
    audio_limit: 0.99
{hift_extra}    f0_predictor: !new:cosyvoice.hifigan.f0_predictor.{f0_class}
        num_class: 1
        in_channels: 80
        cond_channels: 16
"""

_CFM = """\
    decoder: !new:cosyvoice.flow.flow_matching.{cfm_class}
        in_channels: 240
        n_spks: 1
        spk_emb_dim: 80
        cfm_params: !new:omegaconf.DictConfig
            content:
                sigma_min: 1e-06
                solver: 'euler'
                t_scheduler: 'cosine'
                training_cfg_rate: 0.2
                inference_cfg_rate: 0.7
                reg_loss_type: 'l1'
"""

_SAMPLING = """\
    sampling: !name:cosyvoice.utils.common.ras_sampling
        top_p: 0.8
        top_k: 25
        win_size: 10
        tau_r: 0.1
"""

V1_YAML = """\
# tiny CosyVoice (v1) written by cosydesk.testing.tiny_model: random weights, official layout
sample_rate: 22050
text_encoder_input_size: 32
llm_input_size: 32
llm_output_size: 32
spk_embed_dim: 192

llm: !new:cosyvoice.llm.llm.TransformerLM
    text_encoder_input_size: !ref <text_encoder_input_size>
    llm_input_size: !ref <llm_input_size>
    llm_output_size: !ref <llm_output_size>
    text_token_size: 51866
    speech_token_size: 4096
    length_normalized_loss: True
    lsm_weight: 0
    spk_embed_dim: !ref <spk_embed_dim>
    text_encoder: !new:cosyvoice.transformer.encoder.ConformerEncoder
        input_size: !ref <text_encoder_input_size>
        output_size: 32
        attention_heads: 2
        linear_units: 64
        num_blocks: 1
        dropout_rate: 0.1
        positional_dropout_rate: 0.1
        attention_dropout_rate: 0.0
        normalize_before: True
        input_layer: 'linear'
        pos_enc_layer_type: 'rel_pos_espnet'
        selfattention_layer_type: 'rel_selfattn'
        use_cnn_module: False
        macaron_style: False
        use_dynamic_chunk: False
        use_dynamic_left_chunk: False
        static_chunk_size: 1
    llm: !new:cosyvoice.transformer.encoder.TransformerEncoder
        input_size: !ref <llm_input_size>
        output_size: !ref <llm_output_size>
        attention_heads: 2
        linear_units: 64
        num_blocks: 1
        dropout_rate: 0.1
        positional_dropout_rate: 0.1
        attention_dropout_rate: 0.0
        input_layer: 'linear_legacy'
        pos_enc_layer_type: 'rel_pos_espnet'
        selfattention_layer_type: 'rel_selfattn'
        static_chunk_size: 1
""" + _SAMPLING + """
flow: !new:cosyvoice.flow.flow.MaskedDiffWithXvec
    input_size: 32
    output_size: 80
    spk_embed_dim: !ref <spk_embed_dim>
    output_type: 'mel'
    vocab_size: 4096
    input_frame_rate: 50
    only_mask_loss: True
    encoder: !new:cosyvoice.transformer.encoder.ConformerEncoder
        output_size: 32
        attention_heads: 2
        linear_units: 64
        num_blocks: 1
        dropout_rate: 0.1
        positional_dropout_rate: 0.1
        attention_dropout_rate: 0.1
        normalize_before: True
        input_layer: 'linear'
        pos_enc_layer_type: 'rel_pos_espnet'
        selfattention_layer_type: 'rel_selfattn'
        input_size: 32
        use_cnn_module: False
        macaron_style: False
    length_regulator: !new:cosyvoice.flow.length_regulator.InterpolateRegulator
        channels: 80
        sampling_ratios: [1, 1, 1, 1]
""" + _CFM.format(cfm_class="ConditionalCFM") + """\
        estimator: !new:cosyvoice.flow.decoder.ConditionalDecoder
            in_channels: 320
            out_channels: 80
            channels: [16, 16]
            dropout: 0.0
            attention_head_dim: 8
            n_blocks: 1
            num_mid_blocks: 1
            num_heads: 2
            act_fn: 'gelu'

""" + _COMMON_HIFT.format(hift_class="HiFTGenerator", up_rates="[8, 8]", up_kernels="[16, 16]", src_kernels="[7, 11]",
                          src_dilations="[[1, 3, 5], [1, 3, 5]]", hift_extra="", f0_class="ConvRNNF0Predictor") + """
feat_extractor: !name:matcha.utils.audio.mel_spectrogram
    n_fft: 1024
    num_mels: 80
    sampling_rate: !ref <sample_rate>
    hop_size: 256
    win_size: 1024
    fmin: 0
    fmax: 8000
    center: False
get_tokenizer: !name:cosyvoice.tokenizer.tokenizer.get_tokenizer
    multilingual: True
    num_languages: 100
    language: 'en'
    task: 'transcribe'
allowed_special: 'all'
"""

V2_HEAD = """\
# tiny CosyVoice{n} written by cosydesk.testing.tiny_model: random weights, official layout
sample_rate: 24000
llm_input_size: 32
llm_output_size: 32
spk_embed_dim: 192
qwen_pretrain_path: ''
token_frame_rate: 25
token_mel_ratio: 2
chunk_size: 25
num_decoding_left_chunks: -1

llm: !new:cosyvoice.llm.llm.{llm_class}
    llm_input_size: !ref <llm_input_size>
    llm_output_size: !ref <llm_output_size>
    speech_token_size: 6561
    length_normalized_loss: True
    lsm_weight: 0
    mix_ratio: [5, 15]
    llm: !new:cosyvoice.llm.llm.Qwen2Encoder
        pretrain_path: !ref <qwen_pretrain_path>
""" + _SAMPLING

V2_YAML = V2_HEAD.format(n="2", llm_class="Qwen2LM") + """
flow: !new:cosyvoice.flow.flow.CausalMaskedDiffWithXvec
    input_size: 32
    output_size: 80
    spk_embed_dim: !ref <spk_embed_dim>
    output_type: 'mel'
    vocab_size: 6561
    input_frame_rate: !ref <token_frame_rate>
    only_mask_loss: True
    token_mel_ratio: !ref <token_mel_ratio>
    pre_lookahead_len: 3
    encoder: !new:cosyvoice.transformer.upsample_encoder.UpsampleConformerEncoder
        output_size: 32
        attention_heads: 2
        linear_units: 64
        num_blocks: 1
        dropout_rate: 0.1
        positional_dropout_rate: 0.1
        attention_dropout_rate: 0.1
        normalize_before: True
        input_layer: 'linear'
        pos_enc_layer_type: 'rel_pos_espnet'
        selfattention_layer_type: 'rel_selfattn'
        input_size: 32
        use_cnn_module: False
        macaron_style: False
        static_chunk_size: !ref <chunk_size>
""" + _CFM.format(cfm_class="CausalConditionalCFM") + """\
        estimator: !new:cosyvoice.flow.decoder.CausalConditionalDecoder
            in_channels: 320
            out_channels: 80
            channels: [16]
            dropout: 0.0
            attention_head_dim: 8
            n_blocks: 1
            num_mid_blocks: 1
            num_heads: 2
            act_fn: 'gelu'
            static_chunk_size: !ref <chunk_size> * <token_mel_ratio>
            num_decoding_left_chunks: !ref <num_decoding_left_chunks>

""" + _COMMON_HIFT.format(hift_class="HiFTGenerator", up_rates="[8, 5, 3]", up_kernels="[16, 11, 7]", src_kernels="[7, 7, 11]",
                          src_dilations="[[1, 3, 5], [1, 3, 5], [1, 3, 5]]", hift_extra="", f0_class="ConvRNNF0Predictor") + """
feat_extractor: !name:matcha.utils.audio.mel_spectrogram
    n_fft: 1920
    num_mels: 80
    sampling_rate: !ref <sample_rate>
    hop_size: 480
    win_size: 1920
    fmin: 0
    fmax: 8000
    center: False
get_tokenizer: !name:cosyvoice.tokenizer.tokenizer.get_qwen_tokenizer
    token_path: !ref <qwen_pretrain_path>
    skip_special_tokens: True
allowed_special: 'all'
"""

V3_YAML = V2_HEAD.format(n="3", llm_class="CosyVoice3LM") + """
flow: !new:cosyvoice.flow.flow.CausalMaskedDiffWithDiT
    input_size: 80
    output_size: 80
    spk_embed_dim: !ref <spk_embed_dim>
    output_type: 'mel'
    vocab_size: 6561
    input_frame_rate: !ref <token_frame_rate>
    only_mask_loss: True
    token_mel_ratio: !ref <token_mel_ratio>
    pre_lookahead_len: 3
    pre_lookahead_layer: !new:cosyvoice.transformer.upsample_encoder.PreLookaheadLayer
        in_channels: 80
        channels: 32
        pre_lookahead_len: 3
""" + _CFM.format(cfm_class="CausalConditionalCFM") + """\
        estimator: !new:cosyvoice.flow.DiT.dit.DiT
            dim: 32
            depth: 1
            heads: 2
            dim_head: 16
            ff_mult: 2
            mel_dim: 80
            mu_dim: 80
            spk_dim: 80
            out_channels: 80
            static_chunk_size: !ref <chunk_size> * <token_mel_ratio>
            num_decoding_left_chunks: !ref <num_decoding_left_chunks>

""" + _COMMON_HIFT.format(hift_class="CausalHiFTGenerator", up_rates="[8, 5, 3]", up_kernels="[16, 11, 7]", src_kernels="[7, 7, 11]",
                          src_dilations="[[1, 3, 5], [1, 3, 5], [1, 3, 5]]", hift_extra="    conv_pre_look_right: 4\n",
                          f0_class="CausalConvRNNF0Predictor") + """
feat_extractor: !name:matcha.utils.audio.mel_spectrogram
    n_fft: 1920
    num_mels: 80
    sampling_rate: !ref <sample_rate>
    hop_size: 480
    win_size: 1920
    fmin: 0
    fmax: null
    center: False
get_tokenizer: !name:cosyvoice.tokenizer.tokenizer.get_qwen_tokenizer
    token_path: !ref <qwen_pretrain_path>
    skip_special_tokens: True
    version: cosyvoice3
allowed_special: 'all'
"""

YAML = {"v1": ("cosyvoice.yaml", V1_YAML), "v2": ("cosyvoice2.yaml", V2_YAML), "v3": ("cosyvoice3.yaml", V3_YAML)}

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


def init_qwen_backbone(llm, std: float = 0.1) -> None:
    """Give the Qwen2 backbone real random values (the loader allocates it uninitialised, as llm.pt overwrites it)."""
    import torch

    backbone = getattr(llm, "llm", None)
    if backbone is None or not hasattr(backbone, "named_parameters"):
        return
    with torch.no_grad():
        for name, param in backbone.named_parameters():
            if name.endswith("norm.weight"):
                param.fill_(1.0)
            elif name.endswith(".bias"):
                param.normal_(0.0, std)
            else:
                param.normal_(0.0, std)


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
    from cosydesk.testing import tiny_assets

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
    parser = argparse.ArgumentParser(prog="python -m cosydesk.testing.tiny_model", description=__doc__.splitlines()[0])
    parser.add_argument("out_dir")
    parser.add_argument("--version", choices=["v1", "v2", "v3"], default="v2")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    path = write_tiny_model(args.out_dir, args.version, args.seed)
    print(f"wrote tiny {args.version} model to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
