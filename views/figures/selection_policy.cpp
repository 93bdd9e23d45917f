#include "gwb/views/selection_policy.h"

#include <algorithm>

namespace gwb::views {

int maxOffset(const WorkbenchData& data) {
    int m = 0;
    if (!data.grassmann) return 0;
    for (const auto& layer : data.grassmann->layers)
        if (layer.grassmann && !layer.grassmann->offsets.empty())
            m = std::max(m, *std::max_element(layer.grassmann->offsets.begin(), layer.grassmann->offsets.end()));
    return m;
}

bool tokenFullyDefined(const WorkbenchData& data, int t) {
    const int64_t T = data.tokenCount();
    return t >= 0 && t < T && t >= maxOffset(data);
}

int defaultToken(const WorkbenchData& data) {
    const int64_t T = data.tokenCount();
    if (T <= 0) return -1;
    const int first = std::max(maxOffset(data), 1); // t = 0 has no past at all (attention rows of length 1)
    if (first + 1 < T) return first;                // a next token exists
    return static_cast<int>(T - 1);
}

int tokenAfterRun(const WorkbenchData& data, int current) {
    if (tokenFullyDefined(data, current) && current > 0) return current;
    return defaultToken(data);
}

QString undefinedReason(const QString& what, int t, int offset) {
    if (offset > 0 && t - offset < 0)
        return QStringLiteral("%1 is undefined: token %2 has no past token at offset %3 (t \u2212 D < 0).")
            .arg(what)
            .arg(t)
            .arg(offset);
    if (t == 0)
        return QStringLiteral("%1 is undefined at token 0: it has no past token (no valid offset; an attention row "
                              "of length 1 has log(t+1) = 0).")
            .arg(what);
    return QStringLiteral("%1 is undefined for token %2 (no valid offset or no data).").arg(what).arg(t);
}

} // namespace gwb::views
