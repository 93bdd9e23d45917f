#include "gui/quick_ablation.h"

#include "gwb/views/chart_widget.h"
#include "gwb/views/plucker_view.h"
#include "gwb/views/selection.h"
#include "gwb/views/token_strip.h"
#include "gwb/views/view.h"

#include <QAction>
#include <QMenu>
#include <QPointer>

#include <cmath>

namespace gwb::app {

using gwb::engine::PatchMode;
using gwb::engine::PatchSite;

void addAblationActions(QMenu* menu, const gwb::views::WorkbenchData& data, int layer, bool offsets, int head) {
    const auto& trace = offsets ? data.grassmann : data.baseline;
    if (!trace || layer < 0 || layer >= static_cast<int>(trace->layers.size())) {
        menu->addAction(offsets ? QStringLiteral("Ablate offset: run a prompt with a Grassmann model first")
                                : QStringLiteral("Ablate head: run a prompt with a Transformer first"))
            ->setEnabled(false);
        return;
    }
    const auto& L = trace->layers[static_cast<size_t>(layer)];
    auto add = [menu](const QString& text, const QString& key) {
        QAction* a = menu->addAction(text);
        a->setData(key);
    };
    if (offsets) {
        if (!L.grassmann) return;
        for (int d : L.grassmann->offsets)
            add(QStringLiteral("Ablate offset %1 in layer %2").arg(d).arg(layer),
                QStringLiteral("offset,zero,%1,%2").arg(layer).arg(d));
        menu->addSeparator();
        for (int d : L.grassmann->offsets)
            add(QStringLiteral("Mean-ablate offset %1 in layer %2").arg(d).arg(layer),
                QStringLiteral("offset,mean,%1,%2").arg(layer).arg(d));
    } else {
        if (!L.attention || head < 0 || head >= L.attention->nHeads) return;
        add(QStringLiteral("Ablate head %1 in layer %2").arg(head).arg(layer),
            QStringLiteral("head,zero,%1,%2").arg(layer).arg(head));
        add(QStringLiteral("Mean-ablate head %1 in layer %2").arg(head).arg(layer),
            QStringLiteral("head,mean,%1,%2").arg(layer).arg(head));
    }
}

bool ablationRequest(const QString& actionData, const AblationContext& c, AblationRequest& r, QString* error) {
    const QStringList parts = actionData.split(QLatin1Char(','));
    if (parts.size() != 4) {
        if (error) *error = QStringLiteral("not an ablation action");
        return false;
    }
    const bool offset = parts[0] == QLatin1String("offset");
    const auto& trace = offset ? c.data.grassmann : c.data.baseline;
    if (!trace) {
        if (error) *error = QStringLiteral("no %1 trace: run a prompt first").arg(offset ? "Grassmann" : "Transformer");
        return false;
    }
    r = AblationRequest{};
    r.path = offset ? c.grassmannPath : c.baselinePath;
    r.choice = offset ? c.grassmannChoice : c.baselineChoice;
    r.device = c.device;
    for (const auto& t : trace->tokens)
        r.ids.push_back(t.id);
    r.intervention.site = offset ? PatchSite::Offset : PatchSite::Head;
    r.intervention.mode = parts[1] == QLatin1String("mean") ? PatchMode::Mean : PatchMode::Zero;
    r.intervention.layer = parts[2].toInt();
    r.intervention.position = -1;
    if (offset)
        r.intervention.offset = parts[3].toInt();
    else
        r.intervention.head = parts[3].toInt();
    r.label = QStringLiteral("%1 %2 of layer %3 %4-ablated")
                  .arg(offset ? QStringLiteral("offset") : QStringLiteral("head"), parts[3], parts[2], parts[1]);
    return true;
}

void wireQuickAblations(PatchingRunner* runner, gwb::views::View* plucker, gwb::views::View* attention,
                        gwb::views::TokenStrip* strip, gwb::views::Selection* selection,
                        std::function<AblationContext()> context, std::function<void(const QString&)> status) {
    auto onMenu = [runner, selection, context, status](QWidget* w, const QPoint& pos, bool offsets) {
        const AblationContext c = context();
        QMenu menu(w);
        addAblationActions(&menu, c.data, selection ? selection->layer() : 0, offsets,
                           selection ? selection->head() : 0);
        const QAction* chosen = nullptr; // also when an action is triggered without a click
        QObject::connect(&menu, &QMenu::triggered, &menu, [&chosen](QAction* a) { chosen = a; });
        if (QAction* clicked = menu.exec(w->mapToGlobal(pos))) chosen = clicked;
        if (!chosen || chosen->data().toString().isEmpty()) return;
        AblationRequest r;
        QString error;
        if (!ablationRequest(chosen->data().toString(), c, r, &error)) {
            status(QStringLiteral("Ablation: %1").arg(error));
            return;
        }
        status(QStringLiteral("Computing \u0394 log p of the next token with %1\u2026").arg(r.label));
        runner->requestAblation(r);
    };
    if (auto* pv = qobject_cast<gwb::views::PluckerView*>(plucker)) {
        QWidget* bars = pv->chart();
        bars->setContextMenuPolicy(Qt::CustomContextMenu);
        bars->setToolTip(QStringLiteral("Right-click: ablate an offset of this layer"));
        QObject::connect(bars, &QWidget::customContextMenuRequested, bars,
                         [bars, onMenu](const QPoint& pos) { onMenu(bars, pos, true); });
    }
    if (attention) {
        if (QWidget* grid = attention->findChild<QWidget*>(QStringLiteral("attentionHeadGrid"))) {
            grid->setContextMenuPolicy(Qt::CustomContextMenu);
            grid->setToolTip(QStringLiteral("Click: select a head. Right-click: ablate it"));
            QObject::connect(grid, &QWidget::customContextMenuRequested, grid,
                             [grid, onMenu](const QPoint& pos) { onMenu(grid, pos, false); });
        }
    }
    QPointer<gwb::views::TokenStrip> s(strip);
    QObject::connect(runner, &PatchingRunner::ablationReady, runner,
                     [s, status](const QString& label, const std::vector<double>& delta, const QString& error) {
                         if (!error.isEmpty()) {
                             status(QStringLiteral("Ablation of %1 failed: %2").arg(label, error));
                             return;
                         }
                         double sum = 0;
                         int n = 0;
                         for (double d : delta)
                             if (std::isfinite(d)) {
                                 sum += d;
                                 ++n;
                             }
                         if (s) showAblationOnStrip(s, label, delta);
                         status(QStringLiteral("%1: mean \u0394 log p of the next token %2 nats over %3 positions "
                                               "(bars on the token strip: red = lower, blue = higher)")
                                    .arg(label)
                                    .arg(n ? sum / n : 0.0, 0, 'g', 3)
                                    .arg(n));
                     });
}

} // namespace gwb::app
