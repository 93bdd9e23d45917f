#pragma once
// `gwb patch --pairs FILE` and `gwb patch merge` on the command line. The computation, the file
// and the merge are the engine's (gwb/engine/patch_pairs_run.h), shared with the window and Python.

#include "gwb/engine/patch_pairs_run.h"

#include <QString>
#include <QStringList>

#include <cstdint>

namespace gwb::app {

/// What `gwb patch --pairs` runs: the engine's options and the command line's own.
struct PairsCliOptions {
    gwb::engine::PairsRunOptions run;
    QString out;  ///< NPZ
    QString data; ///< tidy CSV, or ""
    QString device;
};

/// Runs it, prints the summary, writes the files; returns the exit status (0, or 130 / 143 when
/// Ctrl-C / SIGTERM stopped it after some pairs: those are written, marked incomplete). Throws
/// std::exception with a message for a person (nothing is written then).
int runPatchPairs(const PairsCliOptions& options);

/// `gwb patch merge A.npz B.npz ... --out D.npz`: the shards of one pairs run as one file (a pair
/// in two shards is an error; the result is complete when every usable pair is in).
int runPatchMerge(const QStringList& inputs, const QString& out, int bootstrap, uint64_t seed, bool seedSet,
                  bool bootstrapSet);

} // namespace gwb::app
