#pragma once
// What a process that runs gwb's Qt code sets up first: the gwb program's main() and Python's
// in-process figures (app/figure/figure_command.cpp) call these before their Qt application.

namespace gwb::app {

/// The runtime folder Qt wants: Qt warns "QStandardPaths: XDG_RUNTIME_DIR not set" when the
/// variable is unset (batch jobs, containers, ssh without a session) and then uses
/// /tmp/runtime-$USER itself; setting that folder up front, as Qt would, keeps the warning from
/// burying real messages.
/// Sets XDG_RUNTIME_DIR to /tmp/runtime-<uid> (made 0700 if missing) when it is unset and that
/// folder is this user's and private; otherwise leaves it (Qt then says what is wrong).
void ensureRuntimeDir();

/// With SOURCE_DATE_EPOCH set (the reproducible-builds convention), Qt's hash seed is made
/// deterministic, so that a PDF embeds its fonts in the same order each run (with the creation
/// date from SOURCE_DATE_EPOCH, figure_export.cpp) and a script that rebuilds figures gets the
/// same files. Call before Qt makes its first hash.
void seedHashesWhenReproducible();

} // namespace gwb::app
