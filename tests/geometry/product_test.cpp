// A B^T by every kernel this CPU runs against a long-double reference (product.h).
#include "gwb/geometry/product.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>

using namespace gwb::geometry;

namespace {
RowMatrixXd randomMatrix(Eigen::Index rows, Eigen::Index cols, unsigned seed) {
    std::mt19937_64 rng(seed);
    std::normal_distribution<double> normal;
    RowMatrixXd m(rows, cols);
    for (Eigen::Index i = 0; i < rows; ++i)
        for (Eigen::Index j = 0; j < cols; ++j)
            m(i, j) = normal(rng);
    return m;
}
} // namespace

TEST(Product, EveryKernelEqualsTheLongDoubleProductToRounding) {
    // Shapes that leave every remainder: rows not a multiple of 8 or 6, columns not of 16 or 8,
    // depth not of the 256-deep blocks; and a block of rows of a larger matrix (a strided Ref).
    const Eigen::Index shapes[][3] = {{1, 1, 1}, {7, 13, 5}, {37, 45, 300}, {64, 640, 513}, {9, 17, 1}};
    int kernels = 0;
    for (const char* kernel : {"eigen", "avx2", "avx512"}) {
        if (!productKernelAvailable(kernel)) continue;
        ++kernels;
        for (const auto& s : shapes) {
            SCOPED_TRACE(std::string(kernel) + " " + std::to_string(s[0]) + "x" + std::to_string(s[1]) + "x" +
                         std::to_string(s[2]));
            const RowMatrixXd big = randomMatrix(s[0] + 3, s[2], 11);
            const Eigen::Ref<const RowMatrixXd> a = big.middleRows(2, s[0]);
            const RowMatrixXd b = randomMatrix(s[1], s[2], 12);
            const RowMatrixXd c = TransposedRhs(b, kernel).multiply(a);
            ASSERT_EQ(c.rows(), s[0]);
            ASSERT_EQ(c.cols(), s[1]);
            for (Eigen::Index i = 0; i < s[0]; ++i)
                for (Eigen::Index j = 0; j < s[1]; ++j) {
                    long double ref = 0, mag = 0;
                    for (Eigen::Index k = 0; k < s[2]; ++k) {
                        ref += static_cast<long double>(a(i, k)) * b(j, k);
                        mag += std::fabs(static_cast<long double>(a(i, k)) * b(j, k));
                    }
                    ASSERT_LE(std::fabs(static_cast<long double>(c(i, j)) - ref),
                              4e-16L * mag * std::sqrt(s[2]) + 1e-300L)
                        << i << " " << j;
                }
        }
    }
    EXPECT_GE(kernels, 1);
    EXPECT_TRUE(productKernelAvailable(productKernelName()));
    EXPECT_THROW(TransposedRhs(RowMatrixXd::Zero(2, 2), "sse9"), std::invalid_argument);
    EXPECT_THROW(TransposedRhs(RowMatrixXd::Zero(2, 3)).multiply(RowMatrixXd::Zero(2, 2)), std::invalid_argument);
}

TEST(Product, EmptyDepthGivesZerosAndOneRhsServesManyProducts) {
    for (const char* kernel : {"eigen", "avx2", "avx512"}) {
        if (!productKernelAvailable(kernel)) continue;
        EXPECT_TRUE(TransposedRhs(RowMatrixXd(4, 0), kernel).multiply(RowMatrixXd(3, 0)).isZero());
        const RowMatrixXd b = randomMatrix(20, 33, 3);
        const TransposedRhs packed(b, kernel);
        for (unsigned seed = 0; seed < 3; ++seed) {
            const RowMatrixXd a = randomMatrix(10 + seed, 33, 20 + seed);
            EXPECT_LE((packed.multiply(a) - a * b.transpose()).cwiseAbs().maxCoeff(), 1e-12) << kernel;
        }
    }
}

TEST(Product, RowMajorProductsEqualTheLongDoubleProductToRounding) {
    // multiplyRowMajor (y = x b, nothing packed) on every kernel: rows past a block of 8, columns
    // past a multiple of 8 (masked), depth 1 and 0, and sums in the order p = 0..k-1.
    const Eigen::Index shapes[][3] = {{1, 1, 1}, {6, 128, 22}, {9, 13, 5}, {17, 7, 33}, {3, 40, 1}, {2, 5, 0}};
    for (const char* kernel : {"eigen", "avx2", "avx512"}) {
        if (!productKernelAvailable(kernel)) continue;
        for (const auto& s : shapes) {
            const Eigen::Index m = s[0], n = s[1], k = s[2];
            SCOPED_TRACE(std::string(kernel) + " " + std::to_string(m) + "x" + std::to_string(n) + "x" +
                         std::to_string(k));
            const RowMatrixXd x = randomMatrix(m, k, 31), b = randomMatrix(k, n, 32);
            RowMatrixXd y = RowMatrixXd::Constant(m, n, 7.0); // overwritten, not added to
            multiplyRowMajor(x.data(), m, k, b.data(), n, y.data(), kernel);
            for (Eigen::Index i = 0; i < m; ++i)
                for (Eigen::Index j = 0; j < n; ++j) {
                    long double ref = 0, mag = 0;
                    for (Eigen::Index p = 0; p < k; ++p) {
                        ref += static_cast<long double>(x(i, p)) * b(p, j);
                        mag += std::fabs(static_cast<long double>(x(i, p)) * b(p, j));
                    }
                    ASSERT_LE(std::fabs(static_cast<long double>(y(i, j)) - ref), 4e-16L * mag * (k + 1) + 1e-300L)
                        << i << " " << j;
                }
        }
    }
    EXPECT_THROW(multiplyRowMajor(nullptr, 0, 0, nullptr, 0, nullptr, "sse9"), std::invalid_argument);
}
