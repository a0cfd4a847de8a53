"""Every Triton kernel launch the CPU tests make, compiled for a Hopper GPU afterwards (no GPU needed).

Why: without a GPU the tests run the kernels in Triton's interpreter, which accepts things compiled Triton
rejects (a kernel reading a plain module-level Python constant passed every CPU test and then did not compile on
the H200: a device call of wave 10 was lost to it). So while the tests run, ``LaunchRecorder`` notes each interpreted launch (the kernel, its
argument types, constexpr values and launch options); at the end of the session ``compile_specs`` compiles each
distinct one for sm_90 with Triton's own compiler (ptxas ships with Triton) in a fresh interpreter-free process,
and conftest fails the session with the compiler's message if one does not compile.

    python -m tests.support.triton_compile LAUNCHES.json   # the subprocess: prints one JSON result per launch
"""

from __future__ import annotations

import functools
import importlib
import inspect
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TARGET_ARCH = 90  # the H200 the project measures on
_TENSOR_TYPES = {"float16": "*fp16", "float32": "*fp32", "bfloat16": "*bf16", "float64": "*fp64", "int8": "*i8",
                 "int16": "*i16", "int32": "*i32", "int64": "*i64", "uint8": "*u8", "bool": "*i1"}
_OPTIONS = ("num_warps", "num_stages", "launch_pdl")


@functools.lru_cache(maxsize=None)
def _parameters(fn) -> tuple[list[str], frozenset[str]]:
    """A kernel's parameter names and those annotated ``tl.constexpr`` (annotations may be strings under
    ``from __future__ import annotations``); read once per kernel, not on every launch."""
    parameters = inspect.signature(fn).parameters
    return list(parameters), frozenset(n for n, p in parameters.items() if "constexpr" in str(p.annotation))


def launch_spec(fn, args: tuple, kwargs: dict) -> str | None:
    """One interpreted launch as a JSON key (module, name, signature, constexprs, options), or None for a launch
    this cannot describe (an argument of an unknown type)."""
    names, constexprs = _parameters(fn)
    values = dict(zip(names, args))
    values.update({k: v for k, v in kwargs.items() if k in names})
    signature, constants = {}, {}
    for name in names:
        value = values.get(name)
        if name in constexprs or value is None:
            if not isinstance(value, (bool, int, float, str, type(None))):
                return None
            signature[name], constants[name] = "constexpr", value
        elif hasattr(value, "dtype") and hasattr(value, "data_ptr"):
            kind = _TENSOR_TYPES.get(str(value.dtype).removeprefix("torch."))
            if kind is None:
                return None
            signature[name] = kind
        elif isinstance(value, bool):
            signature[name] = "i1"
        elif isinstance(value, int):
            signature[name] = "i32" if -2**31 <= value < 2**31 else "i64"
        elif isinstance(value, float):
            signature[name] = "fp32"
        else:
            return None
    options = {k: kwargs[k] for k in _OPTIONS if k in kwargs}
    return json.dumps({"module": fn.__module__, "name": fn.__name__, "signature": signature, "constexprs": constants,
                       "options": options}, sort_keys=True)


class LaunchRecorder:
    """Notes every launch of an interpreted kernel (``install`` patches Triton's interpreter) as ``launch_spec``s."""

    def __init__(self) -> None:
        self.specs: set[str] = set()
        self.unrecorded = 0

    def install(self) -> bool:
        """Patch ``InterpretedFunction.run``; False where Triton or its interpreter is missing."""
        try:
            from triton.runtime.interpreter import InterpretedFunction
        except ImportError:
            return False
        original = InterpretedFunction.run
        recorder = self

        def run(self, *args, grid, warmup, **kwargs):
            spec = launch_spec(self.fn, args, kwargs)
            if spec is None:
                recorder.unrecorded += 1
            else:
                recorder.specs.add(spec)
            return original(self, *args, grid=grid, warmup=warmup, **kwargs)

        InterpretedFunction.run = run
        return True


def compiler_available() -> bool:
    """Triton's CUDA backend and its bundled ptxas are installed (compiling needs no GPU)."""
    try:
        from triton.backends.compiler import GPUTarget  # noqa: F401
        from triton.backends.nvidia import compiler  # noqa: F401
    except ImportError:
        return False
    return any((Path(compiler.__file__).parent / "bin").glob("ptxas*"))


def code_paths(specs: list[str]) -> list[str]:
    """One spec per kernel and code path: launches that differ only in integer constexprs (tile sizes, widths)
    share one (the first in sorted order); flags, dtypes and options keep theirs. A cold compile costs ~1 s a
    launch on a CI core, and the sizes rarely decide whether a kernel compiles."""
    chosen: dict[str, str] = {}
    for spec in sorted(specs):
        item = json.loads(spec)
        flags = {k: v for k, v in item["constexprs"].items() if isinstance(v, (bool, str)) or v is None}
        key = json.dumps([item["module"], item["name"], item["signature"], flags, item["options"]], sort_keys=True)
        chosen.setdefault(key, spec)
    return sorted(chosen.values())


def compile_specs(specs: list[str], timeout: float = 900, workers: int | None = None) -> list[dict]:
    """Compile each spec for sm_90 in fresh processes without the interpreter (``workers`` at once, default one
    per CPU up to 4); the failures (spec + error)."""
    if not specs:
        return []
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    # compiled kernels are cached; under the temp dir, not ~/.triton, which a CI home may not allow
    env.setdefault("TRITON_CACHE_DIR", str(Path(tempfile.gettempdir()) / "cosydesk-triton-compile-check"))
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    workers = max(1, min(workers or min(4, os.cpu_count() or 1), len(specs)))
    procs = [subprocess.Popen([sys.executable, "-m", "tests.support.triton_compile", "-"], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT)
             for _ in range(workers)]
    failures = []
    outputs = [p.communicate("\n".join(specs[i::workers]), timeout=timeout) for i, p in enumerate(procs)]
    for i, (proc, (out, err)) in enumerate(zip(procs, outputs)):
        results = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
        if proc.returncode != 0 and len(results) < len(specs[i::workers]):
            failures.append({"spec": "(a compile process)", "error": err[-2000:]})
        failures += [r for r in results if not r["ok"]]
    return failures


def _compile_one(spec: dict) -> str | None:
    """The compiler's error for one launch spec, or None when it compiles."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    kernel = getattr(importlib.import_module(spec["module"]), spec["name"], None)
    if not isinstance(kernel, triton.runtime.JITFunction):  # a kernel made inside a function: not reachable here
        return None
    try:  # options Triton's CUDA backend does not know are ignored by it
        triton.compile(ASTSource(kernel, spec["signature"], spec["constexprs"]),
                       target=GPUTarget("cuda", TARGET_ARCH, 32), options=dict(spec["options"]))
    except Exception as exc:  # noqa: BLE001 - reported, not raised
        return f"{type(exc).__name__}: {exc}"[-1500:]
    return None


def main(argv: list[str]) -> int:
    text = sys.stdin.read() if argv[-1] == "-" else Path(argv[-1]).read_text()
    for line in filter(None, text.splitlines()):
        spec = json.loads(line)
        error = _compile_one(spec)
        print(json.dumps({"ok": error is None, "spec": f"{spec['module']}.{spec['name']} {spec['constexprs']}",
                          "error": error}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
