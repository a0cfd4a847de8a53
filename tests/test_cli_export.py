"""`cosydesk say -o` in every export format and `--subtitles`: files decoded back by soundfile, cue timings that
add up to the audio's length. In-process (cli.main) with one shared tiny Synthesizer: loading it per format
would cost a model load each."""

from __future__ import annotations

import re

import numpy as np
import pytest
import soundfile as sf

from cosydesk import cli

# three segments: the v2 frontend packs Chinese sentences into segments of more than 60 characters
FIRST, SECOND, THIRD = ("今天天气很好，阳光明媚，微风轻轻地吹过湖面，孩子们在草地上奔跑，老人们坐在长椅上聊天，"
                        "远处的山峦在薄雾中若隐若现，一切都显得那么安静而美好。",
                        "我们沿着小路慢慢地走，看见路边开满了各种颜色的花，有红的，有黄的，也有紫的，"
                        "蜜蜂和蝴蝶在花丛中飞来飞去，空气里满是泥土和青草的味道。",
                        "傍晚的时候，太阳慢慢落山，天边的云彩被染成了金色和粉色，我们坐在湖边，"
                        "静静地看着水面上的倒影，谁也不想先开口打破这份宁静。")
TEXT = FIRST + "\n" + SECOND + THIRD


@pytest.fixture(scope="module")
def shared_synth(tiny_v2_dir):
    from cosydesk.runtime import Synthesizer

    return Synthesizer(tiny_v2_dir, device="cpu")


@pytest.fixture
def say(shared_synth, tiny_v2_dir, monkeypatch, capsys):
    import cosydesk.runtime

    monkeypatch.setattr(cosydesk.runtime, "Synthesizer", lambda *a, **k: shared_synth)

    def run(text: str, *args: str) -> tuple[int, str, str]:
        code = cli.main(["say", text, "--model", str(tiny_v2_dir), "--seed", "3", *args])
        out = capsys.readouterr()
        return code, out.out, out.err

    return run


def _cue_times(body: str, separator: str) -> list[tuple[float, float]]:
    pattern = rf"(\d\d):(\d\d):(\d\d){re.escape(separator)}(\d\d\d) --> (\d\d):(\d\d):(\d\d){re.escape(separator)}(\d\d\d)"
    times = []
    for match in re.finditer(pattern, body):
        h1, m1, s1, ms1, h2, m2, s2, ms2 = map(int, match.groups())
        times.append((h1 * 3600 + m1 * 60 + s1 + ms1 / 1000, h2 * 3600 + m2 * 60 + s2 + ms2 / 1000))
    return times


def test_every_format_decodes_back_with_its_length_and_rate(say, shared_synth, tmp_path):
    code, _, err = say("今天天气很好。", "-o", str(tmp_path / "ref.wav"), "--float-wav")
    assert code == 0, err
    reference, rate = sf.read(tmp_path / "ref.wav", dtype="float32")
    assert rate == shared_synth.sample_rate == 24000 and reference.size > 0
    # the same text and seed give the same samples: every format holds that audio, at its length and rate
    for suffix, info_format in ((".wav", "WAV"), (".flac", "FLAC"), (".mp3", "MP3"), (".ogg", "OGG"),
                                (".opus", "OGG")):
        out = tmp_path / f"out{suffix}"
        code, stdout, err = say("今天天气很好。", "-o", str(out))
        assert code == 0, (suffix, err)
        assert f"wrote {out}" in stdout
        decoded, decoded_rate = sf.read(out, dtype="float32")
        assert sf.info(str(out)).format == info_format, suffix
        assert decoded_rate == 24000 and len(decoded) == len(reference), suffix
        if suffix in (".wav", ".flac"):
            np.testing.assert_allclose(decoded, reference, atol=1 / 32767 + 1e-6)
    assert sf.info(str(tmp_path / "out.opus")).subtype == "OPUS"
    assert sf.info(str(tmp_path / "out.ogg")).subtype == "VORBIS"


def test_subtitles_and_one_file_per_sentence_add_up_to_the_audio(say, tmp_path):
    code, stdout, err = say(TEXT, "-o", str(tmp_path / "part.mp3"), "--each-sentence", "--subtitles",
                            str(tmp_path / "part.srt"))
    assert code == 0, err
    srt = (tmp_path / "part.srt").read_text(encoding="utf-8")
    cues = _cue_times(srt, ",")
    assert len(cues) == 3 and all(sentence in srt for sentence in (FIRST, SECOND, THIRD))
    assert cues[0][0] == 0.0 and all(a[1] == b[0] for a, b in zip(cues, cues[1:]))  # contiguous
    files = sorted(tmp_path.glob("part-*.mp3"))
    assert [f.name for f in files] == ["part-01.mp3", "part-02.mp3", "part-03.mp3"]
    total = 0
    for file, (start, end) in zip(files, cues):
        audio, rate = sf.read(file, dtype="float32")
        assert rate == 24000 and len(audio) / rate == pytest.approx(end - start, abs=0.0011)
        total += len(audio)
    assert cues[-1][1] == pytest.approx(total / 24000, abs=0.0011)  # the cues add up to the audio's length


def test_by_sentence_gives_one_cue_per_sentence_where_the_default_packs_them(say, tmp_path):
    """The default keeps the official packing (these four short sentences are one segment, one cue, and the
    message says so); --by-sentence reads as the app does: a cue per sentence, "Yes." merged into the next."""
    text = "Hello there, my friend. How are you today? Yes. I am fine, thank you."
    code, stdout, err = say(text, "--subtitles", str(tmp_path / "packed.srt"))
    assert code == 0, err
    assert len(_cue_times((tmp_path / "packed.srt").read_text(encoding="utf-8"), ",")) == 1
    assert "(1 cue, one per synthesis segment; --by-sentence gives one per sentence)" in stdout
    code, stdout, err = say(text, "--subtitles", str(tmp_path / "each.vtt"), "--by-sentence")
    assert code == 0, err
    vtt = (tmp_path / "each.vtt").read_text(encoding="utf-8")
    cues = re.findall(r"--> \S+\n(.+)\n", vtt)
    assert cues == ["Hello there, my friend.", "How are you today?", "Yes. I am fine, thank you."]
    assert "(3 cues, one per sentence)" in stdout


@pytest.mark.parametrize("args, message", [
    (["-o", "x.aiff"], "must end in .wav, .flac, .mp3, .opus, .ogg"),
    (["--subtitles", "x.txt"], "subtitle file x.txt must end in .srt or .vtt"),
    (["--each-sentence"], "--each-sentence needs -o FILE"),
    (["-o", "x.mp3", "--float-wav"], "--float-wav writes .wav files only"),
])
def test_bad_export_arguments_are_one_line(say, tmp_path, monkeypatch, args, message):
    monkeypatch.chdir(tmp_path)
    code, _, err = say("你好。", *args)
    assert code == 2 and err.strip().startswith("cosydesk: error:") and message in err
    assert list(tmp_path.iterdir()) == []
