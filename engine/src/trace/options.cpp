// The option tables' shared half (gwb/engine/options.h): range texts, checks and the sentences every
// front end gives.

#include "gwb/engine/options.h"

#include <cmath>
#include <cstdio>

namespace gwb::engine {

std::string formatOptionNumber(double v) {
    char buf[40];
    if (std::isfinite(v) && v == std::floor(v) && std::abs(v) < 1e15)
        std::snprintf(buf, sizeof buf, "%.0f", v);
    else
        std::snprintf(buf, sizeof buf, "%.10g", v);
    return buf;
}

std::string optionName(const OptionSpec& o) {
    return std::string(o.key) + " (--" + o.flag + ")";
}

std::string optionRangeText(const OptionSpec& o) {
    if (o.kind == OptionKind::Text) return o.valueName;
    const std::string t = o.kind == OptionKind::Integer ? "an integer" : "a number";
    if (o.max >= kNoMax) return t + ", " + (o.minExclusive ? "above " : "at least ") + formatOptionNumber(o.min);
    return t + " in " + (o.minExclusive ? "(" : "[") + formatOptionNumber(o.min) + ", " + formatOptionNumber(o.max) +
           (o.maxExclusive ? ")" : "]");
}

void checkOptionValue(const OptionSpec& o, double v) {
    const bool ok = std::isfinite(v) && (o.kind != OptionKind::Integer || v == std::floor(v)) &&
                    (o.minExclusive ? v > o.min : v >= o.min) && (o.maxExclusive ? v < o.max : v <= o.max);
    if (ok) return;
    // A range "at least N" has an upper end all the same: the largest value its field holds.
    const std::string range = o.max >= kNoMax && std::isfinite(v) && v > o.max
                                  ? optionRangeText(o) + " and at most " + formatOptionNumber(o.max)
                                  : optionRangeText(o);
    throw std::invalid_argument(optionName(o) + " must be " + range + "; got " + formatOptionNumber(v));
}

double parseOptionNumber(const OptionSpec& o, const std::string& text) {
    size_t used = 0;
    double v = 0;
    try {
        v = std::stod(text, &used);
    } catch (const std::exception&) {
        used = 0;
    }
    if (used == 0 || used != text.size())
        throw std::invalid_argument(optionName(o) + " needs " +
                                    (o.kind == OptionKind::Integer ? "an integer" : "a number") + ", got '" + text +
                                    "'");
    return v;
}

void parseShard(const std::string& text, int& index, int& count) {
    const size_t slash = text.find('/');
    const auto whole = [&](const std::string& part) {
        if (part.empty() || part.size() > 9 || part.find_first_not_of("0123456789") != std::string::npos)
            throw std::invalid_argument("shard (--shard) is written i/n, e.g. 0/4; got '" + text + "'");
        return std::stoi(part);
    };
    if (slash == std::string::npos) whole("");
    const int i = whole(text.substr(0, slash)), n = whole(text.substr(slash + 1));
    index = i;
    count = n;
}

} // namespace gwb::engine
