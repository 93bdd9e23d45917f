#pragma once
// A prompt read from a file: one rule for File ▸ Open Prompt File, `gwb figure --prompt-file` and
// `gwb trace --prompt-file`, so that the same file gives the same tokens everywhere.
// Std-only.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace gwb::engine {

/// The rule, in the words `--help` and the docs use.
inline constexpr const char* kPromptFileRule =
    "UTF-8 text; one line end at the very end of the file (which editors add) is not part of the prompt";

/// Largest prompt file read (bytes): far beyond any model's context, small enough to refuse a
/// file opened by mistake.
inline constexpr int64_t kMaxPromptFileBytes = int64_t{16} << 20;

/// The prompt a file's bytes hold: the bytes as they are, less one final "\n" or "\r\n" (an
/// editor's end of the last line). Only that one is dropped: a prompt meant to end in a line
/// break is written with a blank line after it.
std::string promptFromFileBytes(std::string_view bytes);

/// Reads the prompt file at `path` by the rule above. Throws std::runtime_error naming the file
/// when it cannot be opened or is larger than kMaxPromptFileBytes, and std::invalid_argument
/// naming the file when it is not UTF-8 text.
std::string readPromptFile(const std::string& path);

/// The prompts of a file that holds one a line (`gwb trace --prompt-file`): the file read by the
/// rule above, cut at each "\n" (a "\r" before it dropped), empty lines skipped.
std::vector<std::string> promptFileLines(const std::string& path);

} // namespace gwb::engine
