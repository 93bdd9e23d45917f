#include "gwb/views/readout_figure.h"

#include "figure_common.h"
#include "plot_util.h"

#include "gwb/views/selection_policy.h"
#include "gwb/views/subspace_figure.h"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <tuple>

namespace gwb::views {

QJsonObject ReadoutFigure::settings() const {
    QJsonObject o = Figure::settings();
    o.insert(QStringLiteral("rank"),
             m_rank == Rank::Residual ? QStringLiteral("residual") : QStringLiteral("planarity"));
    if (m_pinned) o.insert(QStringLiteral("channel"), channel());
    return o;
}

void ReadoutFigure::setSettings(const QJsonObject& s) {
    Figure::setSettings(s);
    if (s.contains(QStringLiteral("rank")))
        m_rank =
            s.value(QStringLiteral("rank")).toString() == QLatin1String("residual") ? Rank::Residual : Rank::Planarity;
    if (s.contains(QStringLiteral("channel"))) {
        m_pinned = true;
        setChannel(s.value(QStringLiteral("channel")).toInt());
    }
}

QString ReadoutFigure::missingDataMessage() const {
    if (readoutUndefined())
        return QStringLiteral("Read-out planes are not defined for this model: its mixer sends each offset's plane "
                              "through an MLP (aggregation per_offset_mlp), so no linear W_plu row reads a plane. "
                              "The Plücker view's pair norms and the Compare view's influence are defined.");
    if (const QString pending = detail::pendingAnalysisMessage(m_data, analysisParts()); !pending.isEmpty())
        return pending;
    return detail::grassmannMissingMessage(m_data);
}

QString ReadoutFigure::chartPlaceholder() const {
    return readoutUndefined() ? QStringLiteral("Not defined for this model (per-offset MLP, no W_plu): see below")
                              : missingDataMessage();
}

bool ReadoutFigure::readoutUndefined() const {
    return detail::planesThroughMlp(m_data);
}

const gwb::engine::GrassmannLayerAnalysis* ReadoutFigure::layerAnalysis() const {
    const auto* a = detail::grassmannAnalysis(m_data, selLayer());
    return a && !a->readoutResidual.empty() ? a : nullptr;
}

bool ReadoutFigure::hasContent() const {
    return m_data.grassmann && !readoutUndefined() && layerAnalysis() != nullptr;
}

int ReadoutFigure::channelCount() const {
    return hasContent() ? static_cast<int>(layerAnalysis()->readoutResidual.size()) : 0;
}

void ReadoutFigure::followSelection() const {
    if (!hasContent()) return;
    if (selToken() != m_lastToken || selLayer() != m_lastLayer) {
        m_lastToken = selToken();
        m_lastLayer = selLayer();
        if (!m_pinned)
            if (const std::vector<int> top = topChannels(); !top.empty()) m_channel = top.front();
    }
    m_channel = std::clamp(m_channel, 0, channelCount() - 1);
}

int ReadoutFigure::channel() const {
    followSelection();
    return m_channel;
}

void ReadoutFigure::setChannel(int c) {
    followSelection(); // a pending token or layer change first: it must not replace c later
    m_channel = c;
}

std::vector<int> ReadoutFigure::rankedChannels() const {
    const auto* a = layerAnalysis();
    if (!a) return {};
    std::vector<int> idx(a->readoutResidual.size());
    std::iota(idx.begin(), idx.end(), 0);
    // NaN (zero channels) last in either order.
    auto key = [&](int c) {
        const float v = m_rank == Rank::Residual ? -a->readoutResidual[static_cast<size_t>(c)]
                                                 : a->readoutPlanarity[static_cast<size_t>(c)];
        return std::isnan(v) ? std::numeric_limits<float>::infinity() : v;
    };
    std::stable_sort(idx.begin(), idx.end(), [&](int x, int y) { return key(x) < key(y); });
    return idx;
}

std::vector<int> ReadoutFigure::topChannels() const {
    const auto* a = layerAnalysis();
    if (!a) return {};
    return gwb::engine::topReadoutChannels(*a, selToken(), kTopChannels);
}

ChartData ReadoutFigure::rankedChart() const {
    ChartData c;
    const auto* a = layerAnalysis();
    if (!a) return c;
    const int channel = this->channel();
    c.kind = ChartData::Kind::Line;
    c.title = QStringLiteral("Layer %1: read-out channels ranked by %2")
                  .arg(selLayer())
                  .arg(m_rank == Rank::Residual ? QStringLiteral("residual") : QStringLiteral("planarity"));
    c.xTitle = QStringLiteral("channel rank");
    c.yTitle = QStringLiteral("value");
    c.yMin = 0;
    c.yMax = 1;
    ChartSeries pla{QStringLiteral("planarity s\u2081\u00b2/\u03a3s\u2096\u00b2"), {}, {}, seriesColor(0)};
    ChartSeries res{QStringLiteral("residual \u03c1(A_c)"), {}, {}, seriesColor(1)};
    ChartSeries sel{QStringLiteral("channel %1").arg(channel), {}, {}, Qt::black};
    const std::vector<int> order = rankedChannels();
    for (size_t i = 0; i < order.size(); ++i) {
        const auto c2 = static_cast<size_t>(order[i]);
        pla.x.push_back(static_cast<double>(i));
        res.x.push_back(static_cast<double>(i));
        sel.x.push_back(static_cast<double>(i));
        pla.y.push_back(a->readoutPlanarity[c2]);
        res.y.push_back(a->readoutResidual[c2]);
        const float v = m_rank == Rank::Residual ? a->readoutResidual[c2] : a->readoutPlanarity[c2];
        sel.y.push_back(order[i] == channel ? v : std::nan(""));
    }
    c.series = {pla, res, sel};
    return c;
}

ChartData ReadoutFigure::spectrumChart() const {
    ChartData c;
    const auto* a = layerAnalysis();
    const int channel = this->channel();
    if (!a || a->readoutSpectrum.rank() != 2 || channel < 0 || channel >= a->readoutSpectrum.dim(0)) return c;
    c.kind = ChartData::Kind::Bar;
    const auto ch = static_cast<size_t>(channel);
    c.title = QStringLiteral("Channel %1: singular pairs of A_c (planarity %2, \u03c1 %3)")
                  .arg(channel)
                  .arg(detail::formatValue(a->readoutPlanarity[ch]), detail::formatValue(a->readoutResidual[ch]));
    c.xTitle = QStringLiteral("pair k");
    c.yTitle = QStringLiteral("s_k");
    ChartSeries s;
    s.name = QStringLiteral("s_k");
    for (int64_t k = 0; k < a->readoutSpectrum.dim(1); ++k) {
        c.categories << QString::number(k + 1);
        s.y.push_back(a->readoutSpectrum.at2(channel, k));
    }
    c.series.push_back(s);
    return c;
}

SphereData ReadoutFigure::spherePicture() const {
    const auto* layer = detail::grassmannLayer(m_data, selLayer());
    const auto* a = layerAnalysis();
    SphereData out;
    if (!layer || !a) return out;
    SubspacePicture pic;
    try {
        pic = computeSubspacePicture(*layer, selToken(), tokenLabels(*m_data.grassmann));
    } catch (const std::exception& e) {
        out.notes << QString::fromUtf8(e.what());
        return out;
    }
    out = pic.sphere;
    // Short labels so that the legend fits beside the sphere (the table names the tokens).
    for (size_t i = 0; i < out.circles.size() && i < pic.offsets.size(); ++i)
        out.circles[i].label = QStringLiteral("D=%1 pair plane").arg(pic.offsets[i]);
    out.notes.clear();
    out.notes
        << QStringLiteral("3 directions hold %1% of the z variance").arg(std::lround(pic.explainedVariance * 100));
    out.title = QStringLiteral("Token %1: pair planes and top planes of its top channels (layer %2)")
                    .arg(selToken())
                    .arg(selLayer());
    const int64_t r = pic.directions.dim(1);
    Eigen::MatrixXd V(r, 3);
    for (int k = 0; k < 3; ++k)
        for (int64_t j = 0; j < r; ++j)
            V(j, k) = pic.directions.at2(k, j);
    const std::vector<int> top = topChannels();
    const int shown = std::min<int>(3, static_cast<int>(top.size()));
    for (int i = 0; i < shown; ++i) {
        const int c = top[static_cast<size_t>(i)];
        Eigen::MatrixXd q(r, 2);
        for (int64_t j = 0; j < r; ++j)
            for (int k = 0; k < 2; ++k)
                q(j, k) = a->readoutTopPlane.at3(c, j, k);
        if (!q.allFinite()) continue;
        const Eigen::MatrixXd p = V.transpose() * q; // 3 x 2
        const double kept = p.squaredNorm() / 2.0;
        Eigen::Vector3d e1 = p.col(0);
        Eigen::Vector3d e2 = p.col(1);
        if (e1.norm() < e2.norm()) std::swap(e1, e2);
        if (e1.norm() < 1e-9) continue;
        e1.normalize();
        e2 -= e1.dot(e2) * e1;
        if (e2.norm() < 1e-6) {
            out.notes << QStringLiteral("channel %1: top plane collapses to a line under the projection").arg(c);
            continue;
        }
        e2.normalize();
        SphereData::Circle circle;
        circle.label = QStringLiteral("c%1 top plane (%2% kept)").arg(c).arg(std::lround(kept * 100));
        circle.color = QColor::fromHsv(0, 0, 60 + 50 * i); // greys: channels, colours: the token's pair planes
        circle.e1 = {e1[0], e1[1], e1[2]};
        circle.e2 = {e2[0], e2[1], e2[2]};
        out.circles.push_back(circle);
    }
    return out;
}

std::vector<ReadoutFigure::ChannelRow> ReadoutFigure::topChannelRows() const {
    std::vector<ChannelRow> rows;
    const auto* a = layerAnalysis();
    if (!a) return rows;
    const int t = selToken();
    for (int c : topChannels()) {
        const auto ch = static_cast<size_t>(c);
        rows.push_back({c, a->readoutContribution.at2(t, c), a->readoutPlanarity[ch], a->readoutResidual[ch],
                        a->readoutAngles.at3(t, c, 0), a->readoutAngles.at3(t, c, 1)});
    }
    return rows;
}

QStringList ReadoutFigure::topChannelLines() const {
    QStringList lines;
    auto f2 = [](double v) { return std::isnan(v) ? QStringLiteral("\u2014") : QString::number(v, 'f', 2); };
    for (const ChannelRow& r : topChannelRows())
        lines << QStringLiteral("c%1  %2  P %3  \u03b8 %4, %5")
                     .arg(r.channel)
                     .arg(f2(r.contribution), f2(r.planarity), f2(r.theta1), f2(r.theta2));
    return lines;
}

std::vector<DataTable> ReadoutFigure::dataTables() const {
    if (!hasContent()) return {};
    const auto* a = layerAnalysis();
    const int64_t d = static_cast<int64_t>(a->readoutResidual.size());
    const int t = selToken();
    std::vector<DataTable> out;
    {
        DataTable tab;
        tab.name = QStringLiteral("readout_layer%1").arg(selLayer());
        tab.quantity = QStringLiteral("per channel: residual rho(A_c), planarity, z_t^T A_c y_t and principal angles "
                                      "to the token plane (token %1)")
                           .arg(t);
        tab.definitionKey = QStringLiteral("readoutPlanarity");
        std::vector<float> v;
        for (int64_t c = 0; c < d; ++c) {
            v.push_back(a->readoutResidual[static_cast<size_t>(c)]);
            v.push_back(a->readoutPlanarity[static_cast<size_t>(c)]);
            v.push_back(a->readoutContribution.at2(t, c));
            v.push_back(a->readoutAngles.at3(t, c, 0));
            v.push_back(a->readoutAngles.at3(t, c, 1));
        }
        tab.values = gwb::engine::FloatArray({d, 5}, v);
        tab.rowAxis = QStringLiteral("channel");
        tab.colAxis = QStringLiteral("quantity");
        tab.colLabels = {QStringLiteral("residual"), QStringLiteral("planarity"), QStringLiteral("contribution"),
                         QStringLiteral("theta1_rad"), QStringLiteral("theta2_rad")};
        out.push_back(tab);
    }
    {
        DataTable tab;
        const int channel = this->channel();
        tab.name = QStringLiteral("spectrum_layer%1_channel%2").arg(selLayer()).arg(channel);
        tab.quantity = QStringLiteral("distinct singular values of A_c");
        tab.definitionKey = QStringLiteral("readoutSpectrum");
        const int64_t k = a->readoutSpectrum.dim(1);
        std::vector<float> v(a->readoutSpectrum.row(channel), a->readoutSpectrum.row(channel) + k);
        tab.values = gwb::engine::FloatArray({k}, v);
        tab.rowAxis = QStringLiteral("pair");
        out.push_back(tab);
    }
    {
        const std::vector<ChannelRow> top = topChannelRows();
        DataTable tab;
        tab.name = QStringLiteral("top_channels_token%1_layer%2").arg(t).arg(selLayer());
        tab.quantity = QStringLiteral("the token's channels by |z_t^T A_c y_t|: channel, contribution, theta1, theta2");
        tab.definitionKey = QStringLiteral("readoutContribution");
        std::vector<float> v;
        for (const ChannelRow& r : top) {
            v.push_back(static_cast<float>(r.channel));
            v.push_back(r.contribution);
            v.push_back(r.theta1);
            v.push_back(r.theta2);
        }
        tab.values = gwb::engine::FloatArray({static_cast<int64_t>(top.size()), 4}, v);
        tab.rowAxis = QStringLiteral("rank");
        tab.colAxis = QStringLiteral("quantity");
        tab.colLabels = {QStringLiteral("channel"), QStringLiteral("contribution"), QStringLiteral("theta1_rad"),
                         QStringLiteral("theta2_rad")};
        out.push_back(tab);
    }
    return out;
}

QString ReadoutFigure::caption() const {
    return QStringLiteral(
               "Read-out planes of Grassmann layer %1. Each channel c of W_plu is an antisymmetric r x r "
               "matrix A_c with g_{t,c} \u2212 b_c = z_t^T A_c y_t. Channels ranked by planarity: planarity (%2) and "
               "residual (%3). Channel %4: its singular pairs. Top channels: token %5's channels with the largest "
               "|z_t^T A_c y_t| (value, planarity P, principal angles \u03b8 in rad between span(z_t, y_t) and "
               "the channel's top plane). Sphere: the token's pair planes (colours) and the top planes of its three "
               "top channels (greys), projected onto the layer's top-3 principal directions of z.")
               .arg(selLayer())
               .arg(detail::engineDefinition("readoutPlanarity"), detail::engineDefinition("readoutResidual"))
               .arg(channel())
               .arg(selToken()) +
           detail::modelPhrase(m_data.grassmann);
}

void ReadoutFigure::draw(QPainter& p, const QRectF& rect, const FigureStyle& style, ColormapId) const {
    const double gap = style.metrics(style.body).height();
    // Wide (two-column): charts above, list and sphere below. Narrow (one column): ranked chart,
    // then spectrum beside the list, then the sphere across the full width.
    const bool wide = rect.width() > rect.height();
    QRectF rankRect, specRect, listRect, sphereRect;
    if (wide) {
        const auto [topRect, bottomRect] = detail::splitPanels(rect, 0.42, false, gap);
        std::tie(rankRect, specRect) = detail::splitPanels(topRect, 0.6, true, gap);
        std::tie(listRect, sphereRect) = detail::splitPanels(bottomRect, 0.36, true, gap);
    } else {
        // One column: every panel across the full width, each chart at least as tall as it needs to
        // read (its title wraps to two lines here), the sphere below in what is left.
        const double rankH = std::max(chartHeightFor(rankedChart(), rect.width(), style), rect.height() * 0.2);
        const double specH = std::max(chartHeightFor(spectrumChart(), rect.width(), style), rect.height() * 0.16);
        const double listH = detail::panelTitleHeight(QStringLiteral("Token 00: top channels"), rect.width(), style) +
                             style.metrics(style.small).height() * 1.2 * 5;
        double y = rect.top();
        for (auto [panel, h] :
             {std::pair{&rankRect, rankH}, std::pair{&specRect, specH}, std::pair{&listRect, listH}}) {
            *panel = QRectF(rect.left(), y, rect.width(), h);
            y += h + gap;
        }
        sphereRect = QRectF(rect.left(), y, rect.width(), std::max(0.0, rect.bottom() - y));
    }
    paintChart(p, rankRect, rankedChart(), style);
    paintChart(p, specRect, spectrumChart(), style);
    QRectF list = detail::paintPanelTitle(p, listRect, QStringLiteral("Token %1: top channels").arg(selToken()), style);
    p.save();
    p.setFont(style.small);
    p.setPen(Qt::black);
    const QStringList lines = topChannelLines();
    const double lineH = style.metrics(style.small).height() * 1.2;
    double y = list.top();
    if (lines.isEmpty())
        detail::drawWrappedText(p, list, undefinedReason(QStringLiteral("The token's read-out"), selToken()), true);
    for (const QString& line : lines) {
        if (y + lineH > list.bottom()) break;
        // A line wider than the column is set smaller, not cut.
        const double w = style.metrics(style.small).horizontalAdvance(line);
        p.setFont(w > list.width() && w > 0 ? detail::scaledFont(style.small, std::max(0.6, list.width() / w))
                                            : style.small);
        p.drawText(QRectF(list.left(), y, list.width(), lineH), Qt::AlignLeft | Qt::AlignVCenter | Qt::TextDontClip,
                   line);
        y += lineH;
    }
    p.restore();
    paintSphere(p, sphereRect, spherePicture(), m_rotation, style);
}

} // namespace gwb::views
