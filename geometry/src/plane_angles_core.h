#pragma once
// Principal angles of two 2-planes from their parts, without heap allocation: shared by
// planeAngles (batch.cpp) and the batched read-out angles (readout.cpp).

#include <Eigen/Core>

#include <cmath>

namespace gwb::geometry::detail {

/// Principal angles (rad, ascending) of span(Qa) and span(Qb) (orthonormal n x 2 bases), given
/// c = Qa^T Qb and the two columns s0, s1 of (I - Qa Qa^T) Qb, each n long. The cosines are
/// the singular values of c; the sines come from s rotated onto Qb's principal vectors and
/// orthogonalized by one-sided Jacobi, so small angles keep full relative accuracy. s0 and s1
/// are overwritten.
Eigen::Vector2d planeAnglesFromParts(const Eigen::Matrix2d& c, double* s0, double* s1, Eigen::Index n);

/// The principal angles (ascending) from c = Qa^T Qb alone, when both exceed about 48 degrees:
/// the sum of the squared cosines is below 0.45, so each cosine is below 0.67 and acos of it is
/// accurate to a few ulps (planeAnglesFromParts takes acos there too). Returns false, leaving th
/// as it was, when an angle is smaller and needs the sine part. Most read-out planes are far from
/// a token's plane, so this skips the n x 2 sine part for most (token, channel) pairs.
inline bool planeAnglesFromCosines(const Eigen::Matrix2d& c, Eigen::Vector2d& th) {
    if (!(c.squaredNorm() < 0.45)) return false;
    // Singular values of a 2 x 2 matrix in closed form: (Q + R, |Q - R|).
    const double e = 0.5 * (c(0, 0) + c(1, 1)), f = 0.5 * (c(0, 0) - c(1, 1));
    const double g = 0.5 * (c(1, 0) + c(0, 1)), h = 0.5 * (c(1, 0) - c(0, 1));
    const double q = std::sqrt(e * e + h * h), r = std::sqrt(f * f + g * g);
    th[0] = std::acos(q + r);
    th[1] = std::acos(std::abs(q - r));
    return true;
}

} // namespace gwb::geometry::detail
