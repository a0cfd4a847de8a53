"""Every environment variable CosyDesk reads, in one registry: name, kind, default, what it does.

Code reads a variable only through :func:`switch`, :func:`count` or :func:`text` with a registered name (an
unregistered one raises, so a new variable cannot be added without its documentation), and
``docs/configuration.md`` is generated from this table (``python -m cosydesk.environment``; a test checks
the committed file is current). Engine switches are read once per Synthesizer into
``cosydesk.runtime.options.EngineOptions``, not at every call site.

What it must not do: import anything heavy; it is imported by the CLI before torch.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Variable:
    name: str
    kind: str  # "switch" (on/off), "count" (whole number), "seconds" (a positive number), "path" or "text"
    default: str  # as documented (the typed default lives with the reader)
    section: str
    doc: str


_SWITCH_ON = ("1", "true", "yes", "on")
_SWITCH_OFF = ("0", "false", "no", "off")

SECTIONS = {
    "folders": "Folders",
    "network": "Downloads and the local server",
    "gpu": "GPU path (`cudagraph` backend)",
    "bench": "Benchmark and tests",
}

VARIABLES: tuple[Variable, ...] = (
    Variable("COSYDESK_DATA_DIR", "path", "the platform's user data folder (`~/.local/share/cosydesk` on Linux)",
             "folders", "settings, history, voice profiles, the editor draft and (unless `COSYDESK_MODELS_DIR` is "
             "set) the models"),
    Variable("COSYDESK_MODELS_DIR", "path", "`<data folder>/models`", "folders",
             "where downloaded models go and where installed ones are looked for"),
    Variable("COSYDESK_ENGINES_DIR", "path", "`engines/` in a source checkout, else `<data folder>/engines`",
             "folders", "the TensorRT engine cache (plans, timing caches, sidecars)"),
    Variable("COSYDESK_DOWNLOAD_TIMEOUT_S", "seconds", "20", "network",
             "connect / read timeout of the model hub's metadata requests"),
    Variable("COSYDESK_DOWNLOAD_STALL_S", "seconds", "60", "network",
             "a download that receives less than 64 KiB in this time gives up with a clear error (resumable)"),
    Variable("COSYDESK_API_KEY", "text", "unset", "network",
             "the key `cosydesk serve` requires (`Authorization: Bearer KEY`) when `--api-key` is not given"),
    Variable("COSYDESK_COMPILE", "switch", "on", "gpu",
             "torch.compile and the Triton kernels; off keeps plain torch inside the CUDA graphs (graphs are still "
             "captured)"),
    Variable("COSYDESK_DECODE_KERNELS", "switch", "on", "gpu",
             "the speech LM's decode step as hand-written Triton kernels (falls back on its own, with a warning, "
             "where they cannot compile)"),
    Variable("COSYDESK_FLOW_KERNELS", "switch", "on", "gpu", "the flow estimator's transformer blocks as Triton kernels"),
    Variable("COSYDESK_ROW_ESTIMATOR", "switch", "on", "gpu",
             "v2's estimator in time-major row form with Triton conv kernels; off keeps the module form"),
    Variable("COSYDESK_PDL", "switch", "on", "gpu",
             "programmatic dependent launch on Hopper or newer (same results; off is for A/B runs)"),
    Variable("COSYDESK_DECODE_AHEAD", "count", "3 (at least 1)", "gpu",
             "decode steps queued before the host reads each chosen token"),
    Variable("COSYDESK_FIRST_CHUNK_SHARED_STEPS", "count", "0", "gpu",
             "of the first chunk's 10 CFM steps, how many run beside the resumed LLM (0: the LLM waits for the "
             "whole first chunk)"),
    Variable("COSYDESK_FINAL_HIFT_GRAPHS", "switch", "on", "gpu",
             "the vocoder's final chunk as padded CUDA graphs; off runs it eagerly"),
    Variable("COSYDESK_V1_HIFT_GRAPHS", "switch", "on", "gpu", "v1's vocoder calls as padded CUDA graphs"),
    Variable("COSYDESK_V1_ENCODER_GRAPHS", "switch", "on", "gpu", "v1's flow encoder as CUDA graphs per token bucket"),
    Variable("COSYDESK_V3_HIFT_GRAPHS", "switch", "on", "gpu",
             "v3's causal vocoder stream windows as padded CUDA graphs; off runs them eagerly"),
    Variable("COSYDESK_COMMIT", "text", "`git rev-parse` of the checkout", "bench",
             "the commit `cosydesk bench` writes into its JSON (for runs from a copy without git)"),
)
_BY_NAME = {variable.name: variable for variable in VARIABLES}


def variable(name: str) -> Variable:
    """The registered variable ``name``; an unregistered name is a programming error."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise KeyError(f"{name} is not registered in cosydesk/environment.py") from None


def text(name: str, environ: Mapping[str, str] | None = None) -> str | None:
    """The raw value of registered variable ``name`` (None when unset or empty)."""
    variable(name)
    value = (os.environ if environ is None else environ).get(name, "").strip()
    return value or None


def switch(name: str, default: bool, environ: Mapping[str, str] | None = None) -> bool:
    """An on/off variable: 1/true/yes/on or 0/false/no/off; unset or anything else: ``default``."""
    value = (text(name, environ) or "").lower()
    if value in _SWITCH_ON:
        return True
    if value in _SWITCH_OFF:
        return False
    return default


def count(name: str, default: int, minimum: int = 0, environ: Mapping[str, str] | None = None) -> int:
    """A whole-number variable (at least ``minimum``); unset or not a whole number: ``default``."""
    value = text(name, environ) or ""
    return max(minimum, int(value)) if value.isdigit() else default


def seconds(name: str, default: float, environ: Mapping[str, str] | None = None) -> float:
    """A positive number of seconds; unset, not a number or not positive: ``default``."""
    try:
        value = float(text(name, environ) or default)
    except ValueError:
        return default
    return value if value > 0 else default


def markdown() -> str:
    """docs/configuration.md, generated from VARIABLES."""
    lines = [
        "# Configuration: environment variables",
        "",
        "Generated from `cosydesk/environment.py` (`python -m cosydesk.environment > docs/configuration.md`).",
        "",
        "Most people never need these: the app's Settings and the command line's options cover everyday use. The",
        "variables exist for packagers (folders), for benchmarking (A/B switches of the GPU path) and for diagnosing",
        "a GPU whose driver or Triton cannot run one of the hand-written kernels. Every switch's default is what the",
        "measured benchmark ran ([performance.md](performance.md)). In Python the GPU switches are fields of",
        "`cosydesk.EngineOptions` (`Synthesizer(model, options=EngineOptions(decode_ahead=1))`); the variables",
        "only give the defaults, read once when a Synthesizer is made.",
        "",
        "On/off switches accept `1/true/yes/on` and `0/false/no/off`; anything else keeps the default. Counts accept",
        "a whole number, seconds a positive number; anything else keeps the default. Model downloads go through huggingface_hub, which reads",
        "its own variables (`HF_ENDPOINT`, `HF_HUB_OFFLINE`, `HF_HOME`); torch.compile keeps its kernels in",
        "`TORCHINDUCTOR_CACHE_DIR` (default `<user cache>/cosydesk/inductor`), and CosyDesk (the app, the CLI, the",
        "server, `cosydesk bench`, `Synthesizer`) runs with `PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True` unless",
        "`PYTORCH_CUDA_ALLOC_CONF` or `PYTORCH_ALLOC_CONF` is set (the setting the benchmarks measured).",
    ]
    for section, title in SECTIONS.items():
        lines += ["", f"## {title}", "", "| variable | default | what it does |", "|---|---|---|"]
        lines += [f"| `{v.name}` | {v.default} | {v.doc} |" for v in VARIABLES if v.section == section]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.stdout.write(markdown())
