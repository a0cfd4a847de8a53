"""zh_CN for the messages of cosydesk/runtime (runtime/backends/tensorrt excepted: model.py), loading stages included."""

ZH_CN: dict[str, str] = {
    # runtime/synthesizer.py: device, backend, precision, speed
    "device {0} was asked for, but torch sees no CUDA GPU (torch {1})":
        "选择了设备 {0}，但 torch 找不到 CUDA GPU（torch {1}）",
    "precision {0} is not one of auto, fp32, fp16": "精度 {0} 无效：可选 auto、fp32、fp16",
    "backend {0} needs an NVIDIA GPU; on the CPU use --backend eager":
        "后端 {0} 需要 NVIDIA GPU；在 CPU 上请使用 --backend eager",
    "unknown backend {0} (choose {1})": "未知的后端 {0}（可选：{1}）",
    "speed {0} is outside {1}-{2}": "语速 {0} 超出范围 {1}-{2}",
    "the GPU ran out of memory: close other GPU programs, try a shorter text, or choose --precision fp16 / "
    "--device cpu": "GPU 显存不足：请关闭其他占用 GPU 的程序、缩短文本，或改用 --precision fp16 / --device cpu",
    # runtime/synthesizer.py: loading stages (the status bar's "Loading <model>: <stage>…")
    "Checking model files": "正在检查模型文件",
    "Loading model": "正在加载模型",
    "Preparing {0} (warm-up captures every shape bucket)": "正在准备 {0}（预热时会捕获所有形状分桶）",
    "Loading text frontend": "正在加载文本前端",
    "Ready": "就绪",
    "Compiling and capturing the speech LM": "正在编译并捕获语音 LM",
    "Capturing the flow encoder": "正在捕获 flow 编码器",
    "Capturing the flow decoder": "正在捕获 flow 解码器",
    "Capturing the vocoder": "正在捕获声码器",
    "Warming up": "正在预热",
    "{0} ({1}/{2})": "{0}（{1}/{2}）",
    "Downloading {0}": "正在下载 {0}",
    "{0} ({1} of {2} MB)": "{0}（已下载 {1} / {2} MB）",
    # runtime/backends.py
    "eager-fp16 needs a CUDA device (fp16 on the CPU is slow and not a supported path)":
        "eager-fp16 需要 CUDA 设备（在 CPU 上运行 fp16 很慢，且不受支持）",
    "the cudagraph backend needs a CUDA device": "cudagraph 后端需要 CUDA 设备",
    "the tensorrt backend needs a CUDA device": "tensorrt 后端需要 CUDA 设备",
    "unknown backend {0} (choose from {1})": "未知的后端 {0}（可选：{1}）",
    "{0} is experimental: {1}": "{0} 尚处于实验阶段：{1}",
    "{0} was measured on this kind of GPU ({1})": "{0} 已在同类 GPU 上测过（{1}）",
    "{0} was measured on {1}; on this GPU it runs but its speed has not been measured here":
        "{0} 在 {1} 上测过；在这块 GPU 上可以运行，但速度尚未实测",
    # runtime/options.py (COSYDESK_* environment variables)
    "decode_ahead must be at least 1, not {0}": "decode_ahead 至少为 1，而不是 {0}",
    "first_chunk_shared_steps must not be negative, not {0}": "first_chunk_shared_steps 不能为负数，而不是 {0}",
    # runtime/backends/cudagraph: limits a request can reach
    "the voice prompt and the sentence take {0} positions of the speech model's cache, which holds {1}: use a "
    "shorter voice prompt or a shorter sentence":
        "语音提示与句子共占用语音模型缓存的 {0} 个位置，而缓存只有 {1} 个：请换用更短的语音提示或更短的句子",
    "the speech model's scores were not finite numbers (NaN/inf) at token {0}, so no token could be drawn: an fp16 "
    "overflow? try --backend eager (fp32)":
        "语音模型在第 {0} 个 token 处的得分不是有限数（NaN/inf），无法采样：可能是 fp16 溢出，请尝试 --backend eager（fp32）",
    "a sentence of more than {0} tokens exceeds the static buffers": "超过 {0} 个 token 的句子超出了静态缓冲区",
    "static decoding of this v1 LM is not supported: {0}": "不支持对这个 v1 LM 做静态解码：{0}",
    # runtime/output_check.py
    "{0} produced invalid audio ({1} of {2} samples are NaN/inf): nothing was played or written; the model files "
    "or the voice are damaged":
        "{0} 生成了无效音频（{2} 个采样中有 {1} 个为 NaN/inf）：没有播放或写入任何内容；模型文件或音色已损坏",
    "{0} produced invalid audio ({1} of the samples at full scale): nothing was played or written; the model "
    "files or the voice are damaged":
        "{0} 生成了无效音频（{1} 的采样处于满幅）：没有播放或写入任何内容；模型文件或音色已损坏",
    # runtime/pipeline.py, runtime/token2wav.py
    "the model produced no speech for this sentence (it ended at once): try rephrasing":
        "模型没有为这句话生成语音（立即结束了）：请换个说法试试",
    "speed can only be changed in non-streaming synthesis": "只有非流式合成才能调整语速",
    # runtime/request_inputs.py: text
    "the text is empty: type something to say": "文本为空：请输入要朗读的内容",
    "the text holds only punctuation, symbols or emoji: there is nothing to pronounce":
        "文本只有标点、符号或表情：没有可朗读的内容",
    "the text holds nothing pronounceable after normalisation": "文本规范化后没有可朗读的内容",
    "CosyVoice3 reads Japanese reliably only in katakana: convert hiragana/kanji to katakana for correct "
    "pronunciation": "CosyVoice3 只能可靠地朗读片假名日语：请把平假名/汉字转换为片假名，以便正确发音",
    "speed changes are applied per sentence without streaming (as in the official code)":
        "调整语速时按句合成、不做流式输出（与官方实现一致）",
    # runtime/request_inputs.py: voices and prompts
    "{0} is missing from {1}: zero-shot voices need it": "{1} 中缺少 {0}：零样本音色需要它",
    "{0} in {1} cannot be loaded ({2}): the file is damaged; download the model again":
        "无法加载 {1} 中的 {0}（{2}）：文件已损坏；请重新下载模型",
    "prompt audio {0} does not exist": "提示音频 {0} 不存在",
    "speaker embedding (campplus.onnx)": "说话人嵌入（campplus.onnx）",
    "mel features": "梅尔特征",
    "the {0} of {1} came out as NaN/inf: the recording's samples are far outside -1..1 or campplus.onnx is "
    "damaged; use a normal recording":
        "{1} 的 {0} 计算结果为 NaN/inf：录音的采样值远超 -1..1，或 campplus.onnx 已损坏；请使用正常的录音",
    "this model has no instruct mode: use CosyVoice-300M-Instruct for styles":
        "此模型没有指令模式：要使用风格，请选用 CosyVoice-300M-Instruct",
    "styles need a voice profile (prompt audio) with this model, not an SFT speaker":
        "此模型的风格需要配合音色档案（提示音频）使用，不能用内置 SFT 说话人",
    "this model has no built-in speakers: choose a voice profile (prompt audio + transcript)":
        "此模型没有内置说话人：请选择一个音色档案（提示音频 + 文字稿）",
    "unknown speaker {0}; this model offers: {1}": "未知的说话人 {0}；此模型提供：{1}",
    "speaker {0} in {1} is damaged ({2} holds NaN/inf values): choose another voice or download the model again":
        "{1} 中的说话人 {0} 已损坏（{2} 含有 NaN/inf 值）：请选择其他音色，或重新下载模型",
}
