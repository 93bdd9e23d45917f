#pragma once
// What the views draw: the traces and analyses of both models on one prompt. Either model may be
// missing; views then show a "run a prompt" message.

#include "gwb/engine/analysis.h"
#include "gwb/engine/corpus_stats.h"
#include "gwb/engine/trace.h"

#include <QString>
#include <QStringList>

#include <memory>

namespace gwb::views {

using gwb::engine::AnalysisPtr;
using gwb::engine::TracePtr;

struct WorkbenchData {
    TracePtr grassmann;            ///< trace of the Grassmann model (may be null)
    AnalysisPtr grassmannAnalysis; ///< analyzeTrace(*grassmann) (may be null while computing)
    TracePtr baseline;             ///< trace of the Transformer baseline (may be null)
    AnalysisPtr baselineAnalysis;  ///< analyzeTrace(*baseline)
    /// Corpus statistics (gwb stats, File > Open Statistics, Run > Corpus) for the Corpus view;
    /// independent of the prompt (may be null).
    std::shared_ptr<const gwb::engine::CorpusStats> corpus;
    QString corpusPath; ///< the statistics file they were read from ("" = not from a file)

    bool hasGrassmann() const { return grassmann != nullptr; }
    bool hasBaseline() const { return baseline != nullptr; }
    /// The trace whose tokens label the axes: the Grassmann one when present, else the baseline's.
    TracePtr primary() const { return grassmann ? grassmann : baseline; }
    int64_t tokenCount() const;  ///< T of primary(), 0 without data
    int64_t layerCount() const;  ///< max N of both traces
    int64_t headCount() const;   ///< heads of the baseline's attention layers (0 without baseline)
    int64_t offsetCount() const; ///< max number of offsets over the Grassmann layers
    QString prompt() const;      ///< the traced prompt text
};

/// Token texts of a trace as Qt strings (axis labels).
QStringList tokenLabels(const gwb::engine::Trace& trace);
/// "L0", "L1", ... for n layers.
QStringList layerLabels(int64_t n);

} // namespace gwb::views
