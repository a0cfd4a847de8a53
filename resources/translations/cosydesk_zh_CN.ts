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
        <source>Show the folder with history, voices and models in the file manager</source>
        <translation>在文件管理器中显示存放历史记录、声音和模型的文件夹</translation>
    </message>
    <message>
        <source>No file manager could open {path}; copy the path above.</source>
        <translation>没有文件管理器能打开 {path}；请复制上面的路径。</translation>
    </message>
</context>
<context>
    <name>DesktopIntegration</name>
    <message>
        <source>Local API</source>
        <translation>本地 API</translation>
    </message>
    <message>
        <source>&amp;Tools</source>
        <translation>工具(&amp;T)</translation>
    </message>
    <message>
        <source>Read clipboard</source>
        <translation>朗读剪贴板</translation>
    </message>
    <message>
        <source>The clipboard holds no text to read.</source>
        <translation>剪贴板中没有可朗读的文本。</translation>
    </message>
    <message>
        <source>No model is loaded: open CosyDesk and choose one.</source>
        <translation>尚未加载模型：请打开 CosyDesk 并选择一个。</translation>
    </message>
    <message>
        <source>Reading: {text}</source>
        <translation>正在朗读：{text}</translation>
    </message>
    <message>
        <source>Serve other apps: {why}</source>
        <translation>为其他应用提供服务：{why}</translation>
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
    <message>
        <source>The diagnostics could not run: {error}</source>
        <translation>诊断无法运行：{error}</translation>
    </message>
    <message>
        <source>{ok} passed, {warn} warnings, {fail} failed</source>
        <translation>{ok} 项通过，{warn} 项警告，{fail} 项失败</translation>
    </message>
</context>
<context>
    <name>FileActions</name>
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
</context>
<context>
    <name>HistoryPanel</name>
    <message>
        <source>Search the history (text, voice, style, model)</source>
        <translation>搜索历史记录（文本、声音、风格、模型）</translation>
    </message>
    <message>
        <source>Show only the utterances whose text, voice, style or model hold every word typed here</source>
        <translation>只显示文本、声音、风格或模型包含这里输入的每个词的语音</translation>
    </message>
    <message>
        <source>Every utterance spoken: Enter replays, Delete removes (Ctrl+Z brings it back)</source>
        <translation>朗读过的每段语音：Enter 重放，Delete 删除（Ctrl+Z 可恢复）</translation>
    </message>
    <message>
        <source>Replay</source>
        <translation>重播</translation>
    </message>
    <message>
        <source>Play the selected utterance again (Enter)</source>
        <translation>再次播放选中的语音（Enter）</translation>
    </message>
    <message>
        <source>Export…</source>
        <translation>导出…</translation>
    </message>
    <message>
        <source>Save the selected utterance's audio; the arrow offers one file per sentence and subtitles</source>
        <translation>保存选中语音的音频；点箭头可按句分别保存或导出字幕</translation>
    </message>
    <message>
        <source>Audio…</source>
        <translation>音频…</translation>
    </message>
    <message>
        <source>One file per sentence…</source>
        <translation>每句一个文件…</translation>
    </message>
    <message>
        <source>Subtitles (.srt, .vtt)…</source>
        <translation>字幕（.srt、.vtt）…</translation>
    </message>
    <message>
        <source>Delete</source>
        <translation>删除</translation>
    </message>
    <message>
        <source>Remove the selected utterance (Del); Undo brings it back</source>
        <translation>删除选中的语音（Del）；可用“撤销”恢复</translation>
    </message>
    <message>
        <source>Undo</source>
        <translation>撤销</translation>
    </message>
    <message>
        <source>{seconds} s</source>
        <translation>{seconds} 秒</translation>
    </message>
    <message>
        <source>{ms} ms</source>
        <translation>{ms} 毫秒</translation>
    </message>
    <message>
        <source>first audio {latency}</source>
        <translation>首音 {latency}</translation>
    </message>
    <message>
        <source>RTF {rtf}</source>
        <translation>实时率 {rtf}</translation>
    </message>
    <message>
        <source>partial (stopped before the end)</source>
        <translation>不完整（在结束前停止）</translation>
    </message>
    <message>
        <source>Deleted “{text}”.</source>
        <translation>已删除“{text}”。</translation>
    </message>
    <message>
        <source>Could not undo the delete: {e}</source>
        <translation>无法撤销删除：{e}</translation>
    </message>
    <message>
        <source>Could not delete from history: {e}</source>
        <translation>无法从历史记录中删除：{e}</translation>
    </message>
<message>
        <source>Export audio</source>
        <translation>导出音频</translation>
    </message>
    <message>
        <source>Export one file per sentence</source>
        <translation>按句导出为多个文件</translation>
    </message>
    <message>
        <source>Export subtitles</source>
        <translation>导出字幕</translation>
    </message>
    <message>
        <source>Saved subtitles for {n} sentences to {path}</source>
        <translation>已将 {n} 句的字幕保存到 {path}</translation>
    </message>
    <message>
        <source>Replace files?</source>
        <translation>替换文件？</translation>
    </message>
    <message>
        <source>{n} of the files ({first}, …) exist already. Replace them?</source>
        <translation>其中 {n} 个文件（{first}, …）已存在。要替换吗？</translation>
    </message>
    <message>
        <source>Nothing was exported.</source>
        <translation>没有导出任何内容。</translation>
    </message>
    <message>
        <source>Saved {n} files, {first} … {last}</source>
        <translation>已保存 {n} 个文件：{first} … {last}</translation>
    </message>
    <message>
        <source>Saved {path} (partial: {seconds} s, stopped before the end)</source>
        <translation>已保存 {path}（不完整：{seconds} 秒，在结束前停止）</translation>
    </message>
    <message>
        <source>Saved {path}</source>
        <translation>已保存 {path}</translation>
    </message>
</context>
<context>
    <name>MainWindow</name>
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
        <source>Play from cursor</source>
        <translation>从光标处播放</translation>
    </message>
    <message>
        <source>Read from the start of the sentence at the text cursor (Ctrl+Shift+Enter)</source>
        <translation>从文本光标所在句子的开头朗读（Ctrl+Shift+Enter）</translation>
    </message>
    <message>
        <source>Next sentence</source>
        <translation>下一句</translation>
    </message>
    <message>
        <source>Skip to the next sentence (Alt+Right)</source>
        <translation>跳到下一句（Alt+→）</translation>
    </message>
    <message>
        <source>Previous sentence</source>
        <translation>上一句</translation>
    </message>
    <message>
        <source>Go back to the previous sentence (Alt+Left)</source>
        <translation>回到上一句（Alt+←）</translation>
    </message>
    <message>
        <source>Repeat sentence</source>
        <translation>重复本句</translation>
    </message>
    <message>
        <source>Hear the current sentence again (Ctrl+R)</source>
        <translation>再听一遍当前句子（Ctrl+R）</translation>
    </message>
    <message>
        <source>How far through the text the reading is</source>
        <translation>文本已朗读到哪里</translation>
    </message>
    <message>
        <source>Sentence {n} of {total}</source>
        <translation>第 {n} 句，共 {total} 句</translation>
    </message>
    <message>
        <source>Sentences {n}–{m} of {total}</source>
        <translation>第 {n}–{m} 句，共 {total} 句</translation>
    </message>
<message>
        <source>Export audio</source>
        <translation>导出音频</translation>
    </message>
    <message>
        <source>Export one file per sentence</source>
        <translation>按句导出为多个文件</translation>
    </message>
    <message>
        <source>Export subtitles</source>
        <translation>导出字幕</translation>
    </message>
    <message>
        <source>Saved subtitles for {n} sentences to {path}</source>
        <translation>已将 {n} 句的字幕保存到 {path}</translation>
    </message>
    <message>
        <source>Replace files?</source>
        <translation>替换文件？</translation>
    </message>
    <message>
        <source>{n} of the files ({first}, …) exist already. Replace them?</source>
        <translation>其中 {n} 个文件（{first}, …）已存在。要替换吗？</translation>
    </message>
    <message>
        <source>Nothing was exported.</source>
        <translation>没有导出任何内容。</translation>
    </message>
    <message>
        <source>Saved {n} files, {first} … {last}</source>
        <translation>已保存 {n} 个文件：{first} … {last}</translation>
    </message>
    <message>
        <source>Saved {path} (partial: {seconds} s, stopped before the end)</source>
        <translation>已保存 {path}（不完整：{seconds} 秒，在结束前停止）</translation>
    </message>
    <message>
        <source>Saved {path}</source>
        <translation>已保存 {path}</translation>
    </message>
<message>
        <source>Buffering…</source>
        <translation>正在缓冲…</translation>
    </message>
<message>
        <source>The model folder used last time ({old}) is gone; using {new}.</source>
        <translation>上次使用的模型文件夹（{old}）已不存在；改用 {new}。</translation>
    </message>
    <message>
        <source>No model is loaded: choose or download one with “Models…”.</source>
        <translation>尚未加载模型：请通过“模型管理…”选择或下载一个。</translation>
    </message>
</context>
<context>
    <name>ModelBar</name>
    <message>
        <source>No model installed</source>
        <translation>尚未安装模型</translation>
    </message>
    <message>
        <source>Cannot use {folder}: {problems}</source>
        <translation>无法使用 {folder}：{problems}</translation>
    </message>
    <message>
        <source>{reason}. Still using {name} on {device} ({backend}).</source>
        <translation>{reason}。仍在 {device}（{backend}）上使用 {name}。</translation>
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
        <source>Remove from list</source>
        <translation>从列表中移除</translation>
    </message>
    <message>
        <source>Catalogue models and the folders you added; select one to use it.</source>
        <translation>目录中的模型和你添加的文件夹；选中一个即可使用。</translation>
    </message>
    <message>
        <source>Download the selected catalogue model (resumes where it stopped)</source>
        <translation>下载选中的目录模型（从中断处继续）</translation>
    </message>
    <message>
        <source>Stop the download; what was downloaded is kept</source>
        <translation>停止下载；已下载的部分会保留</translation>
    </message>
    <message>
        <source>Load the selected model in the main window</source>
        <translation>在主窗口中加载选中的模型</translation>
    </message>
    <message>
        <source>Use a CosyVoice model folder you already have</source>
        <translation>使用你已有的 CosyVoice 模型文件夹</translation>
    </message>
    <message>
        <source>Take the selected added folder off the list (its files stay on disk)</source>
        <translation>把选中的已添加文件夹从列表中移除（文件仍保留在磁盘上）</translation>
    </message>
    <message>
        <source>Added folder ({version} model): {path}</source>
        <translation>已添加的文件夹（{version} 模型）：{path}</translation>
    </message>
    <message>
        <source>added</source>
        <translation>已添加</translation>
    </message>
    <message>
        <source>cannot be used</source>
        <translation>无法使用</translation>
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
        <source>Removed {folder} from the list; its files are still on disk.</source>
        <translation>已将 {folder} 从列表中移除；文件仍在磁盘上。</translation>
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
    <name>PreferencesDialog</name>
    <message>
        <source>Preferences</source>
        <translation>首选项</translation>
    </message>
    <message>
        <source>General</source>
        <translation>常规</translation>
    </message>
    <message>
        <source>Sound</source>
        <translation>声音输出</translation>
    </message>
    <message>
        <source>Engine</source>
        <translation>引擎</translation>
    </message>
    <message>
        <source>Export</source>
        <translation>导出</translation>
    </message>
    <message>
        <source>Language</source>
        <translation>界面语言</translation>
    </message>
    <message>
        <source>Theme</source>
        <translation>主题</translation>
    </message>
    <message>
        <source>History keeps</source>
        <translation>历史记录保留</translation>
    </message>
    <message>
        <source>Voice recordings up to</source>
        <translation>声音录音最长</translation>
    </message>
    <message>
        <source>Output device</source>
        <translation>输出设备</translation>
    </message>
    <message>
        <source>Compute device</source>
        <translation>计算设备</translation>
    </message>
    <message>
        <source>Precision</source>
        <translation>精度</translation>
    </message>
    <message>
        <source>Default format</source>
        <translation>默认格式</translation>
    </message>
    <message>
        <source>Default folder</source>
        <translation>默认文件夹</translation>
    </message>
    <message>
        <source> utterances</source>
        <translation> 条</translation>
    </message>
    <message>
        <source> s</source>
        <translation> 秒</translation>
    </message>
    <message>
        <source>New voice profiles stop recording after this long; a shorter clip of one or two sentences clones best (the models take at most 30 s)</source>
        <translation>新声音录到这么长时自动停止；一两句话的短录音克隆效果最好（模型最多接受 30 秒）</translation>
    </message>
    <message>
        <source>Choose…</source>
        <translation>选择…</translation>
    </message>
    <message>
        <source>Your Music folder</source>
        <translation>你的“音乐”文件夹</translation>
    </message>
    <message>
        <source>The language of menus, buttons and messages</source>
        <translation>菜单、按钮和提示信息所用的语言</translation>
    </message>
    <message>
        <source>Light or dark colours; the system setting follows the desktop</source>
        <translation>浅色或深色；“跟随系统”会随桌面设置变化</translation>
    </message>
    <message>
        <source>How many past utterances History keeps; older ones are removed</source>
        <translation>历史记录保留多少条语音；更早的会被删除</translation>
    </message>
    <message>
        <source>Where speech is played</source>
        <translation>语音从哪里播放</translation>
    </message>
    <message>
        <source>Which part of the computer computes the speech</source>
        <translation>由电脑的哪个部件来计算语音</translation>
    </message>
    <message>
        <source>How the model runs on that device</source>
        <translation>模型在该设备上的运行方式</translation>
    </message>
    <message>
        <source>Number format of the model's arithmetic</source>
        <translation>模型计算所用的数值格式</translation>
    </message>
    <message>
        <source>The format Export offers first</source>
        <translation>导出时首先提供的格式</translation>
    </message>
    <message>
        <source>Where Export opens first; empty for your Music folder</source>
        <translation>导出时首先打开的文件夹；留空则为“音乐”文件夹</translation>
    </message>
    <message>
        <source>Pick the default export folder</source>
        <translation>选择默认导出文件夹</translation>
    </message>
    <message>
        <source>Follow the system</source>
        <translation>跟随系统</translation>
    </message>
    <message>
        <source>Light</source>
        <translation>浅色</translation>
    </message>
    <message>
        <source>Dark</source>
        <translation>深色</translation>
    </message>
    <message>
        <source>System default</source>
        <translation>系统默认</translation>
    </message>
    <message>
        <source>GPU: {name}</source>
        <translation>显卡：{name}</translation>
    </message>
    <message>
        <source>Some choices are unavailable here: {why}.</source>
        <translation>部分选项在本机不可用：{why}。</translation>
    </message>
    <message>
        <source>Changing these loads the model again; the model in use keeps speaking until the new one is ready.</source>
        <translation>更改这些设置会重新加载模型；在新模型就绪之前，当前模型照常朗读。</translation>
    </message>
    <message>
        <source>Automatic</source>
        <translation>自动</translation>
    </message>
    <message>
        <source>The NVIDIA GPU when there is one, otherwise the processor.</source>
        <translation>有 NVIDIA 显卡时用显卡，否则用处理器。</translation>
    </message>
    <message>
        <source>Processor (CPU)</source>
        <translation>处理器（CPU）</translation>
    </message>
    <message>
        <source>Works on every computer; slower than real time for the full-size models.</source>
        <translation>任何电脑都能用；完整模型会慢于实时。</translation>
    </message>
    <message>
        <source>NVIDIA GPU</source>
        <translation>NVIDIA 显卡</translation>
    </message>
    <message>
        <source>Speech starts in well under a second and runs many times faster than real time.</source>
        <translation>不到一秒即开始发声，速度是实时的许多倍。</translation>
    </message>
    <message>
        <source>The fastest path that has been tested on this kind of device.</source>
        <translation>在这类设备上经过测试的最快方式。</translation>
    </message>
    <message>
        <source>Plain PyTorch</source>
        <translation>普通 PyTorch</translation>
    </message>
    <message>
        <source>The reference path: the same results everywhere, the slowest on a GPU.</source>
        <translation>参考实现：各处结果一致，在显卡上最慢。</translation>
    </message>
    <message>
        <source>Fast GPU path</source>
        <translation>显卡快速路径</translation>
    </message>
    <message>
        <source>Pre-recorded GPU work (CUDA graphs) with CosyDesk's own kernels.</source>
        <translation>预先录制的显卡计算（CUDA 图）加上 CosyDesk 自己的内核。</translation>
    </message>
    <message>
        <source>TensorRT (experimental)</source>
        <translation>TensorRT（实验性）</translation>
    </message>
    <message>
        <source>NVIDIA's engine compiler for the flow network; engines are built on first use. Not yet run on a GPU of ours, so Automatic never picks it.</source>
        <translation>NVIDIA 的引擎编译器，用于 flow 网络；首次使用时构建引擎。尚未在我们的显卡上运行过，因此“自动”从不选择它。</translation>
    </message>
    <message>
        <source>Half precision on the GPU, full precision on the processor.</source>
        <translation>显卡上用半精度，处理器上用全精度。</translation>
    </message>
    <message>
        <source>Full precision (32-bit)</source>
        <translation>全精度（32 位）</translation>
    </message>
    <message>
        <source>Exact reference numbers; on a GPU it is slower and uses more memory.</source>
        <translation>与参考结果完全一致；在显卡上更慢、占用更多显存。</translation>
    </message>
    <message>
        <source>Half precision (16-bit)</source>
        <translation>半精度（16 位）</translation>
    </message>
    <message>
        <source>Faster and lighter on a GPU; not used on the processor.</source>
        <translation>在显卡上更快、更省显存；处理器上不使用。</translation>
    </message>
    <message>
        <source>needs the NVIDIA GPU as compute device</source>
        <translation>需要以 NVIDIA 显卡作为计算设备</translation>
    </message>
    <message>
        <source>no NVIDIA GPU found</source>
        <translation>未找到 NVIDIA 显卡</translation>
    </message>
    <message>
        <source>{folder} is not a folder; export keeps its previous default</source>
        <translation>{folder} 不是文件夹；导出仍使用之前的默认文件夹</translation>
    </message>
    <message>
        <source>Default export folder</source>
        <translation>默认导出文件夹</translation>
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
    <name>ServePreferences</name>
    <message>
        <source>Serve other apps (OpenAI-compatible /v1/audio/speech)</source>
        <translation>为其他应用提供语音（兼容 OpenAI 的 /v1/audio/speech）</translation>
    </message>
    <message>
        <source>Address</source>
        <translation>地址</translation>
    </message>
    <message>
        <source>Port</source>
        <translation>端口</translation>
    </message>
    <message>
        <source>API key</source>
        <translation>API 密钥</translation>
    </message>
    <message>
        <source>127.0.0.1 serves this computer only; any other address needs an API key</source>
        <translation>127.0.0.1 只为本机提供服务；其他地址需要 API 密钥</translation>
    </message>
    <message>
        <source>The TCP port other programs connect to (base URL http://ADDRESS:PORT/v1)</source>
        <translation>其他程序连接的 TCP 端口（基础 URL 为 http://ADDRESS:PORT/v1）</translation>
    </message>
    <message>
        <source>Clients send it as 'Authorization: Bearer KEY'; empty: no key</source>
        <translation>客户端以 'Authorization: Bearer KEY' 发送；留空：不需要密钥</translation>
    </message>
    <message>
        <source>Your own speech and other programs' requests take turns on the model loaded here. A new address, port or key applies the next time the server starts.</source>
        <translation>你自己的朗读和其他程序的请求轮流使用这里加载的模型。新的地址、端口或密钥在服务器下次启动时生效。</translation>
    </message>
</context>
<context>
    <name>ServeSwitch</name>
    <message>
        <source>Serve other apps</source>
        <translation>为其他应用提供服务</translation>
    </message>
    <message>
        <source>Let other programs speak through CosyDesk's OpenAI-compatible API (/v1/audio/speech) on the model loaded here</source>
        <translation>让其他程序通过 CosyDesk 的 OpenAI 兼容 API（/v1/audio/speech）使用这里已加载的模型朗读</translation>
    </message>
    <message>
        <source>port {port} (setting {key}) is not a TCP port (0-65535)</source>
        <translation>端口 {port}（设置项 {key}）不是有效的 TCP 端口（0-65535）</translation>
    </message>
    <message>
        <source>address {host} would let other computers use this server without a key: set an API key in Preferences &gt; Local API (or COSYDESK_API_KEY), or keep the address 127.0.0.1</source>
        <translation>地址 {host} 会让其他电脑无需密钥即可使用此服务：请在“首选项 &gt; 本地 API”中设置 API 密钥（或设置 COSYDESK_API_KEY），或保留地址 127.0.0.1</translation>
    </message>
    <message>
        <source>API: 1 request</source>
        <translation>API：1 个请求</translation>
    </message>
    <message>
        <source>API: {n} requests</source>
        <translation>API：{n} 个请求</translation>
    </message>
    <message>
        <source>API: on {url}</source>
        <translation>API：已在 {url} 开启</translation>
    </message>
    <message>
        <source> · last: {client}</source>
        <translation> · 最近：{client}</translation>
    </message>
    <message>
        <source>API: starting…</source>
        <translation>API：正在启动…</translation>
    </message>
    <message>
        <source>API: stopping…</source>
        <translation>API：正在停止…</translation>
    </message>
    <message>
        <source>API: waiting for a model</source>
        <translation>API：正在等待模型</translation>
    </message>
</context>
<context>
    <name>SpeakControl</name>
    <message>
        <source>Type something to say first.</source>
        <translation>请先输入要朗读的文字。</translation>
    </message>
    <message>
        <source>No model is loaded: choose or download one with “Models…”.</source>
        <translation>尚未加载模型：请通过“模型管理…”选择或下载一个。</translation>
    </message>
    <message>
        <source>Speaking…</source>
        <translation>正在朗读…</translation>
    </message>
    <message>
        <source>Speaking… first audio after {ms} ms</source>
        <translation>正在朗读… 首音用时 {ms} 毫秒</translation>
    </message>
    <message>
        <source>Audio: {m}</source>
        <translation>音频：{m}</translation>
    </message>
</context>
<context>
    <name>TelemetryDock</name>
    <message>
        <source>Telemetry</source>
        <translation>性能监控</translation>
    </message>
    <message>
        <source>First audio per utterance</source>
        <translation>每句首音延迟</translation>
    </message>
    <message>
        <source>ms</source>
        <translation>毫秒</translation>
    </message>
    <message>
        <source>Utterance</source>
        <translation>语句</translation>
    </message>
    <message>
        <source>Audio underruns per utterance</source>
        <translation>每句音频欠载次数</translation>
    </message>
    <message>
        <source>Gaps</source>
        <translation>中断</translation>
    </message>
    <message>
        <source>Chunk RTF, last {n} utterances</source>
        <translation>分块实时率，最近 {n} 句</translation>
    </message>
    <message>
        <source>RTF</source>
        <translation>实时率</translation>
    </message>
    <message>
        <source>Chunk of the utterance</source>
        <translation>语句中的分块</translation>
    </message>
    <message>
        <source>VRAM, last 60 s</source>
        <translation>显存，最近 60 秒</translation>
    </message>
    <message>
        <source>RAM, last 60 s</source>
        <translation>内存，最近 60 秒</translation>
    </message>
    <message>
        <source>MB</source>
        <translation>MB</translation>
    </message>
    <message>
        <source>Seconds ago</source>
        <translation>秒前</translation>
    </message>
    <message>
        <source>GPU load, last 60 s</source>
        <translation>显卡负载，最近 60 秒</translation>
    </message>
    <message>
        <source>CPU load, last 60 s</source>
        <translation>CPU 负载，最近 60 秒</translation>
    </message>
    <message>
        <source>% · °C · W</source>
        <translation>% · °C · W</translation>
    </message>
    <message>
        <source>%</source>
        <translation>%</translation>
    </message>
    <message>
        <source>An underrun is a moment when the sound card asked for audio and none was ready yet: you hear a short gap or click. 0 means the utterance played without gaps; more means synthesis could not keep up with playback (a slower device or a busy computer).</source>
        <translation>欠载是指声卡需要音频时还没有准备好的数据：你会听到短暂的停顿或咔哒声。0 表示这句播放没有中断；更多则表示合成跟不上播放（设备较慢或电脑繁忙）。</translation>
    </message>
    <message>
        <source>Real-time factor of each audio chunk: computing time divided by the chunk's length. One line per utterance, the newest bold; above the dashed line at 1 synthesis is slower than playback.</source>
        <translation>每个音频分块的实时率：计算时间除以分块时长。每句一条线，最新的加粗；高于 1 处的虚线表示合成慢于播放。</translation>
    </message>
    <message>
        <source>Time from pressing Speak to the first audio of each utterance.</source>
        <translation>从按下“朗读”到每句第一段音频的时间。</translation>
    </message>
    <message>
        <source>Memory in use over the last minute.</source>
        <translation>最近一分钟的内存占用。</translation>
    </message>
    <message>
        <source>Processor or GPU load over the last minute.</source>
        <translation>最近一分钟的处理器或显卡负载。</translation>
    </message>
    <message>
        <source>Live speed and memory figures; hover a plot for what it shows.</source>
        <translation>实时的速度和内存数据；将鼠标悬停在图上可查看说明。</translation>
    </message>
    <message>
        <source>No data yet</source>
        <translation>暂无数据</translation>
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
        <source>Last: first audio {ms} ms · RTF {rtf} · underruns {n}</source>
        <translation>上一句：首音 {ms} 毫秒 · 实时率 {rtf} · 欠载 {n} 次</translation>
    </message>
    <message>
        <source>No utterance yet: press Speak to see its speed here.</source>
        <translation>还没有语音：按“朗读”后这里会显示速度。</translation>
    </message>
</context>
<context>
    <name>TrayMenu</name>
    <message>
        <source>Read clipboard</source>
        <translation>朗读剪贴板</translation>
    </message>
    <message>
        <source>Stop</source>
        <translation>停止</translation>
    </message>
    <message>
        <source>Show CosyDesk</source>
        <translation>显示 CosyDesk</translation>
    </message>
    <message>
        <source>Quit</source>
        <translation>退出</translation>
    </message>
    <message>
        <source>Resume</source>
        <translation>继续</translation>
    </message>
    <message>
        <source>Pause</source>
        <translation>暂停</translation>
    </message>
</context>
<context>
    <name>VoiceBar</name>
    <message>
        <source>Voice profile recorded on this computer</source>
        <translation>在本机录制的声音</translation>
    </message>
    <message>
        <source>Create a voice profile</source>
        <translation>请新建一个声音</translation>
    </message>
    <message>
        <source>(no style)</source>
        <translation>（无风格）</translation>
    </message>
</context>
<context>
    <name>VoiceManagerDialog</name>
    <message>
        <source>Voice profiles</source>
        <translation>声音管理</translation>
    </message>
    <message>
        <source>Preview</source>
        <translation>试听</translation>
    </message>
    <message>
        <source>Play the recording the voice is cloned from (Enter)</source>
        <translation>播放用于克隆此声音的录音（Enter）</translation>
    </message>
    <message>
        <source>Rename…</source>
        <translation>重命名…</translation>
    </message>
    <message>
        <source>Give the voice another name</source>
        <translation>给这个声音换个名字</translation>
    </message>
    <message>
        <source>Re-record…</source>
        <translation>重新录制…</translation>
    </message>
    <message>
        <source>Replace the recording and its transcript</source>
        <translation>替换录音及其文本</translation>
    </message>
    <message>
        <source>Delete</source>
        <translation>删除</translation>
    </message>
    <message>
        <source>Remove the voice and its recording</source>
        <translation>删除这个声音及其录音</translation>
    </message>
    <message>
        <source>New…</source>
        <translation>新建…</translation>
    </message>
    <message>
        <source>Add a voice from a recording</source>
        <translation>用一段录音添加声音</translation>
    </message>
    <message>
        <source>{name}
{seconds} s · “{transcript}”</source>
        <translation>{name}
{seconds} 秒 · “{transcript}”</translation>
    </message>
    <message>
        <source>Cannot play {name}: {e}</source>
        <translation>无法播放 {name}：{e}</translation>
    </message>
    <message>
        <source>Rename voice</source>
        <translation>重命名声音</translation>
    </message>
    <message>
        <source>New name</source>
        <translation>新名称</translation>
    </message>
    <message>
        <source>Delete voice</source>
        <translation>删除声音</translation>
    </message>
    <message>
        <source>Delete the voice “{name}” and its recording?</source>
        <translation>要删除声音“{name}”及其录音吗？</translation>
    </message>
    <message>
        <source>“{name}” could not be deleted.</source>
        <translation>无法删除“{name}”。</translation>
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
        <source>Re-record “{name}”</source>
        <translation>重新录制“{name}”</translation>
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
<context>
    <name>WindowExports</name>
    <message>
        <source>Nothing to export yet: speak something first.</source>
        <translation>还没有可导出的语音：请先朗读。</translation>
    </message>
    <message>
        <source>Still synthesising: {name} is saved when it is complete (Stop saves what is ready).</source>
        <translation>仍在合成：完成后会保存 {name}（按“停止”则保存已合成的部分）。</translation>
    </message>
    <message>
        <source>Nothing was synthesised: {name} was not saved.</source>
        <translation>没有合成任何内容：{name} 未保存。</translation>
    </message>
    <message>
        <source>Could not save to history: {e}</source>
        <translation>无法保存到历史记录：{e}</translation>
    </message>
</context>
<context>
    <name>WindowLayout</name>
    <message>
        <source>Local speech synthesis</source>
        <translation>本地语音合成</translation>
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
        <source>Export…</source>
        <translation>导出…</translation>
    </message>
    <message>
        <source>Save the current utterance as WAV, FLAC, MP3, Ogg or Opus (Ctrl+S)</source>
        <translation>将当前语音保存为 WAV、FLAC、MP3、Ogg 或 Opus（Ctrl+S）</translation>
    </message>
    <message>
        <source>Download, add or remove models</source>
        <translation>下载、添加或移除模型</translation>
    </message>
    <message>
        <source>Record or open a short recording to make a voice profile</source>
        <translation>录制或打开一段短录音，制作声音</translation>
    </message>
    <message>
        <source>The model that speaks; changing it loads the new one first</source>
        <translation>用于朗读的模型；切换时会先加载新模型</translation>
    </message>
    <message>
        <source>Who speaks: a built-in speaker or one of your voice profiles</source>
        <translation>由谁朗读：内置说话人或你的声音</translation>
    </message>
    <message>
        <source>Speaking rate: 0.25 to 4 times normal speed</source>
        <translation>语速：正常速度的 0.25 到 4 倍</translation>
    </message>
    <message>
        <source>The text to speak; Ctrl+Enter speaks it, Tab moves to the next control</source>
        <translation>要朗读的文本；Ctrl+Enter 朗读，Tab 移到下一个控件</translation>
    </message>
    <message>
        <source>History</source>
        <translation>历史记录</translation>
    </message>
    <message>
        <source>Text to speak</source>
        <translation>要朗读的文本</translation>
    </message>
</context>
<context>
    <name>WindowMenus</name>
    <message>
        <source>Pause</source>
        <translation>暂停</translation>
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
        <source>Export one file per sentence…</source>
        <translation>按句导出为多个文件…</translation>
    </message>
    <message>
        <source>Export subtitles (.srt, .vtt)…</source>
        <translation>导出字幕（.srt、.vtt）…</translation>
    </message>
    <message>
        <source>Voice profiles…</source>
        <translation>声音管理…</translation>
    </message>
    <message>
        <source>Quit</source>
        <translation>退出</translation>
    </message>
    <message>
        <source>Speak</source>
        <translation>朗读</translation>
    </message>
    <message>
        <source>Stop</source>
        <translation>停止</translation>
    </message>
    <message>
        <source>&amp;Playback</source>
        <translation>播放(&amp;P)</translation>
    </message>
    <message>
        <source>Speak the selection, or the whole text (Ctrl+Enter)</source>
        <translation>朗读选中的文字，或全部文本（Ctrl+Enter）</translation>
    </message>
    <message>
        <source>Stop speaking (Esc)</source>
        <translation>停止朗读（Esc）</translation>
    </message>
    <message>
        <source>Pause or resume playback (Pause key)</source>
        <translation>暂停或继续播放（Pause 键）</translation>
    </message>
    <message>
        <source>&amp;Settings</source>
        <translation>设置(&amp;S)</translation>
    </message>
    <message>
        <source>Preferences…</source>
        <translation>首选项…</translation>
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
</context>
<context>
    <name>WindowStatus</name>
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
    <message>
        <source>Pause</source>
        <translation>暂停</translation>
    </message>
    <message>
        <source>This model has no styles.</source>
        <translation>此模型没有风格可选。</translation>
    </message>
    <message>
        <source>How the voice speaks: pick a preset or type an instruction</source>
        <translation>声音的说话方式：选择预设或输入指令</translation>
    </message>
    <message>
        <source>Styles work with a voice profile (your own recording) on this model, not with the built-in voice {name}. Choose a voice profile or create one with “New voice…”.</source>
        <translation>在此模型上，风格只适用于你自己录制的声音，不适用于内置声音 {name}。请选择一个自己的声音，或用“新建声音…”创建一个。</translation>
    </message>
</context>
</TS>