#pragma once
// Finding a Python interpreter for the tests that compare with Python (PyTorch parity, the
// WordPiece reference). Tests skip with a message when none is usable.

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>

namespace gwb::engine::test {

/// Runs a shell command quietly; true on exit status 0.
inline bool runQuiet(const std::string& command) {
    return std::system((command + " > /dev/null 2>&1").c_str()) == 0;
}

/// $GWB_PYTHON, /usr/bin/python3 (Debian's python3-torch lives there) or python3 on PATH,
/// the first that can `import <module>` (empty module: any Python 3).
inline std::optional<std::string> findPython(const std::string& module = "") {
    std::string candidates[3] = {std::getenv("GWB_PYTHON") ? std::getenv("GWB_PYTHON") : "", "/usr/bin/python3",
                                 "python3"};
    for (const std::string& py : candidates) {
        if (py.empty()) continue;
        // find_spec does not import the module: probing for torch costs milliseconds, not seconds.
        const std::string probe = module.empty() ? "import json"
                                                 : "import importlib.util, sys; sys.exit(importlib.util.find_spec(\"" +
                                                       module + "\") is None)";
        if (runQuiet("'" + py + "' -c '" + probe + "'")) return py;
    }
    return std::nullopt;
}

/// Runs `python script in out` (tests/python/<script>), its output into `log`; "" on success, else
/// what the script printed (for the test's failure message).
inline std::string runPythonScript(const std::string& python, const std::string& script, const std::string& in,
                                   const std::string& out, const std::string& log) {
    const std::string command = "'" + python + "' '" GWB_SOURCE_DIR "/tests/python/" + script + "' '" + in + "' '" +
                                out + "' > '" + log + "' 2>&1";
    if (std::system(command.c_str()) == 0) return {};
    std::ifstream l(log);
    const std::string text(std::istreambuf_iterator<char>(l), {});
    return script + " failed:\n" + (text.empty() ? std::string("(no output)") : text);
}

/// The JSON form: writes `requests` to <folder>/requests.json, runs the script on it and reads
/// <folder>/out.json into `out`; "" on success, else what runPythonScript says.
inline std::string runPythonJson(const std::string& python, const std::string& script, const nlohmann::json& requests,
                                 const std::string& folder, nlohmann::json& out) {
    const std::string in = folder + "/requests.json", result = folder + "/out.json", log = folder + "/py.log";
    std::ofstream(in) << requests.dump();
    if (std::string failed = runPythonScript(python, script, in, result, log); !failed.empty()) return failed;
    std::ifstream(result) >> out;
    return {};
}

} // namespace gwb::engine::test
