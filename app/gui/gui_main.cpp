#include "gui/gui_main.h"
#include "common/bundled_models.h"

#include "gui/main_window.h"
#include "gwb/views/graph_view.h"
#include "gui/tour.h"
#include "gui/window_options.h"

#include <QApplication>
#include <QCommandLineParser>
#include <QScreen>
#include <QTimer>

namespace gwb::app {

int runGui(QApplication& app) {
    QCommandLineParser p;
    p.setApplicationDescription(QStringLiteral("Grassmann Workbench window."));
    for (const WindowOption& o : kWindowOptions) {
        QCommandLineOption option(QString::fromLatin1(o.name), QString::fromUtf8(o.help));
        if (o.value) option.setValueName(QString::fromLatin1(o.value));
        p.addOption(option);
    }
    p.addHelpOption();
    p.process(app);
    // The options by name (kWindowOptions, which `gwb --help` lists too).
    const QString model = QStringLiteral("model"), baseline = QStringLiteral("baseline"),
                  session = QStringLiteral("session"), prompt = QStringLiteral("prompt"),
                  promptFile = QStringLiteral("prompt-file"), run = QStringLiteral("run"),
                  tour = QStringLiteral("tour"), select = QStringLiteral("select"), fresh = QStringLiteral("fresh"),
                  stats = QStringLiteral("stats"), continueN = QStringLiteral("continue"),
                  dictionary = QStringLiteral("dictionary"), transcoders = QStringLiteral("transcoders"),
                  baselineTranscoders = QStringLiteral("baseline-transcoders");

    MainWindowOptions options;
    // A tour must show the default layout, and must not change the user's saved one.
    options.restoreSettings = !p.isSet(fresh) && !p.isSet(tour);
    MainWindow window(options);
    // One of the two given: the other is the bundled one, as --help says (before, --model alone left
    // the window without a baseline, so Attention and Compare stayed empty).
    if (p.isSet(model) || p.isSet(baseline))
        window.setModelPaths(p.isSet(model) ? p.value(model) : findBundledModel(gwb::engine::ModelKind::Grassmann),
                             p.isSet(baseline) ? p.value(baseline)
                                               : findBundledModel(gwb::engine::ModelKind::Transformer));
    if (p.isSet(prompt)) window.setPrompt(p.value(prompt));
    if (p.isSet(promptFile)) window.openPromptFile(p.value(promptFile));
    if (p.isSet(tour)) {
        auto* t = new Tour(&window, p.value(tour));
        const QStringList parts = p.value(select).split(QLatin1Char(','));
        if (p.isSet(select)) t->setSelection(parts.value(0).toInt(), parts.value(1).toInt());
    }
    if (p.isSet(tour) && window.screen()) {
        // Screenshots use the whole screen (Xvfb has no window manager to maximize windows).
        window.setGeometry(window.screen()->availableGeometry());
    }
    window.show();
    if (p.isSet(stats)) window.openStatistics(p.value(stats));
    if (p.isSet(dictionary)) window.openDictionary(p.value(dictionary));
    if (auto* gv = qobject_cast<gwb::views::GraphView*>(window.view(gwb::views::view_id::kGraph))) {
        if (p.isSet(transcoders)) gv->setTranscoders(0, p.value(transcoders));
        if (p.isSet(baselineTranscoders)) gv->setTranscoders(1, p.value(baselineTranscoders));
    }
    if (p.isSet(session))
        QTimer::singleShot(0, &window, [&window, path = p.value(session)] { window.openSession(path); });
    else if (p.isSet(run) || p.isSet(tour))
        QTimer::singleShot(0, &window, [&window, n = p.value(continueN).toInt()] {
            if (n > 0)
                window.continueRun(n, true);
            else
                window.run();
        });
    return app.exec();
}

} // namespace gwb::app
