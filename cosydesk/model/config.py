"""Read the official CosyVoice yaml (HyperPyYAML dialect) as plain data — never executing it.

The official loader instantiates every `!new:` class and calls every `!apply:` function while parsing.
We only need to know *what* the file describes, so each tag becomes a `Node`:

- ``!new:pkg.Class``   -> Node(kind="new",   target="pkg.Class", args={...kwargs} or [...])
- ``!name:pkg.func``   -> Node(kind="name",  target="pkg.func",  args=...)   (a partial in the original)
- ``!apply:pkg.func``  -> Node(kind="apply", target="pkg.func",  args=...)   (never called here)
- ``!ref <key>``       -> the value of top-level ``key`` (nested refs resolved, with ``<a> * <b>`` arithmetic)

Only literals and + - * / // % and parentheses are allowed inside a ``!ref`` expression.
"""

from __future__ import annotations

import ast
import operator
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

VERSION_BY_YAML = {"cosyvoice.yaml": "v1", "cosyvoice2.yaml": "v2", "cosyvoice3.yaml": "v3"}


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


def _eval_arith(tree: ast.AST, names: dict[str, Any], source: str) -> Any:
    if isinstance(tree, ast.Expression):
        return _eval_arith(tree.body, names, source)
    if isinstance(tree, ast.Constant) and isinstance(tree.value, (int, float, str)):
        return tree.value
    if isinstance(tree, ast.Name) and tree.id in names:
        return names[tree.id]
    if isinstance(tree, ast.BinOp) and type(tree.op) in _BINOPS:
        return _BINOPS[type(tree.op)](_eval_arith(tree.left, names, source), _eval_arith(tree.right, names, source))
    if isinstance(tree, ast.UnaryOp) and isinstance(tree.op, (ast.USub, ast.UAdd)):
        value = _eval_arith(tree.operand, names, source)
        return -value if isinstance(tree.op, ast.USub) else value
    raise ConfigError(f"unsupported expression in !ref {source!r}")


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
            value = value[part] if not isinstance(value, Node) else value[part]
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
        try:
            tree = ast.parse(source.strip(), mode="eval")
        except SyntaxError as err:
            raise ConfigError(f"{self.path}: cannot parse !ref {expr!r}") from err
        return _eval_arith(tree, names, expr)

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


def read_yaml(path: str | Path, overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    """Parse an official model yaml into plain dicts/lists/scalars and `Node`s, with every `!ref` resolved."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise ConfigError(f"cannot read {path}: {err.strerror or err}") from err
    try:
        top = yaml.load(text, Loader=_Loader)  # noqa: S506 - our loader only builds inert data
    except yaml.YAMLError as err:
        raise ConfigError(f"{path} is not valid yaml: {' '.join(str(err).split())}") from err
    if not isinstance(top, dict):
        raise ConfigError(f"{path} does not hold a mapping of settings")
    top.update(overrides or {})
    resolver = _Resolver(top, str(path))
    return {key: resolver.value(value) for key, value in top.items()}


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
