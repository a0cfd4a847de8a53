"""Refresh and compile the UI translations (run after changing UI strings).

    python resources/translations/build_translations.py

1. pyside6-lupdate scans cosydesk/ui/*.py for self.tr() strings into cosydesk_zh_CN.ts (the Qt Linguist
   source, which translators can also edit with pyside6-linguist);
2. strings lupdate files under a context no tr() call looks up at run time (`parent.tr(...)` becomes context
   "parent", `tr = self.window.tr` becomes "") move to the classes whose tr() reads them (RUNTIME_CONTEXTS):
   PySide6's tr() tries the class names of the object's MRO, never a variable's name;
3. entries still unfinished are filled from ZH_CN below (the reviewed table lives here, in one place);
4. pyside6-lrelease compiles cosydesk_zh_CN.qm, which the app loads at run time.
Both .ts and .qm are committed, so running the app never needs the Qt tools.
"""

from __future__ import annotations

import copy
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
TS = HERE / "cosydesk_zh_CN.ts"
QM = HERE / "cosydesk_zh_CN.qm"

# lupdate's context (the expression before .tr) -> the classes of the objects that expression holds at run time
RUNTIME_CONTEXTS: dict[str, tuple[str, ...]] = {
    "": ("MainWindow",),                        # reading.py: tr = self.window.tr
    "self.window": ("MainWindow",),             # reading.py
    "window": ("MainWindow",),                  # app.py, desktop.py
    "parent": ("MainWindow", "HistoryPanel"),   # export_actions.py: ask_save_path / write_export(parent, ...)
}
CLASS_NAME = re.compile(r"[A-Z]\w*")

ZH_CN = {
    # tooltips of the main window's controls (tests/ui/test_tooltips.py)
    "Save the current utterance as WAV, FLAC, MP3, Ogg or Opus (Ctrl+S)": "将当前语音保存为 WAV、FLAC、MP3、Ogg 或 Opus（Ctrl+S）",
    "Download, add or remove models": "下载、添加或移除模型",
    "Record or open a short recording to make a voice profile": "录制或打开一段短录音，制作声音",
    "The model that speaks; changing it loads the new one first": "用于朗读的模型；切换时会先加载新模型",
    "Who speaks: a built-in speaker or one of your voice profiles": "由谁朗读：内置说话人或你的声音",
    "Speaking rate: 0.25 to 4 times normal speed": "语速：正常速度的 0.25 到 4 倍",
    "The text to speak; Ctrl+Enter speaks it, Tab moves to the next control":
        "要朗读的文本；Ctrl+Enter 朗读，Tab 移到下一个控件",
    "Show only the utterances whose text, voice, style or model hold every word typed here":
        "只显示文本、声音、风格或模型包含这里输入的每个词的语音",
    "Every utterance spoken: Enter replays, Delete removes (Ctrl+Z brings it back)":
        "朗读过的每段语音：Enter 重放，Delete 删除（Ctrl+Z 可恢复）",
    "Voice recordings up to": "声音录音最长",
    " s": " 秒",
    "New voice profiles stop recording after this long; a shorter clip of one or two sentences clones best (the "
    "models take at most 30 s)": "新声音录到这么长时自动停止；一两句话的短录音克隆效果最好（模型最多接受 30 秒）",
    # Preferences > Local API (ui/serve_preferences.py)
    "Local API": "本地 API",
    "127.0.0.1 serves this computer only; any other address needs an API key":
        "127.0.0.1 只为本机提供服务；其他地址需要 API 密钥",
    "API key": "API 密钥",
    "Address": "地址",
    "Clients send it as 'Authorization: Bearer KEY'; empty: no key":
        "客户端以 'Authorization: Bearer KEY' 发送；留空：不需要密钥",
    "Port": "端口",
    "Serve other apps (OpenAI-compatible /v1/audio/speech)": "为其他应用提供语音（兼容 OpenAI 的 /v1/audio/speech）",
    "The TCP port other programs connect to (base URL http://ADDRESS:PORT/v1)":
        "其他程序连接的 TCP 端口（基础 URL 为 http://ADDRESS:PORT/v1）",
    "Your own speech and other programs' requests take turns on the model loaded here. A new address, port or key "
    "applies the next time the server starts.":
        "你自己的朗读和其他程序的请求轮流使用这里加载的模型。新的地址、端口或密钥在服务器下次启动时生效。",
    # help / diagnostics
    "&Help": "帮助(&H)",
    "Diagnostics…": "诊断…",
    "About CosyDesk": "关于 CosyDesk",
    "Version": "版本",
    "Runs on": "运行环境",
    "Data folder": "数据文件夹",
    "Models folder": "模型文件夹",
    "Local, real-time CosyVoice speech synthesis on your own GPU.": "在你自己的显卡上本地、实时地运行 CosyVoice 语音合成。",
    "CosyDesk is licensed under Apache-2.0. The CosyVoice models are by FunAudioLLM (Alibaba Tongyi Lab), under the licences their model cards state.":
        "CosyDesk 以 Apache-2.0 许可发布。CosyVoice 模型由 FunAudioLLM（阿里巴巴通义实验室）提供，许可以各模型卡为准。",
    "Open data folder": "打开数据文件夹",
    "No file manager could open {path}; copy the path above.": "没有文件管理器能打开 {path}；请复制上面的路径。",
    "Diagnostics": "诊断",
    "Checking the GPU, TensorRT, audio, fonts and models…": "正在检查显卡、TensorRT、音频、字体和模型…",
    # history
    "Replay": "重播",
    "Export…": "导出…",
    "Delete": "删除",
    "{voice} · {duration} s · first audio {latency} · RTF {rtf}": "{voice} · {duration} 秒 · 首音 {latency} · RTF {rtf}",
    "Export audio": "导出音频",
    "WAV audio (*.wav);;FLAC audio (*.flac)": "WAV 音频 (*.wav);;FLAC 音频 (*.flac)",
    "Saved {path}": "已保存 {path}",
    "Open text…": "打开文本…",
    "Open &Recent": "最近打开(&R)",
    "Pause": "暂停",
    "Resume": "继续",
    "Pause or resume playback (Pause key)": "暂停或继续播放（Pause 键）",
    "No recent files": "没有最近打开的文件",
    "Clear Menu": "清除列表",
    "Open text": "打开文本",
    "Text files (*.txt);;All files (*)": "文本文件 (*.txt);;所有文件 (*)",
    "Opened {name}": "已打开 {name}",
    "Drop one file or folder at a time.": "请一次只拖入一个文件或文件夹。",
    "Drop one recording at a time.": "请一次只拖入一段录音。",
    # main window
    "Audio: {m}": "音频：{m}",
    "Local speech synthesis": "本地语音合成",
    "Model": "模型",
    "Models…": "模型管理…",
    "Voice": "声音",
    "New voice…": "新建声音…",
    "Style": "风格",
    "Speed": "语速",
    "Type or paste Chinese or English text, then press Ctrl+Enter.": "输入或粘贴中文或英文文本，然后按 Ctrl+Enter。",
    "Speak": "朗读",
    "Speak the selection or the whole text (Ctrl+Enter)": "朗读选中的文字或全部文本（Ctrl+Enter）",
    "Stop": "停止",
    "Stop (Esc)": "停止（Esc）",
    "Export WAV…": "导出 WAV…",
    "History": "历史记录",
    "&File": "文件(&F)",
    "Export current utterance…": "导出当前语音…",
    "Quit": "退出",
    "&Settings": "设置(&S)",
    "Language": "界面语言",
    "Follow the system": "跟随系统",
    "Compute device": "计算设备",
    "Backend": "后端",
    "Audio output": "音频输出",
    "&View": "视图(&V)",
    "Text to speak": "要朗读的文本",
    "No model installed": "尚未安装模型",
    "Cannot use {folder}: {problems}": "无法使用 {folder}：{problems}",
    "Create a voice profile": "请新建一个声音",
    "Voice profile recorded on this computer": "在本机录制的声音",
    "(no style)": "（无风格）",
    "Type something to say first.": "请先输入要朗读的文字。",
    "No model is loaded: choose or download one with “Models…”.": "尚未加载模型：请通过“模型管理…”选择或下载一个。",
    "Speaking… first audio after {ms} ms": "正在朗读… 首音用时 {ms} 毫秒",
    "Could not save to history: {e}": "无法保存到历史记录：{e}",
    "Nothing to export yet: speak something first.": "还没有可导出的语音：请先朗读。",
    "System default": "系统默认",
    "No model loaded": "未加载模型",
    "starting": "正在开始",
    "Loading {model}: {stage}… {p}%": "正在加载 {model}：{stage}… {p}%",
    "Loading {model}: {stage}…": "正在加载 {model}：{stage}…",
    "Speak is available once the model has loaded": "模型加载完成后即可朗读",
    "Load a model first: pick one in the model list or with “Models…”": "请先加载模型：在模型列表中选择，或点击“模型管理…”",
    "Warming up…": "正在预热…",
    "Ready": "就绪",
    "Speaking…": "正在朗读…",
    "Model: {name} ({version}, {rate} Hz)": "模型：{name}（{version}，{rate} Hz）",
    "Device: {d}": "设备：{d}",
    "Backend: {b}": "后端：{b}",
    # model manager
    "Models": "模型管理",
    "Models are stored in {folder}. {default} is recommended: the lowest streaming latency and voice cloning.":
        "模型保存在 {folder}。推荐 {default}：流式延迟最低，并支持声音克隆。",
    "Size": "大小",
    "What it offers": "功能",
    "Status": "状态",
    "Download": "下载",
    "Cancel download": "取消下载",
    "Use this model": "使用此模型",
    "Add folder…": "添加文件夹…",
    "installed": "已安装",
    "not installed": "未安装",
    "Choose a CosyVoice model folder": "选择 CosyVoice 模型文件夹",
    "This folder cannot be used:": "此文件夹无法使用：",
    "Also missing:": "另外还缺少：",
    "Added {folder} ({version} model).": "已添加 {folder}（{version} 模型）。",
    "It works, but:": "可以使用，但是：",
    "Downloading {name}…": "正在下载 {name}…",
    "Cancelling… (what was downloaded is kept; downloading again resumes)": "正在取消…（已下载的部分会保留，再次下载时继续）",
    "Downloaded to {folder}.": "已下载到 {folder}。",
    "Download cancelled; starting it again resumes where it stopped.": "下载已取消；再次开始会从中断处继续。",
    # telemetry
    "Telemetry": "性能监控",
    "First audio (ms) per utterance": "每句首音延迟（毫秒）",
    "Chunk RTF (below 1 = faster than real time)": "分块实时率（小于 1 即快于实时）",
    "VRAM (MB), last 60 s": "显存（MB），最近 60 秒",
    "RAM (MB), last 60 s": "内存（MB），最近 60 秒",
    "GPU util % · temp °C · power W": "GPU 利用率 % · 温度 °C · 功耗 W",
    "CPU load (%), last 60 s": "CPU 负载（%），最近 60 秒",
    "No NVIDIA GPU found: showing CPU and RAM instead.": "未找到 NVIDIA GPU：改为显示 CPU 和内存。",
    "VRAM {used} / {total} GB · util {util} · {temp} · {power}": "显存 {used} / {total} GB · 利用率 {util} · {temp} · {power}",
    "torch allocated {a} MB · reserved {r} MB": "torch 已分配 {a} MB · 已保留 {r} MB",
    "CPU {cpu} · RAM {used} / {total} GB": "CPU {cpu} · 内存 {used} / {total} GB",
    "last: first audio {ms} ms · RTF {rtf}": "上一句：首音 {ms} 毫秒 · RTF {rtf}",
    "audio underruns: {n}": "音频欠载：{n} 次",
    # voice profile dialog
    "Choose WAV file…": "选择 WAV 文件…",
    "Record": "录音",
    "No audio yet.": "还没有音频。",
    "Type exactly what is said in the recording.": "请准确输入录音中所说的内容。",
    "Name": "名称",
    "Audio (3–30 s)": "音频（3–30 秒）",
    "Transcript": "文本",
    "New voice profile": "新建声音",
    "Prompt audio": "参考音频",
    "Audio (*.wav *.flac *.ogg);;All files (*)": "音频 (*.wav *.flac *.ogg);;所有文件 (*)",
    "{seconds} s at {rate} Hz": "{seconds} 秒，{rate} Hz",
    "Stop recording": "停止录音",
    "Recording… {seconds} s": "正在录音… {seconds} 秒",
    "Choose a WAV file or record your voice first.": "请先选择 WAV 文件或录一段声音。",
    # about / diagnostics (D15-D17)
    "Show the folder with history, voices and models in the file manager": "在文件管理器中显示存放历史记录、声音和模型的文件夹",
    "The diagnostics could not run: {error}": "诊断无法运行：{error}",
    "{ok} passed, {warn} warnings, {fail} failed": "{ok} 项通过，{warn} 项警告，{fail} 项失败",
    "Could not delete from history: {e}": "无法从历史记录中删除：{e}",
    # model manager (D18, D19)
    "Remove from list": "从列表中移除",
    "Catalogue models and the folders you added; select one to use it.": "目录中的模型和你添加的文件夹；选中一个即可使用。",
    "Download the selected catalogue model (resumes where it stopped)": "下载选中的目录模型（从中断处继续）",
    "Stop the download; what was downloaded is kept": "停止下载；已下载的部分会保留",
    "Load the selected model in the main window": "在主窗口中加载选中的模型",
    "Use a CosyVoice model folder you already have": "使用你已有的 CosyVoice 模型文件夹",
    "Take the selected added folder off the list (its files stay on disk)": "把选中的已添加文件夹从列表中移除（文件仍保留在磁盘上）",
    "Added folder ({version} model): {path}": "已添加的文件夹（{version} 模型）：{path}",
    "added": "已添加",
    "cannot be used": "无法使用",
    "Removed {folder} from the list; its files are still on disk.": "已将 {folder} 从列表中移除；文件仍在磁盘上。",
    # preferences
    "Preferences…": "首选项…",
    "Preferences": "首选项",
    "General": "常规",
    "Sound": "声音输出",
    "Engine": "引擎",
    "Export": "导出",
    "Theme": "主题",
    "History keeps": "历史记录保留",
    "Output device": "输出设备",
    "Precision": "精度",
    "Default format": "默认格式",
    "Default folder": "默认文件夹",
    " utterances": " 条",
    "Choose…": "选择…",
    "Your Music folder": "你的“音乐”文件夹",
    "The language of menus, buttons and messages": "菜单、按钮和提示信息所用的语言",
    "Light or dark colours; the system setting follows the desktop": "浅色或深色；“跟随系统”会随桌面设置变化",
    "How many past utterances History keeps; older ones are removed": "历史记录保留多少条语音；更早的会被删除",
    "Where speech is played": "语音从哪里播放",
    "Which part of the computer computes the speech": "由电脑的哪个部件来计算语音",
    "How the model runs on that device": "模型在该设备上的运行方式",
    "Number format of the model's arithmetic": "模型计算所用的数值格式",
    "The format Export offers first": "导出时首先提供的格式",
    "Where Export opens first; empty for your Music folder": "导出时首先打开的文件夹；留空则为“音乐”文件夹",
    "Pick the default export folder": "选择默认导出文件夹",
    "Light": "浅色",
    "Dark": "深色",
    "GPU: {name}": "显卡：{name}",
    "Some choices are unavailable here: {why}.": "部分选项在本机不可用：{why}。",
    "Changing these loads the model again; the model in use keeps speaking until the new one is ready.":
        "更改这些设置会重新加载模型；在新模型就绪之前，当前模型照常朗读。",
    "Automatic": "自动",
    "The NVIDIA GPU when there is one, otherwise the processor.": "有 NVIDIA 显卡时用显卡，否则用处理器。",
    "Processor (CPU)": "处理器（CPU）",
    "Works on every computer; slower than real time for the full-size models.": "任何电脑都能用；完整模型会慢于实时。",
    "NVIDIA GPU": "NVIDIA 显卡",
    "Speech starts in well under a second and runs many times faster than real time.": "不到一秒即开始发声，速度是实时的许多倍。",
    "The fastest path that has been tested on this kind of device.": "在这类设备上经过测试的最快方式。",
    "Plain PyTorch": "普通 PyTorch",
    "The reference path: the same results everywhere, the slowest on a GPU.": "参考实现：各处结果一致，在显卡上最慢。",
    "Fast GPU path": "显卡快速路径",
    "Pre-recorded GPU work (CUDA graphs) with CosyDesk's own kernels.": "预先录制的显卡计算（CUDA 图）加上 CosyDesk 自己的内核。",
    "TensorRT (experimental)": "TensorRT（实验性）",
    "NVIDIA's engine compiler for the flow network; engines are built on first use. Not yet run on a GPU of ours, so Automatic never picks it.":
        "NVIDIA 的引擎编译器，用于 flow 网络；首次使用时构建引擎。尚未在我们的显卡上运行过，因此“自动”从不选择它。",
    "Half precision on the GPU, full precision on the processor.": "显卡上用半精度，处理器上用全精度。",
    "Full precision (32-bit)": "全精度（32 位）",
    "Exact reference numbers; on a GPU it is slower and uses more memory.": "与参考结果完全一致；在显卡上更慢、占用更多显存。",
    "Half precision (16-bit)": "半精度（16 位）",
    "Faster and lighter on a GPU; not used on the processor.": "在显卡上更快、更省显存；处理器上不使用。",
    "needs the NVIDIA GPU as compute device": "需要以 NVIDIA 显卡作为计算设备",
    "no NVIDIA GPU found": "未找到 NVIDIA 显卡",
    "{folder} is not a folder; export keeps its previous default": "{folder} 不是文件夹；导出仍使用之前的默认文件夹",
    "Default export folder": "默认导出文件夹",
    # telemetry (D12)
    "First audio per utterance": "每句首音延迟",
    "ms": "毫秒",
    "Utterance": "语句",
    "Audio underruns per utterance": "每句音频欠载次数",
    "Gaps": "中断",
    "Chunk RTF, last {n} utterances": "分块实时率，最近 {n} 句",
    "RTF": "实时率",
    "Chunk of the utterance": "语句中的分块",
    "VRAM, last 60 s": "显存，最近 60 秒",
    "RAM, last 60 s": "内存，最近 60 秒",
    "MB": "MB",
    "Seconds ago": "秒前",
    "GPU load, last 60 s": "显卡负载，最近 60 秒",
    "CPU load, last 60 s": "CPU 负载，最近 60 秒",
    "% · °C · W": "% · °C · W",
    "%": "%",
    "An underrun is a moment when the sound card asked for audio and none was ready yet: you hear a short gap or click. 0 means the utterance played without gaps; more means synthesis could not keep up with playback (a slower device or a busy computer).":
        "欠载是指声卡需要音频时还没有准备好的数据：你会听到短暂的停顿或咔哒声。0 表示这句播放没有中断；更多则表示合成跟不上播放（设备较慢或电脑繁忙）。",
    "Real-time factor of each audio chunk: computing time divided by the chunk's length. One line per utterance, the newest bold; above the dashed line at 1 synthesis is slower than playback.":
        "每个音频分块的实时率：计算时间除以分块时长。每句一条线，最新的加粗；高于 1 处的虚线表示合成慢于播放。",
    "Time from pressing Speak to the first audio of each utterance.": "从按下“朗读”到每句第一段音频的时间。",
    "Memory in use over the last minute.": "最近一分钟的内存占用。",
    "Processor or GPU load over the last minute.": "最近一分钟的处理器或显卡负载。",
    "Live speed and memory figures; hover a plot for what it shows.": "实时的速度和内存数据；将鼠标悬停在图上可查看说明。",
    "No data yet": "暂无数据",
    "Last: first audio {ms} ms · RTF {rtf} · underruns {n}": "上一句：首音 {ms} 毫秒 · 实时率 {rtf} · 欠载 {n} 次",
    "No utterance yet: press Speak to see its speed here.": "还没有语音：按“朗读”后这里会显示速度。",
    # reading progress / playback menu / buffering
    "Play from cursor": "从光标处播放",
    "Read from the start of the sentence at the text cursor (Ctrl+Shift+Enter)": "从文本光标所在句子的开头朗读（Ctrl+Shift+Enter）",
    "Next sentence": "下一句",
    "Skip to the next sentence (Alt+Right)": "跳到下一句（Alt+→）",
    "Previous sentence": "上一句",
    "Go back to the previous sentence (Alt+Left)": "回到上一句（Alt+←）",
    "Repeat sentence": "重复本句",
    "Hear the current sentence again (Ctrl+R)": "再听一遍当前句子（Ctrl+R）",
    "How far through the text the reading is": "文本已朗读到哪里",
    "Sentence {n} of {total}": "第 {n} 句，共 {total} 句",
    "Sentences {n}–{m} of {total}": "第 {n}–{m} 句，共 {total} 句",
    "&Playback": "播放(&P)",
    "Speak the selection, or the whole text (Ctrl+Enter)": "朗读选中的文字，或全部文本（Ctrl+Enter）",
    "Stop speaking (Esc)": "停止朗读（Esc）",
    "Buffering…": "正在缓冲…",
    # single instance / tray / serve switch
    "&Tools": "工具(&T)",
    "Read clipboard": "朗读剪贴板",
    "The clipboard holds no text to read.": "剪贴板中没有可朗读的文本。",
    "No model is loaded: open CosyDesk and choose one.": "尚未加载模型：请打开 CosyDesk 并选择一个。",
    "Reading: {text}": "正在朗读：{text}",
    "Show CosyDesk": "显示 CosyDesk",
    "Serve other apps": "为其他应用提供服务",
    "Serve other apps: {why}": "为其他应用提供服务：{why}",
    "Let other programs speak through CosyDesk's OpenAI-compatible API (/v1/audio/speech) on the model loaded here":
        "让其他程序通过 CosyDesk 的 OpenAI 兼容 API（/v1/audio/speech）使用这里已加载的模型朗读",
    "port {port} (setting {key}) is not a TCP port (0-65535)": "端口 {port}（设置项 {key}）不是有效的 TCP 端口（0-65535）",
    "address {host} would let other computers use this server without a key: set an API key in Preferences > "
    "Local API (or COSYDESK_API_KEY), or keep the address 127.0.0.1":
        "地址 {host} 会让其他电脑无需密钥即可使用此服务：请在“首选项 > 本地 API”中设置 API 密钥（或设置 "
        "COSYDESK_API_KEY），或保留地址 127.0.0.1",
    "API: 1 request": "API：1 个请求",
    "API: {n} requests": "API：{n} 个请求",
    "API: on {url}": "API：已在 {url} 开启",
    " · last: {client}": " · 最近：{client}",
    "API: starting…": "API：正在启动…",
    "API: stopping…": "API：正在停止…",
    "API: waiting for a model": "API：正在等待模型",
    # history (search, export menu, undo)
    "Search the history (text, voice, style, model)": "搜索历史记录（文本、声音、风格、模型）",
    "Play the selected utterance again (Enter)": "再次播放选中的语音（Enter）",
    "Save the selected utterance's audio; the arrow offers one file per sentence and subtitles":
        "保存选中语音的音频；点箭头可按句分别保存或导出字幕",
    "Audio…": "音频…",
    "One file per sentence…": "每句一个文件…",
    "Subtitles (.srt, .vtt)…": "字幕（.srt、.vtt）…",
    "Remove the selected utterance (Del); Undo brings it back": "删除选中的语音（Del）；可用“撤销”恢复",
    "Undo": "撤销",
    "{seconds} s": "{seconds} 秒",
    "{ms} ms": "{ms} 毫秒",  # the history row's first audio, as the telemetry line writes it
    "first audio {latency}": "首音 {latency}",
    "RTF {rtf}": "实时率 {rtf}",
    "partial (stopped before the end)": "不完整（在结束前停止）",
    "Deleted “{text}”.": "已删除“{text}”。",
    "Could not undo the delete: {e}": "无法撤销删除：{e}",
    # export (per sentence, subtitles, partial)
    "Still synthesising: {name} is saved when it is complete (Stop saves what is ready).":
        "仍在合成：完成后会保存 {name}（按“停止”则保存已合成的部分）。",
    "Nothing was synthesised: {name} was not saved.": "没有合成任何内容：{name} 未保存。",
    "Export one file per sentence…": "按句导出为多个文件…",
    "Export subtitles (.srt, .vtt)…": "导出字幕（.srt、.vtt）…",
    "Export one file per sentence": "按句导出为多个文件",
    "Export subtitles": "导出字幕",
    "Saved subtitles for {n} sentences to {path}": "已将 {n} 句的字幕保存到 {path}",
    "Replace files?": "替换文件？",
    "{n} of the files ({first}, …) exist already. Replace them?": "其中 {n} 个文件（{first}, …）已存在。要替换吗？",
    "Nothing was exported.": "没有导出任何内容。",
    "Saved {n} files, {first} … {last}": "已保存 {n} 个文件：{first} … {last}",
    "Saved {path} (partial: {seconds} s, stopped before the end)": "已保存 {path}（不完整：{seconds} 秒，在结束前停止）",
    # voice manager
    "Voice profiles…": "声音管理…",
    "Voice profiles": "声音管理",
    "Preview": "试听",
    "Play the recording the voice is cloned from (Enter)": "播放用于克隆此声音的录音（Enter）",
    "Rename…": "重命名…",
    "Give the voice another name": "给这个声音换个名字",
    "Re-record…": "重新录制…",
    "Replace the recording and its transcript": "替换录音及其文本",
    "Remove the voice and its recording": "删除这个声音及其录音",
    "New…": "新建…",
    "Add a voice from a recording": "用一段录音添加声音",
    "{name}\n{seconds} s · “{transcript}”": "{name}\n{seconds} 秒 · “{transcript}”",
    "Cannot play {name}: {e}": "无法播放 {name}：{e}",
    "Rename voice": "重命名声音",
    "New name": "新名称",
    "Delete voice": "删除声音",
    "Delete the voice “{name}” and its recording?": "要删除声音“{name}”及其录音吗？",
    "“{name}” could not be deleted.": "无法删除“{name}”。",
    "Re-record “{name}”": "重新录制“{name}”",
    # styles / model bar
    "This model has no styles.": "此模型没有风格可选。",
    "How the voice speaks: pick a preset or type an instruction": "声音的说话方式：选择预设或输入指令",
    "Styles work with a voice profile (your own recording) on this model, not with the built-in voice {name}. Choose a voice profile or create one with “New voice…”.":
        "在此模型上，风格只适用于你自己录制的声音，不适用于内置声音 {name}。请选择一个自己的声音，或用“新建声音…”创建一个。",
    "{reason}. Still using {name} on {device} ({backend}).": "{reason}。仍在 {device}（{backend}）上使用 {name}。",
    "The model folder used last time ({old}) is gone; using {new}.": "上次使用的模型文件夹（{old}）已不存在；改用 {new}。",
}


def _tool(name: str) -> str:
    path = shutil.which(name) or str(Path(sys.executable).parent / name)
    if not Path(path).exists():
        raise SystemExit(f"{name} not found: pip install PySide6-Essentials (it ships the Qt translation tools)")
    return path


def relocate_contexts(root: ET.Element) -> list[str]:
    """Move messages out of contexts that are not class names into RUNTIME_CONTEXTS; returns the unknown ones."""
    contexts = {c.findtext("name") or "": c for c in root.findall("context")}
    unknown = []
    for name, context in list(contexts.items()):
        if CLASS_NAME.fullmatch(name):
            continue
        if name not in RUNTIME_CONTEXTS:
            unknown.append(name)
            continue
        root.remove(context)
        for target in RUNTIME_CONTEXTS[name]:
            if target not in contexts:
                contexts[target] = ET.SubElement(root, "context")
                ET.SubElement(contexts[target], "name").text = target
            have = {m.findtext("source") for m in contexts[target].iter("message")}
            for message in context.findall("message"):
                if message.findtext("source") not in have:
                    contexts[target].append(copy.deepcopy(message))
    return unknown


def main() -> int:
    sources = sorted(str(p) for p in (REPO / "cosydesk" / "ui").glob("*.py"))
    subprocess.run([_tool("pyside6-lupdate"), *sources, "-no-obsolete", "-locations", "none", "-ts", str(TS), "-target-language", "zh_CN"],
                   check=True)
    tree = ET.parse(TS)
    unknown = relocate_contexts(tree.getroot())
    if unknown:
        raise SystemExit(f"tr() calls in contexts {unknown} are never looked up at run time: call self.tr() in the "
                         "QObject subclass that shows the text, or add the context to RUNTIME_CONTEXTS")
    missing = []
    for message in tree.getroot().iter("message"):
        source = message.find("source").text or ""
        translation = message.find("translation")
        if source in ZH_CN:
            translation.text = ZH_CN[source]
            translation.attrib.pop("type", None)
        elif not (translation.text or "").strip():
            missing.append(source)
    tree.write(TS, encoding="utf-8", xml_declaration=True)
    subprocess.run([_tool("pyside6-lrelease"), str(TS), "-qm", str(QM)], check=True)
    for source in missing:
        print(f"untranslated: {source!r}")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
