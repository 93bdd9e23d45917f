#include "gui/saliency_job.h"

#include "gwb/engine/tokenizer.h"
#include "gwb/views/token_strip.h"

#include <QMetaObject>
#include <QPointer>

namespace gwb::app {

SaliencyRunner::SaliencyRunner(QObject* parent) : QObject(parent) {
    qRegisterMetaType<gwb::engine::SaliencyResult>();
}

SaliencyRunner::~SaliencyRunner() = default; // the lane drops queued requests and waits for the running one

void SaliencyRunner::deliver(const gwb::engine::SaliencyResult& result) {
    ++m_latest;     // a request still running is stale now
    m_lane.clear(); // and queued ones too
    Q_EMIT ready(result);
}

void SaliencyRunner::request(const SaliencyRequest& request) {
    const quint64 id = ++m_latest;
    if (request.grassmannChoice) m_cache.setImportChoice(request.grassmannPath, *request.grassmannChoice);
    if (request.baselineChoice) m_cache.setImportChoice(request.baselinePath, *request.baselineChoice);
    m_lane.clear(); // queued but not started requests are stale now
    ModelCache cache = m_cache;
    m_lane.run<SaliencyRunner, gwb::engine::SaliencyResult>(
        this, [cache, request]() mutable { return computeSaliency(cache, request); },
        [id](SaliencyRunner* self, const gwb::engine::SaliencyResult& result) {
            if (id == self->m_latest) Q_EMIT self->ready(result);
        });
}

void wireSaliency(gwb::views::SaliencyView* view, std::function<SaliencyRequest()> context,
                  gwb::views::TokenStrip* strip) {
    auto* runner = new SaliencyRunner(view);
    QObject::connect(view, &gwb::views::SaliencyView::saliencyRequested, runner,
                     [runner, context](int token, const QString& target) {
                         SaliencyRequest r = context();
                         r.token = token;
                         r.target = target;
                         runner->request(r);
                     });
    QObject::connect(runner, &SaliencyRunner::ready, view, &gwb::views::SaliencyView::setSaliency);
    if (!strip) return;
    // Over the token strip: cleared while a new result is computed, drawn when it is current.
    QObject::connect(view, &gwb::views::SaliencyView::saliencyRequested, strip,
                     [strip] { strip->setOverlay({}, QString()); });
    QObject::connect(runner, &SaliencyRunner::ready, strip, [view, strip](const gwb::engine::SaliencyResult& r) {
        if (view->saliency().token != r.token || view->saliency().target != r.target) return; // stale
        const QString asked = QString::fromStdString(r.target);
        const bool g = !r.grassmann.empty();
        const std::vector<float>& s = g ? r.grassmann : r.baseline;
        if (s.empty()) return;
        const QString target = asked.isEmpty() ? QStringLiteral("the next token") : QStringLiteral("'%1'").arg(asked);
        strip->setOverlay(gwb::engine::saliencyShares(s, r.token),
                          QStringLiteral("bars: %1 saliency of %2 at token %3")
                              .arg(g ? QStringLiteral("Grassmann") : QStringLiteral("Transformer"), target)
                              .arg(r.token));
    });
}

} // namespace gwb::app
