#include "gwb/engine/causal_results.h"

#include "gwb/engine/sites.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

namespace gwb::engine {

namespace {

/// labels[i], or "" past the end (as a QStringList's value(i)).
std::string labelAt(const std::vector<std::string>& labels, int64_t i) {
    return i >= 0 && i < static_cast<int64_t>(labels.size()) ? labels[static_cast<size_t>(i)] : std::string();
}

bool startsWith(const std::string& s, const char* prefix) {
    return s.rfind(prefix, 0) == 0;
}

std::string trimmed(const std::string& s) {
    const size_t a = s.find_first_not_of(" \t\r\n");
    if (a == std::string::npos) return {};
    return s.substr(a, s.find_last_not_of(" \t\r\n") - a + 1);
}

} // namespace

std::string causalModelWord(int model) {
    return model == 0 ? "Grassmann" : "Transformer";
}

PatchingGrid::Shown PatchingGrid::shown() const {
    if (!hasMetric) return Shown::MeanDelta;
    return effectDefined ? Shown::Effect : Shown::MetricChange;
}

double PatchingGrid::value(int64_t r, int64_t c) const {
    const double nan = std::nan("");
    if (r < 0 || c < 0 || r >= rows || c >= cols) return nan;
    const size_t i = static_cast<size_t>(r * cols + c);
    if (i < defined.size() && !defined[i]) return nan;
    switch (shown()) {
    case Shown::Effect:
        return i < effect.size() ? effect[i] : nan;
    case Shown::MetricChange: // the raw effect: from the changed run's own metric
        return i < metric.size() ? metric[i] - (ablation ? cleanMetric : corruptMetric) : nan;
    default:
        return i < meanDelta.size() ? meanDelta[i] : nan;
    }
}

std::string PatchingGrid::undefinedReason(int64_t r, int64_t c) const {
    if (r < 0 || c < 0 || r >= rows || c >= cols) return "no such cell";
    const size_t i = static_cast<size_t>(r * cols + c);
    const std::string where = rowTitle + " " + labelAt(rowLabels, r) + ", " + colTitle + " " + labelAt(colLabels, c);
    if (i < defined.size() && !defined[i]) {
        if (site != "offset") return "Undefined: the cell " + where + " does not exist in this model.";
        const std::string label = labelAt(colLabels, c);
        const int64_t d = startsWith(label, "D=") ? std::strtoll(label.c_str() + 2, nullptr, 10) : 0;
        if (tokens > 0 && d >= tokens)
            return "Undefined: offset " + std::to_string(d) +
                   " reaches before the prompt at every position (the prompt has " + std::to_string(tokens) +
                   " tokens), so it never pairs two real tokens and there is nothing to change.";
        return "Undefined: layer " + labelAt(rowLabels, r) + " has no offset " + label +
               ", so there is nothing to change here.";
    }
    if (std::isnan(value(r, c))) {
        if (shown() == Shown::MeanDelta)
            return "Undefined: the ablation changed no position that predicts a next token.";
        return "Undefined: the metric could not be computed at " + where + ".";
    }
    return {};
}

double patchingScale(const PatchingData& data) {
    double m = 0;
    for (const PatchingGrid* g : {&data.grassmann, &data.transformer}) {
        if (!g->hasGrid()) continue;
        for (int64_t r = 0; r < g->rows; ++r)
            for (int64_t c = 0; c < g->cols; ++c)
                if (const double v = g->value(r, c); std::isfinite(v)) m = std::max(m, std::abs(v));
    }
    return m;
}

double PathsGrid::value(int64_t r, int64_t c) const {
    if (r < 0 || c < 0 || r >= rows() || c >= cols()) return std::nan("");
    const size_t i = static_cast<size_t>(r * cols() + c);
    if (effectDefined) return i < effect.size() ? effect[i] : std::nan("");
    return i < metric.size() ? metric[i] - corruptMetric : std::nan("");
}

std::string PathsGrid::undefinedReason(int64_t r, int64_t c) const {
    if (r < 0 || c < 0 || r >= rows() || c >= cols()) return "no such cell";
    if (!std::isnan(value(r, c))) return {};
    const std::string receiver = labelAt(receivers, c);
    const int layer = r < static_cast<int64_t>(senderLayers.size()) ? senderLayers[static_cast<size_t>(r)] : 0;
    if (startsWith(receiver, "resid.") && std::atoi(receiver.c_str() + 6) <= layer)
        return "Undefined: " + receiver + " is the input of block " + receiver.substr(6) +
               ", at or before the sender's layer " + std::to_string(layer) +
               "; a sender reaches only later block inputs.";
    return "Undefined: the metric could not be computed here.";
}

double pathsScale(const PathsData& data) {
    double m = 0;
    for (const PathsGrid* g : {&data.grassmann, &data.transformer}) {
        if (!g->hasGrid()) continue;
        for (int64_t r = 0; r < g->rows(); ++r)
            for (int64_t c = 0; c < g->cols(); ++c)
                if (const double v = g->value(r, c); std::isfinite(v)) m = std::max(m, std::abs(v));
    }
    return m;
}

double patchingScale(const PatchingData& data, int model) {
    const PatchingGrid& own = model == 0 ? data.grassmann : data.transformer;
    double m = 0;
    for (const PatchingGrid* g : {&data.grassmann, &data.transformer}) {
        if (!g->hasGrid() || g->shown() != own.shown()) continue;
        for (int64_t r = 0; r < g->rows; ++r)
            for (int64_t c = 0; c < g->cols; ++c)
                if (const double v = g->value(r, c); std::isfinite(v)) m = std::max(m, std::abs(v));
    }
    return m;
}

double pathsScale(const PathsData& data, int model) {
    const PathsGrid& own = model == 0 ? data.grassmann : data.transformer;
    double m = 0;
    for (const PathsGrid* g : {&data.grassmann, &data.transformer}) {
        if (!g->hasGrid() || g->effectDefined != own.effectDefined) continue;
        for (int64_t r = 0; r < g->rows(); ++r)
            for (int64_t c = 0; c < g->cols(); ++c)
                if (const double v = g->value(r, c); std::isfinite(v)) m = std::max(m, std::abs(v));
    }
    return m;
}

PathsInputs pathsFromPatchingCell(const PatchingData& data, int model, int64_t row, int64_t col, std::string* sender) {
    PathsInputs in;
    in.clean = data.inputs.clean;
    in.corrupt = data.inputs.corrupt;
    in.answer = data.inputs.answer;
    in.wrong = data.inputs.wrong;
    const PatchingGrid& g = model == 0 ? data.grassmann : data.transformer;
    const std::string& site = g.site;
    std::string label;
    if (site == "offset" || site == "head") {
        in.senders = kUnitAlias;
        const std::string colLabel = labelAt(g.colLabels, col);
        std::string index = colLabel;
        if (const size_t eq = colLabel.find('='); eq != std::string::npos) {
            const size_t next = colLabel.find('=', eq + 1);
            index = colLabel.substr(eq + 1, next == std::string::npos ? std::string::npos : next - eq - 1);
        }
        label = site + "." + std::to_string(row) + "." + trimmed(index);
    } else if (site == "resid") {
        in.senders = "all"; // h^l is written by every component of the layers before it
        in.position = static_cast<int>(col);
    } else {
        in.senders = site;
        in.position = static_cast<int>(col);
        label = site + "." + std::to_string(row);
    }
    if (sender) *sender = label;
    return in;
}

double PairsGrid::value(int64_t p, int64_t r, int64_t c) const {
    if (p < 0 || r < 0 || c < 0 || p >= pairs() || r >= rows || c >= cols) return kNaN;
    const size_t i = static_cast<size_t>((p * rows + r) * cols + c);
    return i < values.size() ? values[i] : kNaN;
}

double PairsGrid::meanAt(int64_t r, int64_t c) const {
    if (r < 0 || c < 0 || r >= rows || c >= cols) return kNaN;
    const size_t i = static_cast<size_t>(r * cols + c);
    return i < mean.size() ? mean[i] : kNaN;
}

std::vector<double> PairsGrid::cellValues(int64_t r, int64_t c) const {
    std::vector<double> out;
    for (int64_t p = 0; p < pairs(); ++p)
        if (const double v = value(p, r, c); std::isfinite(v)) out.push_back(v);
    return out;
}

std::string PairsGrid::valueName() const {
    if (estimated) return "estimated metric change";
    // A grid filled by hand (no estimator named) holds effects.
    return shownEstimate.empty() || shownIsRatio() ? "effect" : "raw effect (logits)";
}

int64_t defaultPairsCell(const PairsGrid& g) {
    int64_t best = -1, bestVarying = -1;
    auto better = [&](int64_t i, int64_t than) {
        return than < 0 || std::abs(g.mean[static_cast<size_t>(i)]) > std::abs(g.mean[static_cast<size_t>(than)]);
    };
    for (int64_t i = 0; i < static_cast<int64_t>(g.mean.size()) && g.cols > 0; ++i) {
        if (!std::isfinite(g.mean[static_cast<size_t>(i)])) continue;
        if (better(i, best)) best = i;
        const std::vector<double> v = g.cellValues(i / g.cols, i % g.cols);
        const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
        if (v.size() > 1 && *hi - *lo > 1e-9 * std::max(1.0, std::abs(*hi)) && better(i, bestVarying)) bestVarying = i;
    }
    return bestVarying >= 0 ? bestVarying : best;
}

} // namespace gwb::engine
