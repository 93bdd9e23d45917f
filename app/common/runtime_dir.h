#pragma once
// The runtime folder Qt wants (XDG_RUNTIME_DIR), for the gwb program and for Python's in-process
// figures: Qt warns "QStandardPaths: XDG_RUNTIME_DIR not set" when the variable is unset (batch
// jobs, containers, ssh without a session) and then uses /tmp/runtime-$USER itself. Setting that
// folder up front, as Qt would, keeps the warning from burying real messages.

namespace gwb::app {

/// Sets XDG_RUNTIME_DIR to /tmp/runtime-<uid> (made 0700 if missing) when it is unset and that
/// folder is this user's and private; otherwise leaves it (Qt then says what is wrong).
void ensureRuntimeDir();

} // namespace gwb::app
