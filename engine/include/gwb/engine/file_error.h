#pragma once
// A file the engine could not write (or read): which file, and the system's reason as an errno
// value, so that a front end can say it in its own terms. Std-only, header-only (the Torch-free
// trace library throws it too).
//
// It is a std::runtime_error whose message names the file the caller asked for, never a temporary
// one ("cannot write 'out.npz': the folder 'ro' is not writable (Permission denied)"), so code that
// catches std::runtime_error is unchanged. The Python package raises it as the OSError subclass of
// its errno (PermissionError, FileNotFoundError, ...), as its own checks of an output path do.

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <system_error>
#include <utility>

namespace gwb::engine {

struct FileError : std::runtime_error {
    FileError(std::string path_, int errorNumber_, const std::string& message)
        : std::runtime_error(message), path(std::move(path_)), errorNumber(errorNumber_) {}
    std::string path; ///< the file the caller named
    int errorNumber;  ///< errno of the failure (EACCES, ENOENT, ENOSPC, ...)
};

/// FileError "cannot write '<path>': <why>" for a failure with errno `error` while writing `path`:
/// a missing folder, a folder in the file's place and a read-only folder are named as such (with
/// their errno: ENOENT, ENOTDIR, EISDIR), anything else in the system's words.
inline FileError fileWriteError(const std::string& path, int error) {
    namespace fs = std::filesystem;
    std::error_code ec;
    const fs::path target(path);
    const fs::path folder = target.has_parent_path() ? target.parent_path() : fs::path(".");
    std::string why;
    if (!fs::exists(folder, ec)) {
        why = "the folder '" + folder.string() + "' does not exist";
        error = ENOENT;
    } else if (!fs::is_directory(folder, ec)) {
        why = "'" + folder.string() + "' is not a folder";
        error = ENOTDIR;
    } else if (fs::is_directory(target, ec)) {
        why = "it is a folder";
        error = EISDIR;
    } else if (error == EACCES || error == EPERM || error == EROFS)
        why = "the folder '" + folder.string() + "' is not writable (" + std::strerror(error) + ")";
    else
        why = std::strerror(error);
    return FileError(path, error, "cannot write '" + path + "': " + why);
}

} // namespace gwb::engine
