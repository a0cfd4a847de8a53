"""zh_CN for the messages of cosydesk/frontend: recordings, ONNX frontends, text files, the text tokenizer."""

ZH_CN: dict[str, str] = {
    # frontend/audio_io.py: reading a recording
    "audio file not found: {0}": "找不到音频文件：{0}",
    "not a file: {0}": "不是文件：{0}",
    "{0} is not a readable audio file ({1})": "{0} 不是可读取的音频文件（{1}）",
    "{0} is sampled at {1} Hz, {2}: voice recordings need {3}-{4} kHz (16 kHz or more sounds best)":
        "{0} 的采样率为 {1} Hz，{2}：语音录音需要 {3}-{4} kHz（16 kHz 或更高效果最好）",
    "too low": "过低",
    "too high": "过高",
    "{0} has {1} channels; a recording has 1 to {2}": "{0} 有 {1} 个声道；录音应为 1 到 {2} 个声道",
    "{0} is {1} s long, too long: at most {2} s are supported (trim it to one or two sentences)":
        "{0} 长 {1} 秒，太长了：最多支持 {2} 秒（请剪到一两句话）",
    "{0} contains no audio": "{0} 不含任何音频",
    "{0} is too short ({1} ms)": "{0} 太短（{1} 毫秒）",
    "{0} contains invalid (NaN/inf) samples": "{0} 含有无效（NaN/inf）采样",
    "{0} is silent (RMS {1})": "{0} 没有声音（RMS {1}）",
    "sample rates must be positive, got {0} -> {1}": "采样率必须为正数，实际为 {0} -> {1}",
    # frontend/prompt.py: the ONNX speaker encoder and speech tokenizer
    "{0}: ran out of memory computing its output: the file is damaged or not the released network; download the "
    "model again": "{0}：计算输出时内存不足：文件已损坏或不是官方发布的网络；请重新下载模型",
    "{0}: failed to run ({1}: {2})": "{0}：运行失败（{1}：{2}）",
    "{0}: returned no tensor": "{0}：没有返回张量",
    "ONNX model not found: {0}": "找不到 ONNX 模型：{0}",
    "audio too short for a speaker embedding (needs at least 25 ms at 16 kHz)":
        "音频太短，无法计算说话人嵌入（16 kHz 下至少需要 25 毫秒）",
    "{0}: returned a {1} tensor of shape {2}; a speaker encoder returns [1, {3}] floats (the file is damaged or "
    "not campplus.onnx)": "{0}：返回了形状为 {2} 的 {1} 张量；说话人编码器应返回 [1, {3}] 的浮点数（文件已损坏，或不是 campplus.onnx）",
    "{0} does not look like a speech tokenizer (expected 2 inputs)": "{0} 看起来不是语音分词器（应有 2 个输入）",
    "speech tokens need audio of at most {0} s, got {1} s": "语音 token 需要最长 {0} 秒的音频，实际为 {1} 秒",
    "{0}: returned a {1} tensor of shape {2}; a speech tokenizer returns one row of integer token ids (the file is "
    "damaged or foreign)": "{0}：返回了形状为 {2} 的 {1} 张量；语音分词器应返回一行整数 token id（文件已损坏或来源不明）",
    "{0}: returned {1} speech tokens for {2} s of audio (at most {3} expected at {4} Hz): the file is damaged":
        "{0}：为 {2} 秒音频返回了 {1} 个语音 token（{4} Hz 下最多应为 {3} 个）：文件已损坏",
    "{0}: returned token ids from {1} to {2}; speech tokens are 0..{3} (the file is damaged or from another model)":
        "{0}：返回的 token id 范围为 {1} 到 {2}；语音 token 应在 0..{3} 之间（文件已损坏，或来自其他模型）",
    # frontend/features.py, frontend/text.py, frontend/tokenizer.py
    "unknown model version {0}": "未知的模型版本 {0}",
    "unknown model version {0}; expected one of {1}": "未知的模型版本 {0}；应为以下之一：{1}",
    "unknown model version {0}; expected 'v1', 'v2' or 'v3'": "未知的模型版本 {0}；应为 'v1'、'v2' 或 'v3'",
    "{0} prompt mels are computed at {1} Hz, got audio at {2} Hz": "{0} 的提示梅尔谱按 {1} Hz 计算，但音频为 {2} Hz",
    "the {0} text tokenizer needs {1} in {2}; these files come with the released model download "
    "(CosyVoice-BlankEN)": "{0} 文本分词器需要 {2} 中的 {1}；这些文件随官方模型下载提供（CosyVoice-BlankEN）",
    "the text tokenizer files in {0} cannot be read ({1}: {2})": "无法读取 {0} 中的文本分词器文件（{1}：{2}）",
    # frontend/text_file.py: File → Open
    "{0} is not a regular file (a pipe, device or folder): open a text file":
        "{0} 不是普通文件（而是管道、设备或文件夹）：请打开一个文本文件",
    "{0} is {1} bytes, more than the {2} that can be opened at once: split it into smaller files":
        "{0} 有 {1} 字节，超过一次可打开的 {2} 字节：请拆分成较小的文件",
    "{0} is more than the {1} bytes that can be opened at once: split it into smaller files":
        "{0} 超过一次可打开的 {1} 字节：请拆分成较小的文件",
    "cannot read {0}: {1}": "无法读取 {0}：{1}",
    "{0} does not look like a text file (it holds binary data): open a plain text file, saved as UTF-8":
        "{0} 看起来不是文本文件（含有二进制数据）：请打开以 UTF-8 保存的纯文本文件",
}
