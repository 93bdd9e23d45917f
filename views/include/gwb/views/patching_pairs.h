#pragma once
// The side panel of the Patching view over a pairs file: a clicked cell's distribution over the
// pairs above the estimate-against-exact scatter, drawn by paintPairsSide (patching_pairs_paint.h,
// the same painter as the exported figure's).

#include "gwb/views/patching_pairs_paint.h"

#include <QWidget>

#include <cstdint>

namespace gwb::views {

class PairsPlotsWidget : public QWidget {
    Q_OBJECT
public:
    /// The height both plots need with their titles and keys: below it the panel scrolls (the
    /// Patching view puts it in a scroll area) instead of squeezing the plots to their titles.
    static constexpr int kMinimumHeight = 420;

    explicit PairsPlotsWidget(QWidget* parent = nullptr);
    void setData(const PairsData* data); ///< not owned; null = nothing
    /// The cell whose distribution is shown (model 0/1, -1 = none).
    void setCell(int model, int64_t r, int64_t c);
    int cellModel() const { return m_model; }
    int64_t cellRow() const { return m_row; }
    int64_t cellCol() const { return m_col; }

protected:
    void paintEvent(QPaintEvent* event) override;

private:
    const PairsData* m_data = nullptr;
    int m_model = -1;
    int64_t m_row = -1, m_col = -1;
};

} // namespace gwb::views
