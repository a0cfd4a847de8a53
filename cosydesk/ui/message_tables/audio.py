"""zh_CN for the messages of cosydesk/audio: playback, recording, export, subtitles, voice profiles."""

ZH_CN: dict[str, str] = {
    # audio/player.py
    "PortAudio is not installed (Debian/Ubuntu: apt install libportaudio2); audio playback is off":
        "未安装 PortAudio（Debian/Ubuntu：apt install libportaudio2）；音频播放已关闭",
    "audio output is not consuming samples (device stalled?)": "音频输出没有在消耗采样（设备卡住了？）",
    "no audio output device found (no sound card, or PulseAudio/PipeWire not running); synthesis still works and "
    "can be exported": "找不到音频输出设备（没有声卡，或 PulseAudio/PipeWire 未运行）；仍可合成语音并导出",
    "cannot open audio output on {0} at {1} Hz: {2}": "无法打开音频输出（{0}，{1} Hz）：{2}",
    "default device": "默认设备",
    "device {0}": "设备 {0}",
    # audio/recorder.py
    "cannot record at {0} Hz: choose {1}-{2} Hz": "无法以 {0} Hz 录音：请选择 {1}-{2} Hz",
    "cannot record {0} s: a voice prompt is at most {1} s": "无法录制 {0} 秒：语音提示最长 {1} 秒",
    "cannot open the microphone: {0}": "无法打开麦克风：{0}",
    # audio/export.py
    "cannot export {0}: use one of {1}": "无法导出 {0}：请使用以下格式之一：{1}",
    "cannot export {0}: sample rate {1} is not positive": "无法导出 {0}：采样率 {1} 不是正数",
    "cannot export {0}: folder {1} does not exist": "无法导出 {0}：文件夹 {1} 不存在",
    "not enough disk space to write {0}; nothing was written": "磁盘空间不足，无法写入 {0}；未写入任何内容",
    "{0} would be larger than this system's file-size limit allows; nothing was written (export a shorter part, "
    "or raise the limit: ulimit -f)": "{0} 将超出本系统的文件大小上限；未写入任何内容（请导出较短的部分，或调高上限：ulimit -f）",
    "cannot write into {0}: the folder is read-only or not yours; nothing was written (choose another folder)":
        "无法写入 {0}：该文件夹只读或不属于你；未写入任何内容（请选择其他文件夹）",
    "could not write {0}: {1}; nothing was written": "无法写入 {0}：{1}；未写入任何内容",
    "the system accepted no more bytes": "系统不再接受写入",
    # audio/subtitles.py
    "cannot write subtitles to {0}: use a name ending in .srt or .vtt": "无法将字幕写入 {0}：请使用以 .srt 或 .vtt 结尾的文件名",
    "cannot write {0}: folder {1} does not exist": "无法写入 {0}：文件夹 {1} 不存在",
    # audio/profiles.py: reading and checking a recording
    "{0} does not exist": "{0} 不存在",
    "{0} is a folder, not a recording: pick an audio file (WAV, FLAC or OGG)":
        "{0} 是文件夹，不是录音：请选择音频文件（WAV、FLAC 或 OGG）",
    "{0} is not an audio file that can be read (WAV, FLAC or OGG): {1}": "{0} 不是可读取的音频文件（WAV、FLAC 或 OGG）：{1}",
    # soundfile / libsndfile's own text inside the message above (a text file, an empty or cut-off recording)
    "Error opening {0}: {1}": "无法打开 {0}：{1}",
    "Format not recognised.": "无法识别文件格式。",
    "File contains data in an unknown format.": "文件中的数据格式未知。",
    "Supported file format but file is malformed.": "文件格式受支持，但文件已损坏。",
    "Error in WAV file. No 'data' chunk marker.": "WAV 文件有误：缺少 'data' 数据块。",
    "Error in WAV file. No 'fmt ' chunk marker.": "WAV 文件有误：缺少 'fmt ' 数据块。",
    "Unspecified internal error.": "未知的内部错误。",
    "System error.": "系统错误。",
    "File does not exist or is not a regular file (possibly a pipe?).": "文件不存在，或不是普通文件（可能是管道？）。",
    "{0} has {1} channels; they were mixed down to mono": "{0} 有 {1} 个声道，已混合为单声道",
    "sample rate {0} Hz is too low: record at {1} kHz or more": "采样率 {0} Hz 过低：请以 {1} kHz 或更高录音",
    "too short ({0} s): use {1}–{2} s of clear speech": "太短（{0} 秒）：请使用 {1}–{2} 秒清晰的语音",
    "too long ({0} s): at most {1} s are used; trim it to one or two sentences":
        "太长（{0} 秒）：最多只用 {1} 秒；请剪到一两句话",
    "the audio holds invalid (NaN/inf) samples": "音频含有无效（NaN/inf）采样",
    "the recording is silent: check the microphone or pick another file": "录音没有声音：请检查麦克风，或换一个文件",
    "almost silent: speech in only {0} of the recording": "几乎没有声音：只有 {0} 的录音含有语音",
    "{0} of the samples are clipped; the cloned voice may sound distorted": "{0} 的采样已削波；克隆的声音可能失真",
    # audio/profiles.py: the profile store
    "give the voice a name": "请为音色命名",
    "a voice called {0} exists already": "已有名为 {0} 的音色",
    "there is no voice profile called {0}": "没有名为 {0} 的音色档案",
    "the name is {0} characters long; use at most 200": "名称长 {0} 个字符；最多 200 个",
    "voice profiles cannot be saved: {0}": "无法保存音色档案：{0}",
    "voice profiles are off for this session: {0} cannot be made a folder ({1})":
        "本次运行已关闭音色档案：无法将 {0} 创建为文件夹（{1}）",
    "it holds a {0}, not an object": "其内容是 {0}，而不是对象",
    "it has no {0}": "缺少 {0}",
    "its {0} is {1}": "其 {0} 为 {1}",
    "it leads outside its folder": "它指向了所在文件夹之外",
}
