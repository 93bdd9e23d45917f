#pragma once
// How the views and figures read a Run's data (gwb::engine::WorkbenchData, the engine's std-only
// type): token pieces on screen, axis labels, the analysis parts still being computed.

#include "gwb/engine/workbench_data.h"

#include <QString>
#include <QStringList>

#include <memory>

namespace gwb::views {

using gwb::engine::AnalysisPtr;
using gwb::engine::TracePtr;

/// What the views draw (the engine's type: traces and analyses of both models on one prompt).
using gwb::engine::WorkbenchData;

/// How a token piece reads on screen, in figures and in the command line's summaries (one rule for
/// every front end, stated in the Views Guide): SentencePiece's word-start mark U+2581 is a middle
/// dot ("▁the" reads "·the"; the low bar read as '_', and turned upright as a stray tick); a byte
/// piece "<0x31>" is its character ("1"), "<0x0A>" a return sign (⏎), "<0x09>" a tab sign (⇥).
/// The exported data and Python keep the piece itself, and tooltips name the byte.
QString displayPiece(const QString& piece);
/// The byte of a byte piece "<0xHH>", or -1 for any other piece.
int bytePieceValue(const QString& piece);

/// The parts among `parts` that the Grassmann analysis lacks, by name ("read-out planes, angles
/// between layers"), while the window completes it; "" when none (or there is no analysis).
QString pendingAnalysisParts(const WorkbenchData& data, unsigned parts = gwb::engine::kAnalysisAll);

/// Token texts of a trace as Qt strings (axis labels).
QStringList tokenLabels(const gwb::engine::Trace& trace);
/// "L0", "L1", ... for n layers.
QStringList layerLabels(int64_t n);

} // namespace gwb::views
