"""`cosydesk` command line: the desktop app (no arguments), `say`, `bench`, `models`, `doctor`, `engines`, `serve`, `read`.

Heavy imports (torch, Qt, TensorRT) happen inside the command that needs them, so `cosydesk --help` is
instant. User mistakes print one line (`cosydesk: error: ...`) and exit 2 — never a traceback — and
no half-written output file is left behind.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path


class UserError(Exception):
    """A problem the user can fix; printed as one line."""


def _user_error_types() -> tuple[type[BaseException], ...]:
    """Exceptions that mean 'bad input' (imported lazily: they live in heavy modules that may be missing)."""
    import importlib

    types: list[type[BaseException]] = [UserError]
    for module_name, names in (
        ("cosydesk.model.config", ("ConfigError",)),
        ("cosydesk.model.checkpoint", ("CheckpointError",)),
        ("cosydesk.runtime.errors", ("SynthesisError",)),
        ("cosydesk.audio.export", ("ExportError",)),
        ("cosydesk.frontend.audio_io", ("AudioInputError",)),
        ("cosydesk.frontend.tokenizer", ("TokenizerFilesMissing",)),
        ("cosydesk.hub", ("DownloadError",)),
        ("cosydesk.audio.player", ("AudioDeviceError",)),
    ):
        try:
            module = importlib.import_module(module_name)
        except ImportError:  # e.g. soundfile absent on a headless GPU box: those errors cannot occur then
            continue
        types.extend(getattr(module, name) for name in names if hasattr(module, name))
    return tuple(types)


def resolve_model_dir(model: str | None, progress: bool = True) -> Path:
    """--model as given; without it the recommended model from the models folder, downloaded on first use."""
    from cosydesk import hub

    if model:
        path = Path(model).expanduser()
        if path.is_dir():
            return path
        try:
            info = hub.catalogue_entry(model)
        except KeyError:
            raise UserError(f"model folder {path} does not exist (and {model!r} is not a known model name)") from None
        name = info.name
    else:
        name = hub.DEFAULT_MODEL
    target = hub.default_models_dir() / name
    if target.is_dir() and not hub.check_model_dir(target).problems:
        return target
    print(f"Downloading {name} into {target} (first use) ...", file=sys.stderr)
    return hub.download_model(name, progress=_print_progress if progress else None)


def _print_progress(done: float, total: float | None = None, *rest) -> None:
    if total:
        width = 30
        filled = int(width * done / total)
        print(f"\r[{'#' * filled}{'.' * (width - filled)}] {100 * done / total:5.1f}%", end="", file=sys.stderr, flush=True)


def cmd_say(args: argparse.Namespace) -> int:
    if args.list_speakers:
        return _list_speakers(args)
    from cosydesk.runtime import Request, Synthesizer

    if args.output and Path(args.output).suffix.lower() not in (".wav", ".flac"):
        raise UserError(f"output file {args.output} must end in .wav or .flac")
    if args.text_file:
        if args.text:
            raise UserError("give the text either as an argument or with --text-file, not both")
        from cosydesk.frontend.text_file import TextFileError, read_text_file

        try:
            args.text = read_text_file(args.text_file)
        except TextFileError as err:
            raise UserError(str(err)) from None
    if args.text is None:
        raise UserError("nothing to say: give the text as an argument or with --text-file")
    if args.prompt_text and not args.prompt_wav:
        raise UserError("--prompt-text needs --prompt-wav (the recording it transcribes)")
    model_dir = resolve_model_dir(args.model)
    synth = Synthesizer(model_dir, device=args.device, backend=args.backend, precision=args.precision)
    request = Request(text=args.text, speaker=args.speaker, instruct=args.instruct, prompt_wav=args.prompt_wav,
                      prompt_text=args.prompt_text, speed=args.speed, seed=args.seed, stream=not args.no_stream)
    for notice in synth.notices(request):
        print(f"note: {notice}", file=sys.stderr)
    pieces = []
    start = time.perf_counter()
    first_audio = None

    def chunks():
        nonlocal first_audio
        for chunk in synth.stream(request):
            if first_audio is None:
                first_audio = time.perf_counter() - start
            pieces.append(chunk.pcm)
            yield chunk

    playback_error = None
    if args.play:
        playback_error = _play(chunks(), synth.sample_rate, args.audio_device)
    else:
        for _ in chunks():
            pass
    total = time.perf_counter() - start
    import numpy as np

    audio = np.concatenate(pieces) if pieces else np.zeros(0, dtype=np.float32)
    seconds = len(audio) / synth.sample_rate
    if args.output:
        from cosydesk.audio.export import write_audio

        write_audio(args.output, audio, synth.sample_rate, subtype="FLOAT" if args.float_wav else None)
        print(f"wrote {args.output} ({seconds:.2f} s of audio)")
    rtf = total / seconds if seconds else float("nan")
    print(f"first audio {1000 * (first_audio or total):.0f} ms, total {total:.2f} s, real-time factor {rtf:.3f} "
          f"({synth.version}, {synth.device}, {synth.backend})", file=sys.stderr)
    if playback_error is not None:
        saved = f"; the audio is in {args.output}" if args.output else "; use -o FILE to save it instead"
        raise UserError(f"playback failed: {playback_error}{saved}")
    return 0


def _play(chunks, sample_rate: int, device) -> Exception | None:
    """Play as chunks arrive; if the device fails, keep synthesising silently so -o still gets every chunk."""
    from cosydesk.audio.player import AudioDeviceError, play_stream

    try:
        stats = play_stream(chunks, sample_rate, device=device)
    except AudioDeviceError as error:
        for _ in chunks:  # the rest of the utterance, for the output file
            pass
        return error
    if stats.underruns:
        print(f"note: {stats.underruns} audio underruns (the GPU/CPU was slower than real time)", file=sys.stderr)
    return None


def _list_speakers(args: argparse.Namespace) -> int:
    from cosydesk.voices_list import ListError, installed_model_dir, voice_lines

    try:
        print("\n".join(voice_lines(installed_model_dir(args.model))))
    except ListError as error:
        raise UserError(str(error)) from None
    return 0


def cmd_models(args: argparse.Namespace) -> int:
    from cosydesk import hub

    if args.download:
        try:
            hub.catalogue_entry(args.download)
        except KeyError as error:
            raise UserError(error.args[0]) from None
        path = hub.download_model(args.download, progress=_print_progress)
        print(f"\n{args.download} is ready in {path}")
        return 0
    installed = {p.name for p in hub.installed_models()}
    for info in hub.CATALOGUE:
        mark = "installed" if info.name in installed else "not installed"
        star = " (recommended)" if info.recommended else ""
        print(f"{info.name:28s} {info.version}  {info.size_gb:4.1f} GB  {mark}{star}\n    {info.summary_en}")
    print(f"models folder: {hub.default_models_dir()}")
    return 0


def cmd_gui(args: argparse.Namespace) -> int:
    try:
        from cosydesk.ui.app import run_app
    except ImportError as error:  # QtGui needs libEGL, libfontconfig, ...: name them, not a traceback
        from cosydesk.qt_platform import import_advice

        raise UserError(import_advice(error)) from None

    return run_app(args.model, sys.argv[:1])


def build_parser() -> argparse.ArgumentParser:
    from cosydesk import __version__

    parser = argparse.ArgumentParser(
        prog="cosydesk", description="Local, real-time CosyVoice speech synthesis. "
        "Without a command, `cosydesk` opens the desktop app (on --model if given).")
    parser.add_argument("--version", action="version", version=f"cosydesk {__version__}")
    parser.add_argument("--model", help="model folder (default: the recommended model, downloaded on first use)")
    sub = parser.add_subparsers(dest="command")

    say = sub.add_parser("say", help="synthesise text to a WAV file or the speakers")
    say.add_argument("text", nargs="?", help="what to say (or use --text-file)")
    say.add_argument("--list-speakers", action="store_true",
                     help="list the model's built-in speakers, your saved voice profiles and the styles, then exit")
    say.add_argument("--text-file", help="read the text from this file (UTF-8, UTF-16 with a byte-order mark, or GBK/GB18030; "
                     "undecodable bytes become U+FFFD)")
    say.add_argument("--model", help="model folder or catalogue name")
    say.add_argument("--speaker", help="SFT speaker (see `cosydesk say --list-speakers`)")
    say.add_argument("--instruct", help="emotion / style instruction or preset name")
    say.add_argument("--prompt-wav", help="zero-shot voice: a recording of the voice (<= 30 s)")
    say.add_argument("--prompt-text", help="transcript of --prompt-wav")
    say.add_argument("-o", "--output", help="write the audio here (.wav or .flac), atomically")
    say.add_argument("--float-wav", action="store_true", help="write 32-bit float samples instead of 16-bit PCM")
    say.add_argument("--play", action="store_true", help="play through the sound card as chunks arrive")
    say.add_argument("--audio-device", default=None, help="PortAudio output device (index or name)")
    say.add_argument("--speed", type=float, default=1.0)
    say.add_argument("--seed", type=int, default=None)
    say.add_argument("--no-stream", action="store_true", help="synthesise each sentence in one piece")
    say.add_argument("--device", default="auto", help="auto, cpu, cuda, cuda:N")
    say.add_argument("--backend", default="auto", help="auto, eager, cudagraph, tensorrt")
    say.add_argument("--precision", default="auto", help="auto, fp32, fp16")
    say.set_defaults(func=cmd_say)

    models = sub.add_parser("models", help="list known models, or download one")
    models.add_argument("--download", metavar="NAME")
    models.set_defaults(func=cmd_models)

    _add_optional_commands(sub)
    return parser


def _add_optional_commands(sub) -> None:
    """Commands whose modules register themselves (bench, doctor, engines, serve, read) when present."""
    for module_name in ("cosydesk.bench", "cosydesk.doctor", "cosydesk.runtime.tensorrt.cli", "cosydesk.serve.cli",
                        "cosydesk.read_command"):
        try:
            module = __import__(module_name, fromlist=["add_parser"])
        except ImportError:
            continue
        module.add_parser(sub)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        args.func = cmd_gui
    try:
        return args.func(args)
    except KeyboardInterrupt:
        print("cosydesk: interrupted", file=sys.stderr)
        return 130
    except Exception as err:  # noqa: BLE001 - user errors become one line; real bugs keep their traceback
        if isinstance(err, _user_error_types()):
            print(f"cosydesk: error: {err}", file=sys.stderr)
            return 2
        raise


def gui_main() -> int:
    return main([])


if __name__ == "__main__":
    sys.exit(main())
