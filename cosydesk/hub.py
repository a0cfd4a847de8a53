"""Model catalogue, downloads and local model-folder checks.

What it is for: knowing which CosyVoice models exist, where they live on this machine, fetching them
from the Hugging Face Hub (progress, cancel, resume) and telling a person precisely what is missing from
a folder before the runtime tries to load it.

What it must not do: import torch, Qt or the runtime. The CLI (`cosydesk models`) and the desktop app both
use it, and it has to stay fast to import.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from cosydesk import environment
from cosydesk.paths import APP_NAME  # noqa: F401 - re-exported
from cosydesk.paths import data_dir as app_data_dir  # noqa: F401 - the folders live in cosydesk.paths
from cosydesk.paths import models_dir as default_models_dir

#: Version -> (yaml file name, speech tokenizer onnx file name).
_VERSION_FILES: dict[str, tuple[str, str]] = {
    "v1": ("cosyvoice.yaml", "speech_tokenizer_v1.onnx"),
    "v2": ("cosyvoice2.yaml", "speech_tokenizer_v2.onnx"),
    "v3": ("cosyvoice3.yaml", "speech_tokenizer_v3.onnx"),
}
_WEIGHT_FILES = ("llm.pt", "flow.pt", "hift.pt")
_BLANKEN = "CosyVoice-BlankEN"
_BLANKEN_FILES = ("config.json",)
_TOKENIZER_FILES = ("vocab.json", "merges.txt")

# Only what inference needs; the repos also carry JIT/ONNX/TensorRT exports we never use.
DOWNLOAD_PATTERNS: list[str] = [
    "*.yaml",
    "*.pt",
    "campplus.onnx",
    "speech_tokenizer_v*.onnx",
    f"{_BLANKEN}/*",
    "*.md",
    "configuration.json",
]


@dataclass(frozen=True)
class ModelInfo:
    """One entry of the catalogue."""

    name: str  # also the folder name under the models dir
    hf_repo: str
    modelscope_repo: str
    version: str  # "v1" | "v2" | "v3"
    size_gb: float  # approximate download size of DOWNLOAD_PATTERNS
    modes: tuple[str, ...]  # "sft" | "zero_shot" | "instruct" | "instruct2"
    summary_en: str
    summary_zh: str
    recommended: bool = False

    @property
    def sample_rate(self) -> int:
        """Output rate in Hz: the family's (model/versions.py)."""
        from cosydesk.model.versions import constants

        return constants(self.version).sample_rate


CATALOGUE: tuple[ModelInfo, ...] = (
    ModelInfo(
        name="CosyVoice2-0.5B",
        hf_repo="FunAudioLLM/CosyVoice2-0.5B",
        modelscope_repo="iic/CosyVoice2-0.5B",
        version="v2",
        size_gb=4.0,
        modes=("zero_shot", "instruct2"),
        summary_en="Best streaming latency; clone a voice from a short sample; styles, dialects and emotions by instruction.",
        summary_zh="流式延迟最低；用一小段录音克隆声音；可用指令控制风格、方言和情绪。",
        recommended=True,
    ),
    ModelInfo(
        name="Fun-CosyVoice3-0.5B-2512",
        hf_repo="FunAudioLLM/Fun-CosyVoice3-0.5B-2512",
        modelscope_repo="FunAudioLLM/Fun-CosyVoice3-0.5B-2512",
        version="v3",
        size_gb=4.9,
        modes=("zero_shot", "instruct2"),
        summary_en="Newest model: voice cloning and instructions, more languages; larger flow model.",
        summary_zh="最新模型：声音克隆与指令控制，支持更多语言；流匹配模型更大。",
    ),
    ModelInfo(
        name="CosyVoice-300M-SFT",
        hf_repo="FunAudioLLM/CosyVoice-300M-SFT",
        modelscope_repo="iic/CosyVoice-300M-SFT",
        version="v1",
        size_gb=2.3,
        modes=("sft",),
        summary_en="Seven built-in speakers (Chinese, English, Japanese, Cantonese, Korean); no sample needed.",
        summary_zh="内置七个说话人（中文、英文、日语、粤语、韩语），无需录音。",
    ),
    ModelInfo(
        name="CosyVoice-300M-Instruct",
        hf_repo="FunAudioLLM/CosyVoice-300M-Instruct",
        modelscope_repo="iic/CosyVoice-300M-Instruct",
        version="v1",
        size_gb=2.3,
        modes=("sft", "instruct"),
        summary_en="Built-in speakers plus persona and emotion instructions, <laughter> and <strong> tags.",
        summary_zh="内置说话人，并支持人设与情绪指令以及 <laughter>、<strong> 标记。",
    ),
    ModelInfo(
        name="CosyVoice-300M",
        hf_repo="FunAudioLLM/CosyVoice-300M",
        modelscope_repo="iic/CosyVoice-300M",
        version="v1",
        size_gb=2.3,
        modes=("zero_shot",),
        summary_en="Base model for voice cloning and cross-lingual speech from a sample.",
        summary_zh="基础模型：根据录音克隆声音，支持跨语种合成。",
    ),
)

DEFAULT_MODEL = next(m.name for m in CATALOGUE if m.recommended)


def catalogue_entry(name: str) -> ModelInfo:
    """The catalogue entry called `name` (case-insensitive; a HF repo id works too)."""
    wanted = name.strip().lower()
    for info in CATALOGUE:
        if wanted in (info.name.lower(), info.hf_repo.lower()):
            return info
    known = ", ".join(m.name for m in CATALOGUE)
    raise KeyError(f"unknown model {name!r}; known models: {known}")


# ---------------------------------------------------------------------------------------------- paths


def installed_models(models_dir: Path | None = None) -> list[Path]:
    """Folders under the models dir that hold a loadable model layout (no blocking problem)."""
    root = Path(models_dir) if models_dir else default_models_dir()
    if not root.is_dir():
        return []
    return sorted(p for p in root.iterdir() if p.is_dir() and not check_model_dir(p).problems)


# ------------------------------------------------------------------------------------------ validation


@dataclass
class ModelDirReport:
    """What a folder holds.

    problems: the runtime cannot load the model at all (missing yaml or weights).
    missing_optional: the model loads but some features are off (e.g. no campplus.onnx -> no voice cloning).
    """

    path: Path
    version: str | None = None
    problems: list[str] = field(default_factory=list)
    missing_optional: list[str] = field(default_factory=list)

    @property
    def loadable(self) -> bool:
        return not self.problems

    def all_messages(self) -> list[str]:
        return self.problems + self.missing_optional


def detect_version(path: Path) -> str | None:
    """'v1' / 'v2' / 'v3' from the yaml file present, or None."""
    for version, (yaml_name, _) in _VERSION_FILES.items():
        if (Path(path) / yaml_name).is_file():
            return version
    return None


def check_model_dir(path: str | os.PathLike) -> ModelDirReport:
    """Inspect a model folder and sort what is missing into blocking and optional."""
    folder = Path(path).expanduser()
    report = ModelDirReport(path=folder)
    if not folder.exists():
        report.problems.append(f"{folder} does not exist")
        return report
    if not folder.is_dir():
        report.problems.append(f"{folder} is a file, not a model folder")
        return report

    found = [_VERSION_FILES[v][0] for v in _VERSION_FILES if (folder / _VERSION_FILES[v][0]).is_file()]
    if len(found) > 1:
        report.problems.append(f"{folder} holds several model configs ({', '.join(found)}); keep one per folder")
    version = detect_version(folder)
    report.version = version
    if version is None:
        names = " / ".join(v[0] for v in _VERSION_FILES.values())
        report.problems.append(
            f"no model config in {folder}: expected one of {names} (is this the folder that contains llm.pt?)"
        )

    for name in _WEIGHT_FILES:
        file = folder / name
        if not file.is_file():
            report.problems.append(f"{name} is missing (model weights)")
        elif file.stat().st_size == 0:
            report.problems.append(f"{name} is empty (an interrupted download?)")

    if version in ("v2", "v3"):
        blank = folder / _BLANKEN
        if not blank.is_dir():
            report.problems.append(f"{_BLANKEN}/ is missing (the text LLM config and tokenizer for {version} models)")
        else:
            for name in _BLANKEN_FILES:
                if not (blank / name).is_file():
                    report.problems.append(f"{_BLANKEN}/{name} is missing")
            for name in _TOKENIZER_FILES:
                if not (blank / name).is_file():
                    report.missing_optional.append(f"{_BLANKEN}/{name} is missing (text tokenizer)")

    if not (folder / "campplus.onnx").is_file():
        report.missing_optional.append("campplus.onnx is missing (speaker encoder: voice profiles / cloning need it)")
    if version is not None:
        tokenizer = _VERSION_FILES[version][1]
        if not (folder / tokenizer).is_file():
            report.missing_optional.append(f"{tokenizer} is missing (speech tokenizer: voice profiles / cloning need it)")
    elif not any(folder.glob("speech_tokenizer_v*.onnx")):
        report.missing_optional.append("speech_tokenizer_v*.onnx is missing (speech tokenizer)")
    return report


def validate_model_dir(path: str | os.PathLike) -> list[str]:
    """Everything missing from a model folder compared with a released one, as sentences; [] means complete."""
    return check_model_dir(path).all_messages()


# ------------------------------------------------------------------------------------------- download


class DownloadError(RuntimeError):
    """A download failed; the message is meant for a person."""


class DownloadCancelled(DownloadError):
    """The user cancelled; partial files stay in place so a later download resumes."""


#: progress(done_bytes, total_bytes, message)
ProgressCallback = Callable[[int, int, str], None]


#: Where a download collects its files until the model is complete: <models>/.downloading/<name>. The dot keeps
#: it out of the model list and doctor; huggingface_hub's partial files and metadata there make a rerun resume.
STAGING_FOLDER = ".downloading"
#: A download that receives less than MIN_BYTES_PER_STALL_WINDOW within this many seconds is given up: a hub
#: that accepts connections and never answers, or trickles a byte a second (COSYDESK_DOWNLOAD_STALL_S overrides).
DEFAULT_STALL_S = 60.0
MIN_BYTES_PER_STALL_WINDOW = 64 * 1024
#: Connect / read timeout of the hub's metadata requests (COSYDESK_DOWNLOAD_TIMEOUT_S overrides); file bodies use
#: huggingface_hub's own read timeout (HF_HUB_DOWNLOAD_TIMEOUT, 10 s by default).
DEFAULT_TIMEOUT_S = 20.0


def _snapshot_download(**kwargs) -> str:
    # Imported lazily: huggingface_hub is slow to import and tests replace this function.
    from huggingface_hub import snapshot_download

    kwargs.setdefault("etag_timeout", environment.seconds("COSYDESK_DOWNLOAD_TIMEOUT_S", DEFAULT_TIMEOUT_S))
    if os.environ.get("HF_ENDPOINT"):  # read now, not at huggingface_hub's import (a mirror, or a test's server)
        kwargs.setdefault("endpoint", os.environ["HF_ENDPOINT"].rstrip("/"))
    return snapshot_download(**kwargs)


def _hub_name() -> str:
    """The hub the downloads talk to, for messages (a mirror set through HF_ENDPOINT, or huggingface.co)."""
    return os.environ.get("HF_ENDPOINT", "").rstrip("/") or "huggingface.co"


class _Activity:
    """Bytes received so far, for the stall watchdog; `stop` makes the (abandoned) worker's next update raise."""

    def __init__(self) -> None:
        self.bytes = 0
        self.stop = threading.Event()
        self._lock = threading.Lock()

    def add(self, n: float) -> None:
        with self._lock:
            self.bytes += max(int(n or 0), 0)


def _progress_bar_class(progress: ProgressCallback | None, cancel: threading.Event | None,
                        activity: _Activity | None = None):
    """A tqdm stand-in that forwards byte counts to `progress` and aborts when `cancel` is set."""
    from tqdm.auto import tqdm

    class _Bar(tqdm):
        def __init__(self, *args, **kwargs):
            kwargs["disable"] = False
            kwargs.setdefault("file", open(os.devnull, "w"))  # noqa: SIM115 - closed with the bar
            super().__init__(*args, **kwargs)

        def update(self, n=1):
            if (cancel is not None and cancel.is_set()) or (activity is not None and activity.stop.is_set()):
                raise DownloadCancelled("download cancelled")
            result = super().update(n)
            if self.unit == "B":
                if activity is not None:
                    activity.add(n)
                if progress is not None:
                    progress(int(self.n), int(self.total or 0), str(self.desc or ""))
            return result

        def close(self):
            stream = self.fp
            super().close()
            if stream is not None and getattr(stream, "name", "") == os.devnull:
                stream.close()

    return _Bar


def _run_watched(job: Callable[[], object], activity: _Activity, cancel: threading.Event | None,
                 stall_s: float, what: str) -> None:
    """Run `job` in a daemon thread and wait for it, but return at once on cancel and give up on a stall.

    The socket a stalled request blocks on cannot be interrupted from here, so the worker is abandoned (its next
    progress update raises, and its own timeouts end it); nothing it writes after that is ever used, because
    only this thread moves a finished download into place.
    """
    outcome: dict[str, BaseException] = {}
    finished = threading.Event()

    def work() -> None:
        try:
            job()
        except BaseException as error:  # noqa: BLE001 - handed to the waiting thread
            outcome["error"] = error
        finally:
            finished.set()

    threading.Thread(target=work, name=f"download {what}", daemon=True).start()
    mark_time, mark_bytes = time.monotonic(), 0
    while not finished.wait(0.05):
        if cancel is not None and cancel.is_set():
            activity.stop.set()
            raise DownloadCancelled("download cancelled")
        now, received = time.monotonic(), activity.bytes
        if received - mark_bytes >= MIN_BYTES_PER_STALL_WINDOW:
            mark_time, mark_bytes = now, received
        elif now - mark_time > stall_s:
            activity.stop.set()
            raise DownloadError(f"Downloading {what} stalled: {_hub_name()} sent only {received - mark_bytes} bytes "
                                f"in {stall_s:.0f} s. Check the network connection and try again; what arrived is "
                                "kept and the next download resumes.")
    if "error" in outcome:
        raise outcome["error"]


def _looks_offline(error: BaseException) -> bool:
    text = f"{type(error).__name__} {error}".lower()
    markers = ("connect", "resolve", "network", "offline", "timed out", "timeout", "name or service",
               "localentrynotfound", "temporary failure", "unreachable")
    return any(m in text for m in markers)


def download_manifest(folder: Path) -> dict[str, str]:
    """relative file name -> etag, from the per-file metadata huggingface_hub writes next to a download.

    Each `<folder>/.cache/huggingface/download/<file>.metadata` holds three lines: commit, etag, time.
    The etag is the sha256 of LFS files (the weights, ONNX) and the git blob sha1 of small files.
    """
    root = folder / ".cache" / "huggingface" / "download"
    if not root.is_dir():
        return {}
    entries = {}
    for meta in root.rglob("*.metadata"):
        lines = meta.read_text(encoding="utf-8", errors="replace").splitlines()
        if len(lines) >= 2:
            entries[meta.relative_to(root).as_posix()[: -len(".metadata")]] = lines[1].strip().strip('"')
    return entries


def file_matches_etag(path: Path, etag: str) -> bool | None:
    """True/False when the etag is a content hash we can recompute, None when it is not."""
    if len(etag) == 64:
        digest = hashlib.sha256()
    elif len(etag) == 40:  # git blob id: sha1 of "blob <size>\0" + content
        digest = hashlib.sha1()  # noqa: S324 - git's object id, not security
        digest.update(f"blob {path.stat().st_size}\0".encode())
    else:
        return None
    with path.open("rb") as stream:
        for block in iter(lambda: stream.read(1 << 22), b""):
            digest.update(block)
    return digest.hexdigest() == etag.lower()


def verify_download(folder: Path) -> list[str]:
    """Files of a downloaded folder whose content does not match the hash the hub recorded for them."""
    bad = []
    for relative, etag in sorted(download_manifest(folder).items()):
        file = folder / relative
        if file.is_file() and file_matches_etag(file, etag) is False:
            bad.append(relative)
    return bad


def staging_dir(name: str, models_dir: Path | None = None) -> Path:
    """Where the download of catalogue model `name` collects its files until the model is complete."""
    root = Path(models_dir) if models_dir else default_models_dir()
    return root / STAGING_FOLDER / catalogue_entry(name).name


def download_model(
    name: str,
    models_dir: Path | None = None,
    progress: ProgressCallback | None = None,
    cancel: threading.Event | None = None,
) -> Path:
    """Download catalogue model `name` into <models_dir>/<name>; returns that folder.

    A new model is collected in staging_dir() and moved to <models_dir>/<name> only once every file is there and
    matches its hash, so a failed or cancelled download never looks like an installed (broken) model; rerunning
    resumes from the partial files huggingface_hub keeps there. An installed model is updated in place (each file
    is replaced whole). Raises DownloadCancelled / DownloadError with a readable message; returns within ~0.1 s
    of `cancel` being set, and gives up when the hub stops sending data (COSYDESK_DOWNLOAD_STALL_S).
    """
    info = catalogue_entry(name)
    target = (Path(models_dir) if models_dir else default_models_dir()) / info.name
    staging = staging_dir(info.name, models_dir)
    folder = target if check_model_dir(target).loadable else staging
    if folder is staging:
        _adopt_leftover(target, staging)
    folder.mkdir(parents=True, exist_ok=True)
    activity = _Activity()
    try:
        _run_watched(lambda: _snapshot_download(repo_id=info.hf_repo, local_dir=str(folder),
                                                allow_patterns=DOWNLOAD_PATTERNS,
                                                tqdm_class=_progress_bar_class(progress, cancel, activity)),
                     activity, cancel, environment.seconds("COSYDESK_DOWNLOAD_STALL_S", DEFAULT_STALL_S), info.hf_repo)
    except DownloadError:
        raise
    except Exception as error:  # noqa: BLE001 - every hub/network failure becomes one readable message
        if cancel is not None and cancel.is_set():
            raise DownloadCancelled("download cancelled") from error
        if _looks_offline(error):
            raise DownloadError(
                f"Cannot reach {_hub_name()} to download {info.name} (no network?). "
                f"Connect and try again, or download {info.hf_repo} elsewhere and use “Add folder…”."
            ) from error
        raise DownloadError(f"Downloading {info.hf_repo} failed: {error}") from error
    corrupt = verify_download(folder)
    if corrupt:
        for relative in corrupt:  # removed so that running the download again fetches them afresh
            (folder / relative).unlink(missing_ok=True)
        raise DownloadError(f"{info.name}: {', '.join(corrupt)} did not match the published hash and was removed; "
                            "run the download again")
    report = check_model_dir(folder)
    if report.problems:
        raise DownloadError(f"{info.name} downloaded but incomplete: " + "; ".join(report.problems))
    if folder is staging:
        staging.rename(target)  # one step: the model appears complete or not at all
        try:
            staging.parent.rmdir()  # the .downloading folder, when no other download is in it
        except OSError:
            pass
    return target


def resolve_model(model: str | os.PathLike | None, models_dir: Path | None = None,
                  progress: ProgressCallback | None = None, cancel: threading.Event | None = None,
                  announce: Callable[[str, Path], None] | None = None) -> Path:
    """A model folder from what a person typed: an existing folder as it is; a catalogue name or HF repo id (None:
    the recommended model) as its folder under the models dir, downloaded on first use (``announce(name, target)``
    is called just before a download starts). Raises KeyError for a name that is neither."""
    if model is not None:
        path = Path(model).expanduser()
        if path.is_dir():
            return path
        name = catalogue_entry(str(model)).name
    else:
        name = DEFAULT_MODEL
    target = (Path(models_dir) if models_dir else default_models_dir()) / name
    if target.is_dir() and not check_model_dir(target).problems:
        return target
    if announce is not None:
        announce(name, target)
    return download_model(name, models_dir, progress=progress, cancel=cancel)


def _adopt_leftover(target: Path, staging: Path) -> None:
    """A half-filled <models>/<name> from an interrupted download (or an older CosyDesk, which downloaded in
    place) becomes the staging folder, so its partial files are resumed instead of looking like a broken model."""
    if target.exists() and not target.is_dir():
        raise DownloadError(f"{target} is a file where the model folder belongs: move it away and download again")
    if not target.is_dir():
        return
    if staging.exists():
        shutil.rmtree(target)  # the staging folder is the more recent attempt
    else:
        staging.parent.mkdir(parents=True, exist_ok=True)
        target.rename(staging)
