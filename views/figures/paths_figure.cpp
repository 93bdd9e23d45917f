#include "gwb/views/paths_figure.h"
#include "gwb/engine/sites.h"

#include "causal_figure_common.h"
#include "figure_common.h"

#include <algorithm>
#include <cmath>

namespace gwb::views {

using detail::qs;
using detail::qsAt;

PathsFigure::PathsFigure() {
    buildPanels();
}

QStringList PathsFigure::senderItems() {
    return {QStringLiteral("all"), QString::fromUtf8(gwb::engine::kUnitAlias), QStringLiteral("mixer"),
            QStringLiteral("gate"), QStringLiteral("ffn")};
}

QStringList PathsFigure::receiverItems() {
    return {QStringLiteral("all"), QStringLiteral("logits"), QStringLiteral("resid")};
}

QJsonObject PathsFigure::settings() const {
    QJsonObject o = Figure::settings();
    const PathsInputs in = inputs();
    detail::insertMetricFields(o, in);
    o.insert(QStringLiteral("senders"), qs(in.senders));
    o.insert(QStringLiteral("receivers"), qs(in.receivers));
    o.insert(QStringLiteral("position"), in.position);
    return o;
}

void PathsFigure::setSettings(const QJsonObject& s) {
    Figure::setSettings(s);
    PathsInputs in = inputs();
    detail::readMetricFields(s, in);
    in.senders = s.value(QStringLiteral("senders")).toString(qs(in.senders)).toStdString();
    in.receivers = s.value(QStringLiteral("receivers")).toString(qs(in.receivers)).toStdString();
    in.position = s.value(QStringLiteral("position")).toInt(in.position);
    setInputs(in);
}

PathsInputs PathsFigure::inputs() const {
    PathsInputs in = m_inputs;
    in.clean = m_data.prompt();
    return in;
}

void PathsFigure::setInputs(const PathsInputs& in) {
    m_inputs.corrupt = in.corrupt;
    m_inputs.answer = qs(in.answer).trimmed().toStdString();
    m_inputs.wrong = qs(in.wrong).trimmed().toStdString();
    if (senderItems().contains(qs(in.senders))) m_inputs.senders = in.senders;
    if (receiverItems().contains(qs(in.receivers))) m_inputs.receivers = in.receivers;
    m_inputs.position = std::clamp(in.position, -1, 1 << 20);
    if (std::isfinite(in.minDifference) && in.minDifference >= 0) m_inputs.minDifference = in.minDifference;
}

QString PathsFigure::checkInputs(const PathsInputs& in) {
    if (in.clean.empty()) return QStringLiteral("Run a prompt first: the clean prompt is the window's current prompt.");
    // Path patching is mode patch with the metric: the engine's rules (gwb paths says the same).
    if (const std::string problem =
            gwb::engine::patchTextProblem("patch", !in.corrupt.empty(), !in.answer.empty(), !in.wrong.empty());
        !problem.empty())
        return detail::sentence(problem);
    if (!senderItems().contains(qs(in.senders)))
        return QStringLiteral("Unknown senders '%1' (all, offset/head, mixer, gate, ffn).").arg(qs(in.senders));
    if (!receiverItems().contains(qs(in.receivers)))
        return QStringLiteral("Unknown receivers '%1' (all, logits, resid).").arg(qs(in.receivers));
    return {};
}

void PathsFigure::setResult(const PathsData& result) {
    if (!result.error.empty()) return; // bad input: the view says so; the earlier result stays
    m_result = result;
    m_pairsMode = false;
    buildPanels();
}

void PathsFigure::buildPanels() {
    for (int model : {0, 1}) {
        if (m_pairsMode) {
            const gwb::engine::PairsGrid& g = m_pairs.grid(model);
            const QString who = detail::modelWord(model);
            m_panels[model] = detail::pairsGridPanel(
                g, m_pairs.grid(1 - model), who,
                QStringLiteral("%1, %2 over %3 pairs").arg(who, detail::pairsShownLabel(g)).arg(g.pairs()));
            continue;
        }
        const PathsGrid& g = grid(model);
        const QString who = detail::modelWord(model);
        if (!g.hasGrid()) {
            m_panels[model] = detail::placeholderPanel(
                !g.error.empty()
                    ? QStringLiteral("%1: %2").arg(who, qs(g.error))
                    : QStringLiteral("%1: type a corrupted prompt, an answer and a wrong piece and press Run.")
                          .arg(who));
            continue;
        }
        HeatmapAxes axes;
        axes.title = who;
        axes.rowTitle = QStringLiteral("sender (by layer)");
        axes.colTitle = QStringLiteral("receiver");
        axes.rowLabels = detail::qsList(g.senders);
        axes.colLabels = detail::qsList(g.receivers);
        axes.valueName = g.effectDefined ? QStringLiteral("normalised effect")
                                         : QStringLiteral("raw effect, path-patched \u2212 corrupted (logits)");
        m_panels[model] = detail::divergingGridPanel(
            g.rows(), g.cols(), [&g](int64_t r, int64_t c) { return g.value(r, c); }, axes,
            pathsScale(m_result, model)); // shared only between matrices of one quantity
    }
}

HeatmapPanel PathsFigure::panel(int model) const {
    HeatmapPanel p = m_panels[model == 0 ? 0 : 1];
    if (m_pairsMode) return p; // its marks: Holm's survivors
    p.marks = {};
    p.marks.row = m_marked.isEmpty() ? -1 : detail::qsList(grid(model).senders).indexOf(m_marked);
    return p;
}

int64_t PathsFigure::rows() const {
    int64_t rows = 0;
    for (int model : {0, 1}) {
        if (m_pairsMode && m_pairs.grid(model).hasGrid()) rows = std::max(rows, m_pairs.grid(model).rows);
        if (!m_pairsMode && grid(model).hasGrid()) rows = std::max(rows, grid(model).rows());
    }
    return rows;
}

QString PathsFigure::valueName() const {
    if (m_pairsMode)
        return detail::pairsShownLabel(m_pairs.grassmann.hasGrid() ? m_pairs.grassmann : m_pairs.transformer);
    const PathsGrid& g = m_result.grassmann.hasGrid() ? m_result.grassmann : m_result.transformer;
    return g.effectDefined || !g.hasGrid() ? QStringLiteral("normalised effect")
                                           : QStringLiteral("raw effect, path-patched \u2212 corrupted (logits)");
}

double PathsFigure::aspect(double widthInches) const {
    // Every sender row gets a label in print too: the figure grows with the rows (the small font
    // is fontPoints - 1: 7 pt at one column, 8 pt at two; a label pitch of 1.25 times that), plus
    // the title and the receivers' labels.
    const double small = widthInches < 5 ? 7.0 : 8.0;
    // Overhead: the panel titles, the receivers' rotated labels and the caption below (longer in
    // lines at one column).
    const double needPoints = static_cast<double>(rows()) * small * 1.25 + (widthInches < 5 ? 250 : 170);
    return std::max(widthInches < 5 ? 1.25 : 0.62, needPoints / (widthInches * 72));
}

QString PathsFigure::cellText(int model, int64_t r, int64_t c, QString* why) const {
    if (why) why->clear();
    if (m_pairsMode) return detail::pairsCellText(m_pairs.grid(model), r, c);
    const PathsGrid& g = grid(model);
    if (!g.hasGrid() || r < 0 || c < 0 || r >= g.rows() || c >= g.cols()) return {};
    const size_t i = static_cast<size_t>(r * g.cols() + c);
    const auto num = detail::finiteOrDash;
    const double raw = i < g.metric.size() ? g.metric[i] : std::nan("");
    const double eff = i < g.effect.size() ? g.effect[i] : std::nan("");
    const QString text = QStringLiteral("%1 \u00b7 %2 \u2192 %3 \u00b7 metric %4 (raw; clean %5, corrupted %6) "
                                        "\u00b7 effect %7 (normalised)")
                             .arg(qs(g.model), qsAt(g.senders, r), qsAt(g.receivers, c), num(raw), num(g.cleanMetric),
                                  num(g.corruptMetric), num(eff));
    if (why && std::isnan(eff)) {
        const QString reason = qs(g.undefinedReason(r, c));
        *why = !reason.isEmpty()      ? reason
               : g.effectNote.empty() ? QStringLiteral("The normalised effect is undefined here.")
                                      : QStringLiteral("No normalised effect: %1.").arg(qs(g.effectNote));
    }
    return text;
}

QString PathsFigure::undefinedReason(int model, int64_t r, int64_t c) const {
    if (m_pairsMode)
        return QStringLiteral("Undefined: no pair defines this cell (the receiver is at or before the sender's "
                              "layer, or the mean clean \u2212 corrupted difference of its pairs is below the "
                              "threshold).");
    const QString why = qs(grid(model).undefinedReason(r, c));
    return why.isEmpty() ? QStringLiteral("undefined here") : why;
}

QString PathsFigure::statusText() const {
    if (m_pairsMode) return pairsStatusText();
    if (!m_result.hasGrid()) return m_data.primary() ? QString() : QStringLiteral("Run a prompt first.");
    QStringList parts;
    for (const PathsGrid* g : {&m_result.grassmann, &m_result.transformer})
        if (g->hasGrid())
            parts << detail::cleanCorruptedPhrase(g->model, g->cleanMetric, g->corruptMetric) +
                         (g->effectDefined ? QString()
                                           : QStringLiteral(" \u2014 no normalised effect: %1").arg(qs(g->effectNote)));
    return QStringLiteral("logit['%1'] \u2212 logit['%2'] at token %3: %4")
        .arg(displayPiece(qs(m_result.answerPiece)), displayPiece(qs(m_result.wrongPiece)))
        .arg(m_result.metricPosition)
        .arg(parts.join(QStringLiteral("; ")));
}

QString PathsFigure::missingDataMessage() const {
    return QStringLiteral("Paths: type a corrupted prompt of the same token length, an answer and a wrong piece and "
                          "press Run.");
}

bool PathsFigure::hasContent() const {
    return m_pairsMode ? m_pairs.hasGrid() : m_result.hasGrid();
}

QString PathsFigure::caption() const {
    if (m_pairsMode) return pairsCaption();
    const PathsData& d = m_result;
    if (!d.hasGrid()) return QStringLiteral("Path patching of both models: no run yet.");
    QStringList metrics, notes;
    for (const PathsGrid* m : {&d.grassmann, &d.transformer})
        if (m->hasGrid()) {
            metrics << detail::cleanCorruptedPhrase(m->model, m->cleanMetric, m->corruptMetric);
            if (!m->effectDefined && !m->effectNote.empty())
                notes << QStringLiteral("%1: no normalised effect: %2. ").arg(qs(m->model), qs(m->effectNote));
        }
    const bool raw = !notes.isEmpty();
    const bool oneScale =
        !d.grassmann.hasGrid() || !d.transformer.hasGrid() || d.grassmann.effectDefined == d.transformer.effectDefined;
    return notes.join(QString()) +
           QStringLiteral("Path patching: the corrupted prompt \u201c%1\u201d runs with one sender at its value from "
                          "the clean prompt \u201c%2\u201d%3 and every other component frozen at its corrupted value; "
                          "column logits gives the sender's direct effect, resid.M its effect through block input "
                          "h^M. Cells give the %8 of logit['%4'] \u2212 logit['%5'] at token %6 (%7). "
                          "%9; grey cells are undefined.")
               .arg(qs(d.inputs.corrupt), qs(d.inputs.clean),
                    d.inputs.position >= 0 ? QStringLiteral(" at token %1 only").arg(d.inputs.position) : QString(),
                    displayPiece(qs(d.answerPiece)), displayPiece(qs(d.wrongPiece)))
               .arg(d.metricPosition)
               .arg(metrics.join(QStringLiteral("; ")),
                    raw ? QStringLiteral("normalised effect where defined, else the raw effect in logits")
                        : QStringLiteral("normalised effect (patched \u2212 corrupted) / (clean \u2212 corrupted)"),
                    oneScale ? QStringLiteral("Both models on one diverging scale centred at 0")
                             : QStringLiteral("Each model on its own diverging scale centred at 0 (they show different "
                                              "quantities)"));
}

std::vector<DataTable> PathsFigure::dataTables() const {
    if (m_pairsMode) return pairsTables();
    std::vector<DataTable> out;
    for (int model : {0, 1}) {
        const PathsGrid& g = grid(model);
        if (!g.hasGrid()) continue;
        const QString who = detail::modelWord(model).toLower();
        for (const bool effect : {true, false}) {
            const std::vector<double>& src = effect ? g.effect : g.metric;
            std::vector<float> v(src.begin(), src.end());
            out.push_back(detail::tableFromMatrix(
                QStringLiteral("paths_%1_%2").arg(who, effect ? QStringLiteral("effect") : QStringLiteral("metric")),
                effect ? QStringLiteral("normalised effect (metric - corrupt) / (clean - corrupt) of logit['%1'] - "
                                        "logit['%2'] at token %3; clean %4, corrupted %5; NaN = undefined")
                             .arg(qs(m_result.answerPiece), qs(m_result.wrongPiece))
                             .arg(m_result.metricPosition)
                             .arg(g.cleanMetric, 0, 'g', 9)
                             .arg(g.corruptMetric, 0, 'g', 9)
                       : QStringLiteral("raw metric logit['%1'] - logit['%2'] of the sender's run at token %3")
                             .arg(qs(m_result.answerPiece), qs(m_result.wrongPiece))
                             .arg(m_result.metricPosition),
                QString(), effect ? QString() : QStringLiteral("logit"), g.rows(), g.cols(), std::move(v),
                QStringLiteral("sender"), QStringLiteral("receiver"), detail::qsList(g.senders),
                detail::qsList(g.receivers)));
        }
    }
    return out;
}

void PathsFigure::draw(QPainter& p, const QRectF& rect, const FigureStyle& style, ColormapId map) const {
    detail::paintHeatmapPair(p, rect, style, map, panel(0), panelWindow(detail::panelName(0)),
                             QStringLiteral("Grassmann"), panel(1), panelWindow(detail::panelName(1)),
                             QStringLiteral("Transformer"), valueName());
}

} // namespace gwb::views
