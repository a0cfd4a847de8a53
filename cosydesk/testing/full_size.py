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

from cosydesk.testing.tiny_model import _CFM, _SAMPLING, BLANKEN_CONFIG

_HIFT = """\
hift: !new:cosyvoice.hifigan.generator.{hift_class}
    in_channels: 80
    base_channels: 512
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
        cond_channels: 512
"""

_V1 = """\
# full-size CosyVoice-300M layout written by cosydesk.testing.full_size: random weights
sample_rate: 22050
text_encoder_input_size: 512
llm_input_size: 1024
llm_output_size: 1024
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
        output_size: 1024
        attention_heads: 16
        linear_units: 4096
        num_blocks: 6
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
        attention_heads: 16
        linear_units: 4096
        num_blocks: 14
        dropout_rate: 0.1
        positional_dropout_rate: 0.1
        attention_dropout_rate: 0.0
        input_layer: 'linear_legacy'
        pos_enc_layer_type: 'rel_pos_espnet'
        selfattention_layer_type: 'rel_selfattn'
        static_chunk_size: 1
""" + _SAMPLING + """
flow: !new:cosyvoice.flow.flow.MaskedDiffWithXvec
    input_size: 512
    output_size: 80
    spk_embed_dim: !ref <spk_embed_dim>
    output_type: 'mel'
    vocab_size: 4096
    input_frame_rate: 50
    only_mask_loss: True
    encoder: !new:cosyvoice.transformer.encoder.ConformerEncoder
        output_size: 512
        attention_heads: 8
        linear_units: 2048
        num_blocks: 6
        dropout_rate: 0.1
        positional_dropout_rate: 0.1
        attention_dropout_rate: 0.1
        normalize_before: True
        input_layer: 'linear'
        pos_enc_layer_type: 'rel_pos_espnet'
        selfattention_layer_type: 'rel_selfattn'
        input_size: 512
        use_cnn_module: False
        macaron_style: False
    length_regulator: !new:cosyvoice.flow.length_regulator.InterpolateRegulator
        channels: 80
        sampling_ratios: [1, 1, 1, 1]
""" + _CFM.format(cfm_class="ConditionalCFM") + """\
        estimator: !new:cosyvoice.flow.decoder.ConditionalDecoder
            in_channels: 320
            out_channels: 80
            channels: [256, 256]
            dropout: 0.0
            attention_head_dim: 64
            n_blocks: 4
            num_mid_blocks: 12
            num_heads: 8
            act_fn: 'gelu'

""" + _HIFT.format(hift_class="HiFTGenerator", up_rates="[8, 8]", up_kernels="[16, 16]", src_kernels="[7, 11]",
                   src_dilations="[[1, 3, 5], [1, 3, 5]]", hift_extra="", f0_class="ConvRNNF0Predictor")

_V2_HEAD = """\
# full-size CosyVoice{n} layout written by cosydesk.testing.full_size: random weights
sample_rate: 24000
llm_input_size: 896
llm_output_size: 896
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

_V2 = _V2_HEAD.format(n="2", llm_class="Qwen2LM") + """
flow: !new:cosyvoice.flow.flow.CausalMaskedDiffWithXvec
    input_size: 512
    output_size: 80
    spk_embed_dim: !ref <spk_embed_dim>
    output_type: 'mel'
    vocab_size: 6561
    input_frame_rate: !ref <token_frame_rate>
    only_mask_loss: True
    token_mel_ratio: !ref <token_mel_ratio>
    pre_lookahead_len: 3
    encoder: !new:cosyvoice.transformer.upsample_encoder.UpsampleConformerEncoder
        output_size: 512
        attention_heads: 8
        linear_units: 2048
        num_blocks: 6
        dropout_rate: 0.1
        positional_dropout_rate: 0.1
        attention_dropout_rate: 0.1
        normalize_before: True
        input_layer: 'linear'
        pos_enc_layer_type: 'rel_pos_espnet'
        selfattention_layer_type: 'rel_selfattn'
        input_size: 512
        use_cnn_module: False
        macaron_style: False
        static_chunk_size: !ref <chunk_size>
""" + _CFM.format(cfm_class="CausalConditionalCFM") + """\
        estimator: !new:cosyvoice.flow.decoder.CausalConditionalDecoder
            in_channels: 320
            out_channels: 80
            channels: [256]
            dropout: 0.0
            attention_head_dim: 64
            n_blocks: 4
            num_mid_blocks: 12
            num_heads: 8
            act_fn: 'gelu'
            static_chunk_size: !ref <chunk_size> * <token_mel_ratio>
            num_decoding_left_chunks: !ref <num_decoding_left_chunks>

""" + _HIFT.format(hift_class="HiFTGenerator", up_rates="[8, 5, 3]", up_kernels="[16, 11, 7]", src_kernels="[7, 7, 11]",
                   src_dilations="[[1, 3, 5], [1, 3, 5], [1, 3, 5]]", hift_extra="", f0_class="ConvRNNF0Predictor")

_V3 = _V2_HEAD.format(n="3", llm_class="CosyVoice3LM") + """
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
        channels: 1024
        pre_lookahead_len: 3
""" + _CFM.format(cfm_class="CausalConditionalCFM") + """\
        estimator: !new:cosyvoice.flow.DiT.dit.DiT
            dim: 1024
            depth: 22
            heads: 16
            dim_head: 64
            ff_mult: 2
            mel_dim: 80
            mu_dim: 80
            spk_dim: 80
            out_channels: 80
            static_chunk_size: !ref <chunk_size> * <token_mel_ratio>
            num_decoding_left_chunks: !ref <num_decoding_left_chunks>

""" + _HIFT.format(hift_class="CausalHiFTGenerator", up_rates="[8, 5, 3]", up_kernels="[16, 11, 7]", src_kernels="[7, 7, 11]",
                   src_dilations="[[1, 3, 5], [1, 3, 5], [1, 3, 5]]", hift_extra="    conv_pre_look_right: 4\n",
                   f0_class="CausalConvRNNF0Predictor")

FULL_YAML = {"v1": ("cosyvoice.yaml", _V1), "v2": ("cosyvoice2.yaml", _V2), "v3": ("cosyvoice3.yaml", _V3)}

# Qwen2-0.5B as CosyVoice2/3 use it (hidden 896, 24 layers, 14 q / 2 kv heads, ffn 4864)
QWEN_FULL_CONFIG = dict(BLANKEN_CONFIG, hidden_size=896, intermediate_size=4864, num_attention_heads=14,
                        num_hidden_layers=24, num_key_value_heads=2, max_window_layers=24)


def write_full_size_config(out_dir: str | Path, version: str, tiny: bool = False) -> Path:
    """Write the yaml (and for v2/v3 the BlankEN config.json) of a full-size model; no weights.
    ``tiny=True`` writes the tiny test sizes instead (no tokenizer files: nothing here needs them)."""
    from cosydesk.testing import tiny_model

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


def _init_qwen_backbone(llm) -> None:
    """Seeded init of the (allocated-empty) Qwen2 backbone; uses torch's global RNG."""
    import torch

    backbone = getattr(getattr(llm, "llm", None), "model", None)
    if backbone is None or not hasattr(backbone, "model"):
        return  # v1: every parameter got its normal nn init
    with torch.no_grad():
        for name, param in backbone.named_parameters():
            if name.endswith("norm.weight"):
                param.fill_(1.0)
            elif name.endswith(".bias"):
                param.zero_()
            else:
                param.normal_(0.0, 0.02)


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
        _init_qwen_backbone(llm)
    for module in (llm, flow, hift):
        module.eval().requires_grad_(False)
    return version_read, config, model_dir, llm, flow, hift


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
