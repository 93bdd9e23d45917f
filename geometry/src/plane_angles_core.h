#pragma once
// Principal angles of two 2-planes from their parts, without heap allocation: shared by
// planeAngles (batch.cpp) and the batched read-out angles (readout.cpp).

#include <Eigen/Core>

namespace gwb::geometry::detail {

/// Principal angles (rad, ascending) of span(Qa) and span(Qb) (orthonormal n x 2 bases), given
/// c = Qa^T Qb and the two columns s0, s1 of (I - Qa Qa^T) Qb, each n long. The cosines are
/// the singular values of c; the sines come from s rotated onto Qb's principal vectors and
/// orthogonalized by one-sided Jacobi, so small angles keep full relative accuracy. s0 and s1
/// are overwritten.
Eigen::Vector2d planeAnglesFromParts(const Eigen::Matrix2d& c, double* s0, double* s1, Eigen::Index n);

} // namespace gwb::geometry::detail
