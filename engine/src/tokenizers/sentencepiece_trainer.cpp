// SentencePiece training through the `spm_train` program (see sentencepiece_tokenizer.cpp for
// why libsentencepiece is not linked into the engine).

#include "gwb/engine/tokenizer.h"

#include "formats/file_util.h"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <fcntl.h>
#include <filesystem>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace gwb::engine {

namespace {

/// Runs argv[0] (looked up in PATH) with stdout and stderr into `logPath`; returns the exit status.
int runProgram(const std::vector<std::string>& argv, const std::string& logPath) {
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, logPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    std::vector<char*> args;
    for (const auto& a : argv)
        args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    pid_t pid = 0;
    const int rc = posix_spawnp(&pid, argv[0].c_str(), &actions, nullptr, args.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) return -1;
    int status = 0;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

} // namespace

std::string trainSentencePiece(const SentencePieceTrainOptions& o) {
    namespace fs = std::filesystem;
    if (o.inputs.empty()) throw std::invalid_argument("tokenizer training needs at least one input file");
    if (o.vocabSize < 262)
        throw std::invalid_argument("vocab size must be >= 262 (256 byte pieces, 3 specials, some text)");
    if (o.modelType != "unigram" && o.modelType != "bpe")
        throw std::invalid_argument("model type must be unigram or bpe (got '" + o.modelType + "')");
    std::string inputs;
    for (const auto& f : o.inputs) {
        if (f.find(',') != std::string::npos)
            throw std::invalid_argument("input file names must not contain ',' (" + f + ")");
        if (!fs::exists(f)) throw std::invalid_argument("input file " + f + " does not exist");
        inputs += (inputs.empty() ? "" : ",") + f;
    }
    std::string tmpl = (fs::temp_directory_path() / "gwb-spm-XXXXXX").string();
    if (!mkdtemp(tmpl.data())) throw std::runtime_error("cannot create a temporary folder for spm_train");
    const fs::path dir(tmpl);
    const int threads = o.threads > 0 ? o.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    const std::vector<std::string> argv = {
        "spm_train",
        "--input=" + inputs,
        "--model_prefix=" + (dir / "sp").string(),
        "--vocab_size=" + std::to_string(o.vocabSize),
        "--model_type=" + o.modelType,
        "--character_coverage=" + std::to_string(o.characterCoverage),
        "--byte_fallback=true",
        // Identity normalization keeps piece spans in original bytes and makes decode exact.
        "--normalization_rule_name=identity",
        "--remove_extra_whitespaces=false",
        "--split_digits=true",
        "--input_sentence_size=" + std::to_string(o.inputSentenceSize),
        "--shuffle_input_sentence=true",
        "--random_seed=" + std::to_string(o.seed),
        "--num_threads=" + std::to_string(threads),
        "--minloglevel=1",
    };
    const std::string log = (dir / "spm_train.log").string();
    const int rc = runProgram(argv, log);
    std::string proto;
    try {
        if (rc != 0) {
            std::string text = fs::exists(log) ? readFileBytes(log) : std::string();
            if (text.size() > 2000) text = "..." + text.substr(text.size() - 2000);
            throw std::runtime_error(
                rc < 0 ? std::string("cannot run spm_train (install the Debian package sentencepiece)")
                       : "spm_train failed with status " + std::to_string(rc) + ":\n" + text);
        }
        proto = readFileBytes((dir / "sp.model").string());
    } catch (...) {
        std::error_code ec;
        fs::remove_all(dir, ec);
        throw;
    }
    std::error_code ec;
    fs::remove_all(dir, ec);
    return proto;
}

} // namespace gwb::engine
