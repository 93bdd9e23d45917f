#pragma once
// Finding a Python interpreter for the tests that compare with Python (PyTorch parity, the
// WordPiece reference). Tests skip with a message when none is usable.

#include <cstdlib>
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

} // namespace gwb::engine::test
