"""Find the user-facing messages a source file builds: every ``raise X("…")`` / ``raise X(f"…")`` and, on request,
the message arguments of other calls (e.g. doctor's ``Check(name, status, detail, fix)``).

Each site is rendered as a *template* in the format of cosydesk/ui/message_tables (literal text with numbered
fields ``{0}``, ``{1}``, … in order of appearance) and as a *sample*: the same text with every field replaced by
a placeholder that holds no letters (``‹0›``, ``‹1›``, …), i.e. what the message looks like at run time.

What it understands: string constants, f-strings (each FormattedValue is one field, whatever its conversion or
format spec), ``+`` concatenation (a non-string operand is one field), ``"…" % args`` (each %-directive is one
field) and ``"…".format(…)`` (each ``{…}`` is one field). A message that is only a variable (``raise X(message)``)
has no literal text and is not reported. Used by tests only; AST only, nothing is imported or executed.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import NamedTuple

FIELD = re.compile(r"\{(\d+)\}")
_PERCENT = re.compile(r"%(?:\([^)]*\))?[-+ #0]*(?:\d+|\*)?(?:\.\d+)?[diouxXeEfFgGcrsa%]")
_FORMAT_FIELD = re.compile(r"\{\{|\}\}|\{[^{}]*\}")


class MessageSite(NamedTuple):
    file: Path
    line: int
    sample: str  # the message as it would read at run time, fields as ‹0›, ‹1›, …
    template: str  # the English template: literal text with {0}, {1}, … for the fields
    call: str  # the called name: the exception class (or builder function) the message goes to


def sample_value(index: int) -> str:
    """The placeholder standing for field `index` in a sample (no letters, so never mistaken for English)."""
    return f"‹{index}›"


def sample_of(template: str) -> str:
    """The sample for a template: every {n} replaced by its placeholder."""
    return FIELD.sub(lambda match: sample_value(int(match.group(1))), template)


def literal_text(template: str) -> str:
    """The template's literal text (its fields removed), e.g. to look for English words left in a translation."""
    return FIELD.sub(" ", template)


class _Renderer:
    """Turns one message expression into a template with numbered fields (None when it has no literal text)."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.fields = 0
        self.literal = False

    def _field(self) -> None:
        self.parts.append("{%d}" % self.fields)
        self.fields += 1

    def _text(self, text: str) -> None:
        self.parts.append(text)
        self.literal = self.literal or bool(text)

    def add(self, node: ast.expr) -> None:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            self._text(node.value)
        elif isinstance(node, ast.JoinedStr):
            for value in node.values:
                if isinstance(value, ast.Constant):
                    self._text(str(value.value))
                else:
                    self._field()
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            self.add(node.left)
            self.add(node.right)
        elif (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod) and isinstance(node.left, ast.Constant)
              and isinstance(node.left.value, str)):
            self._split(node.left.value, _PERCENT, lambda piece: "%" if piece == "%%" else None)
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format"
              and isinstance(node.func.value, ast.Constant) and isinstance(node.func.value.value, str)):
            self._split(node.func.value.value, _FORMAT_FIELD,
                        lambda piece: piece[0] if piece in ("{{", "}}") else None)
        else:
            self._field()

    def _split(self, text: str, directive: re.Pattern, escaped) -> None:
        position = 0
        for match in directive.finditer(text):
            self._text(text[position:match.start()])
            literal = escaped(match.group())
            if literal is None:
                self._field()
            else:
                self._text(literal)
            position = match.end()
        self._text(text[position:])

    def template(self) -> str | None:
        return "".join(self.parts) if self.literal else None


def template_of(node: ast.expr) -> str | None:
    """The template of a message expression, or None when it has no literal text (e.g. a bare variable)."""
    renderer = _Renderer()
    renderer.add(node)
    return renderer.template()


def _called_name(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""


def _parse(path: Path) -> ast.Module:
    return ast.parse(Path(path).read_text(encoding="utf-8"), filename=str(path))


def _alternatives(node: ast.expr) -> list[ast.expr]:
    """The messages an expression may be: both branches of ``a if c else b``, each operand of ``a or b``, each
    item of a list or tuple (``raise ProfileError([f"…", …])``)."""
    if isinstance(node, (ast.List, ast.Tuple)):
        return [alternative for item in node.elts for alternative in _alternatives(item)]
    if isinstance(node, ast.IfExp):
        return _alternatives(node.body) + _alternatives(node.orelse)
    if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or):
        return [alternative for value in node.values for alternative in _alternatives(value)]
    return [node]


def _sites(path: Path, call_name: str, node: ast.expr) -> list[MessageSite]:
    found = []
    for alternative in _alternatives(node):
        template = template_of(alternative)
        if template is not None:
            found.append(MessageSite(Path(path), alternative.lineno, sample_of(template), template, call_name))
    return found


def raise_sites(paths: Iterable[Path | str]) -> Iterator[MessageSite]:
    """Every ``raise Something(<message>, …)`` whose first argument has literal text, in file and line order.
    Bare re-raises, ``raise X`` without a call and ``raise X(variable)`` are not reported."""
    for path in paths:
        found = []
        for node in ast.walk(_parse(Path(path))):
            if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call) and node.exc.args:
                found += _sites(Path(path), _called_name(node.exc.func), node.exc.args[0])
        yield from sorted(found, key=lambda site: site.line)


def call_sites(paths: Iterable[Path | str], messages: Mapping[str, Iterable[int | str]]) -> Iterator[MessageSite]:
    """The message arguments of calls to the named functions or classes: `messages` maps a called name (``Check``,
    ``_fail``; a method's attribute name also matches) to the positions and/or keyword names of its message
    arguments, e.g. ``{"Check": (0, 2, 3, "detail", "fix")}``."""
    wanted = {name: tuple(where) for name, where in messages.items()}
    for path in paths:
        found = []
        for node in ast.walk(_parse(Path(path))):
            if not isinstance(node, ast.Call) or _called_name(node.func) not in wanted:
                continue
            where = wanted[_called_name(node.func)]
            arguments = [arg for index, arg in enumerate(node.args) if index in where]
            arguments += [keyword.value for keyword in node.keywords if keyword.arg in where]
            found += [(argument.lineno, argument.col_offset, site) for argument in arguments
                      for site in _sites(Path(path), _called_name(node.func), argument)]
        yield from (site for *_, site in sorted(found, key=lambda item: item[:2]))


def python_files(*roots: Path | str, exclude: Iterable[str] = ()) -> list[Path]:
    """The .py files under the given files or folders, sorted, skipping any path containing one of `exclude`
    (as a path part, e.g. "tensorrt" or "cli.py")."""
    skip = set(exclude)
    found: list[Path] = []
    for root in map(Path, roots):
        candidates = [root] if root.is_file() else sorted(root.rglob("*.py"))
        found += [path for path in candidates if not skip.intersection(path.parts)]
    return sorted(set(found))


def assigned_sites(paths: Iterable[Path | str], targets: Iterable[str]) -> Iterator[MessageSite]:
    """The messages assigned (``=``, ``+=``) to the named variables or attributes (``problem``, ``last_error``
    for ``self.last_error``): messages built in a variable before they are raised, emitted or stored."""
    wanted = set(targets)
    for path in paths:
        found = []
        for node in ast.walk(_parse(Path(path))):
            if isinstance(node, ast.Assign):
                names, value = [_called_name(target) for target in node.targets], node.value
            elif isinstance(node, ast.AugAssign) and isinstance(node.op, ast.Add):
                # `x += f"; …"`: the message is what x held, then this ("{0}; …")
                names = [_called_name(node.target)]
                value = ast.copy_location(ast.BinOp(ast.Name("_"), ast.Add(), node.value), node.value)
            else:
                continue
            if wanted.intersection(names):
                found += _sites(Path(path), next(name for name in names if name in wanted), value)
        yield from sorted(found, key=lambda site: site.line)


def returned_sites(paths: Iterable[Path | str], functions: Iterable[str]) -> Iterator[MessageSite]:
    """The messages the named functions return (``return f"…"``): builders whose result the app shows."""
    wanted = set(functions)
    for path in paths:
        found = []
        for function in ast.walk(_parse(Path(path))):
            if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)) and function.name in wanted:
                for node in ast.walk(function):
                    if isinstance(node, ast.Return) and node.value is not None:
                        found += _sites(Path(path), function.name, node.value)
        yield from sorted(found, key=lambda site: site.line)
