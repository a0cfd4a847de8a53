"""State files in the data folder are untrusted input (issue 31, security and data loss first).

A damaged, hand-edited or hostile history index, voice profile, settings value or draft must leave the app
starting, skip the bad entry and say so, keep the good ones, and never read or delete a file outside the
state's own folder. Two app instances on one data folder lose no history entry. Leftover temporaries of a
killed write are swept at start (only CosyDesk's own names, only old ones). Cases: tests/data/bad_state_files.json.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from cosydesk.audio.profiles import VoiceProfileStore
from cosydesk.ui.history import HistoryStore
from tests.support.paths import REPO_ROOT, load_test_data

CORPUS = load_test_data("bad_state_files.json")
INDEX_CASES = {case["id"]: case for case in CORPUS["history_index_cases"]}
ESCAPE_CASES = {case["id"]: case for case in CORPUS["history_escape_cases"]}
PROFILE_CASES = {case["id"]: case for case in CORPUS["profile_cases"]}
SETTINGS_CASES = {case["id"]: case for case in CORPUS["settings_cases"]}
GOOD = CORPUS["good_history_entry"]
PCM = (0.1 * np.sin(np.arange(2400) / 10)).astype(np.float32)


def write_wav(path: Path) -> Path:
    import soundfile as sf

    sf.write(path, PCM, 24000, subtype="FLOAT")
    return path


def body(case: dict) -> bytes:
    """The bytes a case describes (raw text, hex, JSON entries, or a repeated unit)."""
    if "raw_hex" in case:
        return bytes.fromhex(case["raw_hex"])
    if "repeat" in case:
        return (case["repeat"]["unit"] * case["repeat"]["count"]).encode()
    if "raw_template" in case:
        bad_nan = json.dumps({**GOOD, "id": "nan", "duration_s": "NAN"}).replace('"NAN"', "NaN")
        return case["raw_template"].replace("GOOD", json.dumps(GOOD)).replace("BAD_NAN", bad_nan).encode()
    if "entries" in case:
        return json.dumps(case["entries"]).encode()
    if "profile" in case:
        return json.dumps(case["profile"]).encode()
    return case["raw"].encode()


@pytest.fixture
def history_dir(tmp_path) -> Path:
    folder = tmp_path / "data" / "history"
    folder.mkdir(parents=True)
    write_wav(folder / GOOD["file"])
    return folder


# ------------------------------------------------------------------------------------------ history index
@pytest.mark.parametrize("case_id", list(INDEX_CASES))
def test_bad_history_index_is_skipped_and_reported(case_id, history_dir):
    case = INDEX_CASES[case_id]
    index = history_dir / "index.json"
    if "sparse_bytes" in case:
        with index.open("wb") as handle:
            handle.truncate(case["sparse_bytes"])
    else:
        index.write_bytes(body(case))
    store = HistoryStore(history_dir)
    assert len(store.entries()) == case["kept"], store.problems
    assert store.problems and any(case["message"].lower() in p.lower() for p in store.problems), store.problems
    assert all("\n" not in p for p in store.problems)
    # the store works on: a new utterance is kept next to the good entries, and survives a restart
    store.add("新的一句。", PCM, 24000)
    assert len(HistoryStore(history_dir).entries()) == case["kept"] + 1


def _victim(tmp_path: Path) -> Path:
    documents = tmp_path / "Documents"
    documents.mkdir()
    return write_wav(documents / "thesis.wav")


def _escape_entry(case: dict, history_dir: Path, victim: Path) -> dict:
    file = case["file"].format(victim_relative=os.path.relpath(victim, history_dir), victim_absolute=str(victim),
                               victim_name=victim.name)
    if case.get("symlink_to_victim"):
        (history_dir / file).symlink_to(victim)
    if file.startswith("sub/"):
        (history_dir / "sub").mkdir()
        write_wav(history_dir / file)
    return {**GOOD, "id": f"escape-{case['id']}", "file": file}


@pytest.mark.parametrize("case_id", list(ESCAPE_CASES))
def test_no_index_entry_reads_or_deletes_outside_the_history(case_id, history_dir, tmp_path):
    """`"file": "../../Documents/x"`: neither History > Delete, nor Clear, nor the cap's pruning, nor replay may
    touch it (before: Delete removed the user's file, and the 501st utterance removed it with no click)."""
    victim = _victim(tmp_path)
    escape = _escape_entry(ESCAPE_CASES[case_id], history_dir, victim)
    (history_dir / "index.json").write_text(json.dumps([escape, GOOD]), encoding="utf-8")
    store = HistoryStore(history_dir, max_entries=2)
    listed = [e.id for e in store.entries()]
    try:
        store.audio(escape["id"])
        read_outside = True
    except (KeyError, OSError):
        read_outside = False
    store.delete(escape["id"])  # History > Delete on it (as far as the panel could offer it)
    for _ in range(3):  # past the cap: pruning runs each time
        store.add("再来一句。", PCM, 24000)
    store.clear()
    assert victim.is_file() and victim.read_bytes()[:4] == b"RIFF", "a file outside the history folder was removed"
    if case_id == "sub_folder":
        assert (history_dir / "sub" / victim.name).is_file()
    assert not read_outside, "replay read a file outside the history folder"
    assert listed == [GOOD["id"]] and any("skipped" in p for p in store.problems), (listed, store.problems)


def test_pruning_never_follows_an_entry_out_even_if_it_got_in(history_dir, tmp_path):
    """Defence in depth: an entry that reached the store's list some other way is still pruned safely."""
    from cosydesk.ui.history import HistoryEntry

    victim = _victim(tmp_path)
    store = HistoryStore(history_dir, max_entries=1)
    store._entries.insert(0, HistoryEntry(**{**GOOD, "id": "x", "file": os.path.relpath(victim, history_dir)}))
    store._remove_audio(store._entries[0])
    assert victim.is_file()


def test_a_file_where_the_history_folder_should_be(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "history").write_text("not a folder")
    store = HistoryStore(data / "history")
    assert store.entries() == [] and "not a folder" in store.problems[0]
    assert store.add("你好。", PCM, 24000) and len(HistoryStore(data / "history").entries()) == 1
    assert [p.read_text() for p in data.glob("history.not-a-folder-*")] == ["not a folder"]  # kept, not lost


# ------------------------------------------------------------------------------------------ voice profiles
def _profile_folder(root: Path, name: str) -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    write_wav(folder / "prompt.wav")
    return folder


@pytest.mark.parametrize("case_id", list(PROFILE_CASES))
def test_bad_voice_profile_is_skipped_and_reported(case_id, tmp_path):
    case = PROFILE_CASES[case_id]
    root = tmp_path / "voices"
    good = _profile_folder(root, "good")
    (good / "profile.json").write_text(json.dumps({"name": "good", "transcript": "提示。", "sample_rate": 24000,
                                                   "duration_s": 0.1, "created": 1.0}), encoding="utf-8")
    bad = _profile_folder(root, "bad")
    if case.get("fifo"):
        os.mkfifo(bad / "profile.json")
    else:
        (bad / "profile.json").write_bytes(body(case))
    store = VoiceProfileStore(root)
    assert [p.name for p in store.list()] == ["good"]
    assert any(case["message"].lower() in p.lower() for p in store.problems), store.problems


def test_voice_profile_folder_linking_out_is_never_read_or_deleted(tmp_path):
    outside = _profile_folder(tmp_path / "elsewhere", "mine")
    (outside / "profile.json").write_text(json.dumps({"name": "mine", "transcript": "提示。", "sample_rate": 24000,
                                                      "duration_s": 0.1, "created": 1.0}), encoding="utf-8")
    root = tmp_path / "voices"
    root.mkdir()
    (root / "mine").symlink_to(outside, target_is_directory=True)
    store = VoiceProfileStore(root)
    assert store.names() == [] and not store.delete("mine")
    assert (outside / "prompt.wav").is_file() and (outside / "profile.json").is_file()


def test_a_file_where_the_voices_folder_should_be(tmp_path):
    (tmp_path / "voices").write_text("oops")
    store = VoiceProfileStore(tmp_path / "voices")
    assert store.list() == [] and "not a folder" in store.problems[0]
    rate = 16000
    t = np.arange(4 * rate) / rate
    voiced = (0.3 * np.sin(2 * np.pi * 150 * t) * (0.6 + 0.4 * np.sin(2 * np.pi * 3 * t))).astype(np.float32)
    assert store.add("new voice", voiced, rate, "提示文本。").name == "new voice"


# ------------------------------------------------------------------------------------------ settings
@pytest.mark.parametrize("case_id", list(SETTINGS_CASES))
def test_bad_setting_values_fall_back(case_id, tmp_path):
    from cosydesk.settings import Key, Settings

    case = SETTINGS_CASES[case_id]
    if "repeat" in case:
        value = case["repeat"]["unit"] * case["repeat"]["count"]
    else:
        value = case.get("value") or case["value_template"].replace("LONG", "/x" * 5000)
    settings = Settings.at(tmp_path / "settings.ini")
    settings._q.setValue(case["key"], value)
    settings.sync()
    key = next(k for k in Key if k.value == case["key"])
    assert Settings.at(tmp_path / "settings.ini").get(key) == case["expect"]


def test_known_model_dirs_survives_unusable_extra_dirs(tmp_path):
    from cosydesk.settings import Key, Settings
    from cosydesk.ui.model_manager import known_model_dirs

    settings = Settings.at(tmp_path / "settings.ini")
    settings._q.setValue(Key.EXTRA_MODEL_DIRS.value, json.dumps(["/" + "x" * 300 + "/" + "y" * 300, "/nonexistent"]))
    assert known_model_dirs(settings, tmp_path / "models") == []


# ------------------------------------------------------------------------------------------ draft
def test_fifo_or_device_as_draft_never_blocks(tmp_path):
    from cosydesk.ui.draft import DraftStore

    os.mkfifo(tmp_path / "draft.txt")
    unblocked = threading.Event()

    def unblock_after(seconds: float) -> None:  # if the load blocks on the FIFO, end the test instead of hanging
        time.sleep(seconds)
        if not done.is_set():
            unblocked.set()
            with open(tmp_path / "draft.txt", "wb"):
                pass

    done = threading.Event()
    threading.Thread(target=unblock_after, args=(5.0,), daemon=True).start()
    store = DraftStore(tmp_path)
    assert store.load() == ""
    done.set()
    assert not unblocked.is_set(), "loading the draft blocked on a FIFO"
    assert "not a regular file" in store.problems[0]
    assert store.save("新的草稿") and (tmp_path / "draft.txt").read_text(encoding="utf-8") == "新的草稿"
    device = DraftStore(tmp_path / "dev")
    device.path = Path("/dev/zero")  # endless: must not be read at all
    assert device.load() == "" and device.problems


def test_too_large_draft_is_kept_aside_not_replaced(tmp_path):
    from cosydesk.ui import draft as draft_module

    (tmp_path / "draft.txt").write_bytes(b"x" * 100)
    store = draft_module.DraftStore(tmp_path)
    original = draft_module.DRAFT_MAX_BYTES
    draft_module.DRAFT_MAX_BYTES = 10
    try:
        assert store.load() == ""
    finally:
        draft_module.DRAFT_MAX_BYTES = original
    assert store.save("")  # the empty editor does not remove what was not loaded
    assert [p.read_bytes() for p in tmp_path.glob("draft.not-loaded-*.txt")] == [b"x" * 100]


# ------------------------------------------------------------------------------------------ the app starts
def test_the_app_starts_with_every_bad_state_file_at_once(qtbot, tmp_path, monkeypatch):
    """Bad index entries, profiles named by numbers, nested-JSON settings, a FIFO draft: the window opens, the
    history panel says what was skipped."""
    from cosydesk.settings import Key, Settings
    from tests.ui.fake_synth import factory
    from tests.ui.helpers import make_window

    data = tmp_path / "userdata"
    (data / "history").mkdir(parents=True)
    monkeypatch.setenv("COSYDESK_DATA_DIR", str(data))
    monkeypatch.setenv("COSYDESK_MODELS_DIR", str(tmp_path / "models"))
    write_wav(data / "history" / GOOD["file"])
    (data / "history" / "index.json").write_bytes(body(INDEX_CASES["entry_types"]))
    for case_id in ("name_is_a_number", "deeply_nested"):
        folder = _profile_folder(data / "voices", case_id)
        (folder / "profile.json").write_bytes(body(PROFILE_CASES[case_id]))
    settings = Settings.at(data / "settings.ini")
    settings._q.setValue(Key.EXTRA_MODEL_DIRS.value, "[5, null, " + "[" * 50000)
    settings._q.setValue(Key.RECENT_TEXT_FILES.value, "[1, {}, \"a\\u0000b\"]")
    settings._q.setValue(Key.SPEED.value, "nan")
    settings.sync()
    os.mkfifo(data / "draft.txt")
    done = threading.Event()

    def unblock_after(seconds: float) -> None:
        time.sleep(seconds)
        if not done.is_set():
            with open(data / "draft.txt", "wb"):
                pass

    threading.Thread(target=unblock_after, args=(10.0,), daemon=True).start()
    start = time.perf_counter()
    window = make_window(qtbot, data, factory())
    done.set()
    assert time.perf_counter() - start < 10.0, "the start waited on the FIFO draft"
    assert window.text_edit.toPlainText() == ""
    assert [e.id for e in window.history.entries()] == [GOOD["id"]]
    assert window.history_panel.problems_label.isVisibleTo(window.history_panel)
    assert "skipped" in window.history_panel.problems_label.text()
    assert window.voices.list() == [] and len(window.voices.problems) == 2
    window.shutdown()


# ------------------------------------------------------------------------------------------ two instances
def test_two_stores_on_one_folder_lose_no_entry(tmp_path):
    """Two app instances write alternately (each with its own view loaded at start); a restart sees all six."""
    folder = tmp_path / "history"
    first, second = HistoryStore(folder), HistoryStore(folder)
    written = []
    for turn in range(3):
        written.append(first.add(f"first {turn}", PCM, 24000).id)
        written.append(second.add(f"second {turn}", PCM, 24000).id)
    assert sorted(e.id for e in HistoryStore(folder).entries()) == sorted(written)
    # each instance sees the other's entries, and a delete in one is not undone by the other's next write
    assert len(first.entries()) == 6
    assert first.delete(written[1])
    second.add("second 3", PCM, 24000)
    assert written[1] not in {e.id for e in HistoryStore(folder).entries()}
    assert len(HistoryStore(folder).entries()) == 6


WRITER = """
import sys, time, numpy as np
from cosydesk.ui.history import HistoryStore
store = HistoryStore(sys.argv[1])
while time.time() < float(sys.argv[4]):  # both processes start writing together
    time.sleep(0.001)
for i in range(int(sys.argv[3])):
    store.add(f"{sys.argv[2]} {i}", np.zeros(480, dtype=np.float32) + 0.1, 24000)
    time.sleep(0.003)
"""


def test_two_processes_adding_at_once_lose_no_entry(tmp_path):
    """Issue 31: two app instances on one data folder, 3 of 6 utterances gone after a restart."""
    folder = tmp_path / "history"
    folder.mkdir()
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    start_at = str(time.time() + 4.0)  # after both have imported numpy and opened the store
    writers = [subprocess.Popen([sys.executable, "-c", WRITER, str(folder), name, "40", start_at], env=env,
                                cwd=REPO_ROOT) for name in ("A", "B")]
    assert [w.wait(timeout=120) for w in writers] == [0, 0]
    texts = {e.text for e in HistoryStore(folder).entries()}
    assert texts == {f"{name} {i}" for name in "AB" for i in range(40)}, f"{80 - len(texts)} entries vanished"


# ------------------------------------------------------------------------------------------ leftovers
def test_leftover_temporaries_are_swept_at_start_only_ours_only_old(tmp_path):
    from cosydesk.ui.draft import DraftStore

    data = tmp_path / "data"
    history = data / "history"
    voice = data / "voices" / "v"
    for folder in (history, voice):
        folder.mkdir(parents=True)
    old = time.time() - 3600
    ours_old = [history / ".20260101-120000-abcdef.k2j4h5g6.wav.part", history / ".index.json.a1b2c3d4.tmp",
                voice / ".prompt.zz_9y8x7.wav.part", data / ".draft.txt.0f1e2d3c.tmp"]
    ours_young = [history / ".20260101-120001-abcdef.q1w2e3r4.wav.part"]
    not_ours = [history / ".hidden.part", history / "notes.tmp", history / ".x.toolongrandom.wav.part",
                data / ".settings.ini.lock", data / "keep.wav.part"]
    for path in ours_old + ours_young + not_ours:
        path.write_bytes(b"partial")
    for path in ours_old + not_ours:
        os.utime(path, (old, old))
    HistoryStore(history)
    VoiceProfileStore(data / "voices")
    DraftStore(data).load()
    assert [p for p in ours_old if p.exists()] == []
    assert all(p.exists() for p in ours_young + not_ours)


def test_export_sweeps_only_its_own_old_temporaries(tmp_path):
    """In a user's folder only the exact temporaries of the file being exported are removed."""
    from cosydesk.audio.export import write_audio

    old = time.time() - 3600
    mine = tmp_path / ".speech.abcd1234.wav.part"
    others = [tmp_path / ".other.abcd1234.wav.part", tmp_path / ".speech.abcd1234.flac.part",
              tmp_path / ".speech.abcd1234.tmp", tmp_path / "speech.wav.part"]
    young = tmp_path / ".speech.efgh5678.wav.part"
    for path in [mine, young, *others]:
        path.write_bytes(b"partial")
        if path is not young:
            os.utime(path, (old, old))
    write_audio(tmp_path / "speech.wav", PCM, 24000)
    assert not mine.exists() and young.exists() and all(p.exists() for p in others)
