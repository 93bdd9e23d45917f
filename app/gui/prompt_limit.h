#pragma once
// The window's longest-prompt setting: a Run traces at most this many tokens of the
// prompt (the model's context stays the hard limit), and beside it what a Run that long costs: the
// memory its traces and analyses keep (from the models' shapes) and the time at the last Run's rate.

#include "gwb/engine/config.h"

#include <QString>
#include <QWidget>

#include <optional>

class QLabel;
class QSpinBox;

namespace gwb::app {

/// What a Run of `tokens` tokens costs with these models (nullopt: not open): "≈ 530 MB" and, when
/// the last Run took `lastSeconds` for `lastTokens` tokens, "≈ 6 s at the last Run's rate". Each
/// model traces at most its context. `detail` gets the long form (per model, the limits) for a tooltip.
QString promptCostText(const std::optional<gwb::engine::ModelConfig>& grassmann,
                       const std::optional<gwb::engine::ModelConfig>& baseline, int64_t tokens, int64_t lastTokens,
                       double lastSeconds, QString* detail = nullptr);

/// "530 MB", "1.2 GB".
QString byteText(int64_t bytes);

class PromptLimit : public QWidget {
    Q_OBJECT
public:
    static constexpr int kDefaultTokens = 4096; ///< GrassLM-100M's context; the bundled models stop at 256
    explicit PromptLimit(QWidget* parent = nullptr);
    /// Longest prompt a Run traces, in tokens.
    int tokens() const;
    void setTokens(int tokens);
    /// The models a Run uses now (nullopt: none open) and the cost shown for them.
    void setModels(const std::optional<gwb::engine::ModelConfig>& grassmann,
                   const std::optional<gwb::engine::ModelConfig>& baseline);
    /// The last Run's length and time (its rate extrapolates the cost's time).
    void setLastRun(int64_t tokens, double seconds);
    QString costText() const;
    QSpinBox* spin() const { return m_spin; }

Q_SIGNALS:
    void tokensChanged(int tokens);

private:
    void updateCost();
    QSpinBox* m_spin;
    QLabel* m_cost;
    std::optional<gwb::engine::ModelConfig> m_grassmann, m_baseline;
    int64_t m_lastTokens = 0;
    double m_lastSeconds = 0;
};

} // namespace gwb::app
