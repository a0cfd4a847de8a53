"""`cosydesk engines build --model DIR [--engines-dir DIR]`: build (or confirm cached) TensorRT engines.

Registered by cosydesk.cli through `add_parser(sub)`. A second run with nothing changed rebuilds nothing and
says so. Must not import TensorRT, torch or CUDA at import time (the CLI imports this module on every start).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path


def add_parser(sub) -> None:
    engines = sub.add_parser("engines", help="TensorRT engines: build ahead of time (cached under engines/)")
    actions = engines.add_subparsers(dest="engines_command", required=True)
    build = actions.add_parser("build", help="export + build the TensorRT engines of a model folder")
    build.add_argument("--model", required=True, type=Path, help="model folder (the one with cosyvoice*.yaml)")
    build.add_argument("--engines-dir", type=Path, default=None,
                       help="engine cache (default: the one the app uses: $COSYDESK_ENGINES_DIR, engines/ of a checkout, or the user data dir)")
    build.add_argument("--precision", choices=("fp16", "fp32"), default="fp16")
    build.add_argument("--flavour", choices=("auto", "tensorrt", "tensorrt_rtx"), default="auto")
    build.add_argument("--target-cc", default=None, metavar="MAJOR.MINOR",
                       help="TensorRT for RTX: build for this GPU (e.g. 8.6) instead of the local one")
    build.add_argument("--no-streaming", action="store_true", help="skip the streaming (chunk-masked) estimator")
    build.set_defaults(func=cmd_engines_build)


class _Bar:
    """One-line text progress bar on stderr for the builder's (phase, step, total) reports."""

    def __init__(self) -> None:
        self.last = 0.0

    def __call__(self, phase: str, step: int, total: int) -> None:
        now = time.monotonic()
        if now - self.last < 0.1 and step != total:
            return
        self.last = now
        width = 30
        done = int(width * step / total) if total else 0
        sys.stderr.write(f"\r  [{'#' * done}{'.' * (width - done)}] {phase[:48]:<48} {step}/{total}")
        sys.stderr.flush()

    def end(self) -> None:
        sys.stderr.write("\n")


def _pick_flavour(name: str, target_cc):
    from cosydesk.runtime.backends.tensorrt.flavour import current_compute_capability, load_flavour, usable_flavours

    if name != "auto":
        flavour = load_flavour(name)
        if flavour is None:
            raise SystemExit(f"cosydesk: {name} is not installed (see engines/README.md)")
        return flavour
    usable = usable_flavours(target_cc) if (target_cc or current_compute_capability()) else []
    if usable:
        return usable[0]
    rtx = load_flavour("tensorrt_rtx")
    if rtx is not None and current_compute_capability() is None:
        return rtx  # CPU-only machine: TensorRT for RTX still builds (portable Ampere+ engine)
    raise SystemExit("cosydesk: no installed TensorRT flavour supports this GPU; nothing to build")


def cmd_engines_build(args: argparse.Namespace) -> int:
    from cosydesk.runtime.backends.tensorrt.cache import EngineCache
    from cosydesk.runtime.backends.tensorrt.engines import EngineRequest, ensure_estimator_engine, ensure_hift_engine

    target = tuple(int(p) for p in args.target_cc.split(".")) if args.target_cc else None
    flavour = _pick_flavour(args.flavour, target)
    validate = lambda plan: flavour.malformed(plan) is not True  # noqa: E731
    from cosydesk.paths import engines_dir as default_engines_dir

    cache = EngineCache(args.engines_dir or default_engines_dir(), validate=validate)
    req = EngineRequest(args.model, flavour, args.precision, target)
    bar = _Bar()
    stage = lambda text: print(f"{text} ...", file=sys.stderr)  # noqa: E731

    jobs = [("flow estimator", lambda: ensure_estimator_engine(req, cache, False, bar, stage))]
    if not args.no_streaming:
        jobs.append(("flow estimator (streaming)", lambda: ensure_estimator_engine(req, cache, True, bar, stage)))
    jobs.append(("HiFT", lambda: ensure_hift_engine(req, cache, bar, stage)))
    for label, job in jobs:
        start = time.perf_counter()
        try:
            path = job()
        except NotImplementedError as why:
            print(f"{label}: skipped ({why})")
            continue
        state = cache.events[-1][1]
        if state != "hit":
            bar.end()
        verdict = "cached, nothing rebuilt" if state == "hit" else f"built ({state}) in {time.perf_counter() - start:.1f} s"
        print(f"{label}: {path} - {verdict}")
    return 0
