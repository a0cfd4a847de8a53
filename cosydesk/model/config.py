"""Read the official CosyVoice yaml (HyperPyYAML dialect) as plain data — never executing it.

The official loader instantiates every `!new:` class and calls every `!apply:` function while parsing.
We only need to know *what* the file describes, so each tag becomes a `Node`:

- ``!new:pkg.Class``   -> Node(kind="new",   target="pkg.Class", args={...kwargs} or [...])
- ``!name:pkg.func``   -> Node(kind="name",  target="pkg.func",  args=...)   (a partial in the original)
- ``!apply:pkg.func``  -> Node(kind="apply", target="pkg.func",  args=...)   (never called here)
- ``!ref <key>``       -> the value of top-level ``key`` (nested refs resolved, with ``<a> * <b>`` arithmetic)

Only literals and + - * / // % and parentheses are allowed inside a ``!ref`` expression.

A model folder is untrusted input, so the reader has limits: the file's size, how many values it holds once
its aliases are expanded (a "billion laughs" file is a few hundred bytes), nesting depth, recursive aliases,
and the size of what ``!ref`` arithmetic may produce (a chain of ``<a> * <a>`` squares a number per line).
Each is refused with a ConfigError naming the file, before the work or memory is spent.
"""

from __future__ import annotations

import ast
import operator
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

VERSION_BY_YAML = {"cosyvoice.yaml": "v1", "cosyvoice2.yaml": "v2", "cosyvoice3.yaml": "v3"}

# Limits for untrusted yaml (the official files: ~9 KB, ~1,500 values, 8 levels deep, numbers below 2**31).
MAX_YAML_BYTES = 256 * 1024
MAX_YAML_VALUES = 100_000  # counted with every alias expanded
MAX_YAML_DEPTH = 64
MAX_REF_INT_BITS = 64  # an int a !ref computes with, or computes
MAX_REF_TEXT = 10_000  # characters of a string a !ref builds


class ConfigError(ValueError):
    """The model yaml cannot be understood (names the file and the key)."""


@dataclass
class Node:
    """A tagged yaml value: a class to build (`new`), a function reference (`name`) or a call (`apply`)."""

    kind: str
    target: str
    args: Any = field(default_factory=dict)

    @property
    def class_name(self) -> str:
        return self.target.rsplit(".", 1)[-1]

    def get(self, key: str, default: Any = None) -> Any:
        return self.args.get(key, default) if isinstance(self.args, dict) else default

    def __getitem__(self, key: str) -> Any:
        if not isinstance(self.args, dict) or key not in self.args:
            raise ConfigError(f"{self.target} has no argument {key!r}")
        return self.args[key]


@dataclass
class _Ref:
    expr: str


class _Loader(yaml.SafeLoader):
    """SafeLoader that maps HyperPyYAML tags to inert data."""


def _construct_tagged(kind: str):
    def construct(loader: _Loader, suffix: str, node: yaml.Node) -> Node:
        if isinstance(node, yaml.MappingNode):
            args: Any = loader.construct_mapping(node, deep=True)
        elif isinstance(node, yaml.SequenceNode):
            args = loader.construct_sequence(node, deep=True)
        else:
            value = loader.construct_scalar(node)
            args = {} if value in ("", None) else [value]
        return Node(kind=kind, target=suffix, args=args)

    return construct


def _construct_ref(loader: _Loader, node: yaml.Node) -> _Ref:
    return _Ref(str(loader.construct_scalar(node)))


for _kind in ("new", "name", "apply"):
    _Loader.add_multi_constructor(f"!{_kind}:", _construct_tagged(_kind))
_Loader.add_constructor("!ref", _construct_ref)

# yaml 1.1 reads "1e-06" as a string; accept plain scientific notation as float like HyperPyYAML does.
_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:\d+\.?\d*|\.\d+)[eE][-+]?\d+$"),
    list("-+0123456789."),
)

_BINOPS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
}


def _bounded(value: Any, where: str) -> Any:
    """``value`` if !ref arithmetic may use or produce it: a number of at most MAX_REF_INT_BITS bits or a short
    string (a list, a mapping or a Node is no operand; a huge number would make the next multiplication hang)."""
    if isinstance(value, int) and value.bit_length() > MAX_REF_INT_BITS:
        raise ConfigError(f"{where}: a number of more than {MAX_REF_INT_BITS} bits (a model setting is far smaller)")
    if isinstance(value, str) and len(value) > MAX_REF_TEXT:
        raise ConfigError(f"{where}: a string of more than {MAX_REF_TEXT} characters")
    if not isinstance(value, (int, float, str)):
        raise ConfigError(f"{where}: arithmetic on a {type(value).__name__}, not a number")
    return value


def _apply(op: ast.operator, left: Any, right: Any, where: str) -> Any:
    # string repetition is sized before it runs: "x" * 10**9 would take the memory first and fail after
    for text, count in ((left, right), (right, left)):
        if isinstance(op, ast.Mult) and isinstance(text, str) and isinstance(count, int) and len(text) * count > MAX_REF_TEXT:
            raise ConfigError(f"{where}: builds a string of more than {MAX_REF_TEXT} characters")
    try:
        return _bounded(_BINOPS[type(op)](left, right), where)
    except ZeroDivisionError as err:
        raise ConfigError(f"{where}: divides by zero") from err
    except (TypeError, OverflowError) as err:
        raise ConfigError(f"{where}: cannot compute ({err})") from err


def _eval_arith(tree: ast.AST, names: dict[str, Any], where: str) -> Any:
    """Evaluate a parsed !ref expression; ``where`` ("<file>: !ref '<expr>'") starts every error message."""
    if isinstance(tree, ast.Expression):
        return _eval_arith(tree.body, names, where)
    if isinstance(tree, ast.Constant) and isinstance(tree.value, (int, float, str)):
        return _bounded(tree.value, where)
    if isinstance(tree, ast.Name) and tree.id in names:
        return _bounded(names[tree.id], where)
    if isinstance(tree, ast.BinOp) and type(tree.op) in _BINOPS:
        return _apply(tree.op, _eval_arith(tree.left, names, where), _eval_arith(tree.right, names, where), where)
    if isinstance(tree, ast.UnaryOp) and isinstance(tree.op, (ast.USub, ast.UAdd)):
        value = _eval_arith(tree.operand, names, where)
        if isinstance(value, str):
            raise ConfigError(f"{where}: a sign before a string")
        return -value if isinstance(tree.op, ast.USub) else value
    raise ConfigError(f"{where}: unsupported expression (only numbers, <keys>, + - * / // % and parentheses)")


class _Resolver:
    def __init__(self, top: dict[str, Any], path: str):
        self.top = top
        self.path = path
        self.done: dict[str, Any] = {}
        self.active: set[str] = set()

    def key(self, name: str) -> Any:
        if name in self.done:
            return self.done[name]
        parts = name.split(".")
        if parts[0] not in self.top:
            raise ConfigError(f"{self.path}: !ref <{name}> names no top-level key")
        if name in self.active:
            raise ConfigError(f"{self.path}: circular !ref <{name}>")
        self.active.add(name)
        value = self.value(self.top[parts[0]])
        for part in parts[1:]:
            try:
                value = value[part]
            except (KeyError, IndexError, TypeError) as err:
                raise ConfigError(f"{self.path}: !ref <{name}>: {parts[0]} has no {part!r}") from err
        self.active.discard(name)
        self.done[name] = value
        return value

    def ref(self, expr: str) -> Any:
        refs = re.findall(r"<([^<>]+)>", expr)
        if not refs:
            raise ConfigError(f"{self.path}: !ref {expr!r} has no <key>")
        stripped = expr.strip()
        if stripped == f"<{refs[0]}>":
            return self.key(refs[0])
        names = {}
        source = expr
        for index, name in enumerate(refs):
            alias = f"_r{index}"
            names[alias] = self.key(name)
            source = source.replace(f"<{name}>", alias, 1)
        if len(source) > MAX_REF_TEXT:
            raise ConfigError(f"{self.path}: a !ref expression of {len(source)} characters")
        try:
            tree = ast.parse(source.strip(), mode="eval")
        except (SyntaxError, ValueError, RecursionError) as err:  # ValueError: a NUL; RecursionError: (((((...
            raise ConfigError(f"{self.path}: cannot parse !ref {expr!r}") from err
        return _eval_arith(tree, names, f"{self.path}: !ref {expr!r}")

    def value(self, value: Any) -> Any:
        if isinstance(value, _Ref):
            return self.ref(value.expr)
        if isinstance(value, Node):
            value.args = self.value(value.args)
            return value
        if isinstance(value, dict):
            return {k: self.value(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.value(v) for v in value]
        return value


def read_regular_file(path: Path, limit: int, too_large: str) -> bytes:
    """The bytes of an untrusted file: a regular file (a FIFO or device never blocks the open) of at most
    ``limit`` bytes; ConfigError naming the file otherwise (``too_large`` says what the file should be)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as err:
        raise ConfigError(f"{path}: cannot be read ({err.strerror or err})") from err
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise ConfigError(f"{path}: not a regular file")
        if info.st_size > limit:
            raise ConfigError(f"{path}: {info.st_size:,} bytes, {too_large} (at most {limit:,} bytes are read)")
        data = handle.read(limit + 1)
    if len(data) > limit:  # grew after the stat
        raise ConfigError(f"{path}: over {limit:,} bytes, {too_large}")
    return data


def _read_limited(path: Path) -> str:
    """The file's text: a regular file (never a FIFO or device) of at most MAX_YAML_BYTES, in UTF-8."""
    data = read_regular_file(path, MAX_YAML_BYTES, "a model yaml is a few KB")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ConfigError(f"{path}: not UTF-8 text (byte {err.start}): not a model yaml") from err


def _check_graph(root: yaml.Node, path: Path) -> None:
    """Refuse a composed document that recurses, nests deeper than MAX_YAML_DEPTH, or expands (aliases followed)
    to more than MAX_YAML_VALUES values. Sizes are memoised per node, so a billion laughs costs its few nodes."""
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()

    def size(node: yaml.Node, depth: int) -> int:
        key = id(node)
        if key in sizes:
            return sizes[key]
        if key in open_nodes:
            raise ConfigError(f"{path}: a recursive alias (an anchor used inside itself, line {node.start_mark.line + 1})")
        if depth > MAX_YAML_DEPTH:
            raise ConfigError(f"{path}: nested more than {MAX_YAML_DEPTH} levels deep (line {node.start_mark.line + 1})")
        total = 1
        if isinstance(node, (yaml.SequenceNode, yaml.MappingNode)):
            open_nodes.add(key)
            children = node.value if isinstance(node, yaml.SequenceNode) else [n for pair in node.value for n in pair]
            for child in children:
                total += size(child, depth + 1)
                if total > MAX_YAML_VALUES:
                    raise ConfigError(f"{path}: expands to more than {MAX_YAML_VALUES:,} values through its aliases "
                                      "(a model yaml holds a few thousand)")
            open_nodes.discard(key)
        sizes[key] = total
        return total

    size(root, 0)


def read_yaml(path: str | Path, overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    """Parse an official model yaml into plain dicts/lists/scalars and `Node`s, with every `!ref` resolved.

    Raises ConfigError (naming the file) for unreadable, invalid or oversized yaml (see the module docstring)."""
    path = Path(path)
    text = _read_limited(path)
    loader = None
    try:
        loader = _Loader(text)  # its reader refuses control characters at once (a ReaderError)
        root = loader.get_single_node()
        if root is None:
            raise ConfigError(f"{path}: empty: it does not hold a mapping of settings")
        _check_graph(root, path)
        top = loader.construct_document(root)  # noqa: S506 - our loader only builds inert data
    except yaml.YAMLError as err:
        raise ConfigError(f"{path}: not valid yaml: {' '.join(str(err).split())[:300]}") from err
    except RecursionError as err:
        raise ConfigError(f"{path}: nested too deeply to read") from err
    except ValueError as err:  # a scalar the constructor rejects, e.g. an integer of 5,000 digits
        if isinstance(err, ConfigError):
            raise
        raise ConfigError(f"{path}: {err}") from err
    finally:
        if loader is not None:
            loader.dispose()
    if not isinstance(top, dict):
        raise ConfigError(f"{path}: does not hold a mapping of settings")
    top.update(overrides or {})
    resolver = _Resolver(top, str(path))
    try:
        return {key: resolver.value(value) for key, value in top.items()}
    except RecursionError as err:  # !ref chains nested past Python's stack (each level is checked above)
        raise ConfigError(f"{path}: its !ref chain is nested too deeply") from err


def find_model_yaml(model_dir: str | Path) -> tuple[Path, str]:
    """Return (yaml path, version) for an official model folder, checking v3, v2 then v1 like the official AutoModel."""
    model_dir = Path(model_dir)
    if not model_dir.is_dir():
        raise ConfigError(f"model folder {model_dir} does not exist (not a CosyVoice model folder)")
    for name in ("cosyvoice3.yaml", "cosyvoice2.yaml", "cosyvoice.yaml"):
        if (model_dir / name).is_file():
            return model_dir / name, VERSION_BY_YAML[name]
    raise ConfigError(
        f"{model_dir} holds no cosyvoice.yaml, cosyvoice2.yaml or cosyvoice3.yaml: not a CosyVoice model folder"
    )


# The classes each version's yaml must name; anything else is a model we do not implement.
EXPECTED_CLASSES = {
    "v1": {"llm": "TransformerLM", "flow": "MaskedDiffWithXvec", "hift": "HiFTGenerator"},
    "v2": {"llm": "Qwen2LM", "flow": "CausalMaskedDiffWithXvec", "hift": "HiFTGenerator"},
    "v3": {"llm": "CosyVoice3LM", "flow": "CausalMaskedDiffWithDiT", "hift": "CausalHiFTGenerator"},
}


def load_model_config(model_dir: str | Path) -> tuple[str, dict[str, Any]]:
    """Read a model folder's yaml; check it describes a version we implement. Returns (version, config)."""
    path, version = find_model_yaml(model_dir)
    config = read_yaml(path)
    for section, class_name in EXPECTED_CLASSES[version].items():
        node = config.get(section)
        if not isinstance(node, Node) or node.kind != "new":
            raise ConfigError(f"{path}: section {section!r} is missing or is not a !new: module")
        if node.class_name != class_name:
            raise ConfigError(
                f"{path}: {section} is {node.target}, but a {path.name} ({version}) model needs {class_name}; "
                "this model version is not supported"
            )
    return version, config
