"""Reading the text to speak from a file (CLI --text-file, the app's Open text… and dropped files)."""

from __future__ import annotations

import pytest

from cosydesk.frontend.text_file import TextFileError, decode_text, read_text_file

CHINESE = "从前有座山，山里有座庙。庙里有个老和尚在给小和尚讲故事。Once upon a time.\n"


@pytest.mark.parametrize("encoding", ["utf-8", "utf-8-sig", "utf-16", "utf-16-be-marked", "gbk", "gb18030"])
def test_common_encodings_of_a_chinese_text_read_back_exactly(tmp_path, encoding):
    """UTF-8 with or without a byte-order mark, Notepad's UTF-16 (marked, either byte order), and GBK / GB18030,
    the "ANSI" of Chinese Windows: the same characters come back, without a mark in front."""
    if encoding == "utf-16-be-marked":
        data = b"\xfe\xff" + CHINESE.encode("utf-16-be")
    else:
        data = CHINESE.encode(encoding)
    path = tmp_path / "story.txt"
    path.write_bytes(data)
    assert read_text_file(path) == CHINESE


def test_a_few_bad_bytes_in_utf8_become_replacement_characters():
    """A UTF-8 file with a few broken bytes stays UTF-8 (one U+FFFD per bad byte), even where those bytes happen
    to be valid GB18030 pairs, instead of turning the whole text into GB18030 look-alikes."""
    data = CHINESE.encode() + b"\xc3\xa9\xb2"[1:] + CHINESE.encode()  # a lone continuation byte pair
    text = decode_text(data)
    assert text.count("\ufffd") == 2 and text.replace("\ufffd", "") == CHINESE * 2
    assert decode_text("今天天气很好。".encode() + b"\xff\xfe broken \xc3 bytes.\n") == \
        "今天天气很好。\ufffd\ufffd broken \ufffd bytes.\n"


def test_binary_files_are_refused_with_their_name(tmp_path):
    for name, data in (("photo.png", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"), ("utf16.txt", "hello".encode("utf-16-le"))):
        (tmp_path / name).write_bytes(data)
        with pytest.raises(TextFileError, match=f"{name} does not look like a text file"):
            read_text_file(tmp_path / name)


def test_missing_and_oversized_files_say_why(tmp_path):
    with pytest.raises(TextFileError, match="cannot read .*missing.txt"):
        read_text_file(tmp_path / "missing.txt")
    (tmp_path / "big.txt").write_text("x" * 100)
    with pytest.raises(TextFileError, match="big.txt is 100 bytes, more than the 10"):
        read_text_file(tmp_path / "big.txt", max_bytes=10)
    assert read_text_file(tmp_path / "big.txt", max_bytes=100) == "x" * 100


# ------------------------------------------------------------------ non-regular files never block (issue 31)
def test_a_fifo_is_refused_at_once_without_blocking(tmp_path):
    import os
    import threading

    from cosydesk.frontend.text_file import TextFileError, read_text_file

    fifo = tmp_path / "pipe.txt"
    os.mkfifo(fifo)
    box = {}
    reader = threading.Thread(target=lambda: box.setdefault("error", _error_of(read_text_file, fifo)), daemon=True)
    reader.start()
    reader.join(10)
    assert not reader.is_alive(), "reading a FIFO blocked"
    assert isinstance(box["error"], TextFileError) and "not a regular file" in str(box["error"])


def test_a_device_is_refused_instead_of_read_forever():
    from cosydesk.frontend.text_file import TextFileError, read_text_file

    import pytest

    with pytest.raises(TextFileError, match="not a regular file"):
        read_text_file("/dev/zero", max_bytes=1 << 20)


def _error_of(function, *args):
    try:
        function(*args)
    except Exception as error:  # noqa: BLE001 - returned for the assertion
        return error
    return None
