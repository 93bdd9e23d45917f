#include "gwb/engine/workbench_data.h"

#include <algorithm>

namespace gwb::engine {

LensPtr WorkbenchData::lensOf(const TracePtr& trace) const {
    if (!trace) return nullptr;
    if (trace == grassmann && grassmannLens) return grassmannLens;
    if (trace == baseline && baselineLens) return baselineLens;
    return trace->lens;
}

bool WorkbenchData::hasLenses() const {
    return (!grassmann || lensOf(grassmann)) && (!baseline || lensOf(baseline));
}

int64_t WorkbenchData::tokenCount() const {
    const TracePtr t = primary();
    return t ? t->length() : 0;
}

int64_t WorkbenchData::layerCount() const {
    int64_t n = 0;
    if (grassmann) n = std::max<int64_t>(n, static_cast<int64_t>(grassmann->layers.size()));
    if (baseline) n = std::max<int64_t>(n, static_cast<int64_t>(baseline->layers.size()));
    return n;
}

int64_t WorkbenchData::headCount() const {
    if (!baseline) return 0;
    int64_t h = 0;
    for (const auto& l : baseline->layers)
        if (l.attention) h = std::max(h, l.attention->nHeads);
    return h;
}

int64_t WorkbenchData::offsetCount() const {
    if (!grassmann) return 0;
    int64_t o = 0;
    for (const auto& l : grassmann->layers)
        if (l.grassmann) o = std::max<int64_t>(o, static_cast<int64_t>(l.grassmann->offsets.size()));
    return o;
}

std::string WorkbenchData::prompt() const {
    const TracePtr t = primary();
    return t ? t->prompt : std::string();
}

bool WorkbenchData::isGenerated(int64_t t) const {
    const TracePtr p = primary();
    if (!p || t < 0 || t >= p->length()) return false;
    if (firstGeneratedToken >= 0) return t >= firstGeneratedToken;
    if (continuationFrom < 0) return false;
    const auto& tok = p->tokens[static_cast<size_t>(t)];
    // A piece that ends after the typed text was (at least partly) generated.
    return tok.end > continuationFrom || (tok.end < 0 && tok.begin >= continuationFrom);
}

int64_t WorkbenchData::firstGenerated() const {
    for (int64_t t = 0; t < tokenCount(); ++t)
        if (isGenerated(t)) return t;
    return -1;
}

int64_t WorkbenchData::generatedCount() const {
    // Generated text is appended, so the generated tokens are a suffix.
    const int64_t first = firstGenerated();
    return first < 0 ? 0 : tokenCount() - first;
}

} // namespace gwb::engine
