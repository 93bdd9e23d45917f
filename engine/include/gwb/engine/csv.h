#pragma once
// CSV fields and numbers written the same way in every file the engine and the command line write.
// Std only.

#include <cmath>
#include <cstdio>
#include <string>

namespace gwb::engine {

/// A CSV field, quoted when it holds a comma, a quote or a line break.
inline std::string csvField(const std::string& s) {
    if (s.find_first_of(",\"\n") == std::string::npos) return s;
    std::string q = "\"";
    for (char c : s) {
        if (c == '"') q += '"';
        q += c;
    }
    return q + "\"";
}

/// A number for CSV and summaries: %.9g, "NaN" for NaN.
inline std::string csvNumber(double v) {
    if (std::isnan(v)) return "NaN";
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.9g", v);
    return buf;
}

} // namespace gwb::engine
