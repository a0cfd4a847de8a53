"""On-disk cache of built TensorRT engines (default folder: engines/).

One *slot* per (module, precision): ``<root>/<module>-<precision>.plan`` plus a JSON sidecar
``<module>-<precision>.json`` holding the full key and the plan's sha256/size. The key is made of the model
file hash(es), module name, precision, profile ranges, TensorRT flavour+version and GPU target, so:

* hit      - sidecar key equals the wanted key and the plan bytes match their recorded hash;
* miss     - no plan or no sidecar;
* corrupt  - bytes do not match the sidecar, the sidecar is unreadable, or the flavour's header check /
             the caller's deserialisation rejects the plan (`invalidate`);
* stale    - same flavour/version/GPU but another model hash or profile (model updated, code changed);
* foreign  - built by another TensorRT flavour/version or for another GPU.

Everything except a hit is rebuilt in place; one slot per module keeps old engines (hundreds of MB each)
from piling up. Files are written atomically (temp file + os.replace, sidecar last), so a crash mid-write
leaves either the old entry or a detectable miss/corrupt one, never a half-written plan that looks valid.

What this module must not do: import TensorRT or CUDA (validation is a callable the caller passes in), or
raise on a damaged cache (it rebuilds instead).
"""

from __future__ import annotations

import hashlib
import json
import logging
import shutil
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from pathlib import Path

from cosydesk.atomic_file import write_atomically

log = logging.getLogger(__name__)

ProgressFn = Callable[[str, int, int], None]
BuildFn = Callable[[ProgressFn | None], bytes]
ValidateFn = Callable[[bytes], bool]  # True if the plan is usable (e.g. not malformed)

SIDECAR_FORMAT = 1
MAX_SIDECAR_BYTES = 64 * 1024  # a real sidecar is ~600 bytes; a larger one is garbage, never read into memory
# Key fields that say *where* an engine can run; a difference there is "foreign", elsewhere "stale".
PLACE_FIELDS = ("flavour", "trt_version", "gpu")


@dataclass(frozen=True)
class EngineKey:
    """Everything an engine depends on. `module` and `precision` also name the cache slot."""

    model_sha256: str
    module: str
    precision: str
    profile: str  # ShapeProfile.ranges_tag()
    flavour: str  # "tensorrt" | "tensorrt_rtx"
    trt_version: str
    gpu: str  # "sm86", or "aot-default" for a TensorRT-for-RTX build without a GPU
    extra: str = ""  # e.g. "streaming" or an exporter version; anything else the graph depends on

    def as_dict(self) -> dict[str, str]:
        return asdict(self)

    def digest(self) -> str:
        return hashlib.sha256(json.dumps(self.as_dict(), sort_keys=True).encode()).hexdigest()

    @property
    def slot(self) -> str:
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in f"{self.module}-{self.precision}")
        return safe


def sha256_files(paths: Iterable[str | Path]) -> str:
    """One sha256 over the given files (name and bytes, in the given order), streamed in 1 MiB blocks."""
    digest = hashlib.sha256()
    for path in paths:
        path = Path(path)
        digest.update(path.name.encode() + b"\0")
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
        digest.update(b"\0")
    return digest.hexdigest()


def _remove(path: Path) -> None:
    """Clear a slot's file name, whatever sits there (the names are the cache's own: a directory of that name
    is garbage; a symlink is removed, never followed)."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


class EngineCache:
    """`get_or_build(key, build_fn, progress) -> Path` over a folder of engine slots."""

    def __init__(self, root: str | Path = "engines", validate: ValidateFn | None = None):
        self.root = Path(root)
        self.validate = validate
        self.events: list[tuple[str, str]] = []  # (slot, state) of every lookup, for logs and tests

    def plan_path(self, key: EngineKey) -> Path:
        return self.root / f"{key.slot}.plan"

    def sidecar_path(self, key: EngineKey) -> Path:
        return self.root / f"{key.slot}.json"

    def state(self, key: EngineKey) -> str:
        """'hit', 'miss', 'corrupt', 'stale' or 'foreign' (see module docstring). Never raises on bad files."""
        plan, sidecar = self.plan_path(key), self.sidecar_path(key)
        try:
            if not plan.is_file() or not sidecar.is_file():
                return "miss"
            if sidecar.stat().st_size > MAX_SIDECAR_BYTES:
                return "corrupt"
            meta = json.loads(sidecar.read_bytes().decode("utf-8"))
            stored = meta["key"]
            want_sha, want_size = meta["plan_sha256"], meta["plan_bytes"]
            # the types are checked, not converted: int(1e400) overflows, int("9" * 5000) is refused
            if (meta.get("format") != SIDECAR_FORMAT or not isinstance(stored, dict) or not isinstance(want_sha, str)
                    or not isinstance(want_size, int) or isinstance(want_size, bool)):
                return "corrupt"
        except (OSError, ValueError, KeyError, TypeError, OverflowError, RecursionError):
            return "corrupt"  # RecursionError: JSON nested thousands deep
        wanted = key.as_dict()
        if stored != wanted:
            if any(stored.get(f) != wanted[f] for f in PLACE_FIELDS):
                return "foreign"
            return "stale"
        try:
            if plan.stat().st_size != want_size:  # before reading: a garbage plan may be any size
                return "corrupt"
            data = plan.read_bytes()
        except (OSError, MemoryError):
            return "corrupt"
        if len(data) != want_size or hashlib.sha256(data).hexdigest() != want_sha:
            return "corrupt"
        if self.validate is not None:
            try:
                if not self.validate(data):
                    return "corrupt"
            except Exception:  # noqa: BLE001 - a failing validator means "do not trust this plan"
                return "corrupt"
        return "hit"

    def store(self, key: EngineKey, plan: bytes) -> Path:
        """Write plan + sidecar atomically (plan first; the sidecar makes the entry valid)."""
        self.root.mkdir(parents=True, exist_ok=True)
        _remove(self.sidecar_path(key))  # no window where a new plan pairs with an old sidecar
        _remove(self.plan_path(key))  # os.replace cannot put a file over a directory left in the slot
        write_atomically(self.plan_path(key), plan, durable=True)
        meta = {
            "format": SIDECAR_FORMAT,
            "key": key.as_dict(),
            "key_sha256": key.digest(),
            "plan_sha256": hashlib.sha256(plan).hexdigest(),
            "plan_bytes": len(plan),
        }
        write_atomically(self.sidecar_path(key), json.dumps(meta, indent=1, sort_keys=True) + "\n", durable=True)
        return self.plan_path(key)

    def invalidate(self, key: EngineKey) -> None:
        """Forget a slot, e.g. after the runtime failed to deserialize its plan (next lookup rebuilds)."""
        _remove(self.sidecar_path(key))
        _remove(self.plan_path(key))

    def get_or_build(self, key: EngineKey, build_fn: BuildFn, progress: ProgressFn | None = None) -> Path:
        """Path of a valid plan for key, building (and storing) it unless the slot already holds it."""
        state = self.state(key)
        self.events.append((key.slot, state))
        if state == "hit":
            log.debug("engine cache hit: %s", key.slot)
            return self.plan_path(key)
        log.info("engine %s: %s, building (%s %s, %s)", key.slot, state, key.flavour, key.trt_version, key.gpu)
        plan = build_fn(progress)
        if not isinstance(plan, (bytes, bytearray, memoryview)) or len(plan) == 0:
            raise RuntimeError(f"engine build for {key.slot} returned no bytes")
        return self.store(key, bytes(plan))
