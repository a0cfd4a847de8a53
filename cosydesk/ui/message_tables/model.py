"""zh_CN for the messages of cosydesk/model/ and cosydesk/runtime/backends/tensorrt/ (load refusals and synthesis errors).

They reach the app as "Cannot load <folder>: <file>: <message>". FILE_MESSAGES holds what follows "<file>: ";
each that starts with literal text is also listed with that prefix ("{0}: …", its fields renumbered), so that
no entry of another table that ends the same way ("{0} does not exist") can take the whole message before the
"<file>: <message>" joiner divides it. PHRASES holds the rest: whole messages, and phrases passed into a
message as values (the "(a layer width)" descriptions and "it must be …" clauses of model/config_values.py,
the ``what`` of model/hf_files.py, the json, PyYAML and ONNX Runtime messages carried in them); a field that
fully matches an entry is translated. File names, yaml keys, class names and numbers stay as they are. When an
English template starts with a field, the Chinese one starts with the same field (a "<file>: " prefix may be
caught in it). Data only, and the one rule that derives the prefixed forms.
"""

import re

FILE_MESSAGES: dict[str, str] = {
    # ---------------------------------------------------------------- model/config.py: reading the yaml
    "cannot be read ({0})": "无法读取（{0}）",
    "not a regular file": "不是普通文件",
    "{0} bytes, {1} (at most {2} bytes are read)": "{0} 字节，{1}（最多读取 {2} 字节）",
    "over {0} bytes, {1}": "超过 {0} 字节，{1}",
    "not UTF-8 text (byte {0}): not a model yaml": "不是 UTF-8 文本（第 {0} 字节处）：不是模型 YAML 文件",
    "a recursive alias (an anchor used inside itself, line {0})": "含有递归别名（锚点在自身内部被引用，第 {0} 行）",
    "nested more than {0} levels deep (line {1})": "嵌套超过 {0} 层（第 {1} 行）",
    "expands to more than {0} values through its aliases (a model yaml holds a few thousand)":
        "经别名展开后超过 {0} 个值（模型 YAML 通常只有几千个）",
    "empty: it does not hold a mapping of settings": "文件为空：其中没有任何设置",
    "does not hold a mapping of settings": "内容不是键值形式的设置",
    "not valid yaml: {0}": "不是有效的 YAML：{0}",
    "nested too deeply to read": "嵌套过深，无法读取",
    "its !ref chain is nested too deeply": "其 !ref 引用链嵌套过深",
    "section {0} is missing or is not a !new: module": "缺少 {0} 部分，或它不是 !new: 模块",
    "{0} is {1}, but a {2} ({3}) model needs {4}; this model version is not supported":
        "{0} 为 {1}，但 {2}（{3}）模型需要 {4}；不支持此模型版本",
    # !ref expressions ("<file>: !ref '<expr>'" starts each of these; the generic prefix entry takes it)
    "!ref <{0}> names no top-level key": "!ref <{0}> 引用的顶层键不存在",
    "circular !ref <{0}>": "!ref <{0}> 形成循环引用",
    "!ref <{0}>: {1} has no {2}": "!ref <{0}>：{1} 中没有 {2}",
    "!ref {0} has no <key>": "!ref {0} 中没有 <键名>",
    "a !ref expression of {0} characters": "!ref 表达式长达 {0} 个字符",
    "cannot parse !ref {0}": "无法解析 !ref {0}",
    "a number of more than {0} bits (a model setting is far smaller)": "数值超过 {0} 位（模型设置远没有这么大）",
    "a string of more than {0} characters": "字符串超过 {0} 个字符",
    "builds a string of more than {0} characters": "生成的字符串超过 {0} 个字符",
    "arithmetic on a {0}, not a number": "对 {0} 做算术运算，它不是数字",
    "divides by zero": "除数为零",
    "cannot compute ({0})": "无法计算（{0}）",
    "a sign before a string": "字符串前不能有正负号",
    "unsupported expression (only numbers, <keys>, + - * / // % and parentheses)":
        "不支持的表达式（只能使用数字、<键名>、+ - * / // % 和括号）",
    # ---------------------------------------------------------------- model/config_values.py: every setting
    "{0} is {1}: it must be {2}": "{0} 为 {1}：应为{2}",
    "{0} is {1}: it must be {2} (CosyVoice works on {3}-bin mels)": "{0} 为 {1}：应为 {2}（CosyVoice 使用 {3} 维梅尔频谱）",
    # relations between settings, required settings and classes
    "{0}.output_size {1} is not a multiple of {2}.attention_heads {3}: each attention head takes an equal share "
    "of the width": "{0}.output_size（{1}）不是 {2}.attention_heads（{3}）的整数倍：每个注意力头平分宽度",
    "hift.sampling_rate is missing: the vocoder needs the sample rate": "缺少 hift.sampling_rate：声码器需要采样率",
    "hift.istft_params.{0} is missing": "缺少 hift.istft_params.{0}",
    "hift.{0} is missing: the vocoder's upsampling stages are read from it": "缺少 hift.{0}：声码器的上采样级数从这里读取",
    "hift.{0} has {1} entries but hift.{2} has {3}: they describe the same stages":
        "hift.{0} 有 {1} 项，而 hift.{2} 有 {3} 项：二者描述的是同一组级，项数应相同",
    "sample_rate is missing: the model's output rate is read from it": "缺少 sample_rate：模型的输出采样率从这里读取",
    "{0} is {1}, which CosyDesk does not implement (supported: {2})": "{0} 为 {1}，CosyDesk 未实现该类（支持：{2}）",
    "{0} is missing (a {1} model needs it)": "{0} 缺失（{1} 模型需要它）",
    "flow.decoder.estimator is {0}, but a {1} flow needs {2}": "flow.decoder.estimator 为 {0}，但 {1} 模型的 flow 需要 {2}",
    "{0}.input_size is missing": "{0}.input_size 缺失",
    "{0} has a key {1} that is not a name": "{0} 含有一个不是名称的键 {1}",
    # ---------------------------------------------------------------- model/hf_files.py: CosyVoice-BlankEN
    "the file is empty: it should hold {0} as JSON": "文件为空：应包含 JSON 格式的{0}",
    "not valid JSON ({0})": "不是有效的 JSON（{0}）",
    "nested too deeply to be {0}": "嵌套过深，不可能是{0}",
    "does not hold a JSON object of {0}": "内容不是{0}的 JSON 对象",
    "asks to run custom code from the model folder ({0}); CosyDesk never runs a model folder's code: use the "
    "released CosyVoice-BlankEN files": "要求运行模型文件夹中的自定义代码（{0}）；CosyDesk 从不运行模型文件夹里的代码："
                                        "请使用官方发布的 CosyVoice-BlankEN 文件",
    "{0} is missing: the Qwen2 backbone's size is read from it": "{0} 缺失：Qwen2 主干网络的尺寸从这里读取",
    "hidden_size {0} is not a multiple of num_attention_heads {1}": "hidden_size（{0}）不是 num_attention_heads（{1}）的整数倍",
    "num_attention_heads {0} is not a multiple of num_key_value_heads {1}":
        "num_attention_heads（{0}）不是 num_key_value_heads（{1}）的整数倍",
    "the vocabulary is empty": "词表为空",
    "token {0} has id {1}: ids are whole numbers from 0": "token {0} 的 id 为 {1}：id 应为从 0 起的整数",
    "not UTF-8 text (byte {0}): not a BPE merges file": "不是 UTF-8 文本（第 {0} 字节处）：不是 BPE 合并规则文件",
    "holds no merges (the file is empty)": "没有任何合并规则（文件为空）",
    "merge {0} is {1}: each line is two tokens separated by a space": "第 {0} 条合并规则为 {1}：每行应是以空格分隔的两个 token",
    'holds no tokenizer "model": not a Hugging Face tokenizer.json':
        '缺少分词器的 "model" 项：不是 Hugging Face 的 tokenizer.json',
    # ---------------------------------------------------------------- model/validate.py: the folder pass
    "holds more than {0} files: not a model folder": "包含超过 {0} 个文件：不是模型文件夹",
    "a symbolic link to {0}, which does not exist": "是指向 {0} 的符号链接，但目标不存在",
    "a symbolic link to {0}, outside the model folder; a model folder must hold its own files (copy the file in "
    "instead)": "是指向模型文件夹之外 {0} 的符号链接；模型文件夹必须包含自己的文件（请把该文件复制进来）",
    "missing: a v2/v3 model folder holds the CosyVoice-BlankEN folder (its config.json and text tokenizer)":
        "缺失：v2/v3 模型文件夹中应有 CosyVoice-BlankEN 文件夹（含 config.json 和文本分词器）",
    "missing: the Qwen2 backbone's sizes are read from it": "缺失：Qwen2 主干网络的尺寸从这里读取",
    "missing: the text tokenizer needs {0} (they come with the released model download)":
        "缺失：文本分词器需要 {0}（这些文件随官方发布的模型一起下载）",
    "the {0} section does not describe a network CosyDesk can build ({1}: {2})":
        "{0} 部分描述的网络 CosyDesk 无法构建（{1}：{2}）",
    "the {0} it describes has {1} parameters ({2} GB in float32), more than any CosyVoice model ({3}): a size in "
    "the yaml is wrong": "其描述的 {0} 网络有 {1} 个参数（float32 下 {2} GB），超过任何 CosyVoice 模型（{3}）："
                         "YAML 中的某个尺寸有误",
    "corrupt or not a speaker table ({0})": "文件已损坏，或不是说话人表（{0}）",
    "does not hold a speaker table (a dict of speakers)": "内容不是说话人表（以说话人名称为键的字典）",
    "does not hold a speaker table (dict of dicts)": "内容不是说话人表（由字典组成的字典）",
    "holds {0} speakers, more than {1}": "包含 {0} 个说话人，超过上限 {1}",
    "a speaker name {0} is not a name": "说话人名称 {0} 不是有效的名称",
    "speaker {0} is a {1}, not a table of tensors": "说话人 {0} 是 {1}，不是由张量组成的表",
    "speaker {0}: {1} is a {2}, not a tensor": "说话人 {0}：{1} 是 {2}，不是张量",
    "speaker {0}: {1} is a {2} tensor of shape {3}; a speaker vector is [1, {4}] floats":
        "说话人 {0}：{1} 是形状为 {3} 的 {2} 张量；说话人向量应为 [1, {4}] 的浮点数",
    "speaker {0}: {1} holds NaN/inf values: the file is damaged; download the model again":
        "说话人 {0}：{1} 含有 NaN/inf 值：文件已损坏，请重新下载模型",
    "speaker {0}: {1} is a {2} tensor of shape {3}; token ids are [1, N] integers":
        "说话人 {0}：{1} 是形状为 {3} 的 {2} 张量；token id 应为 [1, N] 的整数",
    "speaker {0}: {1} holds ids from {2} to {3}; this model's ids are 0..{4}":
        "说话人 {0}：{1} 中的 id 为 {2} 到 {3}；此模型的 id 范围是 0..{4}",
    "zero-shot speaker {0} has no {1} (a zero-shot entry holds {2})": "零样本说话人 {0} 缺少 {1}（零样本条目应包含 {2}）",
    "speaker {0}: 'prompt_speech_feat' is a {1} tensor of shape {2}; a prompt mel is [1, frames, 80] floats":
        "说话人 {0}：'prompt_speech_feat' 是形状为 {2} 的 {1} 张量；提示梅尔频谱应为 [1, 帧数, 80] 的浮点数",
    "speaker {0}: 'prompt_speech_feat' holds NaN/inf values": "说话人 {0}：'prompt_speech_feat' 含有 NaN/inf 值",
    "speaker {0} has no 'embedding' (an SFT speaker holds its [1, 192] speaker vector there)":
        "说话人 {0} 缺少 'embedding'（SFT 说话人的 [1, 192] 说话人向量存放在这里）",
    # ---------------------------------------------------------------- model/checkpoint.py: llm.pt / flow.pt / hift.pt
    "the checkpoint is missing": "检查点文件不存在",
    "corrupt or not a torch state dict ({0})": "文件已损坏，或不是 PyTorch 权重文件（{0}）",
    "does not hold a state dict of tensors": "内容不是由张量组成的权重字典",
    "missing key {0} (and {1} more) - the file does not match the model described by the yaml":
        "缺少键 {0}（另有 {1} 个）：该文件与 YAML 描述的模型不符",
    "unexpected key {0} (and {1} more) - the file does not match the model described by the yaml":
        "多出键 {0}（另有 {1} 个）：该文件与 YAML 描述的模型不符",
    "key {0} has shape {1}, the yaml's model needs {2}": "键 {0} 的形状为 {1}，而 YAML 描述的模型需要 {2}",
    "key {0} holds {1} values, the model needs {2} (a {3} tensor): the file is damaged or not a CosyVoice checkpoint":
        "键 {0} 的数据类型为 {1}，模型需要 {2}（{3} 张量）：文件已损坏或不是 CosyVoice 检查点",
    "missing key {0} - the file does not match the model described by the yaml": "缺少键 {0}：该文件与 YAML 描述的模型不符",
    "unexpected key {0} - the file does not match the model described by the yaml": "多出键 {0}：该文件与 YAML 描述的模型不符",
    "key {0} holds {1} values, the model needs {2} (a float tensor): the file is damaged or not a CosyVoice "
    "checkpoint": "键 {0} 的数据类型为 {1}，模型需要 {2}（浮点张量）：文件已损坏或不是 CosyVoice 检查点",
    "key {0} holds {1} values, the model needs {2} (a int tensor): the file is damaged or not a CosyVoice "
    "checkpoint": "键 {0} 的数据类型为 {1}，模型需要 {2}（整数张量）：文件已损坏或不是 CosyVoice 检查点",
    "key {0} holds {1} values, the model needs {2} (a bool tensor): the file is damaged or not a CosyVoice "
    "checkpoint": "键 {0} 的数据类型为 {1}，模型需要 {2}（布尔张量）：文件已损坏或不是 CosyVoice 检查点",
    "key {0} holds {1} values, the model needs {2} (a complex tensor): the file is damaged or not a CosyVoice "
    "checkpoint": "键 {0} 的数据类型为 {1}，模型需要 {2}（复数张量）：文件已损坏或不是 CosyVoice 检查点",
    "key {0} holds NaN or infinite values: the file is damaged; download the model again":
        "键 {0} 含有 NaN 或无穷大值：文件已损坏，请重新下载模型",
    # ---------------------------------------------------------------- model/ networks (built from the yaml)
    "unsupported pos_enc_layer_type {0} (only 'rel_pos_espnet')": "不支持的 pos_enc_layer_type {0}（仅支持 'rel_pos_espnet'）",
    "unsupported selfattention_layer_type {0}": "不支持的 selfattention_layer_type {0}",
    "macaron_style conformer layers are not supported": "不支持 macaron_style 的 Conformer 层",
    "conformer convolution modules are not supported": "不支持 Conformer 卷积模块",
    "global_cmvn is not supported": "不支持 global_cmvn",
    "llm_input_size {0} / llm_output_size {1} do not match the Qwen2 hidden_size {2} of {3}/config.json":
        "llm_input_size（{0}）/ llm_output_size（{1}）与 {3}/config.json 中 Qwen2 的 hidden_size（{2}）不一致",
    "text_encoder must be a ConformerEncoder": "text_encoder 必须是 ConformerEncoder",
    "llm must be a TransformerEncoder": "llm 必须是 TransformerEncoder",
    # ---------------------------------------------------------------- runtime/backends/tensorrt/
    "norm/softmax/reduction ops in fp16 would overflow: {0}": "归一化/softmax/归约运算在 fp16 下会溢出：{0}",
    "set_compute_capability({0}) was refused": "set_compute_capability({0}) 被拒绝",
    "{0} exceeds the engine's max shape {1}": "{0} 超出引擎的最大形状 {1}",
}

PHRASES: dict[str, str] = {
    # model/versions.py
    "unknown model version {0} (expected one of {1})": "未知的模型版本 {0}（应为以下之一：{1}）",
    # ---------------------------------------------------------------- model/config.py: reading the yaml
    "model folder {0} does not exist (not a CosyVoice model folder)": "模型文件夹 {0} 不存在（不是 CosyVoice 模型文件夹）",
    "{0} holds no cosyvoice.yaml, cosyvoice2.yaml or cosyvoice3.yaml: not a CosyVoice model folder":
        "{0} 中没有 cosyvoice.yaml、cosyvoice2.yaml 或 cosyvoice3.yaml：不是 CosyVoice 模型文件夹",
    "{0} has no argument {1}": "{0} 没有参数 {1}",
    "a model yaml is a few KB": "模型 YAML 文件通常只有几 KB",
    "too large for {0}": "作为{0}文件过大",
    # Python's own words inside the messages above
    "unsupported operand type(s) for {0}: {1} and {2}": "运算符 {0} 不支持 {1} 与 {2} 类型的操作数",
    "Exceeds the limit ({0} digits) for integer string conversion: value has {1} digits; "
    "use sys.set_int_max_str_digits() to increase the limit": "整数位数超过上限（{0} 位）：该值有 {1} 位",
    "Exceeds the limit ({0} digits) for integer string conversion; "
    "use sys.set_int_max_str_digits() to increase the limit": "整数位数超过上限（{0} 位）",
    "Too many levels of symbolic links": "符号链接层级过多",
    # PyYAML's parser messages (after "not valid yaml: ", whitespace joined; read_yaml parses a str, which PyYAML
    # names "<unicode string>"): a problem and where it is (line, column, and the line itself with a caret under
    # the spot; an empty line leaves only the caret), often after the context it was found in.
    'unacceptable character #x{0}: {1} in "<unicode string>", position {2}': "第 {2} 个字符处有不允许的字符 #x{0}：{1}",
    "special characters are not allowed": "不允许使用特殊字符",
    '{0} in "<unicode string>", line {1}, column {2}: {3} ^ {4} in "<unicode string>", line {5}, column {6}: {7} ^':
        "{0}（第 {1} 行第 {2} 列：“{3}”）：{4}（第 {5} 行第 {6} 列：“{7}”）",
    '{0} in "<unicode string>", line {1}, column {2}: {3} ^ {4} in "<unicode string>", line {5}, column {6}: ^':
        "{0}（第 {1} 行第 {2} 列：“{3}”）：{4}（第 {5} 行第 {6} 列）",
    '{0} in "<unicode string>", line {1}, column {2}: ^ {3} in "<unicode string>", line {4}, column {5}: {6} ^':
        "{0}（第 {1} 行第 {2} 列）：{3}（第 {4} 行第 {5} 列：“{6}”）",
    '{0} in "<unicode string>", line {1}, column {2}: ^ {3} in "<unicode string>", line {4}, column {5}: ^':
        "{0}（第 {1} 行第 {2} 列）：{3}（第 {4} 行第 {5} 列）",
    '{0} in "<unicode string>", line {1}, column {2}: {3} ^': "{0}（第 {1} 行第 {2} 列：“{3}”）",
    '{0} in "<unicode string>", line {1}, column {2}: ^': "{0}（第 {1} 行第 {2} 列）",
    "mapping values are not allowed here": "此处不允许出现映射值",
    "while scanning a simple key": "扫描简单键时",
    "could not find expected ':'": "找不到应有的 ':'",
    "while parsing a block mapping": "解析块映射时",
    "while parsing a block collection": "解析块序列时",
    "while parsing a flow mapping": "解析流式映射时",
    "while parsing a flow sequence": "解析流式序列时",
    "while scanning a quoted scalar": "扫描带引号的字符串时",
    "while scanning an alias": "扫描别名时",
    "while scanning an anchor": "扫描锚点时",
    "while scanning for the next token": "扫描下一个记号时",
    "while scanning for the next token found character {0} that cannot start any token":
        "扫描下一个记号时遇到不能作为记号开头的字符 {0}",
    "found character {0} that cannot start any token": "遇到不能作为记号开头的字符 {0}",
    "found unexpected end of stream": "意外到达文件末尾",
    "expected <block end>, but found {0}": "此处应结束当前块，却遇到 {0}",
    "expected ',' or '}', but got {0}": "应为 ',' 或 '}'，却遇到 {0}",
    "expected ',' or ']', but got {0}": "应为 ',' 或 ']'，却遇到 {0}",
    "expected alphabetic or numeric character, but found {0}": "应为字母或数字，却遇到 {0}",
    "found undefined alias {0}": "遇到未定义的别名 {0}",
    "found duplicate anchor {0}; first occurrence": "锚点 {0} 重复：第一次出现",
    "second occurrence": "第二次出现",
    "could not determine a constructor for the tag {0}": "无法识别标签 {0}",
    "while constructing a mapping": "构建映射时",
    "found unhashable key": "遇到不能作为键的值",
    # ONNX Runtime's message when a frontend network fails (frontend/prompt.py: "<file>: failed to run (Fail: …)")
    "[ONNXRuntimeError] : {0} : {1} : Non-zero status code returned while running {2} node. Name:{3} Status "
    "Message: {4}": "[ONNXRuntimeError] : {0} : {1} : 运行 {2} 节点时出错（节点名 {3}）：{4}",
    # ---------------------------------------------------------------- model/config_values.py: every setting
    "a number from {0} to {1} ({2})": "介于 {0} 到 {1} 之间的数（{2}）",
    "a whole number from {0} to {1} ({2})": "介于 {0} 到 {1} 之间的整数（{2}）",
    "a list of whole numbers from {0} to {1} ({2})": "由介于 {0} 到 {1} 之间的整数组成的列表（{2}）",
    "a whole number from {0} to {1}": "介于 {0} 到 {1} 之间的整数",
    "a positive number": "正数",
    "a mapping with n_fft and hop_len": "包含 n_fft 和 hop_len 的映射",
    "{0} (CosyVoice works on {1}-bin mels)": "{0}（CosyVoice 使用 {1} 维梅尔频谱）",
    # what each setting is (Rule.what)
    "a layer width": "层宽度",
    "layer widths": "各层宽度",
    "a head count": "注意力头数",
    "a layer count": "层数",
    "a vocabulary size": "词表大小",
    "kernel sizes": "卷积核大小",
    "samples per second": "每秒采样数",
    "speech tokens per second": "每秒语音 token 数",
    "mel frames per speech token": "每个语音 token 对应的梅尔帧数",
    "tokens of look-ahead": "前瞻 token 数",
    "frames per attention chunk": "每个注意力块的帧数",
    "-1 for all": "-1 表示全部",
    "harmonics of the source": "声源谐波数",
    "outputs of the f0 predictor": "基频预测器的输出数",
    "speakers": "说话人数",
    "the feed-forward width factor": "前馈层宽度倍数",
    "upsampling factors": "上采样倍数",
    "dilations": "膨胀系数",
    "resampling factors": "重采样倍数",
    "text / speech token counts": "文本 / 语音 token 数",
    "FFT points": "FFT 点数",
    "samples per hop": "每跳采样数",
    "a probability": "概率",
    "candidate tokens": "候选 token 数",
    "recent tokens": "最近 token 数",
    "a repetition ratio": "重复比例",
    "the sine amplitude": "正弦波幅度",
    "the noise amplitude": "噪声幅度",
    "a slope": "斜率",
    "the output clamp": "输出限幅",
    "the CFM noise floor": "CFM 噪声下限",
    "the guidance strength": "引导强度",
    "samples of look-ahead": "前瞻采样数",
    "tokens per streaming chunk": "每个流式块的 token 数",
    # ---------------------------------------------------------------- model/hf_files.py: CosyVoice-BlankEN
    "settings": "设置",
    "tokenizer settings": "分词器设置",
    "a Qwen2 config": "Qwen2 配置",
    "BPE merges": "BPE 合并规则",
    # Python's json module (inside "not valid JSON (…)")
    "Expecting value: line {0} column {1} (char {2})": "此处应为一个值（第 {0} 行第 {1} 列，第 {2} 个字符）",
    "Expecting property name enclosed in double quotes: line {0} column {1} (char {2})":
        "此处应为带双引号的属性名（第 {0} 行第 {1} 列，第 {2} 个字符）",
    "Expecting ',' delimiter: line {0} column {1} (char {2})": "此处应为 ',' 分隔符（第 {0} 行第 {1} 列，第 {2} 个字符）",
    "Expecting ':' delimiter: line {0} column {1} (char {2})": "此处应为 ':' 分隔符（第 {0} 行第 {1} 列，第 {2} 个字符）",
    "Unterminated string starting at: line {0} column {1} (char {2})":
        "字符串没有结束（起始于第 {0} 行第 {1} 列，第 {2} 个字符）",
    "Invalid control character at: line {0} column {1} (char {2})": "无效的控制字符（第 {0} 行第 {1} 列，第 {2} 个字符）",
    "Invalid \\escape: line {0} column {1} (char {2})": "无效的 \\ 转义（第 {0} 行第 {1} 列，第 {2} 个字符）",
    "Extra data: line {0} column {1} (char {2})": "多余的数据（第 {0} 行第 {1} 列，第 {2} 个字符）",
    "'{0}' codec can't decode byte {1} in position {2}: {3}": "第 {2} 个字节 {1} 无法按 {0} 解码：{3}",
    "invalid start byte": "无效的起始字节",
    "invalid continuation byte": "无效的后续字节",
    "unexpected end of data": "数据意外结束",
    # ---------------------------------------------------------------- model/ networks (built from the yaml)
    "attention width {0} is not a multiple of {1} heads": "注意力宽度 {0} 不是头数 {1} 的整数倍",
    "unsupported activation_type {0}": "不支持的 activation_type {0}",
    "unsupported input_layer {0} (only 'linear' and 'linear_legacy')":
        "不支持的 input_layer {0}（仅支持 'linear' 和 'linear_legacy'）",
    "UpsampleConformerEncoder: use_dynamic_chunk is not supported": "UpsampleConformerEncoder：不支持 use_dynamic_chunk",
    "look-ahead context of {0} frames, at most {1} allowed": "前瞻上下文有 {0} 帧，最多允许 {1} 帧",
    "unsupported flow model {0} (expected one of {1})": "不支持的 flow 模型 {0}（应为 {1} 之一）",
    "unsupported flow encoder {0}": "不支持的 flow 编码器 {0}",
    "unsupported flow estimator {0}": "不支持的 flow 估计器 {0}",
    "estimator act_fn {0} is not supported (only 'gelu' is used by CosyVoice)":
        "不支持估计器的 act_fn {0}（CosyVoice 只用 'gelu'）",
    "unsupported vocoder class {0}": "不支持的声码器类 {0}",
    "unsupported LLM sampling function {0} (only ras_sampling is implemented)": "不支持的 LLM 采样函数 {0}（仅实现了 ras_sampling）",
    "{0} is missing: the Qwen2 backbone architecture is read from it": "{0} 缺失：Qwen2 主干网络结构从这里读取",
    "{0} is not a readable Qwen2 config ({1})": "{0} 不是可读取的 Qwen2 配置（{1}）",
    "Qwen2 backbone has unexpected non-persistent buffers {0}": "Qwen2 主干网络含有意外的非持久缓冲区 {0}",
    "llm class {0} is not a Qwen2-based CosyVoice LM": "llm 类 {0} 不是基于 Qwen2 的 CosyVoice 语言模型",
    "llm is {0}, not {1}": "llm 为 {0}，而不是 {1}",
    "{0}.llm is {1}, expected Qwen2Encoder": "{0}.llm 为 {1}，应为 Qwen2Encoder",
    # ---------------------------------------------------------------- model/ at synthesis time
    "flow inference takes one utterance at a time (batch 1)": "flow 推理一次只能处理一条语音（批大小为 1）",
    "CausalMaskedDiffWithDiT.inference takes one utterance (batch 1)":
        "CausalMaskedDiffWithDiT.inference 一次只能处理一条语音（批大小为 1）",
    "utterance of {0} mel frames exceeds {1}": "语音长 {0} 个梅尔帧，超过上限 {1}",
    "utterance of {0} mel frames exceeds the {1}-frame noise": "语音长 {0} 个梅尔帧，超过 {1} 帧的固定噪声",
    "this flow stream state already ran its final call: make a new one per request":
        "该 flow 流式状态已执行过最后一次调用：每个请求需新建一个",
    "a flow stream state was continued with another prompt or speaker embedding": "flow 流式状态续接时换用了另一段提示或说话人嵌入",
    "a flow stream state was continued with tokens that do not extend the previous call's":
        "flow 流式状态续接时的 token 不是上一次调用的延续",
    "a flow stream state only serves streaming calls (the full-attention call recomputes)":
        "flow 流式状态只用于流式调用（全注意力调用会重新计算）",
    "streaming call with {0} tokens after one that committed {1}": "流式调用只有 {0} 个 token，而上一次已提交 {1} 个",
    "commit boundary lies {0} frames before the call's first frame": "提交边界位于本次调用首帧之前 {0} 帧",
    "a streaming call visited a different number of causal layers than the cache holds": "流式调用经过的因果层数与缓存中的层数不同",
    "cache_source has {0} samples, longer than the {1} generated": "cache_source 有 {0} 个采样点，多于生成的 {1} 个",
    "expected rand_ini [1, {0}] and sine_waves [1, L, {1}]": "rand_ini 应为 [1, {0}]，sine_waves 应为 [1, L, {1}]",
    "the v3 vocoder's fixed noise covers {0} samples, {1} were requested": "v3 声码器的固定噪声只覆盖 {0} 个采样点，但请求了 {1} 个",
    "internal: the phase carry does not match the window plan": "内部错误：相位延续与窗口规划不一致",
    "internal: the phase carry lies outside the vocoded window": "内部错误：相位延续位于已合成的窗口之外",
    "teacher_forced_logits needs at least one forced token": "teacher_forced_logits 至少需要一个强制 token",
    # ---------------------------------------------------------------- runtime/backends/tensorrt/
    "the tensorrt backend needs an NVIDIA GPU visible to cuda-python; none was found (install the CUDA bindings "
    "with `pip install cuda-python`, run `cosydesk doctor`)":
        "tensorrt 后端需要 cuda-python 能识别的 NVIDIA GPU，但没有找到（请用 `pip install cuda-python` 安装 CUDA 绑定，"
        "并运行 `cosydesk doctor` 检查）",
    "no TensorRT flavour supports this GPU (compute capability {0}.{1}); use --backend cudagraph":
        "没有哪种 TensorRT 支持这块 GPU（计算能力 {0}.{1}）；请使用 --backend cudagraph",
    "TensorRT is not installed for this GPU (compute capability {0}.{1}): install {2}; `cosydesk doctor` checks "
    "the result": "尚未为这块 GPU（计算能力 {0}.{1}）安装 TensorRT：请安装 {2}；可用 `cosydesk doctor` 检查结果",
    "`{0}` or `{1}`": "`{0}` 或 `{1}`",
    'pip install "cosydesk[tensorrt-rtx]"  (or from a checkout: pip install -e ".[tensorrt-rtx]")':
        'pip install "cosydesk[tensorrt-rtx]"（从源码目录安装：pip install -e ".[tensorrt-rtx]"）',
    "the tensorrt backend is missing a package ({0}): {1} or {2}": "tensorrt 后端缺少软件包（{0}）：请安装 {1} 或 {2}",
    "No module named {0}": "找不到模块 {0}",
    "the rebuilt TensorRT engine {0} still fails to load: {1}": "重新构建的 TensorRT 引擎 {0} 仍无法加载：{1}",
    "estimator input {0} is outside the engine profile and no torch fallback is kept":
        "估计器输入 {0} 超出引擎优化配置的范围，且没有保留 PyTorch 后备",
    "unreachable": "内部错误：执行到了不可达的代码",
    "{0} could not parse {1}: {2}": "{0} 无法解析 {1}：{2}",
    "{0} is not a readable ONNX file: {1}": "{0} 不是可读取的 ONNX 文件：{1}",
    "{0} is an {1} graph, but a {2} engine was requested": "{0} 是 {1} 计算图，但请求构建的是 {2} 引擎",
    "profile has no shapes for inputs {0}": "优化配置中缺少输入 {0} 的形状",
    "progress callback failed: {0}": "进度回调失败：{0}",
    "engine build cancelled": "引擎构建已取消",
    "{0} failed to build an engine from {1} (see TensorRT log)": "{0} 无法从 {1} 构建引擎（详见 TensorRT 日志）",
    "engine build for {0} returned no bytes": "{0} 的引擎构建没有返回任何数据",
    "no TensorRT export for {0} yet (v3 HiFT stays in torch)": "{0} 暂不支持导出到 TensorRT（v3 的 HiFT 仍由 PyTorch 运行）",
    "unknown TensorRT flavour {0}": "未知的 TensorRT 类型 {0}",
    "unknown TensorRT flavour {0}; expected one of {1}": "未知的 TensorRT 类型 {0}；应为 {1} 之一",
    "TensorRT (tensorrt) needs an NVIDIA GPU to build engines; none was found":
        "TensorRT（tensorrt）需要 NVIDIA GPU 才能构建引擎，但没有找到",
    "TensorRT builds for the local GPU ({0}), not {1}": "TensorRT 只能为本机 GPU（{0}）构建引擎，不能为 {1} 构建",
    "{0} cannot build for compute capability {1}.{2}": "{0} 无法为计算能力 {1}.{2} 构建引擎",
    "precision must be one of {0}, not {1}": "精度必须是 {0} 之一，而不是 {1}",
    "fp16 export left sensitive ops in fp16: {0}": "fp16 导出后仍有敏感运算处于 fp16：{0}",
    "extra outputs are not supported by the fp32 pass": "fp32 处理不支持额外输出",
    "{0} failed: {1} ({2})": "{0} 失败：{1}（{2}）",
    "{0} could not deserialize the engine (corrupt, foreign or unsupported GPU)":
        "{0} 无法反序列化引擎（文件损坏、来自其他环境，或 GPU 不受支持）",
    "create_execution_context returned None": "create_execution_context 返回了 None",
    "execute_async_v3 failed (see TensorRT log)": "execute_async_v3 执行失败（详见 TensorRT 日志）",
    "shape {0} for {1} is outside the engine profile": "{1} 的形状 {0} 超出引擎优化配置的范围",
}


def _after_a_file(template: str) -> str:
    """``template`` (fields {0}, {1}, …) as the tail of "<file>: <message>": {0} is the file, its fields from {1}."""
    return re.sub(r"\{(\d+)\}", lambda match: "{%d}" % (int(match.group(1)) + 1), template)


ZH_CN: dict[str, str] = {
    **PHRASES,
    **FILE_MESSAGES,
    # one starting with a field is left alone: its lazy {0} would end at the first ": " of "Cannot load <folder>: "
    **{"{0}: " + _after_a_file(english): "{0}：" + _after_a_file(chinese)
       for english, chinese in FILE_MESSAGES.items() if not english.startswith("{")},
}
