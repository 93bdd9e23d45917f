#pragma once
// Principal angles of two 2-planes from their parts, without heap allocation: shared by
// planeAngles (batch.cpp) and the batched read-out angles (readout.cpp).

#include <Eigen/Core>

#include <bit>
#include <cmath>
#include <cstdint>

namespace gwb::geometry::detail {

/// Principal angles (rad, ascending) of span(Qa) and span(Qb) (orthonormal n x 2 bases), given
/// c = Qa^T Qb and the two columns s0, s1 of (I - Qa Qa^T) Qb, each n long. The cosines are
/// the singular values of c; the sines come from s rotated onto Qb's principal vectors and
/// orthogonalized by one-sided Jacobi, so small angles keep full relative accuracy. s0 and s1
/// are overwritten.
Eigen::Vector2d planeAnglesFromParts(const Eigen::Matrix2d& c, double* s0, double* s1, Eigen::Index n);

/// acos(x) for x in [0, 1] (NaN stays NaN), accurate to about 1 ulp: the rational approximation of
/// (asin(s) - s) / s of fdlibm's e_acos.c (Sun Microsystems; its published minimax coefficients),
/// acos(x) = pi/2 - asin(x) below 0.5 and 2 asin(sqrt((1 - x) / 2)) above. Written out here so
/// that the vectorized read-out kernel (readoutAnglesRow) computes bit for bit the same angles as
/// this scalar path: no fused multiply-adds, the same operations in the same order.
inline double acosUnit(double x) {
    constexpr double pio2Hi = 1.57079632679489655800e+00, pio2Lo = 6.12323399573676603587e-17;
    auto ratio = [](double z) { // R(z) = z P(z) / Q(z)
        const double p = z * (1.66666666666666657415e-01 +
                              z * (-3.25565818622400915405e-01 +
                                   z * (2.01212532134862925881e-01 +
                                        z * (-4.00555345006794114027e-02 +
                                             z * (7.91534994289814532176e-04 + z * 3.47933107596021167570e-05)))));
        const double q =
            1.0 +
            z * (-2.40339491173441421878e+00 +
                 z * (2.02094576023350569471e+00 + z * (-6.88283971605453293030e-01 + z * 7.70381505559019352791e-02)));
        return p / q;
    };
    if (x >= 1.0) return 0.0;
    if (x < 0.5) return pio2Hi - (x - (pio2Lo - x * ratio(x * x)));
    const double z = (1.0 - x) * 0.5, s = std::sqrt(z);
    // s split as df (its top 21 bits, so df * df is exact) plus c, the rest: sqrt(z) = df + c.
    const double df = std::bit_cast<double>(std::bit_cast<uint64_t>(s) & 0xffffffff00000000ull);
    const double c = (z - df * df) / (s + df);
    return 2.0 * (df + (ratio(z) * s + c));
}

/// Below this larger cosine (cos 0.05) the angles come from the cosines alone (see below).
inline constexpr double kMaxCosineOnly = 0.99875026039496628;

/// The principal angles (ascending) from c = Qa^T Qb alone, when both are at least 0.05 rad: the
/// larger cosine is then at most cos(0.05), where acos turns an error e in the cosine into an
/// error of at most 20 e in the angle, 1e-13 relative for the few-ulp cosines of orthonormal
/// bases (the sine part is needed below that: acos loses relative accuracy as the angle goes to
/// 0). Returns false, leaving th as it was, when the smaller angle is below 0.05 rad. A token's
/// plane and a channel's read-out plane, or a plane and the next layer's, are rarely that close,
/// so this skips the n x 2 sine part for nearly all pairs.
inline bool planeAnglesFromCosines(const Eigen::Matrix2d& c, Eigen::Vector2d& th) {
    // Singular values of a 2 x 2 matrix in closed form: (Q + R, |Q - R|).
    const double e = 0.5 * (c(0, 0) + c(1, 1)), f = 0.5 * (c(0, 0) - c(1, 1));
    const double g = 0.5 * (c(1, 0) + c(0, 1)), h = 0.5 * (c(1, 0) - c(0, 1));
    const double q = std::sqrt(e * e + h * h), r = std::sqrt(f * f + g * g);
    if (!(q + r <= kMaxCosineOnly)) return false;
    th[0] = acosUnit(q + r);
    th[1] = acosUnit(std::abs(q - r));
    return true;
}

/// planeAnglesFromCosines for d pairs at once, bit for bit: pair c's cosine matrix is
/// [row0[2c] row0[2c+1]; row1[2c] row1[2c+1]] and its angles go to out[2c], out[2c+1]; a pair
/// whose smaller angle needs the sine part gets out[2c] = -1 (out[2c+1] is then undefined).
/// Eight pairs at a time with AVX-512 when the CPU has it.
void readoutAnglesRow(const double* row0, const double* row1, Eigen::Index d, double* out);
/// readoutAnglesRow without vector instructions, pair by pair (what a CPU without AVX-512 runs).
void readoutAnglesRowPortable(const double* row0, const double* row1, Eigen::Index d, double* out);

} // namespace gwb::geometry::detail
