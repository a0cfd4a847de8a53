"""Type and range checks of every size and setting a model yaml gives our network builders.

The builders (``from_config``) turn yaml values into ``int(...)`` / ``float(...)`` and build tensors from them;
a zero head count divides by zero, ``-64`` reaches ``torch.empty`` as a negative dimension, ``'many'`` fails
in ``int()``, and ``num_blocks: 100000`` tries to allocate terabytes. Here each value is checked by its key
name wherever it occurs in the ``llm`` / ``flow`` / ``hift`` sections (and the top-level settings) before
anything is built, and each class a section names is checked against the classes we implement. Every failure
is one ConfigError: ``<file>: <key path> is <value>: <what would be right>``.

Pure data checks: no torch import, no building.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cosydesk.model.config import ConfigError, Node

MAX_WIDTH = 65_536  # the released models' widest layer is 4,864 (Qwen2 MLP); 1024 elsewhere
MAX_HEADS = 1_024
MAX_BLOCKS = 1_000
MAX_VOCAB = 1_000_000  # Qwen2's text vocabulary is 151,936
MIN_SAMPLE_RATE, MAX_SAMPLE_RATE = 8_000, 192_000


@dataclass(frozen=True)
class Rule:
    """What one key may hold: a whole number (or list of them) in [low, high], or a real number in [low, high]."""

    kind: str  # "int" | "ints" (a list of ints) | "int_or_ints" | "nested_ints" (list of lists) | "real"
    low: float
    high: float
    what: str

    def describe(self) -> str:
        span = f"from {_fmt(self.low)} to {_fmt(self.high)}"
        if self.kind == "real":
            return f"a number {span} ({self.what})"
        if self.kind == "int":
            return f"a whole number {span} ({self.what})"
        return f"a list of whole numbers {span} ({self.what})"


def _fmt(value: float) -> str:
    return f"{int(value):,}" if float(value).is_integer() else f"{value:g}"


_WIDTH = Rule("int", 1, MAX_WIDTH, "a layer width")
_HEADS = Rule("int", 1, MAX_HEADS, "a head count")
_BLOCKS = Rule("int", 1, MAX_BLOCKS, "a layer count")
_VOCAB = Rule("int", 1, MAX_VOCAB, "a vocabulary size")
_KERNELS = Rule("ints", 1, 1_024, "kernel sizes")

# Keys by name, wherever they occur under llm / flow / hift (the builders read them by these names).
RULES: dict[str, Rule] = {
    **dict.fromkeys(
        ("input_size", "output_size", "linear_units", "text_encoder_input_size", "llm_input_size", "llm_output_size",
         "spk_embed_dim", "in_channels", "out_channels", "base_channels", "cond_channels", "attention_head_dim",
         "dim", "dim_head", "mel_dim", "mu_dim", "spk_dim", "spk_emb_dim"), _WIDTH),
    "channels": Rule("int_or_ints", 1, MAX_WIDTH, "layer widths"),
    **dict.fromkeys(("attention_heads", "heads", "num_heads"), _HEADS),
    **dict.fromkeys(("num_blocks", "depth", "n_blocks"), _BLOCKS),
    "num_mid_blocks": Rule("int", 0, MAX_BLOCKS, "a layer count"),
    **dict.fromkeys(("text_token_size", "speech_token_size", "vocab_size"), _VOCAB),
    "sampling_rate": Rule("int", MIN_SAMPLE_RATE, MAX_SAMPLE_RATE, "samples per second"),
    "input_frame_rate": Rule("real", 1, 1_000, "speech tokens per second"),
    "token_mel_ratio": Rule("int", 1, 16, "mel frames per speech token"),
    "pre_lookahead_len": Rule("int", 0, 64, "tokens of look-ahead"),
    "static_chunk_size": Rule("int", 0, 100_000, "frames per attention chunk"),
    "num_decoding_left_chunks": Rule("int", -1, 100_000, "-1 for all"),
    "nb_harmonics": Rule("int", 0, 64, "harmonics of the source"),
    "num_class": Rule("int", 1, 64, "outputs of the f0 predictor"),
    "n_spks": Rule("int", 1, 1_000, "speakers"),
    "ff_mult": Rule("real", 0.01, 64, "the feed-forward width factor"),
    "upsample_rates": Rule("ints", 1, 1_024, "upsampling factors"),
    "upsample_kernel_sizes": _KERNELS,
    "resblock_kernel_sizes": _KERNELS,
    "source_resblock_kernel_sizes": _KERNELS,
    "resblock_dilation_sizes": Rule("nested_ints", 1, 1_024, "dilations"),
    "source_resblock_dilation_sizes": Rule("nested_ints", 1, 1_024, "dilations"),
    "sampling_ratios": Rule("ints", 1, 64, "resampling factors"),
    "mix_ratio": Rule("ints", 1, 1_000, "text / speech token counts"),
    "n_fft": Rule("int", 2, 65_536, "FFT points"),
    "hop_len": Rule("int", 1, 65_536, "samples per hop"),
    "top_p": Rule("real", 0.0, 1.0, "a probability"),
    "top_k": Rule("int", 1, MAX_VOCAB, "candidate tokens"),
    "win_size": Rule("int", 1, 10_000, "recent tokens"),
    "tau_r": Rule("real", 0.0, 100.0, "a repetition ratio"),
    "nsf_alpha": Rule("real", 0.0, 100.0, "the sine amplitude"),
    "nsf_sigma": Rule("real", 0.0, 100.0, "the noise amplitude"),
    "nsf_voiced_threshold": Rule("real", 0.0, 100_000.0, "Hz"),
    "lrelu_slope": Rule("real", 0.0, 10.0, "a slope"),
    "audio_limit": Rule("real", 0.01, 1.0, "the output clamp"),
    "sigma_min": Rule("real", 0.0, 1.0, "the CFM noise floor"),
    "inference_cfg_rate": Rule("real", 0.0, 100.0, "the guidance strength"),
    "conv_pre_look_right": Rule("int", 0, 64, "samples of look-ahead"),
}

# Top-level settings the runtime reads itself.
TOP_RULES: dict[str, Rule] = {
    "sample_rate": Rule("int", MIN_SAMPLE_RATE, MAX_SAMPLE_RATE, "samples per second"),
    "token_mel_ratio": RULES["token_mel_ratio"],
    "token_frame_rate": RULES["input_frame_rate"],
    "chunk_size": Rule("int", 1, 100_000, "tokens per streaming chunk"),
}

# The class each slot may name (what our builders implement); the top-level llm / flow / hift classes are
# checked per version by config.load_model_config.
SLOT_CLASSES: dict[str, tuple[str, ...]] = {
    "llm.text_encoder": ("ConformerEncoder",),
    "llm.llm": ("TransformerEncoder", "Qwen2Encoder"),
    "llm.sampling": ("ras_sampling",),
    "flow.encoder": ("ConformerEncoder", "UpsampleConformerEncoder"),
    "flow.length_regulator": ("InterpolateRegulator",),
    "flow.pre_lookahead_layer": ("PreLookaheadLayer",),
    "flow.decoder": ("ConditionalCFM", "CausalConditionalCFM"),
    "flow.decoder.estimator": ("ConditionalDecoder", "CausalConditionalDecoder", "DiT"),
    "hift.f0_predictor": ("ConvRNNF0Predictor", "CausalConvRNNF0Predictor"),
}
# Slots a version's flow must fill (the builders index them without a default).
REQUIRED_SLOTS = {
    "v1": ("llm.text_encoder", "llm.llm", "flow.encoder", "flow.length_regulator", "flow.decoder",
           "flow.decoder.estimator", "hift.f0_predictor"),
    "v2": ("flow.encoder", "flow.decoder", "flow.decoder.estimator", "hift.f0_predictor"),
    "v3": ("flow.pre_lookahead_layer", "flow.decoder", "flow.decoder.estimator", "hift.f0_predictor"),
}
ESTIMATOR_BY_VERSION = {"v1": ("ConditionalDecoder",), "v2": ("CausalConditionalDecoder",), "v3": ("DiT",)}
MEL_BINS = 80  # every CosyVoice flow and vocoder works on 80-bin mels


def _bad(path: Path, where: str, value: Any, right: str) -> ConfigError:
    shown = repr(value) if not isinstance(value, (list, dict, Node)) else type(value).__name__
    if isinstance(value, Node):
        shown = f"!{value.kind}:{value.target}"
    if len(shown) > 60:
        shown = shown[:57] + "..."
    return ConfigError(f"{path}: {where} is {shown}: it must be {right}")


def _whole(value: Any) -> int | None:
    """``value`` as an int when it is a whole number (bools and fractions are not), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    return None


def check_value(path: Path, where: str, value: Any, rule: Rule) -> None:
    """ConfigError unless ``value`` (at ``where`` in ``path``) satisfies ``rule``."""
    if rule.kind == "real":
        ok = not isinstance(value, bool) and isinstance(value, (int, float)) and math.isfinite(value)
        if not ok or not rule.low <= value <= rule.high:
            raise _bad(path, where, value, rule.describe())
        return
    if rule.kind == "int" or (rule.kind == "int_or_ints" and not isinstance(value, (list, tuple))):
        number = _whole(value)
        if number is None or not rule.low <= number <= rule.high:
            raise _bad(path, where, value, rule.describe())
        return
    if not isinstance(value, (list, tuple)) or not value:
        raise _bad(path, where, value, rule.describe())
    for index, item in enumerate(value):
        if rule.kind == "nested_ints":
            check_value(path, f"{where}[{index}]", item, Rule("ints", rule.low, rule.high, rule.what))
        else:
            check_value(path, f"{where}[{index}]", item, Rule("int", rule.low, rule.high, rule.what))


def _walk(path: Path, where: str, value: Any, slots: dict[str, Node]) -> None:
    if isinstance(value, Node):
        slots[where] = value
        value = value.args
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise ConfigError(f"{path}: {where} has a key {key!r} that is not a name")
            inner = f"{where}.{key}"
            rule = RULES.get(key)
            if rule is not None:
                check_value(path, inner, item, rule)  # a Node where a number belongs is refused here too
            _walk(path, inner, item, slots)
    elif isinstance(value, list) and where.rsplit(".", 1)[-1] not in RULES:
        for index, item in enumerate(value):
            _walk(path, f"{where}[{index}]", item, slots)


def _encoder_relations(path: Path, where: str, node: Node) -> None:
    """Attention splits its width into heads: output_size must be a multiple of attention_heads."""
    width, heads = node.get("output_size", 256), node.get("attention_heads", 4)
    if _whole(width) and _whole(heads) and int(width) % int(heads):
        raise ConfigError(f"{path}: {where}.output_size {width} is not a multiple of {where}.attention_heads {heads}: "
                          "each attention head takes an equal share of the width")


def _hift_relations(path: Path, node: Node) -> None:
    args = node.args if isinstance(node.args, dict) else {}
    if "sampling_rate" not in args:
        raise ConfigError(f"{path}: hift.sampling_rate is missing: the vocoder needs the sample rate")
    istft = args.get("istft_params", {"n_fft": 16, "hop_len": 4})
    if not isinstance(istft, dict):
        raise _bad(path, "hift.istft_params", istft, "a mapping with n_fft and hop_len")
    for key in ("n_fft", "hop_len"):
        if key not in istft:
            raise ConfigError(f"{path}: hift.istft_params.{key} is missing")
    for key in ("upsample_rates", "upsample_kernel_sizes"):
        if key not in args:
            raise ConfigError(f"{path}: hift.{key} is missing: the vocoder's upsampling stages are read from it")
    pairs = (("upsample_rates", "upsample_kernel_sizes"), ("upsample_rates", "source_resblock_kernel_sizes"),
             ("resblock_kernel_sizes", "resblock_dilation_sizes"),
             ("source_resblock_kernel_sizes", "source_resblock_dilation_sizes"))
    for first, second in pairs:
        if first in args and second in args and len(args[first]) != len(args[second]):
            raise ConfigError(f"{path}: hift.{first} has {len(args[first])} entries but hift.{second} has "
                              f"{len(args[second])}: they describe the same stages")


def check_config_values(version: str, config: dict[str, Any], path: Path) -> None:
    """Every setting of a parsed model yaml checked for type and range, every named class for support.

    ``config`` is ``read_yaml``'s result whose llm / flow / hift classes ``load_model_config`` has checked."""
    path = Path(path)
    if "sample_rate" not in config:
        raise ConfigError(f"{path}: sample_rate is missing: the model's output rate is read from it")
    for key, rule in TOP_RULES.items():
        if key in config:
            check_value(path, key, config[key], rule)
    slots: dict[str, Node] = {}
    for section in ("llm", "flow", "hift"):
        _walk(path, section, config[section], slots)
    for slot, node in slots.items():
        allowed = SLOT_CLASSES.get(slot)
        if allowed is not None and node.class_name not in allowed:
            raise ConfigError(f"{path}: {slot} is {node.target}, which CosyDesk does not implement "
                              f"(supported: {', '.join(allowed)})")
    for slot in REQUIRED_SLOTS[version]:
        if slot not in slots:
            raise ConfigError(f"{path}: {slot} is missing (a {version} model needs it)")
    estimator = slots["flow.decoder.estimator"].class_name
    if estimator not in ESTIMATOR_BY_VERSION[version]:
        raise ConfigError(f"{path}: flow.decoder.estimator is {estimator}, but a {version} flow needs "
                          f"{' or '.join(ESTIMATOR_BY_VERSION[version])}")
    for slot in ("llm.text_encoder", "llm.llm", "flow.encoder"):
        node = slots.get(slot)
        if node is not None and node.class_name != "Qwen2Encoder":
            if "input_size" not in (node.args if isinstance(node.args, dict) else {}):
                raise ConfigError(f"{path}: {slot}.input_size is missing")
            _encoder_relations(path, slot, node)
    _hift_relations(path, config["hift"])
    for where in ("flow.output_size", "hift.in_channels"):
        section, key = where.split(".")
        value = config[section].get(key, MEL_BINS)
        if _whole(value) != MEL_BINS:
            raise _bad(path, where, value, f"{MEL_BINS} (CosyVoice works on {MEL_BINS}-bin mels)")
