#include "gui/prompt_limit.h"

#include "gwb/engine/trace_memory.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QLocale>
#include <QSpinBox>

#include <algorithm>
#include <cmath>

namespace gwb::app {

QString byteText(int64_t bytes) {
    const double mb = static_cast<double>(bytes) / (1024.0 * 1024.0);
    if (mb < 1000) return QStringLiteral("%1 MB").arg(std::max(1.0, std::round(mb)), 0, 'f', 0);
    return QStringLiteral("%1 GB").arg(mb / 1024.0, 0, 'f', 1);
}

QString promptCostText(const std::optional<gwb::engine::ModelConfig>& grassmann,
                       const std::optional<gwb::engine::ModelConfig>& baseline, int64_t tokens, int64_t lastTokens,
                       double lastSeconds, QString* detail) {
    int64_t bytes = 0, longest = 0;
    QStringList lines;
    auto number = [](int64_t n) { return QLocale(QLocale::English).toString(static_cast<qlonglong>(n)); };
    for (const auto& [config, name] : {std::pair{grassmann, QStringLiteral("Grassmann model")},
                                       std::pair{baseline, QStringLiteral("Transformer baseline")}}) {
        if (!config) continue;
        const int64_t T = std::min<int64_t>(tokens, config->maxLen);
        longest = std::max(longest, T);
        // As the window traces: no lens until the Lens view asks, no g or mixer input.
        const gwb::engine::TraceMemory m = gwb::engine::traceMemory(*config, T);
        bytes += m.total();
        QString line = QStringLiteral("%1: %2 tokens (its context: %3), %4 for the trace and its analysis")
                           .arg(name, number(T), number(config->maxLen), byteText(m.total()));
        if (config->kind == gwb::engine::ModelKind::Transformer && T > 2048)
            line += QStringLiteral("; its attention rows are recomputed from q and k when drawn (above 2,048 tokens "
                                   "no H x T x T matrix is kept)");
        lines << line;
    }
    if (lines.isEmpty()) {
        if (detail) *detail = QStringLiteral("No model open.");
        return {};
    }
    QString text = QStringLiteral("\u2248 %1").arg(byteText(bytes));
    if (lastTokens > 0 && lastSeconds > 0) {
        // Linear in the length: a Grassmann layer is; the baseline's attention grows faster.
        const double seconds = lastSeconds * static_cast<double>(longest) / static_cast<double>(lastTokens);
        text += QStringLiteral(", \u2248 %1 s")
                    .arg(seconds < 10 ? seconds : std::round(seconds), 0, 'f', seconds < 10 ? 1 : 0);
        lines << QStringLiteral("Time at the last Run's rate (%1 tokens in %2 s), linear in the length%3.")
                     .arg(number(lastTokens))
                     .arg(lastSeconds, 0, 'f', 1)
                     .arg(baseline ? QStringLiteral(" (the baseline's attention grows faster)") : QString());
    }
    if (detail) *detail = lines.join(QLatin1Char('\n'));
    return text;
}

PromptLimit::PromptLimit(QWidget* parent) : QWidget(parent) {
    auto* layout = new QHBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    auto* title = new QLabel(QStringLiteral("  Longest prompt "), this);
    m_spin = new QSpinBox(this);
    m_spin->setObjectName(QStringLiteral("promptLimitSpin"));
    m_spin->setRange(16, 1 << 20);
    m_spin->setSingleStep(256);
    m_spin->setValue(kDefaultTokens);
    m_spin->setSuffix(QStringLiteral(" tokens"));
    m_spin->setToolTip(QStringLiteral("A Run traces at most this many tokens of the prompt (and at most each "
                                      "model's context); a longer prompt's first tokens are traced and a notice "
                                      "says how many were left out."));
    m_cost = new QLabel(this);
    m_cost->setObjectName(QStringLiteral("promptLimitCost"));
    layout->addWidget(title);
    layout->addWidget(m_spin);
    layout->addWidget(m_cost);
    connect(m_spin, &QSpinBox::valueChanged, this, [this](int v) {
        updateCost();
        Q_EMIT tokensChanged(v);
    });
    updateCost();
}

int PromptLimit::tokens() const {
    return m_spin->value();
}

void PromptLimit::setTokens(int tokens) {
    m_spin->setValue(tokens);
}

void PromptLimit::setModels(const std::optional<gwb::engine::ModelConfig>& grassmann,
                            const std::optional<gwb::engine::ModelConfig>& baseline) {
    m_grassmann = grassmann;
    m_baseline = baseline;
    updateCost();
}

void PromptLimit::setLastRun(int64_t tokens, double seconds) {
    m_lastTokens = tokens;
    m_lastSeconds = seconds;
    updateCost();
}

QString PromptLimit::costText() const {
    return m_cost->text();
}

void PromptLimit::updateCost() {
    QString detail;
    const QString text = promptCostText(m_grassmann, m_baseline, m_spin->value(), m_lastTokens, m_lastSeconds, &detail);
    m_cost->setText(text.isEmpty() ? QString() : QStringLiteral(" ") + text + QStringLiteral(" "));
    m_cost->setToolTip(QStringLiteral("What a Run of the longest prompt costs:\n") + detail);
}

} // namespace gwb::app
