#include "gui/first_start.h"

#include "gwb/views/selection.h"
#include "gwb/views/token_strip.h"

#include <QFile>
#include <QPointer>
#include <QScrollArea>
#include <QTimer>

namespace gwb::app {

QString samplePrompt() {
    QFile f(QStringLiteral(":/gwb/prompts/pride-opening.txt"));
    if (f.open(QIODevice::ReadOnly)) {
        const QString text = QString::fromUtf8(f.readAll()).trimmed();
        if (!text.isEmpty()) return text;
    }
    return QStringLiteral("It is a truth universally acknowledged, that a single man in possession of a good "
                          "fortune, must be in want of a wife.");
}

void keepSelectionVisible(QScrollArea* area, gwb::views::TokenStrip* strip, gwb::views::Selection* selection) {
    QPointer<QScrollArea> a(area);
    QPointer<gwb::views::TokenStrip> s(strip);
    QPointer<gwb::views::Selection> sel(selection);
    // Queued: the strip lays its chips out on resize, after the data or the selection changed.
    auto scroll = [a, s, sel] {
        QTimer::singleShot(0, a, [a, s, sel] {
            if (!a || !s || !sel) return;
            const QRectF r = s->chipRect(sel->token());
            if (r.isEmpty()) return;
            // A chip of the first row shows the legend above it too (scrolled back from a later
            // row, the view stopped at the chip and cut the legend in half).
            if (r.top() <= s->chipRect(0).top() + 1) {
                a->ensureVisible(static_cast<int>(r.center().x()), static_cast<int>(r.bottom() / 2),
                                 static_cast<int>(r.width() / 2) + 4, static_cast<int>(r.bottom() / 2) + 4);
                return;
            }
            a->ensureVisible(static_cast<int>(r.center().x()), static_cast<int>(r.center().y()),
                             static_cast<int>(r.width() / 2) + 4, static_cast<int>(r.height() / 2) + 4);
        });
    };
    QObject::connect(selection, &gwb::views::Selection::tokenChanged, area, scroll);
    QObject::connect(selection, &gwb::views::Selection::extentsChanged, area, scroll);
}

} // namespace gwb::app
