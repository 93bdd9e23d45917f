// The read-out angles' arccosine and its eight-lane kernel (geometry/src/plane_angles_core.h):
// acosUnit against the long-double arccosine, and readoutAnglesRow, whatever this CPU runs,
// against the pair-by-pair path bit for bit, on both sides of the cosine-only bound.
#include "../../geometry/src/plane_angles_core.h"

#include "gwb/geometry/batch.h"
#include "test_util.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

using namespace gwb::geometry;

TEST(PlaneAnglesRows, AcosUnitIsWithinTwoUlpsOfTheLongDoubleArccosine) {
    std::mt19937_64 rng(3);
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    std::vector<double> xs = {0.0,
                              1e-300,
                              1e-17,
                              0.25,
                              0.4999999999999999,
                              0.5,
                              0.5000000000000001,
                              0.75,
                              detail::kMaxCosineOnly,
                              0.9999999999999999,
                              1.0};
    for (int i = 0; i < 200000; ++i)
        xs.push_back(unit(rng));
    for (int i = 0; i < 2000; ++i) // near 1, where the angle is small
        xs.push_back(1.0 - std::ldexp(unit(rng), -static_cast<int>(i % 50)));
    for (const double x : xs) {
        const long double ref = std::acos(static_cast<long double>(x));
        const double got = detail::acosUnit(x);
        const double ulp = std::nextafter(static_cast<double>(ref), 4.0) - static_cast<double>(ref);
        ASSERT_LE(std::fabs(static_cast<long double>(got) - ref), 2.0L * (ulp > 0 ? ulp : 5e-324)) << x;
    }
    EXPECT_TRUE(std::isnan(detail::acosUnit(std::numeric_limits<double>::quiet_NaN())));
    EXPECT_EQ(detail::acosUnit(1.0), 0.0);
}

TEST(PlaneAnglesRows, TheKernelGivesThePairByPairBits) {
    // Cosine matrices of random plane pairs in R^6 (mostly far apart), of nearly equal planes
    // (below 0.05 rad: the sine marker), pairs at the bound, and NaN; d = 1..37 covers every
    // remainder of eight.
    std::mt19937_64 rng(9);
    std::normal_distribution<double> normal;
    for (Eigen::Index d = 1; d <= 37; ++d) {
        std::vector<double> row0(static_cast<size_t>(2 * d)), row1(static_cast<size_t>(2 * d));
        for (Eigen::Index c = 0; c < d; ++c) {
            Eigen::Matrix2d m;
            const int kind = static_cast<int>(c % 4);
            if (kind == 3 && d > 4) {
                m.setConstant(std::numeric_limits<double>::quiet_NaN());
            } else {
                const double th0 = kind == 1   ? 1e-3
                                   : kind == 2 ? 0.05 * (1 + 1e-12 * normal(rng))
                                               : 0.3 + std::fabs(normal(rng));
                const double th1 = th0 + std::fabs(normal(rng));
                const test::AnglePair p =
                    test::subspacesWithAngles(test::randomOrthogonal(6, static_cast<uint64_t>(c + 7 * d)), {th0, th1});
                m = p.qa.transpose() * p.qb;
            }
            row0[static_cast<size_t>(2 * c)] = m(0, 0);
            row0[static_cast<size_t>(2 * c + 1)] = m(0, 1);
            row1[static_cast<size_t>(2 * c)] = m(1, 0);
            row1[static_cast<size_t>(2 * c + 1)] = m(1, 1);
        }
        std::vector<double> fast(static_cast<size_t>(2 * d)), portable(static_cast<size_t>(2 * d));
        detail::readoutAnglesRow(row0.data(), row1.data(), d, fast.data());
        detail::readoutAnglesRowPortable(row0.data(), row1.data(), d, portable.data());
        for (Eigen::Index c = 0; c < d; ++c) {
            Eigen::Matrix2d m;
            m << row0[static_cast<size_t>(2 * c)], row0[static_cast<size_t>(2 * c + 1)],
                row1[static_cast<size_t>(2 * c)], row1[static_cast<size_t>(2 * c + 1)];
            Eigen::Vector2d th;
            const bool cosineOnly = detail::planeAnglesFromCosines(m, th);
            const auto i = static_cast<size_t>(2 * c);
            ASSERT_EQ(fast[i] < 0, !cosineOnly) << "d " << d << " c " << c;
            ASSERT_EQ(portable[i] < 0, !cosineOnly) << "d " << d << " c " << c;
            if (!cosineOnly) continue;
            for (int k = 0; k < 2; ++k) {
                ASSERT_EQ(std::memcmp(&fast[i + k], &th[k], sizeof(double)), 0)
                    << "d " << d << " c " << c << " k " << k;
                ASSERT_EQ(std::memcmp(&portable[i + k], &th[k], sizeof(double)), 0) << "d " << d << " c " << c;
            }
        }
    }
}
