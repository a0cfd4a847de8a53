"""`cosydesk say --list-speakers`: what a model can speak with — built-in speakers, saved voice profiles, styles.

What it is for: the CLI's answer to "which --speaker / --instruct values work?" without synthesising anything.
It reads the model folder's spk2info.pt and yaml name only (no weights are loaded, so it is quick even for a
full-size model) and the app's saved voice profiles.

What it must not do: download a model, load weights, or import Qt.
"""

from __future__ import annotations

from pathlib import Path

from cosydesk import hub, paths


class ListError(Exception):
    """The model to list cannot be found; the CLI prints it as one line."""


def installed_model_dir(model: str | None, models_dir: Path | None = None) -> Path:
    """--model as a folder or catalogue name, or the recommended model — only if it is already on disk."""
    root = models_dir or paths.models_dir()
    if model and Path(model).expanduser().is_dir():
        return Path(model).expanduser()
    try:
        name = hub.catalogue_entry(model).name if model else hub.DEFAULT_MODEL
    except KeyError:
        raise ListError(f"{model!r} is neither a model folder nor a known model name; "
                        f"known models: {', '.join(m.name for m in hub.CATALOGUE)}") from None
    if not hub.check_model_dir(root / name).loadable:
        raise ListError(f"{name} is not installed in {root}: run `cosydesk models --download {name}` first, "
                        "or pass --model FOLDER")
    return root / name


def voice_lines(model_dir: Path, data_dir: Path | None = None) -> list[str]:
    """The listing, one entry per line, each section saying which option uses it."""
    from cosydesk.model.cosyvoice import read_spk2info
    from cosydesk.runtime.styles import is_instruct_model, presets_for

    report = hub.check_model_dir(model_dir)
    if not report.loadable:
        raise ListError(f"{model_dir}: " + "; ".join(report.problems))
    version = report.version or "v2"
    lines = [f"Model {model_dir.name} ({version}) in {model_dir}", "", "Built-in speakers (--speaker NAME):"]
    speakers = list(read_spk2info(model_dir / "spk2info.pt"))
    lines += [f"  {name}" for name in speakers] or ["  (none: this model speaks in a voice from a recording, "
                                                    "see the voice profiles below or --prompt-wav)"]

    lines += ["", "Saved voice profiles (use with --prompt-wav FILE --prompt-text TEXT):"]
    voices = data_dir / "voices" if data_dir else paths.voices_dir()
    profiles = _profiles(voices)
    if profiles and not (model_dir / "campplus.onnx").is_file():
        lines.append("  (this model folder has no campplus.onnx: it cannot use voice profiles)")
    lines += [f'  {p.name}: --prompt-wav "{p.wav_path}" --prompt-text "{p.transcript}"' for p in profiles] or [
        f"  (none saved in {voices}; the desktop app's New voice profile… creates them)"]

    presets = presets_for(version, is_instruct_model(version, model_dir))
    how = "--instruct NAME" if version == "v1" else "--instruct NAME with a voice profile or --prompt-wav"
    lines += ["", f"Styles ({how}; or your own instruction):"]
    lines += [f"  {p.label} ({p.label_zh})" for p in presets] or ["  (none: this model takes no style instruction)"]
    return lines


def _profiles(voices: Path) -> list:
    if not voices.is_dir():  # listing must not create the folder
        return []
    from cosydesk.audio.profiles import VoiceProfileStore

    return VoiceProfileStore(voices).list()
