"""zh_CN for the app's own messages and the shared ones: model folders and downloads (hub.py), state files,
history, drafts, single instance, the worker, the in-app server, Diagnostics (doctor.py), the joiners that
compose messages ("<file>: <message>", "; "-joined lists) and the operating system's commonest error texts."""

ZH_CN: dict[str, str] = {
    # joiners: applied only when a part inside them is translated (see ui/error_text.py)
    "{0}: {1}": "{0}：{1}",
    "{0}; {1}": "{0}；{1}",
    "{0}, {1}": "{0}，{1}",
    # the worker (ui/worker.py)
    "Cannot load {0}: {1}": "无法加载 {0}：{1}",
    "No model is loaded: choose one in the model list": "尚未加载模型：请在模型列表中选择一个",
    # hub.py: model folders
    "{0} is a file, not a model folder": "{0} 是文件，不是模型文件夹",
    "{0} holds several model configs ({1}); keep one per folder": "{0} 含有多个模型配置（{1}）；每个文件夹只能保留一个",
    "no model config in {0}: expected one of {1} (is this the folder that contains llm.pt?)":
        "{0} 中没有模型配置：应有以下之一：{1}（这是包含 llm.pt 的那个文件夹吗？）",
    "{0} is missing (model weights)": "缺少 {0}（模型权重）",
    "{0} is empty (an interrupted download?)": "{0} 是空的（下载中断了？）",
    "{0}/ is missing (the text LLM config and tokenizer for {1} models)": "缺少 {0}/（{1} 模型的文本 LLM 配置和分词器）",
    "{0}/{1} is missing": "缺少 {0}/{1}",
    "{0}/{1} is missing (text tokenizer)": "缺少 {0}/{1}（文本分词器）",
    "campplus.onnx is missing (speaker encoder: voice profiles / cloning need it)":
        "缺少 campplus.onnx（说话人编码器：音色档案和声音克隆需要它）",
    "{0} is missing (speech tokenizer: voice profiles / cloning need it)":
        "缺少 {0}（语音分词器：音色档案和声音克隆需要它）",
    "speech_tokenizer_v*.onnx is missing (speech tokenizer)": "缺少 speech_tokenizer_v*.onnx（语音分词器）",
    # hub.py: downloads
    "unknown model {0}; known models: {1}": "未知的模型 {0}；已知模型：{1}",
    "download cancelled": "下载已取消",
    "Downloading {0} stalled: {1} sent only {2} bytes in {3} s. Check the network connection and try again; what "
    "arrived is kept and the next download resumes.":
        "下载 {0} 停滞：{1} 在 {3} 秒内只传来 {2} 字节。请检查网络连接后重试；已下载的部分会保留，下次下载将继续。",
    "Cannot reach {0} to download {1} (no network?). Connect and try again, or download {2} elsewhere and use "
    "“Add folder…”.": "无法连接 {0} 下载 {1}（没有网络？）。请联网后重试，或在别处下载 {2} 后使用“添加文件夹…”。",
    "Downloading {0} failed: {1}": "下载 {0} 失败：{1}",
    "{0}: {1} did not match the published hash and was removed; run the download again":
        "{0}：{1} 与发布的哈希值不符，已删除；请重新下载",
    "{0} downloaded but incomplete: {1}": "{0} 已下载但不完整：{1}",
    "{0} is a file where the model folder belongs: move it away and download again":
        "{0} 是一个文件，占用了模型文件夹的位置：请将其移走后重新下载",
    # state_files.py, atomic_file.py, file_lock.py
    "{0} cannot be read ({1})": "无法读取 {0}（{1}）",
    "{0} is not a regular file": "{0} 不是普通文件",
    "{0} is {1} bytes, more than the {2} it may hold": "{0} 有 {1} 字节，超过了允许的 {2} 字节",
    "{0} grew past {1} bytes while it was read": "{0} 在读取期间增长到超过 {1} 字节",
    "{0} is not valid JSON ({1})": "{0} 不是有效的 JSON（{1}）",
    "{0} is nested too deeply to be a CosyDesk file": "{0} 嵌套过深，不是 CosyDesk 文件",
    "{0} was a file, not a folder: it was moved to {1} and an empty folder made":
        "{0} 原是文件而非文件夹：已移至 {1}，并新建了空文件夹",
    "no free temporary file name in {0}": "{0} 中没有可用的临时文件名",
    "{0} stayed locked by another CosyDesk for more than {1} s": "{0} 被另一个 CosyDesk 锁定超过 {1} 秒",
    # ui/history.py
    "an entry is a {0}, not an object": "有一个条目是 {0}，而不是对象",
    "an entry has no {0}": "有一个条目缺少 {0}",
    "an entry's {0} is {1}": "有一个条目的 {0} 为 {1}",
    "an entry's file {0} is not a plain name inside {1}": "有一个条目的文件 {0} 不是 {1} 中的普通文件名",
    "the history folder {0} is not usable: {1}": "历史文件夹 {0} 无法使用：{1}",
    "no history entry {0}": "没有历史条目 {0}",
    "the audio of {0} is no longer in {1}; it cannot be brought back": "{0} 的音频已不在 {1} 中；无法恢复",
    "the history is off for this session: {0} cannot be made a folder ({1})":
        "本次运行已关闭历史记录：无法将 {0} 创建为文件夹（{1}）",
    "{0} holds a {1}, not a list of entries": "{0} 的内容是 {1}，而不是条目列表",
    "entry {0} is listed twice": "条目 {0} 重复出现",
    "{0} entr{1} of {2} skipped ({3}{4})": "已跳过 {2} 中的 {0} 个条目（{3}{4}）",
    "{0}; it was kept as {1} and the history starts afresh": "{0}；已保留为 {1}，历史记录重新开始",
    "{0}; the history starts afresh": "{0}；历史记录重新开始",
    # audio/profiles.py store problems (Voices… dialog)
    "skipped a voice profile: {0}": "已跳过一个音色档案：{0}",
    # ui/draft.py
    "the saved draft was not loaded: {0}": "未能载入保存的草稿：{0}",
    "{0}; it was kept as {1}": "{0}；已保留为 {1}",
    # ui/single_instance.py
    "another CosyDesk is running on this data folder but did not answer (socket {0}); close it, or wait until it "
    "responds": "另一个 CosyDesk 正在使用此数据文件夹，但没有响应（套接字 {0}）；请关闭它，或等待它响应",
    "cannot create the local socket {0}: {1}": "无法创建本地套接字 {0}：{1}",
    "cannot lock {0}: {1}": "无法锁定 {0}：{1}",
    # ui/serve_switch.py: the in-app speech server
    "cannot listen on {0}:{1}: {2} (is `cosydesk serve` or another program using it? choose another port)":
        "无法监听 {0}:{1}：{2}（是 `cosydesk serve` 或其他程序占用了它吗？请换一个端口）",
    "cannot listen on {0}:{1}: {2} (the address must be one of this computer's, such as 127.0.0.1)":
        "无法监听 {0}:{1}：{2}（地址必须是这台电脑自己的地址，例如 127.0.0.1）",
    "the speech server could not start ({0}: {1})": "语音服务无法启动（{0}：{1}）",
    # serve/runner.py, through the switch
    "the speech server did not start: {0}": "语音服务没有启动：{0}",
    "the speech server did not start within {0} s": "语音服务未能在 {0} 秒内启动",
    # ui/engine_choices.py: why a Preferences choice is disabled
    "torch {0} sees no NVIDIA GPU on this computer": "torch {0} 在这台电脑上找不到 NVIDIA GPU",
    "torch cannot check for a GPU ({0})": "torch 无法检测 GPU（{0}）",
    "TensorRT is not installed (pip install -e \".[tensorrt-rtx]\")": "未安装 TensorRT（pip install -e \".[tensorrt-rtx]\"）",
    # the operating system's commonest error texts (strerror), as they appear inside the messages above
    "No such file or directory": "没有那个文件或目录",
    "Permission denied": "权限不够",
    "Is a directory": "是一个目录",
    "Not a directory": "不是目录",
    "Read-only file system": "只读文件系统",
    "No space left on device": "设备上没有空间",
    "File exists": "文件已存在",
    "Address already in use": "地址已被占用",
    "Cannot assign requested address": "无法使用所请求的地址",
    "Name or service not known": "未知的名称或服务",
    "Temporary failure in name resolution": "域名解析暂时失败",
    "No address associated with hostname": "该主机名没有关联的地址",
    "Disk quota exceeded": "超出磁盘配额",
    "File too large": "文件过大",
    # doctor.py: the Diagnostics dialog (check names, details, fixes that are actions rather than commands)
    "OK": "正常",
    "WARN": "警告",
    "FAIL": "失败",
    "fix: {0}": "修复：{0}",
    "NVIDIA driver": "NVIDIA 驱动",
    "CJK font": "中文字体",
    "Qt display": "Qt 显示",
    "models folder": "模型文件夹",
    "models": "模型",
    "model {0}": "模型 {0}",
    "{0}: CosyDesk needs Python >= {1}.{2}": "{0}：CosyDesk 需要 Python >= {1}.{2}",
    "cannot import torch ({0})": "无法导入 torch（{0}）",
    "{0} is a CPU-only build but an NVIDIA GPU is present: synthesis will run on the CPU":
        "{0} 是仅支持 CPU 的版本，但本机有 NVIDIA GPU：合成将在 CPU 上运行",
    "{0} (CPU build; no NVIDIA GPU here)": "{0}（CPU 版本；本机没有 NVIDIA GPU）",
    "{0} with CUDA {1}, but no usable NVIDIA GPU: running on the CPU": "{0}，CUDA {1}，但没有可用的 NVIDIA GPU：在 CPU 上运行",
    "{0} needs CUDA {1} but the driver only supports CUDA {2}": "{0} 需要 CUDA {1}，但驱动只支持 CUDA {2}",
    "{0} with CUDA {1} cannot use the GPU": "{0}，CUDA {1}，无法使用 GPU",
    "{0} with CUDA {1}, {2} GPU(s) usable": "{0}，CUDA {1}，可用 GPU {2} 块",
    "not found ({0}); CosyDesk falls back to the CPU": "未找到（{0}）；CosyDesk 改用 CPU",
    "nvidia-ml-py is not installed": "未安装 nvidia-ml-py",
    "NVML unavailable ({0})": "NVML 不可用（{0}）",
    "NVML query failed ({0})": "NVML 查询失败（{0}）",
    ", supports CUDA {0}.{1}": "，支持 CUDA {0}.{1}",
    "{0}, supports CUDA {1}.{2}": "{0}，支持 CUDA {1}.{2}",
    "no NVIDIA GPU: synthesis runs on the CPU (eager backend, fp32). It works, but v2/v3 models are slower than "
    "real time there": "没有 NVIDIA GPU：合成在 CPU 上运行（eager 后端，fp32）。可以使用，但 v2/v3 模型在 CPU 上慢于实时",
    "use a machine with an NVIDIA GPU (Turing / RTX 20xx or newer) and its driver":
        "请使用装有 NVIDIA GPU（Turing / RTX 20xx 或更新）及其驱动的电脑",
    "#{0} {1}, compute capability {2}, {3} of {4} GB free": "#{0} {1}，计算能力 {2}，可用 {3} / {4} GB",
    "{0}: less than {1} GB free VRAM": "{0}：可用显存不足 {1} GB",
    "close other GPU programs (nvidia-smi lists them)": "关闭其他占用 GPU 的程序（nvidia-smi 可列出它们）",
    "not installed": "未安装",
    "not importable ({0})": "无法导入（{0}）",
    "{0}; not needed without an NVIDIA GPU": "{0}；没有 NVIDIA GPU 时不需要",
    "{0}; {1} is not supported by {2} anyway": "{0}；{2} 本来也不支持 {1}",
    "{0}: the faster '{1}' backend is off (cudagraph is used instead)": "{0}：更快的 '{1}' 后端未启用（改用 cudagraph）",
    "{0} importable (no GPU, so unused)": "{0} 可导入（没有 GPU，因此不使用）",
    "{0} (cc {1}) supported": "{0}（cc {1}）受支持",
    "{0} (cc {1}) NOT supported": "{0}（cc {1}）不受支持",
    "{0}; the tensorrt backend is experimental (--backend tensorrt only): engines build, but none has run on a "
    "GPU of ours yet": "{0}；tensorrt 后端尚处于实验阶段（仅 --backend tensorrt）：引擎可以构建，但还没有在我们的 GPU 上运行过",
    "{0}: the cudagraph backend is used instead": "{0}：改用 cudagraph 后端",
    "{0}: unused here, TensorRT {1} serves this GPU": "{0}：此处不使用，由 TensorRT {1} 服务这块 GPU",
    "{0}: install full TensorRT for engines on this GPU": "{0}：要在这块 GPU 上使用引擎，请安装完整版 TensorRT",
    "the PortAudio library cannot be loaded ({0})": "无法加载 PortAudio 库（{0}）",
    "the sounddevice package is not installed": "未安装 sounddevice 包",
    "cannot list audio devices ({0})": "无法列出音频设备（{0}）",
    "{0}: no audio output device; playback is off, WAV/FLAC export still works":
        "{0}：没有音频输出设备；播放已关闭，仍可导出 WAV/FLAC",
    "{0}: {1} output device(s): {2}": "{0}：{1} 个输出设备：{2}",
    "aplay -l  (connect or enable a sound card / PulseAudio / PipeWire)":
        "aplay -l（连接或启用声卡 / PulseAudio / PipeWire）",
    "connect or enable an audio output device": "连接或启用音频输出设备",
    "{0} ships CJK fonts": "{0} 自带中文字体",
    "fontconfig (fc-list) is missing, cannot check for a Chinese font": "缺少 fontconfig（fc-list），无法检查中文字体",
    "fc-list failed ({0})": "fc-list 运行失败（{0}）",
    "no Chinese font: Chinese text shows as boxes in the app": "没有中文字体：应用中的中文会显示为方框",
    "PySide6 bundles its {0} platform plugin": "PySide6 自带 {0} 平台插件",
    "Qt's {0} platform plugin loads ({1})": "Qt 的 {0} 平台插件可以加载（{1}）",
    "Qt's {0} platform plugin cannot load: missing {1}": "Qt 的 {0} 平台插件无法加载：缺少 {1}",
    "Qt's {0} platform plugin is not in {1}": "{1} 中没有 Qt 的 {0} 平台插件",
    "PySide6 cannot be imported ({0})": "无法导入 PySide6（{0}）",
    "PySide6 is not installed": "未安装 PySide6",
    "cannot inspect {0} ({1})": "无法检查 {0}（{1}）",
    "{0}: the desktop app cannot open its window": "{0}：桌面应用无法打开窗口",
    "{0} ({1}), {2} GB free": "{0}（{1}），可用 {2} GB",
    "exists": "已存在",
    "not created yet": "尚未创建",
    "{0}: a model needs up to {1} GB": "{0}：一个模型最多需要 {1} GB",
    "set COSYDESK_MODELS_DIR to a folder on a bigger disk": "请将 COSYDESK_MODELS_DIR 设为更大磁盘上的文件夹",
    "its download did not finish ({0})": "下载未完成（{0}）",
    "{0} does not match its download hash": "{0} 与下载时的哈希值不符",
    "{0} is empty": "{0} 是空的",
    "{0} does not open ({1}: {2})": "{0} 无法打开（{1}：{2}）",
    "{0} file hashes verified": "已校验 {0} 个文件的哈希值",
    "weights open (no download manifest to hash against)": "权重可以打开（没有可供校验哈希的下载清单）",
    "re-copy the model folder {0} from its source": "请从来源重新复制模型文件夹 {0}",
    "no model installed in {0}": "{0} 中没有安装模型",
    "the check itself failed: {0}: {1}": "检查本身失败：{0}：{1}",
    "report this at the CosyDesk issue tracker with the output of `cosydesk doctor --json`":
        "请将此问题连同 `cosydesk doctor --json` 的输出报告到 CosyDesk 问题跟踪器",
}
