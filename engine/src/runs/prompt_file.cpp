// A prompt read from a file by one rule (gwb/engine/prompt_file.h).

#include "gwb/engine/prompt_file.h"

#include "gwb/engine/tokenizer.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>

namespace gwb::engine {

std::string promptFromFileBytes(std::string_view bytes) {
    if (bytes.ends_with("\r\n"))
        bytes.remove_suffix(2);
    else if (bytes.ends_with('\n'))
        bytes.remove_suffix(1);
    return std::string(bytes);
}

std::string readPromptFile(const std::string& path) {
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec))
        throw std::runtime_error("cannot open prompt file '" + path + "': it is a folder");
    std::ifstream in(path, std::ios::binary | std::ios::ate);
    if (!in) throw std::runtime_error("cannot open prompt file '" + path + "': " + std::strerror(errno));
    const std::streamoff size = in.tellg();
    if (size > kMaxPromptFileBytes)
        throw std::runtime_error("prompt file '" + path + "' is larger than " +
                                 std::to_string(kMaxPromptFileBytes >> 20) + " MiB");
    in.seekg(0);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (in.bad()) throw std::runtime_error("cannot read prompt file '" + path + "'");
    try {
        checkUtf8(bytes);
    } catch (const std::invalid_argument& e) {
        throw std::invalid_argument("prompt file '" + path + "' is not UTF-8 text: " + e.what());
    }
    return promptFromFileBytes(bytes);
}

std::vector<std::string> promptFileLines(const std::string& path) {
    const std::string text = readPromptFile(path);
    std::vector<std::string> out;
    size_t begin = 0;
    while (begin <= text.size()) {
        size_t end = text.find('\n', begin);
        if (end == std::string::npos) end = text.size();
        std::string line = text.substr(begin, end - begin);
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (!line.empty()) out.push_back(std::move(line));
        begin = end + 1;
    }
    return out;
}

} // namespace gwb::engine
