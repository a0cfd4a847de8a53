"""`cosydesk` command line: the desktop app (no arguments), `say`, `models`, and the commands in COMMANDS.

Heavy imports (torch, Qt, TensorRT) happen inside the command that needs them, so `cosydesk --help` is
instant. User mistakes print one line (`cosydesk: error: ...`) and exit 2 — never a traceback — and
no half-written output file is left behind.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from cosydesk.runtime.backends import CHOICES as BACKEND_CHOICES


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
        ("cosydesk.frontend.prompt", ("OnnxOutputError",)),
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

    def announce(name: str, target: Path) -> None:
        print(f"Downloading {name} into {target} (first use) ...", file=sys.stderr)

    try:
        return hub.resolve_model(model, progress=_print_progress if progress else None, announce=announce)
    except KeyError:
        path = Path(model).expanduser()
        raise UserError(f"model folder {path} does not exist (and {model!r} is not a known model name)") from None


def _print_progress(done: float, total: float | None = None, *rest) -> None:
    if total:
        width = 30
        filled = int(width * done / total)
        print(f"\r[{'#' * filled}{'.' * (width - filled)}] {100 * done / total:5.1f}%", end="", file=sys.stderr, flush=True)


def cmd_say(args: argparse.Namespace) -> int:
    if args.list_speakers:
        return _list_speakers(args)
    from cosydesk.runtime import Request, Synthesizer

    from cosydesk.audio.export import supported_suffixes
    from cosydesk.audio.subtitles import SUBTITLE_SUFFIXES, SentenceTimeline

    if args.output and Path(args.output).suffix.lower() not in supported_suffixes():
        raise UserError(f"output file {args.output} must end in {', '.join(supported_suffixes())}")
    if args.subtitles and Path(args.subtitles).suffix.lower() not in SUBTITLE_SUFFIXES:
        raise UserError(f"subtitle file {args.subtitles} must end in .srt or .vtt")
    if args.each_sentence and not args.output:
        raise UserError("--each-sentence needs -o FILE (the files are named FILE-01, FILE-02, …)")
    if args.float_wav and args.output and Path(args.output).suffix.lower() != ".wav":
        raise UserError(f"--float-wav writes .wav files only, not {Path(args.output).name}")
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
                      prompt_text=args.prompt_text, speed=args.speed, seed=args.seed, stream=not args.no_stream,
                      per_sentence=args.by_sentence)
    for notice in synth.notices(request):
        print(f"note: {notice}", file=sys.stderr)
    pieces = []
    timeline = SentenceTimeline()  # each sentence's samples: --subtitles and --each-sentence
    start = time.perf_counter()
    first_audio = None

    def chunks():
        nonlocal first_audio
        for chunk in synth.stream(request):
            if first_audio is None:
                first_audio = time.perf_counter() - start
            pieces.append(chunk.pcm)
            timeline.add(chunk.sentence_index, chunk.span, len(chunk.pcm), len(request.text))
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
    if args.output and args.each_sentence:
        from cosydesk.audio.utterance_export import write_sentence_files

        written = write_sentence_files(args.output, audio, synth.sample_rate, timeline.ranges)
        print(f"wrote {len(written)} files, {written[0].name} … {written[-1].name} ({seconds:.2f} s of audio)")
    elif args.output:
        from cosydesk.audio.export import write_audio

        write_audio(args.output, audio, synth.sample_rate, subtype="FLOAT" if args.float_wav else None)
        print(f"wrote {args.output} ({seconds:.2f} s of audio)")
    if args.subtitles:
        from cosydesk.audio.subtitles import write_subtitles

        write_subtitles(args.subtitles, request.text, timeline.ranges, synth.sample_rate)
        count = len(timeline.ranges)
        unit = "one per sentence" if args.by_sentence else \
            "one per synthesis segment; --by-sentence gives one per sentence"
        print(f"wrote {args.subtitles} ({count} cue{'s' if count != 1 else ''}, {unit})")
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
    from cosydesk import hub, paths

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
    print(f"models folder: {paths.models_dir()}")
    return 0


def cmd_gui(args: argparse.Namespace) -> int:
    try:
        from cosydesk.ui.app import run_app
    except ImportError as error:  # QtGui needs libEGL, libfontconfig, ...: name them, not a traceback
        from cosydesk.qt_platform import import_advice

        raise UserError(import_advice(error)) from None

    return run_app(args.model, sys.argv[:1])


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The whole command line; ``argv`` (default sys.argv[1:]) says which command modules to import."""
    from cosydesk import __version__

    parser = argparse.ArgumentParser(
        prog="cosydesk", description="Local, real-time CosyVoice speech synthesis. "
        "Without a command, `cosydesk` opens the desktop app (on --model if given).")
    parser.add_argument("--version", action="version", version=f"cosydesk {__version__}")
    parser.add_argument("--model", help="model folder (default: the recommended model, downloaded on first use)")
    sub = parser.add_subparsers(dest="command")

    say = sub.add_parser("say", help="synthesise text to an audio file (WAV, FLAC, MP3, Opus, Ogg) or the speakers")
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
    say.add_argument("-o", "--output", help="write the audio here, atomically; the ending picks the format: .wav, "
                     ".flac, .mp3, .opus (Ogg Opus) or .ogg (Ogg Vorbis)")
    say.add_argument("--each-sentence", action="store_true",
                     help="with -o FILE: one file per sentence, FILE-01, FILE-02, … instead of one file")
    say.add_argument("--subtitles", metavar="FILE", help="write each sentence's start and end here (.srt or .vtt)")
    say.add_argument("--by-sentence", action="store_true",
                     help="synthesise one sentence at a time, as the desktop app reads: one subtitle cue and one "
                          "--each-sentence file per sentence; without it short sentences are packed into segments "
                          "of up to ~80 tokens, as the official CosyVoice frontend does")
    say.add_argument("--float-wav", action="store_true", help="write 32-bit float samples instead of 16-bit PCM")
    say.add_argument("--play", action="store_true", help="play through the sound card as chunks arrive")
    say.add_argument("--audio-device", default=None, help="PortAudio output device (index or name)")
    say.add_argument("--speed", type=float, default=1.0)
    say.add_argument("--seed", type=int, default=None)
    say.add_argument("--no-stream", action="store_true", help="synthesise each sentence in one piece")
    say.add_argument("--device", default="auto", help="auto, cpu, cuda, cuda:N")
    say.add_argument("--backend", default="auto", help=", ".join(BACKEND_CHOICES))
    say.add_argument("--precision", default="auto", help="auto, fp32, fp16")
    say.set_defaults(func=cmd_say)

    models = sub.add_parser("models", help="list known models, or download one")
    models.add_argument("--download", metavar="NAME")
    models.set_defaults(func=cmd_models)

    _add_module_commands(sub, argv)
    return parser


#: The commands that live in their own modules: (name, module with ``add_parser(subparsers)``, one-line help).
#: A module is imported only when its command is on the command line, so ``cosydesk --help`` lists every
#: command without importing any (no torch, no server stack), and a module that fails to import is an error
#: naming it, never a command that silently vanishes. The help here is what --help shows; a test checks it is
#: the one the module registers.
COMMANDS: tuple[tuple[str, str, str], ...] = (
    ("bench", "cosydesk.bench", "latency / RTF / VRAM / fidelity benchmark over a corpus, per backend"),
    ("doctor", "cosydesk.doctor", "check this machine: Python, torch/CUDA, GPU, TensorRT, audio, fonts, models; "
                                  "each problem with the command that fixes it"),
    ("engines", "cosydesk.runtime.backends.tensorrt.cli", "TensorRT engines: build ahead of time (cached under engines/)"),
    ("serve", "cosydesk.serve.cli", "run a local OpenAI-compatible speech server (/v1/audio/speech)"),
    ("read", "cosydesk.read_command", "read text aloud through the running app (or standalone when none runs)"),
)


def _add_module_commands(sub, argv: list[str] | None) -> None:
    """The real parser of each command named on the command line; a listed-only stand-in for the others."""
    words = set(sys.argv[1:] if argv is None else argv)
    for name, module_name, help_text in COMMANDS:
        if name in words:
            command_module(name).add_parser(sub)
        else:
            sub.add_parser(name, help=help_text, add_help=False)


def command_module(name: str):
    """The module of registered command ``name``, imported now; an import failure is a UserError naming it."""
    import importlib

    module_name = dict((entry[0], entry[1]) for entry in COMMANDS)[name]
    try:
        return importlib.import_module(module_name)
    except ImportError as error:
        raise UserError(f"the `{name}` command cannot start: importing {module_name} failed ({error}); "
                        "reinstall cosydesk (pip install -e . in a checkout) or the missing package") from error


def main(argv: list[str] | None = None) -> int:
    from cosydesk.runtime.allocator import prefer_expandable_segments

    prefer_expandable_segments()  # before torch starts CUDA in this process (the app, the server, bench, say)
    try:
        parser = build_parser(argv)
    except UserError as err:
        print(f"cosydesk: error: {err}", file=sys.stderr)
        return 2
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
