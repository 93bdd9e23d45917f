#pragma once
// `gwb figure` inside another program (the Python package's gwb.figure): std-only, so that a
// caller that must not see Qt headers can draw. The figure library alone: no window, no gwb program.

#include <string>
#include <vector>

namespace gwb::app {

struct FigureCommandResult {
    int status = 1;  ///< the command's exit status (0 = the files were written)
    std::string out; ///< what it printed on standard output ("wrote FILE, ...")
    std::string err; ///< notes and the error message
};

/// Runs `gwb figure` with `args` (its options, without "figure") in this process. Makes an
/// offscreen QGuiApplication when the process has no Qt application (call from one thread; Qt's
/// drawing objects belong to it); refuses, in `err`, a process whose Qt application has no GUI.
FigureCommandResult runFigureInProcess(const std::vector<std::string>& args);

} // namespace gwb::app
