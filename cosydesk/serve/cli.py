"""`cosydesk serve`: the OpenAI-compatible speech server on one loaded model.

    cosydesk serve --model CosyVoice2-0.5B --port 8000            # http://127.0.0.1:8000/v1
    cosydesk serve --host 0.0.0.0 --api-key "$KEY"                # other machines: only with a key

Registered by cosydesk.cli like bench and doctor. This module imports nothing heavy at import time (FastAPI,
uvicorn and torch load inside cmd_serve), so `cosydesk --help` stays instant. The address and key are checked
before anything loads; a port that is taken fails before the model loads.
"""

from __future__ import annotations

import argparse
import sys

from cosydesk import environment
from cosydesk.runtime.backends import CHOICES as BACKEND_CHOICES
from cosydesk.serve.config import DEFAULT_HOST, DEFAULT_MAX_INPUT_CHARS, DEFAULT_PORT, DEFAULT_QUEUE, bind_problem


def add_parser(sub) -> None:
    serve = sub.add_parser("serve", help="run a local OpenAI-compatible speech server (/v1/audio/speech)",
                           description="Serve POST /v1/audio/speech, GET /v1/models and GET /v1/audio/voices "
                                       "on one loaded model; see docs/local-api.md.")
    serve.add_argument("--model", help="model folder or catalogue name (default: the recommended model)")
    serve.add_argument("--host", default=DEFAULT_HOST,
                       help=f"address to listen on (default {DEFAULT_HOST}; any other than loopback needs --api-key)")
    serve.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"TCP port (default {DEFAULT_PORT}; 0: any free one)")
    serve.add_argument("--api-key", default=environment.text("COSYDESK_API_KEY"),
                       help="require 'Authorization: Bearer KEY' on every request (default: $COSYDESK_API_KEY)")
    serve.add_argument("--queue", type=int, default=DEFAULT_QUEUE,
                       help=f"requests that may wait while one is spoken; more get 429 (default {DEFAULT_QUEUE})")
    serve.add_argument("--max-input-chars", type=int, default=DEFAULT_MAX_INPUT_CHARS,
                       help=f"longest accepted 'input' text (default {DEFAULT_MAX_INPUT_CHARS}, as OpenAI)")
    serve.add_argument("--cors-origin", action="append", default=[], metavar="ORIGIN",
                       help="allow browser pages from this origin (repeatable; default: no CORS)")
    serve.add_argument("--default-voice", metavar="NAME",
                       help="speaker or saved voice profile that OpenAI's voice names (alloy, nova, ...) map to")
    serve.add_argument("--device", default="auto", help="auto, cpu, cuda, cuda:N")
    serve.add_argument("--backend", default="auto", help=", ".join(BACKEND_CHOICES))
    serve.add_argument("--precision", default="auto", help="auto, fp32, fp16")
    serve.add_argument("--quiet", action="store_true", help="no per-request access log")
    serve.set_defaults(func=cmd_serve)


def _check_arguments(args: argparse.Namespace) -> None:
    from cosydesk.cli import UserError

    problem = bind_problem(args.host, args.api_key)
    if problem:
        raise UserError(problem)
    if not 0 <= args.port <= 65535:
        raise UserError(f"--port {args.port} is not a TCP port (0-65535)")
    if args.queue < 0:
        raise UserError(f"--queue {args.queue} must be 0 or more")
    if args.max_input_chars < 1:
        raise UserError(f"--max-input-chars {args.max_input_chars} must be at least 1")
    for origin in args.cors_origin:
        if origin != "*" and "://" not in origin:
            raise UserError(f"--cors-origin {origin!r} must be an origin such as http://localhost:3000 (or *)")


def cmd_serve(args: argparse.Namespace) -> int:
    from cosydesk.cli import UserError, resolve_model_dir

    _check_arguments(args)
    from cosydesk.serve.runner import bind_socket, make_server, url_of

    try:
        sock = bind_socket(args.host, args.port)
    except OSError as err:
        raise UserError(f"cannot listen on {args.host}:{args.port}: {err.strerror or err} "
                        "(is another server running there? choose another --port)") from None
    try:
        model_dir = resolve_model_dir(args.model)
        from cosydesk.runtime import Synthesizer
        from cosydesk.serve.app import create_app
        from cosydesk.serve.config import ServeConfig
        from cosydesk.serve.engine import SpeechEngine
        from cosydesk.serve.voices import VoiceCatalogue

        print(f"Loading {model_dir} ...", file=sys.stderr)
        synth = Synthesizer(model_dir, device=args.device, backend=args.backend, precision=args.precision)
        config = ServeConfig(model_id=model_dir.name, api_key=args.api_key, max_input_chars=args.max_input_chars,
                             cors_origins=list(args.cors_origin), default_voice=args.default_voice, bind_host=args.host)
        catalogue = VoiceCatalogue(synth, config.voices_dir, config.default_voice)
        own = [voice.id for voice in catalogue.speakers() + catalogue.profiles()]
        if args.default_voice and args.default_voice not in own:
            raise UserError(f"--default-voice {args.default_voice!r} is neither a speaker of this model nor a saved "
                            f"voice profile (available: {', '.join(own) or 'none'})")
        engine = SpeechEngine(synth, max_waiting=args.queue)
        app = create_app(engine, config, catalogue)
        server = make_server(app, connection_limit=max(256, 4 * (args.queue + 1)),
                             log_level="warning" if args.quiet else "info", access_log=not args.quiet)
        url = url_of(sock)
        print(f"CosyDesk speech server on {url}/v1 ({model_dir.name}: {synth.version}, {synth.device}, "
              f"{synth.backend}; {len(catalogue.list())} voices; queue {args.queue}; "
              f"API key {'required' if args.api_key else 'not required'})", file=sys.stderr)
        print(f"try: curl {url}/v1/audio/speech -H 'Content-Type: application/json' "
              f"-d '{{\"input\": \"Hello.\", \"voice\": \"alloy\", \"response_format\": \"wav\"}}' -o hello.wav",
              file=sys.stderr, flush=True)
        try:
            server.run(sockets=[sock])
        except KeyboardInterrupt:  # uvicorn has shut down gracefully, then re-raises the Ctrl-C it caught
            pass
        finally:
            engine.close()
        print("CosyDesk speech server stopped", file=sys.stderr)
    finally:
        sock.close()
    return 0
