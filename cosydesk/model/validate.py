"""One validation pass over a model folder before anything of the model is allocated.

A model folder is untrusted input (downloaded or received). ``check_model_folder`` reads it the way the loader
will and refuses, with one ConfigError / CheckpointError of the form ``<file>: <what is wrong>``:

1. symbolic links that leave the folder (or point at nothing);
2. the yaml: parsed with limits (config.py), every value checked for type and range and every class named for
   support (config_values.py);
3. CosyVoice-BlankEN (v2/v3): config.json's backbone sizes, the tokenizer files parsed (hf_files.py);
4. the networks the yaml describes, built on the meta device (no memory): anything a builder still cannot
   make of the settings, and a parameter count far beyond any CosyVoice model, is refused here;
5. llm.pt / flow.pt / hift.pt, memory-mapped: keys, dtypes and shapes against the meta networks, every weight
   finite;
6. spk2info.pt: every entry a table of tensors of the right shapes, dtypes and id ranges.

The result (``CheckedFolder``) carries what the loader needs, so nothing is read twice. No threads, no GPU.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import nn

from cosydesk.model.checkpoint import CheckpointError, check_state_dict, read_state_dict
from cosydesk.model.config import ConfigError, find_model_yaml, load_model_config

MAX_FOLDER_ENTRIES = 20_000  # a released model folder holds a few dozen files
# The largest released network (the v2/v3 LLM with its text table) has ~0.64e9 parameters; 4e9 (16 GB in
# float32) leaves room for bigger models and still refuses a size typo before it allocates terabytes.
MAX_NETWORK_ELEMENTS = 4_000_000_000
CHECKPOINT_PREFIX = {"llm": None, "flow": None, "hift": "generator."}
BLANKEN = "CosyVoice-BlankEN"
TOKENIZER_FILES_NEEDED = ("vocab.json", "merges.txt", "tokenizer_config.json")  # AutoTokenizer's Qwen2 files

# spk2info entries: an SFT speaker holds `embedding`; a zero-shot one (official add_zero_shot_spk) holds these.
ZERO_SHOT_KEYS = ("prompt_text", "llm_prompt_speech_token", "flow_prompt_speech_token", "prompt_speech_feat",
                  "llm_embedding", "flow_embedding")
MAX_SPEAKERS = 10_000
MAX_TEXT_VOCAB = 151_936  # Qwen2's text ids (v1's whisper vocabulary is smaller)


@dataclass
class CheckedFolder:
    """A model folder that passed every check, with what the loader needs (states are memory-mapped)."""

    model_dir: Path
    yaml_path: Path
    version: str
    config: dict[str, Any]
    states: dict[str, dict[str, torch.Tensor]]
    spk2info: dict[str, dict[str, torch.Tensor]] = field(default_factory=dict)
    parameter_counts: dict[str, int] = field(default_factory=dict)


# ------------------------------------------------------------------------------------------ symbolic links
def _allowed_roots(model_dir: Path) -> list[Path]:
    root = model_dir.resolve()
    roots = [root]
    # a Hugging Face cache snapshot (<repo>/snapshots/<rev>) links each file to <repo>/blobs/<hash>
    if root.parent.name == "snapshots" and (root.parent.parent / "blobs").is_dir():
        roots.append((root.parent.parent / "blobs").resolve())
    return roots


def check_links(model_dir: Path) -> None:
    """ConfigError for a symbolic link inside ``model_dir`` that points outside it (or at nothing)."""
    roots = _allowed_roots(model_dir)
    seen = 0
    for folder, dirs, files in os.walk(model_dir, followlinks=False):
        for name in dirs + files:
            seen += 1
            if seen > MAX_FOLDER_ENTRIES:
                raise ConfigError(f"{model_dir}: holds more than {MAX_FOLDER_ENTRIES:,} files: not a model folder")
            path = Path(folder) / name
            if not path.is_symlink():
                continue
            try:
                target = path.resolve(strict=True)
            except (OSError, RuntimeError):
                raise ConfigError(f"{path}: a symbolic link to {os.readlink(path)}, which does not exist") from None
            if not any(target == root or target.is_relative_to(root) for root in roots):
                raise ConfigError(f"{path}: a symbolic link to {target}, outside the model folder; a model folder "
                                  "must hold its own files (copy the file in instead)")


# ------------------------------------------------------------------------------------------ BlankEN
def check_blanken(model_dir: Path, for_synthesis: bool) -> None:
    """config.json's backbone sizes and the text tokenizer files of CosyVoice-BlankEN (v2/v3)."""
    from cosydesk.model.hf_files import (
        check_blanken_folder,
        check_qwen_config_values,
        check_tokenizer_files,
        read_json_object,
    )

    blanken = model_dir / BLANKEN
    if not blanken.is_dir():
        raise ConfigError(f"{blanken}: missing: a v2/v3 model folder holds the CosyVoice-BlankEN folder "
                          "(its config.json and text tokenizer)")
    config_path = blanken / "config.json"
    if not config_path.is_file():
        raise ConfigError(f"{config_path}: missing: the Qwen2 backbone's sizes are read from it")
    check_blanken_folder(blanken)
    check_qwen_config_values(config_path, read_json_object(config_path, "a Qwen2 config"))
    check_tokenizer_files(blanken)
    if for_synthesis:
        missing = [name for name in TOKENIZER_FILES_NEEDED if not (blanken / name).is_file()]
        if missing:
            raise ConfigError(f"{blanken / missing[0]}: missing: the text tokenizer needs "
                              f"{', '.join(TOKENIZER_FILES_NEEDED)} (they come with the released model download)")


# ------------------------------------------------------------------------------------------ networks
def build_on_meta(version: str, config: dict[str, Any], model_dir: Path, yaml_path: Path):
    """(llm, flow, hift) built on the meta device: shapes without memory. Whatever a builder still cannot make
    of the (already range-checked) settings is one ConfigError naming the yaml."""
    from cosydesk.model.networks import build_llm
    from cosydesk.model.flow import build_flow
    from cosydesk.model.hift import build_hift

    built = []
    for section, build in (("llm", lambda: build_llm(version, config["llm"], model_dir)),
                           ("flow", lambda: build_flow(config["flow"])), ("hift", lambda: build_hift(config["hift"]))):
        try:
            with torch.device("meta"):
                built.append(build())
        except ConfigError as err:
            message = str(err)
            raise ConfigError(message if str(model_dir) in message else f"{yaml_path}: {section}: {message}") from err
        except (ValueError, TypeError, KeyError, IndexError, AttributeError, ZeroDivisionError, OverflowError,
                RuntimeError, NotImplementedError, AssertionError) as err:
            detail = " ".join(str(err).split())[:200]
            raise ConfigError(f"{yaml_path}: the {section} section does not describe a network CosyDesk can build "
                              f"({type(err).__name__}: {detail})") from err
    return tuple(built)


def element_count(module: nn.Module) -> int:
    """Parameters and buffers (tied tensors once)."""
    return sum(p.numel() for p in module.parameters()) + sum(b.numel() for b in module.buffers())


def _check_size(name: str, module: nn.Module, yaml_path: Path) -> int:
    count = element_count(module)
    if count > MAX_NETWORK_ELEMENTS:
        raise ConfigError(f"{yaml_path}: the {name} it describes has {count:.3g} parameters ({4 * count / 1e9:,.0f} GB "
                          f"in float32), more than any CosyVoice model ({MAX_NETWORK_ELEMENTS:.0e}): a size in the "
                          "yaml is wrong")
    return count


# ------------------------------------------------------------------------------------------ spk2info
def read_speaker_table(path: Path) -> dict[str, Any]:
    """spk2info.pt as plain data (weights_only: never runs code); {} when the file is absent."""
    if not (path.exists() or path.is_symlink()):
        return {}
    if not path.is_file():
        raise CheckpointError(f"{path}: not a regular file")
    try:
        data = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as err:  # noqa: BLE001 - any unpickling failure means the same thing to the user
        raise CheckpointError(f"{path}: corrupt or not a speaker table ({type(err).__name__})") from err
    if not isinstance(data, dict):
        raise CheckpointError(f"{path}: does not hold a speaker table (a dict of speakers)")
    return data


@dataclass(frozen=True)
class SpeakerLimits:
    """What a spk2info entry's tensors must fit: the speaker vector width and the id ranges of the networks."""

    embed_dim: int
    llm_speech_vocab: int
    flow_speech_vocab: int
    text_vocab: int


def _tensor(path: Path, name: str, entry: dict, key: str) -> torch.Tensor:
    value = entry[key]
    if not isinstance(value, torch.Tensor):
        raise CheckpointError(f"{path}: speaker {name!r}: {key!r} is a {type(value).__name__}, not a tensor")
    return value


def _check_vector(path: Path, name: str, entry: dict, key: str, width: int) -> None:
    value = _tensor(path, name, entry, key)
    if value.numel() != width or value.dim() not in (1, 2) or not value.is_floating_point():
        raise CheckpointError(f"{path}: speaker {name!r}: {key!r} is a {value.dtype} tensor of shape "
                              f"{list(value.shape)}; a speaker vector is [1, {width}] floats")
    if not bool(torch.isfinite(value).all()):
        raise CheckpointError(f"{path}: speaker {name!r}: {key!r} holds NaN/inf values: the file is damaged; "
                              "download the model again")


def _check_ids(path: Path, name: str, entry: dict, key: str, vocab: int) -> None:
    value = _tensor(path, name, entry, key)
    if value.dim() != 2 or value.shape[0] != 1 or value.is_floating_point() or value.is_complex():
        raise CheckpointError(f"{path}: speaker {name!r}: {key!r} is a {value.dtype} tensor of shape "
                              f"{list(value.shape)}; token ids are [1, N] integers")
    if value.numel() and (int(value.min()) < 0 or int(value.max()) >= vocab):
        raise CheckpointError(f"{path}: speaker {name!r}: {key!r} holds ids from {int(value.min())} to "
                              f"{int(value.max())}; this model's ids are 0..{vocab - 1}")


def check_speaker_table(path: Path, table: dict[str, Any], limits: SpeakerLimits) -> dict[str, dict[str, torch.Tensor]]:
    """Every spk2info entry checked: an SFT speaker's ``embedding`` [1, D]; a zero-shot speaker's six prompt tensors
    (text and speech ids in range, a [1, F, 80] mel, [1, D] vectors), all finite. CheckpointError naming the
    file and the speaker otherwise."""
    if len(table) > MAX_SPEAKERS:
        raise CheckpointError(f"{path}: holds {len(table):,} speakers, more than {MAX_SPEAKERS:,}")
    for name, entry in table.items():
        if not isinstance(name, str) or not name.strip():
            raise CheckpointError(f"{path}: a speaker name {name!r} is not a name")
        if not isinstance(entry, dict) or not all(isinstance(key, str) for key in entry):
            raise CheckpointError(f"{path}: speaker {name!r} is a {type(entry).__name__}, not a table of tensors")
        zero_shot = [key for key in ZERO_SHOT_KEYS if key in entry]
        if zero_shot:
            missing = [key for key in ZERO_SHOT_KEYS if key not in entry]
            if missing:
                raise CheckpointError(f"{path}: zero-shot speaker {name!r} has no {missing[0]!r} (a zero-shot entry "
                                      f"holds {', '.join(ZERO_SHOT_KEYS)})")
            _check_ids(path, name, entry, "prompt_text", limits.text_vocab)
            _check_ids(path, name, entry, "llm_prompt_speech_token", limits.llm_speech_vocab)
            _check_ids(path, name, entry, "flow_prompt_speech_token", limits.flow_speech_vocab)
            _check_vector(path, name, entry, "llm_embedding", limits.embed_dim)
            _check_vector(path, name, entry, "flow_embedding", limits.embed_dim)
            feat = _tensor(path, name, entry, "prompt_speech_feat")
            if feat.dim() != 3 or feat.shape[0] != 1 or feat.shape[2] != 80 or not feat.is_floating_point():
                raise CheckpointError(f"{path}: speaker {name!r}: 'prompt_speech_feat' is a {feat.dtype} tensor of "
                                      f"shape {list(feat.shape)}; a prompt mel is [1, frames, 80] floats")
            if not bool(torch.isfinite(feat).all()):
                raise CheckpointError(f"{path}: speaker {name!r}: 'prompt_speech_feat' holds NaN/inf values")
        elif "embedding" in entry:
            _check_vector(path, name, entry, "embedding", limits.embed_dim)
        else:
            raise CheckpointError(f"{path}: speaker {name!r} has no 'embedding' (an SFT speaker holds its "
                                  "[1, 192] speaker vector there)")
    return table


def _speaker_limits(version: str, config: dict[str, Any], llm_state: dict[str, torch.Tensor]) -> SpeakerLimits:
    text_key = "text_embedding.weight" if version == "v1" else "llm.model.model.embed_tokens.weight"
    flow_vocab = config["flow"].get("vocab_size", 4096 if version == "v1" else 6561)
    return SpeakerLimits(embed_dim=int(config["flow"].get("spk_embed_dim", 192)),
                         llm_speech_vocab=int(config["llm"]["speech_token_size"]),
                         flow_speech_vocab=int(flow_vocab),
                         # the tests' tiny tables alias <|endofprompt|> (151646) onto their last row at run time
                         text_vocab=max(int(llm_state[text_key].shape[0]), MAX_TEXT_VOCAB))


# ------------------------------------------------------------------------------------------ the pass
def check_model_folder(model_dir: str | Path, for_synthesis: bool = False, scan_values: bool = True) -> CheckedFolder:
    """Validate everything the loader will read in ``model_dir``; nothing of the model is allocated.

    ``for_synthesis``: also require the text tokenizer files (v2/v3) that synthesis needs. ``scan_values=False``:
    every check but the NaN / infinity scan of the weights (which reads all of them), for a quick diagnosis."""
    from cosydesk.model.config_values import check_config_values

    model_dir = Path(model_dir).expanduser()
    yaml_path, _ = find_model_yaml(model_dir)
    check_links(model_dir)
    version, config = load_model_config(model_dir)
    check_config_values(version, config, yaml_path)
    if version != "v1":
        check_blanken(model_dir, for_synthesis)
    networks = dict(zip(("llm", "flow", "hift"), build_on_meta(version, config, model_dir, yaml_path)))
    counts = {name: _check_size(name, module, yaml_path) for name, module in networks.items()}
    states = {}
    for name, module in networks.items():
        path = model_dir / f"{name}.pt"
        states[name] = check_state_dict(module.state_dict(), read_state_dict(path, mmap=True), str(path),
                                        CHECKPOINT_PREFIX[name], scan_values)
    spk_path = model_dir / "spk2info.pt"
    table = check_speaker_table(spk_path, read_speaker_table(spk_path), _speaker_limits(version, config, states["llm"]))
    return CheckedFolder(model_dir=model_dir, yaml_path=yaml_path, version=version, config=config, states=states,
                         spk2info=table, parameter_counts=counts)
