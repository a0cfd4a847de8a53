"""The doctor's model checks: the models folder and its free disk, and each model folder's layout and integrity.

What it is for: `cosydesk doctor` (and Help → Diagnostics, through cosydesk.doctor.run_checks) says whether
every installed model is complete and undamaged - hashes against the download manifest where one exists,
otherwise non-empty checkpoints that torch can open lazily - and names the command that repairs it.
What it must not do: change or download anything; torch and the hub are imported inside the checks.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterable
from pathlib import Path

from cosydesk.doctor_check import FAIL, OK, WARN, Check

#: A model download is 2-5 GB; engines add a few hundred MB.
MIN_FREE_DISK_GB = 6.0


def _free_gb(path: Path) -> float:
    probe = path
    while not probe.exists() and probe.parent != probe:
        probe = probe.parent
    return shutil.disk_usage(probe).free / 2**30


def check_models_dir(models_dir: Path) -> Check:
    try:
        free = _free_gb(models_dir)
    except OSError as error:
        return Check("models folder", FAIL, f"{models_dir}: {error}", f"mkdir -p {models_dir}")
    where = f"{models_dir} ({'exists' if models_dir.is_dir() else 'not created yet'}), {free:.1f} GB free"
    if free < MIN_FREE_DISK_GB:
        return Check("models folder", WARN, f"{where}: a model needs up to {MIN_FREE_DISK_GB:.0f} GB",
                     "set COSYDESK_MODELS_DIR to a folder on a bigger disk")
    return Check("models folder", OK, where)


def _weights_open(path: Path) -> str | None:
    """None when torch can open the checkpoint lazily (mmap, weights only), else why not."""
    try:
        import torch

        try:
            torch.load(path, map_location="cpu", mmap=True, weights_only=True)
        except RuntimeError as error:
            if "zipfile" not in str(error):
                raise
            # Saved in torch's older (non-zip) format, which the runtime loads fine but mmap cannot map.
            torch.load(path, map_location="cpu", weights_only=True)
    except Exception as error:  # noqa: BLE001
        return f"{path.name} does not open ({type(error).__name__}: {str(error).splitlines()[0][:120]})"
    return None


def _unfinished_download(folder: Path) -> bool:
    """A catalogue model's folder holding huggingface_hub's download state, or nothing yet."""
    from cosydesk import hub

    try:
        hub.catalogue_entry(folder.name)
    except KeyError:
        return False
    try:
        return (folder / ".cache" / "huggingface").is_dir() or not any(folder.iterdir())
    except OSError:
        return False


def _model_fix(folder: Path) -> str:
    from cosydesk import hub

    try:
        name = hub.catalogue_entry(folder.name).name
    except KeyError:
        return f"re-copy the model folder {folder} from its source"
    return f"cosydesk models --download {name}"


def _refused_at_load(folder: Path, scan_values: bool) -> str | None:
    """What the loader's own checks (model/validate.py: every setting, checkpoint key, shape and table; with
    ``scan_values`` also NaN in the weights, which reads them all) would refuse the folder for, or None: a folder
    whose files are whole can still hold a yaml it cannot run."""
    try:
        from cosydesk.model.validate import check_model_folder as check

        # the tokenizer files synthesis also needs are the layout check's (missing_optional)
        check(folder, scan_values=scan_values)
    except (ValueError, OSError) as error:  # ConfigError / CheckpointError are ValueErrors
        return str(error)
    return None


def check_model_folder(folder: Path, verify_hashes: bool = True) -> Check:
    """Layout (hub.check_model_dir) plus integrity: hashes against the download manifest where one exists,
    otherwise non-empty files and .pt checkpoints that torch can open lazily; then the loader's own checks."""
    from cosydesk import hub

    label = f"model {folder.name}"
    report = hub.check_model_dir(folder)
    if report.problems and _unfinished_download(folder):
        # An interrupted download of a catalogue model (an older CosyDesk downloaded in place): the next download
        # resumes it (hub._adopt_leftover); nothing is broken that the user did wrong.
        return Check(label, WARN, "its download did not finish (" + "; ".join(report.problems) + ")",
                     _model_fix(folder))
    if report.problems:
        return Check(label, FAIL, "; ".join(report.problems), _model_fix(folder))
    problems: list[str] = []
    manifest = hub.download_manifest(folder) if verify_hashes else {}
    checked = 0
    for relative, etag in sorted(manifest.items()):
        file = folder / relative
        if not file.is_file():
            continue  # pattern-filtered or deleted on purpose: check_model_dir judges what is required
        verdict = hub.file_matches_etag(file, etag)
        if verdict is False:
            problems.append(f"{relative} does not match its download hash")
        checked += verdict is not None
    if not checked:
        for file in sorted(folder.glob("*.pt")):
            if file.stat().st_size == 0:
                problems.append(f"{file.name} is empty")
            elif (why := _weights_open(file)) is not None:
                problems.append(why)
    version = report.version or "?"
    how = f"{checked} file hashes verified" if checked else "weights open (no download manifest to hash against)"
    # the quick check (the app's Diagnostics, doctor --quick) reads no weight whole, as it hashes none
    if not problems and (why := _refused_at_load(folder, scan_values=verify_hashes)) is not None:
        problems.append(why)
    if problems:
        return Check(label, FAIL, f"{version}: " + "; ".join(problems), _model_fix(folder))
    if report.missing_optional:
        return Check(label, WARN, f"{version}, {how}; " + "; ".join(report.missing_optional), _model_fix(folder))
    return Check(label, OK, f"{version}, {how}")


def check_models(models_dir: Path, extra: Iterable[Path] = (), verify_hashes: bool = True) -> list[Check]:
    from cosydesk import hub

    folders = [p for p in sorted(models_dir.iterdir()) if p.is_dir() and not p.name.startswith(".")] \
        if models_dir.is_dir() else []
    folders += [Path(p) for p in extra if Path(p) not in folders]
    if not folders:
        return [Check("models", WARN, f"no model installed in {models_dir}",
                      f"cosydesk models --download {hub.DEFAULT_MODEL}")]
    return [check_model_folder(folder, verify_hashes) for folder in folders]
