#include "gui/saliency_job.h"

#include "common/patch_setup.h"

#include "gwb/engine/tokenizer.h"
#include "gwb/engine/tracer.h"
#include "gwb/views/token_strip.h"

#include <QMetaObject>
#include <QPointer>

namespace gwb::app {

namespace {
/// One model's saliency; returns the error text or "" (filling values and targetText).
QString oneModel(ModelCache& cache, const QString& path, const QString& device, const gwb::engine::TracePtr& trace,
                 int token, const QString& target, std::vector<float>& values, QString& targetText) {
    if (!trace) return {};
    if (path.isEmpty()) return QStringLiteral("no model file");
    std::vector<int32_t> ids;
    for (const auto& t : trace->tokens)
        ids.push_back(t.id);
    if (token < 0 || token >= static_cast<int>(ids.size()))
        return QStringLiteral("token %1 is outside this trace (%2 tokens)").arg(token).arg(ids.size());
    try {
        const gwb::engine::Model model = cache.get(path, device);
        int32_t targetId = -1;
        if (target.isEmpty()) {
            if (token + 1 >= static_cast<int>(ids.size()))
                return QStringLiteral("the last token has no next token: type a target piece");
            targetId = ids[static_cast<size_t>(token + 1)];
            targetText = QString::fromStdString(trace->tokens[static_cast<size_t>(token + 1)].text);
        } else {
            // The rule of gwb patch's answer and wrong pieces: one vocabulary piece, typed as the
            // text encodes, as the vocabulary spells it, or as the strip shows it ('_night').
            targetId = static_cast<int32_t>(pieceId(model, target, "the target"));
            targetText = QString::fromStdString(model.tokenizer()->pieceText(targetId));
        }
        values = gwb::engine::saliency(model, ids, token, targetId);
    } catch (const std::exception& e) {
        values.clear();
        return QString::fromUtf8(e.what());
    }
    return {};
}
} // namespace

gwb::views::SaliencyResult computeSaliency(ModelCache& cache, const SaliencyRequest& r) {
    gwb::views::SaliencyResult out;
    out.token = r.token;
    out.target = r.target;
    out.grassmannError = oneModel(cache, r.grassmannPath, r.device, r.data.grassmann, r.token, r.target, out.grassmann,
                                  out.grassmannTarget);
    out.baselineError =
        oneModel(cache, r.baselinePath, r.device, r.data.baseline, r.token, r.target, out.baseline, out.baselineTarget);
    return out;
}

SaliencyRunner::SaliencyRunner(QObject* parent) : QObject(parent) {
    qRegisterMetaType<gwb::views::SaliencyResult>();
    m_pool.setMaxThreadCount(1);
}

SaliencyRunner::~SaliencyRunner() {
    m_pool.clear();
    m_pool.waitForDone();
}

void SaliencyRunner::deliver(const gwb::views::SaliencyResult& result) {
    ++m_latest;     // a request still running is stale now
    m_pool.clear(); // and queued ones too
    Q_EMIT ready(result);
}

void SaliencyRunner::request(const SaliencyRequest& request) {
    const quint64 id = ++m_latest;
    if (request.grassmannChoice) m_cache.setImportChoice(request.grassmannPath, *request.grassmannChoice);
    if (request.baselineChoice) m_cache.setImportChoice(request.baselinePath, *request.baselineChoice);
    m_pool.clear(); // queued but not started requests are stale now
    QPointer<SaliencyRunner> self(this);
    ModelCache* cache = &m_cache;
    m_pool.start([self, cache, request, id] {
        gwb::views::SaliencyResult result = computeSaliency(*cache, request);
        if (!self) return;
        QMetaObject::invokeMethod(
            self.data(),
            [self, result, id] {
                if (!self) return;
                if (id == self->m_latest) Q_EMIT self->ready(result);
            },
            Qt::QueuedConnection);
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
    QObject::connect(runner, &SaliencyRunner::ready, strip, [view, strip](const gwb::views::SaliencyResult& r) {
        if (view->saliency().token != r.token || view->saliency().target != r.target) return; // stale
        const bool g = !r.grassmann.empty();
        const std::vector<float>& s = g ? r.grassmann : r.baseline;
        if (s.empty()) return;
        const QString target =
            r.target.isEmpty() ? QStringLiteral("the next token") : QStringLiteral("'%1'").arg(r.target);
        strip->setOverlay(gwb::views::saliencyShares(s, r.token),
                          QStringLiteral("bars: %1 saliency of %2 at token %3")
                              .arg(g ? QStringLiteral("Grassmann") : QStringLiteral("Transformer"), target)
                              .arg(r.token));
    });
}

} // namespace gwb::app
