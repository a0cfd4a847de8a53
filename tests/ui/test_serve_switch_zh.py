"""D15 for the "Serve other apps" switch: why the in-app server could not start reads in Chinese, whole, when the
UI language is zh_CN (found driving the app on Xvfb: an open address without a key came out as "地址 0.0.0.0
would let other machines use this server without a key: add API 密钥 …", and an address this computer does not
have kept the operating system's "Cannot assign requested address" with a hint about another program on the
port). The real switch, its real bind on the loopback machine, the window's message line."""

from __future__ import annotations

import re
import socket

import pytest

from cosydesk.settings import Key
from cosydesk.ui.desktop import DesktopIntegration
from tests.ui.fake_synth import factory as fake_factory
from tests.ui.helpers import make_window

# what may stay Latin in the Chinese line: names, an address, the environment variable, the product
KEPT = re.compile(r"COSYDESK_API_KEY|CosyDesk|API|[\w.:-]*\d+\.\d+\.\d+\.\d+(:\d+)?|nosuchhost\.invalid(:\d+)?")


def english_left(text: str) -> list[str]:
    return re.findall(r"[A-Za-z]{2,}", KEPT.sub(" ", text))


@pytest.fixture
def zh_switch(qtbot, data_dir, fake_model_dir):
    window = make_window(qtbot, data_dir, fake_factory(), model_dir=fake_model_dir)
    integration = DesktopIntegration(window)
    window.set_language("zh_CN")
    yield window, integration.serve
    window.set_language("en")
    window.close()


def _fails_with(qtbot, window, switch) -> str:
    with qtbot.waitSignal(switch.failed, timeout=30000):
        switch.set_enabled(True)
    qtbot.waitUntil(lambda: window.error_label.text() != "", timeout=5000)
    assert not switch.action.isChecked() and switch.state == "off"
    return window.error_label.text()


def test_open_address_without_key_is_one_chinese_sentence(qtbot, zh_switch):
    window, switch = zh_switch
    window.settings.set(Key.SERVE_HOST, "0.0.0.0")
    shown = _fails_with(qtbot, window, switch)
    assert shown == ("为其他应用提供服务：地址 0.0.0.0 会让其他电脑无需密钥即可使用此服务：请在“首选项 > 本地 API”中"
                     "设置 API 密钥（或设置 COSYDESK_API_KEY），或保留地址 127.0.0.1")
    window.set_language("en")
    window.show_message("", False)
    assert "would let other computers use this server without a key" in _fails_with(qtbot, window, switch)


def test_an_address_this_computer_lacks_is_chinese_and_says_so(qtbot, zh_switch):
    window, switch = zh_switch
    window.settings.set(Key.SERVE_HOST, "192.0.2.1")  # TEST-NET-1: never an address of this machine
    window.settings.set(Key.SERVE_API_KEY, "secret")
    window.settings.set(Key.SERVE_PORT, 0)
    shown = _fails_with(qtbot, window, switch)
    assert shown.startswith("为其他应用提供服务：无法监听 192.0.2.1:0：无法使用所请求的地址")
    assert "地址必须是这台电脑自己的地址" in shown and "占用" not in shown
    assert english_left(shown) == []


def test_a_name_that_does_not_resolve_is_chinese(qtbot, zh_switch, monkeypatch):
    from cosydesk.serve import runner

    def unresolved(host, port):
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(runner, "bind_socket", unresolved)  # no name lookup from a test
    window, switch = zh_switch
    window.settings.set(Key.SERVE_HOST, "nosuchhost.invalid")
    window.settings.set(Key.SERVE_API_KEY, "secret")
    shown = _fails_with(qtbot, window, switch)
    assert "无法监听 nosuchhost.invalid:" in shown and "未知的名称或服务" in shown
    assert english_left(shown) == []


def test_a_busy_port_keeps_its_hint_in_chinese(qtbot, zh_switch):
    window, switch = zh_switch
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen(1)
    try:
        window.settings.set(Key.SERVE_PORT, taken.getsockname()[1])
        shown = _fails_with(qtbot, window, switch)
    finally:
        taken.close()
    assert "地址已被占用" in shown and "请换一个端口" in shown
    assert english_left(shown.replace("cosydesk serve", "")) == []
