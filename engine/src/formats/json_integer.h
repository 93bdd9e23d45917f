// Integers read from JSON that a person or another tool wrote. nlohmann's get<int64_t>() on a
// float converts it, which is undefined when the float is out of range (1e300); these refuse it
// by name instead. A float that is a whole number in range (64.0, as some Python writers put a
// count) is taken.
#pragma once

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace gwb::engine {

template <class Json> int64_t jsonInteger(const Json& v, const std::string& key) {
    if (v.is_number_unsigned()) {
        if (v.template get<uint64_t>() <= uint64_t(INT64_MAX)) return int64_t(v.template get<uint64_t>());
    } else if (v.is_number_integer()) {
        return v.template get<int64_t>();
    } else if (v.is_number_float()) {
        const double x = v.template get<double>();
        if (std::isfinite(x) && x == std::floor(x) && std::fabs(x) < 9.2e18) return int64_t(x);
    }
    throw std::runtime_error("'" + key + "' is " + v.dump() + ", not an integer");
}

/// obj[key] as an integer, or `fallback` where obj has no such key or it is null.
template <class Json> int64_t jsonIntegerOr(const Json& obj, const std::string& key, int64_t fallback) {
    if (!obj.is_object() || !obj.contains(key) || obj[key].is_null()) return fallback;
    return jsonInteger(obj[key], key);
}

/// A seed: a non-negative integer up to 2^64 - 1.
template <class Json> uint64_t jsonSeed(const Json& v, const std::string& key) {
    if (v.is_number_unsigned()) return v.template get<uint64_t>();
    const int64_t s = jsonInteger(v, key);
    if (s < 0) throw std::runtime_error("'" + key + "' is " + v.dump() + ", not a non-negative integer");
    return uint64_t(s);
}

} // namespace gwb::engine
