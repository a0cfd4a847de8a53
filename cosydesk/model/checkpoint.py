"""Strict loading of the official llm.pt / flow.pt / hift.pt state dicts into our modules.

Accepted variations (both occur in released checkpoints):
- weight norm stored as ``*.weight_g`` / ``*.weight_v`` (legacy) or ``*.parametrizations.weight.original0/1``;
- hift keys prefixed with ``generator.`` (checkpoints saved from the GAN wrapper).
Anything else that does not match — a missing key, an unexpected key, a tensor of the wrong shape — is an
error that names the file and the key. Nothing is loaded partially: the module is only touched once
every key checks out.
"""

from __future__ import annotations

import pickle
import zipfile
from collections.abc import Mapping
from pathlib import Path

import torch
from torch import nn


class CheckpointError(ValueError):
    """A checkpoint file cannot be read or does not match the model described by the yaml."""


_LEGACY_WEIGHT_NORM = {".weight_g": ".parametrizations.weight.original0", ".weight_v": ".parametrizations.weight.original1"}


def read_state_dict(path: str | Path, mmap: bool = False) -> dict[str, torch.Tensor]:
    """Read a torch.save'd state dict safely (weights_only), with a clear error for a missing or corrupt file.

    ``mmap``: map the tensors' storage instead of reading it (the loader checks keys, dtypes and shapes against
    the yaml before anything is allocated); a legacy-format file, which cannot be mapped, is read normally."""
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"{path}: the checkpoint is missing")
    errors = (RuntimeError, EOFError, pickle.UnpicklingError, zipfile.BadZipFile, ValueError, OSError, KeyError,
              AttributeError, IndexError, TypeError, MemoryError)
    try:
        try:
            state = torch.load(path, map_location="cpu", weights_only=True, mmap=mmap)
        except RuntimeError:
            if not mmap:
                raise
            state = torch.load(path, map_location="cpu", weights_only=True)  # a legacy (non-zip) file
    except errors as err:
        raise CheckpointError(f"{path}: corrupt or not a torch state dict ({type(err).__name__})") from err
    if not isinstance(state, Mapping) or not all(isinstance(k, str) and isinstance(v, torch.Tensor)
                                                 for k, v in state.items()):
        raise CheckpointError(f"{path}: does not hold a state dict of tensors")
    return dict(state)


def normalise_keys(state: Mapping[str, torch.Tensor], strip_prefix: str | None = None) -> dict[str, torch.Tensor]:
    """Map legacy weight-norm names to parametrization names and drop an optional leading prefix."""
    out: dict[str, torch.Tensor] = {}
    for key, value in state.items():
        if strip_prefix and key.startswith(strip_prefix):
            key = key[len(strip_prefix):]
        for old, new in _LEGACY_WEIGHT_NORM.items():
            if key.endswith(old):
                key = key[: -len(old)] + new
                break
        out[key] = value
    return out


def _kind(tensor: torch.Tensor) -> str:
    if tensor.is_complex():
        return "complex"
    if tensor.is_floating_point():
        return "float"
    return "bool" if tensor.dtype == torch.bool else "int"


def check_state_dict(expected: Mapping[str, torch.Tensor], state: Mapping[str, torch.Tensor], source: str,
                     strip_prefix: str | None = None, scan_values: bool = True) -> dict[str, torch.Tensor]:
    """``state`` with normalised keys after checking it against ``expected`` (a module's state dict, which may live
    on the meta device): the same keys, shapes and kinds of dtype (a float weight stored as integers or complex
    numbers is refused), every float finite. CheckpointError naming ``source`` and the key otherwise.

    ``scan_values=False`` leaves out the finite-values scan, the one check that reads every weight (a quick
    check of a memory-mapped file reads its header only)."""
    state = normalise_keys(state, strip_prefix)
    missing = [k for k in expected if k not in state]
    unexpected = [k for k in state if k not in expected]
    if missing:
        raise CheckpointError(f"{source}: missing key {missing[0]!r}" + (f" (and {len(missing) - 1} more)" if len(missing) > 1 else "")
                              + " - the file does not match the model described by the yaml")
    if unexpected:
        raise CheckpointError(
            f"{source}: unexpected key {unexpected[0]!r}" + (f" (and {len(unexpected) - 1} more)" if len(unexpected) > 1 else "")
            + " - the file does not match the model described by the yaml"
        )
    for key, tensor in expected.items():
        if tuple(state[key].shape) != tuple(tensor.shape):
            raise CheckpointError(
                f"{source}: key {key!r} has shape {list(state[key].shape)}, the yaml's model needs {list(tensor.shape)}"
            )
        if _kind(state[key]) != _kind(tensor):
            raise CheckpointError(f"{source}: key {key!r} holds {state[key].dtype} values, the model needs "
                                  f"{tensor.dtype} (a {_kind(tensor)} tensor): the file is damaged or not a CosyVoice "
                                  "checkpoint")
    for key, tensor in state.items() if scan_values else ():  # a NaN weight gives NaN audio at every request
        if tensor.is_floating_point() and not bool(torch.isfinite(tensor).all()):
            raise CheckpointError(f"{source}: key {key!r} holds NaN or infinite values: the file is damaged; "
                                  "download the model again")
    return state


def load_strict(module: nn.Module, state: Mapping[str, torch.Tensor], source: str, strip_prefix: str | None = None) -> None:
    """Load ``state`` into ``module`` requiring an exact key and shape match; raise CheckpointError naming the key."""
    module.load_state_dict(check_state_dict(module.state_dict(), state, source, strip_prefix), strict=True)


def load_checkpoint(module: nn.Module, path: str | Path, strip_prefix: str | None = None) -> None:
    """read_state_dict + load_strict."""
    load_strict(module, read_state_dict(path), str(path), strip_prefix)
