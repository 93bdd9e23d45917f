// requireFiniteRows: every NaN and infinity anywhere (each position of a row, its tail past a
// multiple of four, a block of a larger matrix) is refused; finite extremes pass.
#include "gwb/geometry/types.h"

#include <gtest/gtest.h>

#include <limits>

using namespace gwb::geometry;

TEST(Types, RequireFiniteRowsFindsEveryNonFiniteValue) {
    const double bad[] = {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity(),
                          -std::numeric_limits<double>::infinity()};
    for (Eigen::Index cols : {1, 4, 7, 9}) {
        RowMatrixXd m = RowMatrixXd::Constant(3, cols, 1.0);
        m(0, 0) = std::numeric_limits<double>::max();
        m(2, cols - 1) = -std::numeric_limits<double>::max();
        m(1, 0) = std::numeric_limits<double>::denorm_min();
        EXPECT_NO_THROW(requireFiniteRows(m, "test")) << cols;
        for (const double v : bad)
            for (Eigen::Index i = 0; i < 3; ++i)
                for (Eigen::Index j = 0; j < cols; ++j) {
                    RowMatrixXd x = m;
                    x(i, j) = v;
                    EXPECT_THROW(requireFiniteRows(x, "test"), std::invalid_argument) << i << " " << j << " " << v;
                }
    }
    // A block of rows of a wider matrix: only the block is checked.
    RowMatrixXd wide = RowMatrixXd::Constant(4, 6, 2.0);
    wide(0, 5) = std::numeric_limits<double>::quiet_NaN();
    EXPECT_NO_THROW(requireFiniteRows(wide.middleRows(1, 3), "test"));
    EXPECT_THROW(requireFiniteRows(wide.topRows(2), "test"), std::invalid_argument);
    EXPECT_THROW(requireFiniteRows(RowMatrixXd(0, 3), "test"), std::invalid_argument);
}
