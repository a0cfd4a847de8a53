"""The official model yaml of each version, with the network sizes as parameters.

One template per version serves both the tiny random models of the tests (``TINY``) and the full-size
random models of the benchmark (``FULL``: the released sizes, cosyvoice-reference.md section 3), so the
two can never drift apart in anything but size.
"""

from __future__ import annotations

_SAMPLING = """\
    sampling: !name:cosyvoice.utils.common.ras_sampling
        top_p: 0.8
        top_k: 25
        win_size: 10
        tau_r: 0.1
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

_CONFORMER = """\
        output_size: {enc_dim}
        attention_heads: {enc_heads}
        linear_units: {enc_units}
        num_blocks: {enc_blocks}
        dropout_rate: 0.1
        positional_dropout_rate: 0.1
        attention_dropout_rate: 0.1
        normalize_before: True
        input_layer: 'linear'
        pos_enc_layer_type: 'rel_pos_espnet'
        selfattention_layer_type: 'rel_selfattn'
        input_size: {enc_dim}
        use_cnn_module: False
        macaron_style: False
"""

_UNET = """\
            in_channels: 320
            out_channels: 80
            channels: {unet_channels}
            dropout: 0.0
            attention_head_dim: {unet_head_dim}
            n_blocks: {unet_blocks}
            num_mid_blocks: {unet_mid}
            num_heads: {unet_heads}
            act_fn: 'gelu'
"""

_HIFT = """\
hift: !new:cosyvoice.hifigan.generator.{{hift_class}}
    in_channels: 80
    base_channels: {hift_base}
    nb_harmonics: 8
    sampling_rate: !ref <sample_rate>
    nsf_alpha: 0.1
    nsf_sigma: 0.003
    nsf_voiced_threshold: 10
    upsample_rates: {{up_rates}}
    upsample_kernel_sizes: {{up_kernels}}
    istft_params:
        n_fft: 16
        hop_len: 4
    resblock_kernel_sizes: [3, 7, 11]
    resblock_dilation_sizes: [[1, 3, 5], [1, 3, 5], [1, 3, 5]]
    source_resblock_kernel_sizes: {{src_kernels}}
    source_resblock_dilation_sizes: {{src_dilations}}
    lrelu_slope: 0.1
    audio_limit: 0.99
{{hift_extra}}    f0_predictor: !new:cosyvoice.hifigan.f0_predictor.{{f0_class}}
        num_class: 1
        in_channels: 80
        cond_channels: {hift_base}
"""

_V1 = """\
# CosyVoice (v1) layout written by cosydesk.synthetic: random weights
sample_rate: 22050
text_encoder_input_size: {text_enc_in}
llm_input_size: {llm_dim}
llm_output_size: {llm_dim}
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
        output_size: {te_dim}
        attention_heads: {te_heads}
        linear_units: {te_units}
        num_blocks: {te_blocks}
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
        attention_heads: {llm_heads}
        linear_units: {llm_units}
        num_blocks: {llm_blocks}
        dropout_rate: 0.1
        positional_dropout_rate: 0.1
        attention_dropout_rate: 0.0
        input_layer: 'linear_legacy'
        pos_enc_layer_type: 'rel_pos_espnet'
        selfattention_layer_type: 'rel_selfattn'
        static_chunk_size: 1
""" + _SAMPLING + """
flow: !new:cosyvoice.flow.flow.MaskedDiffWithXvec
    input_size: {enc_dim}
    output_size: 80
    spk_embed_dim: !ref <spk_embed_dim>
    output_type: 'mel'
    vocab_size: 4096
    input_frame_rate: 50
    only_mask_loss: True
    encoder: !new:cosyvoice.transformer.encoder.ConformerEncoder
""" + _CONFORMER + """\
    length_regulator: !new:cosyvoice.flow.length_regulator.InterpolateRegulator
        channels: 80
        sampling_ratios: [1, 1, 1, 1]
""" + _CFM.format(cfm_class="ConditionalCFM") + """\
        estimator: !new:cosyvoice.flow.decoder.ConditionalDecoder
""" + _UNET + "\n"

_V1_MEL = """
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

_QWEN_HEAD = """\
# CosyVoice{{n}} layout written by cosydesk.synthetic: random weights
sample_rate: 24000
llm_input_size: {llm_dim}
llm_output_size: {llm_dim}
spk_embed_dim: 192
qwen_pretrain_path: ''
token_frame_rate: 25
token_mel_ratio: 2
chunk_size: 25
num_decoding_left_chunks: -1

llm: !new:cosyvoice.llm.llm.{{llm_class}}
    llm_input_size: !ref <llm_input_size>
    llm_output_size: !ref <llm_output_size>
    speech_token_size: 6561
    length_normalized_loss: True
    lsm_weight: 0
    mix_ratio: [5, 15]
    llm: !new:cosyvoice.llm.llm.Qwen2Encoder
        pretrain_path: !ref <qwen_pretrain_path>
""" + _SAMPLING.replace("{", "{{").replace("}", "}}")

_V24_MEL = """
feat_extractor: !name:matcha.utils.audio.mel_spectrogram
    n_fft: 1920
    num_mels: 80
    sampling_rate: !ref <sample_rate>
    hop_size: 480
    win_size: 1920
    fmin: 0
    fmax: {fmax}
    center: False
get_tokenizer: !name:cosyvoice.tokenizer.tokenizer.get_qwen_tokenizer
    token_path: !ref <qwen_pretrain_path>
    skip_special_tokens: True
{tokenizer_extra}allowed_special: 'all'
"""

_V2 = _QWEN_HEAD + """
flow: !new:cosyvoice.flow.flow.CausalMaskedDiffWithXvec
    input_size: {enc_dim}
    output_size: 80
    spk_embed_dim: !ref <spk_embed_dim>
    output_type: 'mel'
    vocab_size: 6561
    input_frame_rate: !ref <token_frame_rate>
    only_mask_loss: True
    token_mel_ratio: !ref <token_mel_ratio>
    pre_lookahead_len: 3
    encoder: !new:cosyvoice.transformer.upsample_encoder.UpsampleConformerEncoder
""" + _CONFORMER + """\
        static_chunk_size: !ref <chunk_size>
""" + _CFM.format(cfm_class="CausalConditionalCFM") + """\
        estimator: !new:cosyvoice.flow.decoder.CausalConditionalDecoder
""" + _UNET + """\
            static_chunk_size: !ref <chunk_size> * <token_mel_ratio>
            num_decoding_left_chunks: !ref <num_decoding_left_chunks>

"""

_V3 = _QWEN_HEAD + """
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
        channels: {lookahead_channels}
        pre_lookahead_len: 3
""" + _CFM.format(cfm_class="CausalConditionalCFM") + """\
        estimator: !new:cosyvoice.flow.DiT.dit.DiT
            dim: {dit_dim}
            depth: {dit_depth}
            heads: {dit_heads}
            dim_head: {dit_head_dim}
            ff_mult: 2
            mel_dim: 80
            mu_dim: 80
            spk_dim: 80
            out_channels: 80
            static_chunk_size: !ref <chunk_size> * <token_mel_ratio>
            num_decoding_left_chunks: !ref <num_decoding_left_chunks>

"""

_V1_TAIL = dict(hift_class="HiFTGenerator", up_rates="[8, 8]", up_kernels="[16, 16]", src_kernels="[7, 11]",
                src_dilations="[[1, 3, 5], [1, 3, 5]]", hift_extra="", f0_class="ConvRNNF0Predictor")
_V2_TAIL = dict(hift_class="HiFTGenerator", up_rates="[8, 5, 3]", up_kernels="[16, 11, 7]", src_kernels="[7, 7, 11]",
                src_dilations="[[1, 3, 5], [1, 3, 5], [1, 3, 5]]", hift_extra="", f0_class="ConvRNNF0Predictor")
_V3_TAIL = dict(_V2_TAIL, hift_class="CausalHiFTGenerator", hift_extra="    conv_pre_look_right: 4\n",
                f0_class="CausalConvRNNF0Predictor")

TINY = dict(
    text_enc_in=32, llm_dim=32, te_dim=32, te_heads=2, te_units=64, te_blocks=1, llm_heads=2, llm_units=64, llm_blocks=1,
    enc_dim=32, enc_heads=2, enc_units=64, enc_blocks=1, unet_head_dim=8, unet_blocks=1, unet_mid=1, unet_heads=2,
    hift_base=16, lookahead_channels=32, dit_dim=32, dit_depth=1, dit_heads=2, dit_head_dim=16,
    unet_channels_v1="[16, 16]", unet_channels_v2="[16]",
)
FULL = dict(
    text_enc_in=512, llm_dim=1024, te_dim=1024, te_heads=16, te_units=4096, te_blocks=6, llm_heads=16, llm_units=4096,
    llm_blocks=14, enc_dim=512, enc_heads=8, enc_units=2048, enc_blocks=6, unet_head_dim=64, unet_blocks=4, unet_mid=12,
    unet_heads=8, hift_base=512, lookahead_channels=1024, dit_dim=1024, dit_depth=22, dit_heads=16, dit_head_dim=64,
    unet_channels_v1="[256, 256]", unet_channels_v2="[256]",
)
FULL_QWEN_DIM = 896  # CosyVoice2/3 LLM width (Qwen2-0.5B); v1's is FULL["llm_dim"]

YAML_NAME = {"v1": "cosyvoice.yaml", "v2": "cosyvoice2.yaml", "v3": "cosyvoice3.yaml"}


def model_yaml(version: str, sizes: dict) -> tuple[str, str]:
    """(file name, yaml text) of a ``version`` model with the given sizes (``TINY`` or ``FULL``)."""
    if version not in YAML_NAME:
        raise ValueError(f"version must be one of v1, v2, v3 (got {version!r})")
    values = dict(sizes)
    if version == "v1":
        values["unet_channels"] = values["unet_channels_v1"]
        tail = _HIFT.format(hift_base=values["hift_base"]).format(**_V1_TAIL)
        return YAML_NAME[version], _V1.format(**values) + tail + _V1_MEL
    values["unet_channels"] = values["unet_channels_v2"]
    if sizes is FULL:
        values["llm_dim"] = FULL_QWEN_DIM
    body = (_V2 if version == "v2" else _V3).format(**values)
    body = body.format(n=version[1], llm_class="Qwen2LM" if version == "v2" else "CosyVoice3LM")
    tail = _HIFT.format(hift_base=values["hift_base"]).format(**(_V2_TAIL if version == "v2" else _V3_TAIL))
    mel = _V24_MEL.format(fmax="8000" if version == "v2" else "null",
                          tokenizer_extra="" if version == "v2" else "    version: cosyvoice3\n")
    return YAML_NAME[version], body + tail + mel
