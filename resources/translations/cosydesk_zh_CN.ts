<?xml version='1.0' encoding='utf-8'?>
<TS version="2.1" language="zh_CN">
<context>
    <name>AboutDialog</name>
    <message>
        <source>About CosyDesk</source>
        <translation>关于 CosyDesk</translation>
    </message>
    <message>
        <source>Version</source>
        <translation>版本</translation>
    </message>
    <message>
        <source>Runs on</source>
        <translation>运行环境</translation>
    </message>
    <message>
        <source>Data folder</source>
        <translation>数据文件夹</translation>
    </message>
    <message>
        <source>Models folder</source>
        <translation>模型文件夹</translation>
    </message>
    <message>
        <source>Local, real-time CosyVoice speech synthesis on your own GPU.</source>
        <translation>在你自己的显卡上本地、实时地运行 CosyVoice 语音合成。</translation>
    </message>
    <message>
        <source>CosyDesk is licensed under Apache-2.0. The CosyVoice models are by FunAudioLLM (Alibaba Tongyi Lab), under the licences their model cards state.</source>
        <translation>CosyDesk 以 Apache-2.0 许可发布。CosyVoice 模型由 FunAudioLLM（阿里巴巴通义实验室）提供，许可以各模型卡为准。</translation>
    </message>
    <message>
        <source>Open data folder</source>
        <translation>打开数据文件夹</translation>
    </message>
    <message>
        <source>No file manager could open {path}; copy the path above.</source>
        <translation>没有文件管理器能打开 {path}；请复制上面的路径。</translation>
    </message>
</context>
<context>
    <name>DiagnosticsDialog</name>
    <message>
        <source>Diagnostics</source>
        <translation>诊断</translation>
    </message>
    <message>
        <source>Checking the GPU, TensorRT, audio, fonts and models…</source>
        <translation>正在检查显卡、TensorRT、音频、字体和模型…</translation>
    </message>
</context>
<context>
    <name>HistoryPanel</name>
    <message>
        <source>Replay</source>
        <translation>重播</translation>
    </message>
    <message>
        <source>Export…</source>
        <translation>导出…</translation>
    </message>
    <message>
        <source>Delete</source>
        <translation>删除</translation>
    </message>
    <message>
        <source>{voice} · {duration} s · first audio {latency} · RTF {rtf}</source>
        <translation>{voice} · {duration} 秒 · 首音 {latency} · RTF {rtf}</translation>
    </message>
    <message>
        <source>Export audio</source>
        <translation>导出音频</translation>
    </message>
    <message>
        <source>WAV audio (*.wav);;FLAC audio (*.flac)</source>
        <translation>WAV 音频 (*.wav);;FLAC 音频 (*.flac)</translation>
    </message>
    <message>
        <source>Saved {path}</source>
        <translation>已保存 {path}</translation>
    </message>
</context>
<context>
    <name>MainWindow</name>
    <message>
        <source>Audio: {m}</source>
        <translation>音频：{m}</translation>
    </message>
    <message>
        <source>Model</source>
        <translation>模型</translation>
    </message>
    <message>
        <source>Models…</source>
        <translation>模型管理…</translation>
    </message>
    <message>
        <source>Voice</source>
        <translation>声音</translation>
    </message>
    <message>
        <source>New voice…</source>
        <translation>新建声音…</translation>
    </message>
    <message>
        <source>Style</source>
        <translation>风格</translation>
    </message>
    <message>
        <source>Speed</source>
        <translation>语速</translation>
    </message>
    <message>
        <source>Type or paste Chinese or English text, then press Ctrl+Enter.</source>
        <translation>输入或粘贴中文或英文文本，然后按 Ctrl+Enter。</translation>
    </message>
    <message>
        <source>Speak</source>
        <translation>朗读</translation>
    </message>
    <message>
        <source>starting</source>
        <translation>正在开始</translation>
    </message>
    <message>
        <source>Loading {model}: {stage}… {p}%</source>
        <translation>正在加载 {model}：{stage}… {p}%</translation>
    </message>
    <message>
        <source>Loading {model}: {stage}…</source>
        <translation>正在加载 {model}：{stage}…</translation>
    </message>
    <message>
        <source>Speak the selection or the whole text (Ctrl+Enter)</source>
        <translation>朗读选中的文字或全部文本（Ctrl+Enter）</translation>
    </message>
    <message>
        <source>Speak is available once the model has loaded</source>
        <translation>模型加载完成后即可朗读</translation>
    </message>
    <message>
        <source>Load a model first: pick one in the model list or with “Models…”</source>
        <translation>请先加载模型：在模型列表中选择，或点击“模型管理…”</translation>
    </message>
    <message>
        <source>Local speech synthesis</source>
        <translation>本地语音合成</translation>
    </message>
    <message>
        <source>Stop</source>
        <translation>停止</translation>
    </message>
    <message>
        <source>Stop (Esc)</source>
        <translation>停止（Esc）</translation>
    </message>
    <message>
        <source>Pause or resume playback (Pause key)</source>
        <translation>暂停或继续播放（Pause 键）</translation>
    </message>
    <message>
        <source>Pause</source>
        <translation>暂停</translation>
    </message>
    <message>
        <source>Export WAV…</source>
        <translation>导出 WAV…</translation>
    </message>
    <message>
        <source>History</source>
        <translation>历史记录</translation>
    </message>
    <message>
        <source>&amp;File</source>
        <translation>文件(&amp;F)</translation>
    </message>
    <message>
        <source>Open text…</source>
        <translation>打开文本…</translation>
    </message>
    <message>
        <source>Export current utterance…</source>
        <translation>导出当前语音…</translation>
    </message>
    <message>
        <source>Quit</source>
        <translation>退出</translation>
    </message>
    <message>
        <source>&amp;Settings</source>
        <translation>设置(&amp;S)</translation>
    </message>
    <message>
        <source>Language</source>
        <translation>界面语言</translation>
    </message>
    <message>
        <source>Follow the system</source>
        <translation>跟随系统</translation>
    </message>
    <message>
        <source>Compute device</source>
        <translation>计算设备</translation>
    </message>
    <message>
        <source>Backend</source>
        <translation>后端</translation>
    </message>
    <message>
        <source>Audio output</source>
        <translation>音频输出</translation>
    </message>
    <message>
        <source>&amp;View</source>
        <translation>视图(&amp;V)</translation>
    </message>
    <message>
        <source>&amp;Help</source>
        <translation>帮助(&amp;H)</translation>
    </message>
    <message>
        <source>Diagnostics…</source>
        <translation>诊断…</translation>
    </message>
    <message>
        <source>About CosyDesk</source>
        <translation>关于 CosyDesk</translation>
    </message>
    <message>
        <source>Text to speak</source>
        <translation>要朗读的文本</translation>
    </message>
    <message>
        <source>No model installed</source>
        <translation>尚未安装模型</translation>
    </message>
    <message>
        <source>Cannot use {folder}: {problems}</source>
        <translation>无法使用 {folder}：{problems}</translation>
    </message>
    <message>
        <source>Create a voice profile</source>
        <translation>请新建一个声音</translation>
    </message>
    <message>
        <source>(no style)</source>
        <translation>（无风格）</translation>
    </message>
    <message>
        <source>Type something to say first.</source>
        <translation>请先输入要朗读的文字。</translation>
    </message>
    <message>
        <source>No model is loaded: choose or download one with “Models…”.</source>
        <translation>尚未加载模型：请通过“模型管理…”选择或下载一个。</translation>
    </message>
    <message>
        <source>Speaking… first audio after {ms} ms</source>
        <translation>正在朗读… 首音用时 {ms} 毫秒</translation>
    </message>
    <message>
        <source>Could not save to history: {e}</source>
        <translation>无法保存到历史记录：{e}</translation>
    </message>
    <message>
        <source>Open text</source>
        <translation>打开文本</translation>
    </message>
    <message>
        <source>Text files (*.txt);;All files (*)</source>
        <translation>文本文件 (*.txt);;所有文件 (*)</translation>
    </message>
    <message>
        <source>Opened {name}</source>
        <translation>已打开 {name}</translation>
    </message>
    <message>
        <source>Drop one file or folder at a time.</source>
        <translation>请一次只拖入一个文件或文件夹。</translation>
    </message>
    <message>
        <source>Nothing to export yet: speak something first.</source>
        <translation>还没有可导出的语音：请先朗读。</translation>
    </message>
    <message>
        <source>Export audio</source>
        <translation>导出音频</translation>
    </message>
    <message>
        <source>WAV audio (*.wav);;FLAC audio (*.flac)</source>
        <translation>WAV 音频 (*.wav);;FLAC 音频 (*.flac)</translation>
    </message>
    <message>
        <source>Saved {path}</source>
        <translation>已保存 {path}</translation>
    </message>
    <message>
        <source>System default</source>
        <translation>系统默认</translation>
    </message>
    <message>
        <source>No model loaded</source>
        <translation>未加载模型</translation>
    </message>
    <message>
        <source>Warming up…</source>
        <translation>正在预热…</translation>
    </message>
    <message>
        <source>Ready</source>
        <translation>就绪</translation>
    </message>
    <message>
        <source>Speaking…</source>
        <translation>正在朗读…</translation>
    </message>
    <message>
        <source>Model: {name} ({version}, {rate} Hz)</source>
        <translation>模型：{name}（{version}，{rate} Hz）</translation>
    </message>
    <message>
        <source>Device: {d}</source>
        <translation>设备：{d}</translation>
    </message>
    <message>
        <source>Backend: {b}</source>
        <translation>后端：{b}</translation>
    </message>
    <message>
        <source>Resume</source>
        <translation>继续</translation>
    </message>
</context>
<context>
    <name>ModelManagerDialog</name>
    <message>
        <source>Models</source>
        <translation>模型管理</translation>
    </message>
    <message>
        <source>Models are stored in {folder}. {default} is recommended: the lowest streaming latency and voice cloning.</source>
        <translation>模型保存在 {folder}。推荐 {default}：流式延迟最低，并支持声音克隆。</translation>
    </message>
    <message>
        <source>Model</source>
        <translation>模型</translation>
    </message>
    <message>
        <source>Size</source>
        <translation>大小</translation>
    </message>
    <message>
        <source>What it offers</source>
        <translation>功能</translation>
    </message>
    <message>
        <source>Status</source>
        <translation>状态</translation>
    </message>
    <message>
        <source>Download</source>
        <translation>下载</translation>
    </message>
    <message>
        <source>Cancel download</source>
        <translation>取消下载</translation>
    </message>
    <message>
        <source>Use this model</source>
        <translation>使用此模型</translation>
    </message>
    <message>
        <source>Add folder…</source>
        <translation>添加文件夹…</translation>
    </message>
    <message>
        <source>installed</source>
        <translation>已安装</translation>
    </message>
    <message>
        <source>not installed</source>
        <translation>未安装</translation>
    </message>
    <message>
        <source>Choose a CosyVoice model folder</source>
        <translation>选择 CosyVoice 模型文件夹</translation>
    </message>
    <message>
        <source>This folder cannot be used:</source>
        <translation>此文件夹无法使用：</translation>
    </message>
    <message>
        <source>Also missing:</source>
        <translation>另外还缺少：</translation>
    </message>
    <message>
        <source>Added {folder} ({version} model).</source>
        <translation>已添加 {folder}（{version} 模型）。</translation>
    </message>
    <message>
        <source>It works, but:</source>
        <translation>可以使用，但是：</translation>
    </message>
    <message>
        <source>Downloading {name}…</source>
        <translation>正在下载 {name}…</translation>
    </message>
    <message>
        <source>Cancelling… (what was downloaded is kept; downloading again resumes)</source>
        <translation>正在取消…（已下载的部分会保留，再次下载时继续）</translation>
    </message>
    <message>
        <source>Downloaded to {folder}.</source>
        <translation>已下载到 {folder}。</translation>
    </message>
    <message>
        <source>Download cancelled; starting it again resumes where it stopped.</source>
        <translation>下载已取消；再次开始会从中断处继续。</translation>
    </message>
</context>
<context>
    <name>RecentFilesMenu</name>
    <message>
        <source>Open &amp;Recent</source>
        <translation>最近打开(&amp;R)</translation>
    </message>
    <message>
        <source>No recent files</source>
        <translation>没有最近打开的文件</translation>
    </message>
    <message>
        <source>Clear Menu</source>
        <translation>清除列表</translation>
    </message>
</context>
<context>
    <name>TelemetryDock</name>
    <message>
        <source>Telemetry</source>
        <translation>性能监控</translation>
    </message>
    <message>
        <source>First audio (ms) per utterance</source>
        <translation>每句首音延迟（毫秒）</translation>
    </message>
    <message>
        <source>Chunk RTF (below 1 = faster than real time)</source>
        <translation>分块实时率（小于 1 即快于实时）</translation>
    </message>
    <message>
        <source>VRAM (MB), last 60 s</source>
        <translation>显存（MB），最近 60 秒</translation>
    </message>
    <message>
        <source>RAM (MB), last 60 s</source>
        <translation>内存（MB），最近 60 秒</translation>
    </message>
    <message>
        <source>GPU util % · temp °C · power W</source>
        <translation>GPU 利用率 % · 温度 °C · 功耗 W</translation>
    </message>
    <message>
        <source>CPU load (%), last 60 s</source>
        <translation>CPU 负载（%），最近 60 秒</translation>
    </message>
    <message>
        <source>No NVIDIA GPU found: showing CPU and RAM instead.</source>
        <translation>未找到 NVIDIA GPU：改为显示 CPU 和内存。</translation>
    </message>
    <message>
        <source>VRAM {used} / {total} GB · util {util} · {temp} · {power}</source>
        <translation>显存 {used} / {total} GB · 利用率 {util} · {temp} · {power}</translation>
    </message>
    <message>
        <source>torch allocated {a} MB · reserved {r} MB</source>
        <translation>torch 已分配 {a} MB · 已保留 {r} MB</translation>
    </message>
    <message>
        <source>CPU {cpu} · RAM {used} / {total} GB</source>
        <translation>CPU {cpu} · 内存 {used} / {total} GB</translation>
    </message>
    <message>
        <source>last: first audio {ms} ms · RTF {rtf}</source>
        <translation>上一句：首音 {ms} 毫秒 · RTF {rtf}</translation>
    </message>
    <message>
        <source>audio underruns: {n}</source>
        <translation>音频欠载：{n} 次</translation>
    </message>
</context>
<context>
    <name>VoiceProfileDialog</name>
    <message>
        <source>Choose WAV file…</source>
        <translation>选择 WAV 文件…</translation>
    </message>
    <message>
        <source>Record</source>
        <translation>录音</translation>
    </message>
    <message>
        <source>No audio yet.</source>
        <translation>还没有音频。</translation>
    </message>
    <message>
        <source>Type exactly what is said in the recording.</source>
        <translation>请准确输入录音中所说的内容。</translation>
    </message>
    <message>
        <source>Name</source>
        <translation>名称</translation>
    </message>
    <message>
        <source>Audio (3–30 s)</source>
        <translation>音频（3–30 秒）</translation>
    </message>
    <message>
        <source>Transcript</source>
        <translation>文本</translation>
    </message>
    <message>
        <source>New voice profile</source>
        <translation>新建声音</translation>
    </message>
    <message>
        <source>Prompt audio</source>
        <translation>参考音频</translation>
    </message>
    <message>
        <source>Audio (*.wav *.flac *.ogg);;All files (*)</source>
        <translation>音频 (*.wav *.flac *.ogg);;所有文件 (*)</translation>
    </message>
    <message>
        <source>Drop one recording at a time.</source>
        <translation>请一次只拖入一段录音。</translation>
    </message>
    <message>
        <source>{seconds} s at {rate} Hz</source>
        <translation>{seconds} 秒，{rate} Hz</translation>
    </message>
    <message>
        <source>Stop recording</source>
        <translation>停止录音</translation>
    </message>
    <message>
        <source>Recording… {seconds} s</source>
        <translation>正在录音… {seconds} 秒</translation>
    </message>
    <message>
        <source>Choose a WAV file or record your voice first.</source>
        <translation>请先选择 WAV 文件或录一段声音。</translation>
    </message>
</context>
</TS>