// The Patching figure's fields, results and single-pair sweep: its heatmaps, hover and status
// lines, caption, tables and drawing. The pairs-file part is patching_figure_pairs.cpp.

#include "gwb/views/patching_figure.h"
#include "gwb/engine/sites.h"

#include "causal_figure_common.h"
#include "figure_common.h"
#include "plot_util.h"

#include <cmath>

namespace gwb::views {

using detail::qs;
using detail::qsAt;

namespace {
QString shownName(const PatchingGrid& g) {
    switch (g.shown()) {
    case PatchingGrid::Shown::Effect:
        return QStringLiteral("normalised effect");
    case PatchingGrid::Shown::MetricChange:
        return g.ablation ? QStringLiteral("raw effect, ablated \u2212 clean (logits)")
                          : QStringLiteral("raw effect, patched \u2212 corrupted (logits)");
    default:
        return QStringLiteral("mean \u0394 log p (nats)");
    }
}

QStringList modeItems() {
    return {QStringLiteral("patch"), QStringLiteral("zero"), QStringLiteral("mean")};
}
} // namespace

PatchingFigure::PatchingFigure() {
    buildPanels();
}

QJsonObject PatchingFigure::settings() const {
    QJsonObject o = Figure::settings();
    const PatchingInputs in = inputs();
    detail::insertMetricFields(o, in);
    o.insert(QStringLiteral("site"), qs(in.site));
    o.insert(QStringLiteral("mode"), qs(in.mode));
    o.insert(QStringLiteral("pairs_method"), m_pairsMethod);
    if (!m_pairsFile.isEmpty()) o.insert(QStringLiteral("pairs_file"), m_pairsFile);
    return o;
}

void PatchingFigure::setSettings(const QJsonObject& s) {
    Figure::setSettings(s);
    PatchingInputs in = inputs();
    detail::readMetricFields(s, in);
    in.site = s.value(QStringLiteral("site")).toString(qs(in.site)).toStdString();
    in.mode = s.value(QStringLiteral("mode")).toString(qs(in.mode)).toStdString();
    setPairsMethod(s.value(QStringLiteral("pairs_method")).toString(m_pairsMethod));
    m_pairsFile = s.value(QStringLiteral("pairs_file")).toString(m_pairsFile);
    setInputs(in);
}

PatchingInputs PatchingFigure::inputs() const {
    PatchingInputs in = m_inputs;
    in.clean = m_data.prompt();
    return in;
}

void PatchingFigure::setInputs(const PatchingInputs& in) {
    m_inputs.corrupt = in.corrupt;
    m_inputs.answer = qs(in.answer).trimmed().toStdString();
    m_inputs.wrong = qs(in.wrong).trimmed().toStdString();
    if (detail::patchingSiteItems().contains(qs(in.site))) m_inputs.site = in.site;
    if (modeItems().contains(qs(in.mode))) m_inputs.mode = in.mode;
    if (std::isfinite(in.minDifference) && in.minDifference >= 0) m_inputs.minDifference = in.minDifference;
}

QString PatchingFigure::checkInputs(const PatchingInputs& in) {
    if (in.clean.empty()) return QStringLiteral("Run a prompt first: the clean prompt is the window's current prompt.");
    if (const QString problem = siteProblem(in.site); !problem.isEmpty()) return problem;
    if (in.mode != "patch" && in.mode != "zero" && in.mode != "mean")
        return QStringLiteral("Unknown mode '%1' (patch, zero, mean).").arg(qs(in.mode));
    // The rules that need no model are the engine's (gwb patch and Python say the same).
    return detail::sentence(
        gwb::engine::patchTextProblem(in.mode, !in.corrupt.empty(), !in.answer.empty(), !in.wrong.empty()));
}

QString PatchingFigure::siteProblem(const std::string& site) {
    if (detail::patchingSiteItems().contains(qs(site))) return {};
    return QStringLiteral("Unknown site '%1' (%2).")
        .arg(qs(site), detail::patchingSiteItems().join(QStringLiteral(", ")));
}

void PatchingFigure::setPairsMethod(const QString& method) {
    if (method == QLatin1String("exact") || method == QLatin1String("attribution")) m_pairsMethod = method;
}

void PatchingFigure::setResult(const PatchingData& result) {
    if (!result.error.empty()) return; // bad input: the view says so; the earlier sweep stays
    m_result = result;
    m_pairsMode = false;
    buildPanels();
}

void PatchingFigure::setPairsResult(const PairsData& result) {
    if (!result.hasGrid()) return; // nothing usable: what is shown stays
    m_pairs = result;
    m_pairsMode = true;
    m_cellModel = -1;
    m_cellRow = m_cellCol = -1;
    for (int model : {0, 1}) // the cell of largest |mean| whose pairs differ
        if (const PairsGrid& g = m_pairs.grid(model); g.hasGrid()) {
            if (const int64_t cell = defaultPairsCell(g); cell >= 0) setPairsCell(model, cell / g.cols, cell % g.cols);
            break;
        }
    buildPanels();
}

void PatchingFigure::setPairsCell(int model, int64_t r, int64_t c) {
    m_cellModel = model;
    m_cellRow = r;
    m_cellCol = c;
}

void PatchingFigure::buildPanels() {
    for (int model : {0, 1}) {
        if (m_pairsMode) {
            m_panels[model] = pairsPanel(model);
            continue;
        }
        const PatchingGrid& g = grid(model);
        const QString who = detail::modelWord(model);
        if (!g.hasGrid()) {
            m_panels[model] = detail::placeholderPanel(
                !g.error.empty() ? QStringLiteral("%1: %2").arg(who, qs(g.error))
                                 : QStringLiteral("%1: type a corrupted prompt, an answer and a wrong piece, choose a "
                                                  "site and press Run.")
                                       .arg(who));
            continue;
        }
        m_panels[model] = detail::divergingGridPanel(
            g.rows, g.cols, [&g](int64_t r, int64_t c) { return g.value(r, c); },
            detail::gridAxes(g, QStringLiteral("%1 (%2)").arg(who, qs(g.site)), shownName(g)),
            patchingScale(m_result, model)); // one scale for the models showing one quantity, centred at 0
    }
}

QString PatchingFigure::panelTitle(int model) const {
    const QString site = qs(m_pairsMode ? m_pairs.grid(model).site : grid(model).site);
    return QStringLiteral("%1 (%2)").arg(detail::modelWord(model), site.isEmpty() ? qs(m_result.inputs.site) : site);
}

QString PatchingFigure::valueName() const {
    if (m_pairsMode) {
        const PairsGrid& g = m_pairs.grassmann.hasGrid() ? m_pairs.grassmann : m_pairs.transformer;
        return QStringLiteral("mean %1").arg(qs(g.valueName()));
    }
    const PatchingGrid& g = m_result.grassmann.hasGrid() ? m_result.grassmann : m_result.transformer;
    return shownName(g);
}

QString PatchingFigure::cellText(int model, int64_t r, int64_t c, QString* why) const {
    if (why) why->clear();
    if (m_pairsMode) return pairsCellText(model, r, c);
    const PatchingGrid& g = grid(model);
    if (!g.hasGrid() || r < 0 || c < 0 || r >= g.rows || c >= g.cols) return {};
    const size_t i = static_cast<size_t>(r * g.cols + c);
    const QString where =
        QStringLiteral("%1 \u00b7 %2 %3 \u00b7 %4 %5")
            .arg(qs(g.model), qs(g.rowTitle), qsAt(g.rowLabels, r), qs(g.colTitle), qsAt(g.colLabels, c));
    const auto num = detail::finiteOrDash;
    const QString reason = qs(g.undefinedReason(r, c));
    QString text;
    if (g.hasMetric) {
        const double raw = i < g.metric.size() && (i >= g.defined.size() || g.defined[i]) ? g.metric[i] : std::nan("");
        const double eff = i < g.effect.size() && (i >= g.defined.size() || g.defined[i]) ? g.effect[i] : std::nan("");
        text = QStringLiteral("%1 \u00b7 metric %2 (raw; clean %3, corrupted %4) \u00b7 effect %5 (normalised)")
                   .arg(where, num(raw), num(g.cleanMetric), num(g.corruptMetric), num(eff));
        if (why && std::isnan(eff))
            *why = !reason.isEmpty() ? reason
                   : !g.effectNote.empty()
                       ? QStringLiteral("No normalised effect (patched \u2212 corrupted) / (clean \u2212 corrupted): "
                                        "%1.")
                             .arg(qs(g.effectNote))
                       : QStringLiteral("The normalised effect is undefined here.");
    } else {
        text = QStringLiteral("%1 \u00b7 mean \u0394 log p %2 nats (raw) \u00b7 normalised %3")
                   .arg(where, num(g.value(r, c)), QStringLiteral("\u2014"));
        if (why)
            *why = !reason.isEmpty() ? reason
                                     : QStringLiteral("No normalised value: without a corrupted prompt and a metric "
                                                      "there is nothing to normalise by.");
    }
    return text;
}

QString PatchingFigure::undefinedReason(int model, int64_t r, int64_t c) const {
    if (m_pairsMode)
        return QStringLiteral("Undefined: no pair defines this cell (it does not exist in the model, or every pair "
                              "is too short for it or has equal clean and corrupted metrics).");
    const QString why = qs(grid(model).undefinedReason(r, c));
    return why.isEmpty() ? QStringLiteral("undefined here") : why;
}

QString PatchingFigure::statusText() const {
    if (m_pairsMode) return pairsStatusText();
    if (!m_result.hasGrid()) return m_data.primary() ? QString() : QStringLiteral("Run a prompt first.");
    QString text;
    const PatchingData& d = m_result;
    if (d.grassmann.hasMetric || d.transformer.hasMetric) {
        QStringList parts;
        const bool corrupted = !d.corruptTokens.empty();
        for (const PatchingGrid* g : {&d.grassmann, &d.transformer}) {
            if (!g->hasGrid() || !g->hasMetric) continue;
            if (corrupted)
                parts << detail::cleanCorruptedPhrase(g->model, g->cleanMetric, g->corruptMetric) +
                             (g->effectDefined
                                  ? QString()
                                  : QStringLiteral(" \u2014 no normalised effect: %1").arg(qs(g->effectNote)));
            else // an ablation of the clean prompt: nothing was corrupted, so there is no normalised effect
                parts << QStringLiteral("%1 clean %2").arg(qs(g->model), detail::formatValue(g->cleanMetric));
        }
        text = QStringLiteral("logit['%1'] \u2212 logit['%2'] at token %3: %4")
                   .arg(displayPiece(qs(d.answerPiece)), displayPiece(qs(d.wrongPiece)))
                   .arg(d.metricPosition)
                   .arg(parts.join(QStringLiteral("; ")));
        if (!corrupted)
            text += QStringLiteral(" \u2014 %1 ablation of the clean prompt (no corrupted prompt): cells show the "
                                   "metric's change, ablated \u2212 clean")
                        .arg(qs(d.inputs.mode));
    } else {
        text =
            QStringLiteral("%1 ablation: mean \u0394 log p of the next token over the prompt").arg(qs(d.inputs.mode));
    }
    if (d.inputs.clean != m_data.prompt() && m_data.primary())
        text += QStringLiteral(" \u2014 for an earlier prompt: press Run again");
    return text;
}

QString PatchingFigure::missingDataMessage() const {
    return QStringLiteral("Patching: type a corrupted prompt of the same token length, an answer and a wrong "
                          "piece, choose a site and press Run.");
}

bool PatchingFigure::hasContent() const {
    return m_pairsMode ? m_pairs.hasGrid() : m_result.hasGrid();
}

double PatchingFigure::aspect(double widthInches) const {
    if (m_pairsMode) return widthInches < 5 ? 2.3 : 0.85; // the means above, distribution and scatter below
    return widthInches < 5 ? 0.95 : 0.5;
}

QString PatchingFigure::caption() const {
    if (m_pairsMode) return pairsCaption();
    const PatchingData& d = m_result;
    if (!d.hasGrid())
        return QStringLiteral("Causal tests (activation patching and ablation) of both models: no sweep has run yet.");
    const PatchingGrid& g = d.grassmann.hasGrid() ? d.grassmann : d.transformer;
    const QString sites = d.inputs.site == gwb::engine::kUnitAlias
                              ? QStringLiteral("one Grassmann offset D / one Transformer head")
                              : QStringLiteral("site %1").arg(qs(d.inputs.site));
    QString what;
    if (d.inputs.mode == "patch")
        what = QStringLiteral("Activation patching of %1: the corrupted prompt \u201c%2\u201d runs with the value "
                              "at one layer and %3 taken from the clean prompt \u201c%4\u201d")
                   .arg(sites, qs(d.inputs.corrupt), qs(g.colTitle), qs(d.inputs.clean));
    else // "Zero-ablation of ...": a sentence begins with a capital
        what = QStringLiteral("%1-ablation of %2 at one layer and %3 on the prompt \u201c%4\u201d")
                   .arg(detail::sentence(d.inputs.mode).chopped(1), sites, qs(g.colTitle), qs(d.inputs.clean));
    QString value;
    switch (g.shown()) {
    case PatchingGrid::Shown::Effect:
        value = QStringLiteral("cells give the normalised effect (patched \u2212 corrupted) / (clean \u2212 "
                               "corrupted) of logit['%1'] \u2212 logit['%2'] at token %3 (1 = clean behaviour, 0 = "
                               "corrupted)")
                    .arg(displayPiece(qs(d.answerPiece)), displayPiece(qs(d.wrongPiece)))
                    .arg(d.metricPosition);
        break;
    case PatchingGrid::Shown::MetricChange:
        value = QStringLiteral("cells give the raw effect: the change of logit['%1'] \u2212 logit['%2'] at token %3 "
                               "from the unchanged run, in logits")
                    .arg(displayPiece(qs(d.answerPiece)), displayPiece(qs(d.wrongPiece)))
                    .arg(d.metricPosition);
        break;
    default:
        value = QStringLiteral("cells give the mean change of log p of the actual next token over the prompt "
                               "(nats)");
    }
    QStringList metrics;
    const bool corrupted = !d.corruptTokens.empty(); // else an ablation of the clean prompt alone
    for (const PatchingGrid* m : {&d.grassmann, &d.transformer})
        if (m->hasGrid() && m->hasMetric)
            metrics << (corrupted
                            ? detail::cleanCorruptedPhrase(m->model, m->cleanMetric, m->corruptMetric)
                            : QStringLiteral("%1 unablated %2").arg(qs(m->model), detail::formatValue(m->cleanMetric)));
    // Why a model shows raw effects (effect_claims.h's sentence), first: a reader must not take them
    // for normalised ones.
    QStringList notes;
    for (const PatchingGrid* m : {&d.grassmann, &d.transformer})
        if (m->hasGrid() && m->hasMetric && corrupted && !m->effectDefined && !m->effectNote.empty())
            notes << QStringLiteral("%1: no normalised effect: %2").arg(qs(m->model), qs(m->effectNote));
    const bool oneScale =
        !d.grassmann.hasGrid() || !d.transformer.hasGrid() || d.grassmann.shown() == d.transformer.shown();
    return QStringLiteral("%1%2; %3%4. %5; grey cells are undefined.")
        .arg(notes.isEmpty() ? QString() : notes.join(QStringLiteral(". ")) + QStringLiteral(". "), what, value,
             metrics.isEmpty() ? QString() : QStringLiteral(" (%1)").arg(metrics.join(QStringLiteral("; "))),
             oneScale ? QStringLiteral("Both models on one diverging scale centred at 0")
                      : QStringLiteral("Each model on its own diverging scale centred at 0 (they show different "
                                       "quantities)"));
}

std::vector<DataTable> PatchingFigure::dataTables() const {
    if (m_pairsMode) return pairsTables();
    std::vector<DataTable> out;
    for (int model : {0, 1}) {
        const PatchingGrid& g = grid(model);
        if (!g.hasGrid()) continue;
        const QString who = detail::modelWord(model).toLower();
        auto table = [&](const QString& key, const QString& quantity, const QString& units, auto valueOf) {
            std::vector<float> v(static_cast<size_t>(g.rows * g.cols));
            for (int64_t r = 0; r < g.rows; ++r)
                for (int64_t c = 0; c < g.cols; ++c)
                    v[static_cast<size_t>(r * g.cols + c)] = static_cast<float>(valueOf(r, c));
            out.push_back(detail::tableFromMatrix(QStringLiteral("patching_%1_%2_%3").arg(who, qs(g.site), key),
                                                  quantity, QString(), units, g.rows, g.cols, std::move(v),
                                                  qs(g.rowTitle), qs(g.colTitle), detail::qsList(g.rowLabels),
                                                  detail::qsList(g.colLabels)));
        };
        auto at = [&g](const std::vector<double>& a, int64_t r, int64_t c) {
            const size_t i = static_cast<size_t>(r * g.cols + c);
            return i < a.size() && (i >= g.defined.size() || g.defined[i]) ? a[i] : std::nan("");
        };
        if (g.hasMetric) {
            table(QStringLiteral("effect"),
                  QStringLiteral("normalised effect (metric - corrupt) / (clean - corrupt) of logit['%1'] - "
                                 "logit['%2'] at token %3; clean %4, corrupted %5; NaN = undefined")
                      .arg(qs(m_result.answerPiece), qs(m_result.wrongPiece))
                      .arg(m_result.metricPosition)
                      .arg(g.cleanMetric, 0, 'g', 9)
                      .arg(g.corruptMetric, 0, 'g', 9),
                  QString(), [&](int64_t r, int64_t c) { return at(g.effect, r, c); });
            table(QStringLiteral("raw_effect"),
                  QStringLiteral("raw effect: metric - the changed run's own metric (%1), logits; the normalised "
                                 "effect is %2")
                      .arg(g.ablation ? QStringLiteral("clean") : QStringLiteral("corrupted"),
                           g.effectDefined ? QStringLiteral("defined (|clean - corrupted| >= %1)").arg(g.minDifference)
                           : g.effectNote.empty() ? QStringLiteral("not defined (no corrupted prompt)")
                                                  : QStringLiteral("not defined: %1").arg(qs(g.effectNote))),
                  QStringLiteral("logit"), [&](int64_t r, int64_t c) {
                      const double m = at(g.metric, r, c);
                      return m - (g.ablation ? g.cleanMetric : g.corruptMetric);
                  });
            table(QStringLiteral("metric"),
                  QStringLiteral("raw metric logit['%1'] - logit['%2'] of the changed run at token %3")
                      .arg(qs(m_result.answerPiece), qs(m_result.wrongPiece))
                      .arg(m_result.metricPosition),
                  QStringLiteral("logit"), [&](int64_t r, int64_t c) { return at(g.metric, r, c); });
        } else {
            table(QStringLiteral("mean_delta_logprob"),
                  QStringLiteral("mean over t < T-1 of log p(x_{t+1}) of the ablated run minus the unchanged run's"),
                  QStringLiteral("nats"), [&](int64_t r, int64_t c) { return at(g.meanDelta, r, c); });
        }
    }
    return out;
}

void PatchingFigure::draw(QPainter& p, const QRectF& rect, const FigureStyle& style, ColormapId map) const {
    if (m_pairsMode) {
        drawPairs(p, rect, style, map);
        return;
    }
    detail::paintHeatmapPair(p, rect, style, map, m_panels[0], panelWindow(detail::panelName(0)), panelTitle(0),
                             m_panels[1], panelWindow(detail::panelName(1)), panelTitle(1), valueName());
}

} // namespace gwb::views
