"""Apply the mutations of tests/data/malformed_model_folders.json to a copy of a tiny model folder.

A copy hard-links the files of the original (cheap); every mutation replaces a file (unlink, then write) so
the shared original is never changed. Used by test_malformed_model_folders.py.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

from tests.support.paths import load_test_data

CASES: list[dict[str, Any]] = load_test_data("malformed_model_folders.json")["cases"]
YAML_NAMES = {"v1": "cosyvoice.yaml", "v2": "cosyvoice2.yaml", "v3": "cosyvoice3.yaml"}


def copy_folder(source: Path, target: Path) -> Path:
    """``source`` copied to ``target`` with hard links (falls back to copies across file systems)."""

    def link(src: str, dst: str) -> None:
        try:
            os.link(src, dst)
        except OSError:
            shutil.copy2(src, dst)

    return Path(shutil.copytree(source, target, copy_function=link))


def _replace(path: Path, data: bytes) -> None:
    if path.exists() or path.is_symlink():
        path.unlink()
    path.write_bytes(data)


def _save(path: Path, value: Any) -> None:
    import torch

    if path.exists() or path.is_symlink():
        path.unlink()
    torch.save(value, path)


def _tensor(spec: Any):
    """A tensor from {"shape": [...], "fill": x, "dtype": "float32"} (or a plain value left as it is)."""
    import torch

    if not isinstance(spec, dict) or "shape" not in spec:
        return spec
    dtype = getattr(torch, spec.get("dtype", "float32"))
    return torch.full(spec["shape"], float(spec.get("fill", 0.5)) if dtype.is_floating_point else int(spec.get("fill", 1)),
                      dtype=dtype)


def _first_float_key(state: dict, min_numel: int = 2) -> str:
    return next(k for k, v in state.items() if v.is_floating_point() and v.numel() >= min_numel)


def _mutate_checkpoint(path: Path, op: str) -> None:
    import torch

    state = torch.load(path, weights_only=True)
    key = _first_float_key(state)
    if op in ("nan", "inf"):
        state[key] = state[key].clone()
        state[key].view(-1)[1] = float(op)
    elif op == "int_dtype":
        state[key] = state[key].to(torch.int32)
    elif op == "wrong_shape":
        state[key] = state[key].reshape(-1)[:-1].clone()
    elif op == "drop_key":
        del state[key]
    elif op == "not_a_state_dict":
        _save(path, [1, 2, 3])
        return
    elif op == "truncate":
        data = path.read_bytes()
        _replace(path, data[: len(data) // 2])
        return
    else:
        raise ValueError(f"unknown checkpoint op {op!r}")
    _save(path, state)


def _mutate_spk2info(path: Path, spec: dict) -> None:
    import torch

    table = torch.load(path, weights_only=True)
    name = spec.get("speaker") or next(iter(table))
    if "entry" in spec:
        table[name] = spec["entry"]
    elif "zero_shot_without" in spec:
        entry = {"prompt_text": torch.zeros(1, 4, dtype=torch.int32),
                 "llm_prompt_speech_token": torch.zeros(1, 6, dtype=torch.int32),
                 "flow_prompt_speech_token": torch.zeros(1, 6, dtype=torch.int32),
                 "prompt_speech_feat": torch.zeros(1, 12, 80), "llm_embedding": torch.zeros(1, 192),
                 "flow_embedding": torch.zeros(1, 192)}
        entry.update({key: _tensor(value) for key, value in spec.get("set", {}).items()})
        for key in spec["zero_shot_without"]:
            entry.pop(key)
        table[name] = entry
    else:
        entry = dict(table[name])
        for key in spec.get("delete", []):
            entry.pop(key)
        entry.update({key: _tensor(value) for key, value in spec.get("set", {}).items()})
        table[name] = entry
    _save(path, table)


def constant_onnx(path: Path, inputs: list[tuple[str, int]], output: str, spec: dict) -> None:
    """An ONNX graph with the given (name, onnx dtype) inputs whose output is ``spec``: a constant of
    {"shape", "dtype", "fill"}, or {"fail": true}, a reshape that cannot succeed at run time."""
    import onnx
    from onnx import TensorProto, helper

    graph_inputs = [helper.make_tensor_value_info(name, dtype, None) for name, dtype in inputs]
    if spec.get("fail"):
        nodes = [helper.make_node("Constant", [], ["shape"], value=helper.make_tensor("s", TensorProto.INT64, [3], [7, 13, 5])),
                 helper.make_node("Reshape", [inputs[0][0], "shape"], [output])]
        out_type = TensorProto.FLOAT
    else:
        out_type = {"float32": TensorProto.FLOAT, "int64": TensorProto.INT64, "int32": TensorProto.INT32}[spec["dtype"]]
        shape = helper.make_tensor("shape_value", TensorProto.INT64, [len(spec["shape"])], spec["shape"])
        fill = helper.make_tensor("fill", out_type, [1], [spec["fill"]])
        nodes = [helper.make_node("Constant", [], ["shape"], value=shape),
                 helper.make_node("ConstantOfShape", ["shape"], [output], value=fill)]
    graph = helper.make_graph(nodes, "constant", graph_inputs, [helper.make_tensor_value_info(output, out_type, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    if path.exists() or path.is_symlink():
        path.unlink()
    onnx.save(model, str(path))


def _mutate_onnx(folder: Path, spec: dict) -> None:
    from onnx import TensorProto

    name = spec["file"]
    if name.startswith("campplus"):
        inputs, output = [("input", TensorProto.FLOAT)], "output"
    else:
        inputs, output = [("feats", TensorProto.FLOAT), ("feats_length", TensorProto.INT32)], "indices"
    constant_onnx(folder / name, inputs, output, spec)


def apply_mutation(folder: Path, version: str, mutation: dict, outside: Path) -> None:
    """One mutation of the table; ``outside`` is a folder beside the model folder (targets of escaping links)."""
    op = mutation["op"]
    yaml_path = folder / YAML_NAMES[version]
    if op == "yaml_replace":
        text = yaml_path.read_text(encoding="utf-8")
        old, new = mutation["old"], mutation["new"]
        assert text.count(old) == 1, f"{old!r} occurs {text.count(old)} times in {yaml_path.name}: not one edit"
        _replace(yaml_path, text.replace(old, new).encode(mutation.get("encoding", "utf-8")))
    elif op == "yaml_bytes":
        _replace(yaml_path, bytes.fromhex(mutation["hex"]))
    elif op == "write":
        data = bytes.fromhex(mutation["hex"]) if "hex" in mutation else mutation.get("text", "").encode("utf-8")
        _replace(folder / mutation["file"], data)
    elif op == "delete":
        (folder / mutation["file"]).unlink()
    elif op == "json_set":
        path = folder / mutation["file"]
        data = json.loads(path.read_text(encoding="utf-8"))
        data.update(mutation["set"])
        _replace(path, json.dumps(data).encode("utf-8"))
    elif op == "symlink_outside":
        path = folder / mutation["file"]
        target = outside / path.name
        outside.mkdir(exist_ok=True)
        if mutation.get("dangling"):
            target = outside / "nothing-here"
        else:
            shutil.copy2(path, target)
        path.unlink()
        path.symlink_to(target)
    elif op == "checkpoint":
        _mutate_checkpoint(folder / mutation["file"], mutation["change"])
    elif op == "spk2info":
        _mutate_spk2info(folder / "spk2info.pt", mutation)
    elif op == "onnx":
        _mutate_onnx(folder, mutation)
    else:
        raise ValueError(f"unknown mutation {op!r}")


def make_case_folder(case: dict, originals: dict[str, Path], root: Path) -> Path:
    """A mutated copy of the case's tiny model under ``root``."""
    folder = copy_folder(originals[case.get("model", "v2")], root / "model")
    for mutation in case["mutate"]:
        apply_mutation(folder, case.get("model", "v2"), mutation, root / "outside")
    return folder
