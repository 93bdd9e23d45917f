#pragma once
// Double-double arithmetic (~106-bit significand) for the few steps of the principal-angle
// computation where double rounding would swamp tiny angles: orthonormalizing the inputs and
// forming the sine matrix. Internal to gwb_geometry. Relies on IEEE double without reassociation.

#include <cmath>

namespace gwb::geometry::detail {

struct DD {
    double hi = 0, lo = 0;
};

inline DD quickTwoSum(double a, double b) {
    const double s = a + b;
    return {s, b - (s - a)};
}
inline DD twoSum(double a, double b) {
    const double s = a + b, bb = s - a;
    return {s, (a - (s - bb)) + (b - bb)};
}
inline DD operator+(DD a, DD b) {
    DD s = twoSum(a.hi, b.hi);
    const DD t = twoSum(a.lo, b.lo);
    s.lo += t.hi;
    s = quickTwoSum(s.hi, s.lo);
    s.lo += t.lo;
    return quickTwoSum(s.hi, s.lo);
}
inline DD operator-(DD a) {
    return {-a.hi, -a.lo};
}
inline DD operator-(DD a, DD b) {
    return a + (-b);
}
inline DD operator*(DD a, DD b) {
    const double p = a.hi * b.hi;
    double e = std::fma(a.hi, b.hi, -p);
    e += a.hi * b.lo + a.lo * b.hi;
    return quickTwoSum(p, e);
}
inline DD operator/(DD a, DD b) {
    const double q1 = a.hi / b.hi;
    DD r = a - b * DD{q1, 0};
    const double q2 = r.hi / b.hi;
    r = r - b * DD{q2, 0};
    const double q3 = r.hi / b.hi;
    return quickTwoSum(q1, q2) + DD{q3, 0};
}
inline DD sqrt(DD a) {
    if (a.hi <= 0) return {0, 0};
    const double x = std::sqrt(a.hi);
    const DD r = a - DD{x, 0} * DD{x, 0};
    return quickTwoSum(x, r.hi / (2 * x));
}

} // namespace gwb::geometry::detail
