#pragma once
// Helpers shared by the analysis sources (engine-internal).

#include "gwb/engine/analysis.h"
#include "gwb/geometry/types.h"

#include <limits>

namespace gwb::engine::analysis_detail {

inline constexpr float kNaNf = std::numeric_limits<float>::quiet_NaN();

/// A 2-D float trace array as a double matrix; throws std::invalid_argument naming `what`.
geometry::RowMatrixXd matrixOf(const FloatArray& a, const char* what);

/// A double matrix as a float array of the same (2-D) shape.
FloatArray toFloatArray(const geometry::RowMatrixXd& m);

/// Counts work units and calls the user's callback; throws Cancelled when it returns false.
class Progress {
public:
    Progress(const ProgressFn& fn, int64_t total) : m_fn(fn), m_total(total) {}
    void advance(int64_t units);

private:
    const ProgressFn& m_fn;
    int64_t m_total = 0;
    int64_t m_done = 0;
};

} // namespace gwb::engine::analysis_detail
