#include "gui/gui_main.h"
#include "cli/bundled_models.h"

#include "gui/main_window.h"
#include "gui/tour.h"

#include <QApplication>
#include <QCommandLineParser>
#include <QScreen>
#include <QTimer>

namespace gwb::app {

int runGui(QApplication& app) {
    QCommandLineParser p;
    p.setApplicationDescription(QStringLiteral("Grassmann Workbench window."));
    const QCommandLineOption model(QStringLiteral("model"), QStringLiteral("Grassmann model to open."),
                                   QStringLiteral("FILE"));
    const QCommandLineOption baseline(QStringLiteral("baseline"), QStringLiteral("Transformer baseline to open."),
                                      QStringLiteral("FILE"));
    const QCommandLineOption session(QStringLiteral("session"), QStringLiteral("Session file to open."),
                                     QStringLiteral("FILE"));
    const QCommandLineOption prompt(QStringLiteral("prompt"), QStringLiteral("Prompt text."), QStringLiteral("TEXT"));
    const QCommandLineOption promptFile(QStringLiteral("prompt-file"), QStringLiteral("Prompt file."),
                                        QStringLiteral("FILE"));
    const QCommandLineOption run(QStringLiteral("run"), QStringLiteral("Run the prompt at start."));
    const QCommandLineOption tour(QStringLiteral("tour"),
                                  QStringLiteral("After the run, screenshot every view into DIR and quit."),
                                  QStringLiteral("DIR"));
    const QCommandLineOption select(QStringLiteral("select"), QStringLiteral("Tour: token[,layer] to select."),
                                    QStringLiteral("T,L"));
    const QCommandLineOption fresh(QStringLiteral("fresh"),
                                   QStringLiteral("Ignore and keep the saved layout and settings."));
    const QCommandLineOption stats(QStringLiteral("stats"),
                                   QStringLiteral("Corpus statistics (gwb stats) to open in the Corpus view."),
                                   QStringLiteral("S.npz"));
    const QCommandLineOption continueN(
        QStringLiteral("continue"),
        QStringLiteral("With --run or --tour: let the Grassmann model continue the prompt by N tokens first "
                       "(sampled with seed 0, as the Continue button)."),
        QStringLiteral("N"));
    const QCommandLineOption dictionary(
        QStringLiteral("dictionary"),
        QStringLiteral("Open a dictionary folder (gwb features train) in the Features view."), QStringLiteral("DIR"));
    p.addOptions(
        {model, baseline, session, prompt, promptFile, run, tour, select, fresh, stats, continueN, dictionary});
    p.addHelpOption();
    p.process(app);

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
