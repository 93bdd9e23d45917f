// gwb: no arguments opens the workbench window; `gwb <command> ...` runs a headless command.
// Built with GWB_HEADLESS (GWB_BUILD_GUI=OFF) it is the command line alone, on Qt Core.

#include "common/command_registry.h"
#include "common/process_setup.h"
#ifndef GWB_HEADLESS
#include "gui/gui_main.h"
#include "gui/window_options.h"

#include <QApplication>
#include <QGuiApplication>
#endif
#include <QCommandLineParser>
#include <QCoreApplication>
#include <QTextStream>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

namespace {

using gwb::app::Command;

/// Every command of this build, in the order `gwb --help` lists them.
const Command* const kCommands[] = {
    &gwb::app::kEvalCommand,   &gwb::app::kFeaturesCommand, &gwb::app::kGenerateCommand, &gwb::app::kGraphCommand,
    &gwb::app::kImportCommand, &gwb::app::kInfoCommand,     &gwb::app::kInitCommand,     &gwb::app::kLensCommand,
    &gwb::app::kPatchCommand,  &gwb::app::kPathsCommand,    &gwb::app::kStatsCommand,    &gwb::app::kTokenizerCommand,
    &gwb::app::kTraceCommand,  &gwb::app::kTrainCommand,
#ifndef GWB_HEADLESS
    &gwb::app::kFigureCommand,
#endif
};

const Command* findCommand(const QString& name) {
    for (const Command* c : kCommands)
        if (name == QLatin1String(c->name)) return c;
    return nullptr;
}

QString helpText() {
#ifdef GWB_HEADLESS
    const char* usage = "Usage: gwb <command> [options]  run a command (built without the window)\n\n";
#else
    const char* usage = "Usage: gwb [options]            open the workbench window\n"
                        "       gwb <command> [options]  run a command without a window\n\n";
#endif
    QString text = QString::fromLatin1(usage) +
                   QStringLiteral("Grassmann Workbench %1: look inside attention-free Grassmann language models.\n\n"
                                  "Options:\n"
                                  "  -h, --help      Show this help.\n"
                                  "  -v, --version   Show the version.\n\n")
                       .arg(QStringLiteral(GWB_VERSION));
#ifndef GWB_HEADLESS
    // The window's own options, from the table app/gui/gui_main.cpp parses.
    text += QStringLiteral("Window options (gwb [options]):\n");
    for (const gwb::app::WindowOption& o : gwb::app::kWindowOptions) {
        QString left = QStringLiteral("  --") + QString::fromLatin1(o.name);
        if (o.value) left += QLatin1Char(' ') + QString::fromLatin1(o.value);
        // Wrapped at 100 columns, continued under the description.
        const QStringList words = QString::fromUtf8(o.help).split(QLatin1Char(' '));
        QString line = left.leftJustified(22);
        if (left.size() >= 22) line = left + QStringLiteral("\n") + QString(22, QLatin1Char(' '));
        int width = line.size() - line.lastIndexOf(QLatin1Char('\n')) - 1;
        for (const QString& w : words) {
            if (width + w.size() + 1 > 100 && width > 22) {
                line += QStringLiteral("\n") + QString(22, QLatin1Char(' '));
                width = 22;
            } else if (width > 22) {
                line += QLatin1Char(' ');
                ++width;
            }
            line += w;
            width += static_cast<int>(w.size());
        }
        text += line + QLatin1Char('\n');
    }
    text += QLatin1Char('\n');
#endif
    text += QStringLiteral("Commands (gwb <command> --help for each):\n");
    std::vector<const Command*> sorted(std::begin(kCommands), std::end(kCommands));
    std::sort(sorted.begin(), sorted.end(),
              [](const Command* a, const Command* b) { return std::strcmp(a->name, b->name) < 0; });
    for (const Command* c : sorted)
        text += QStringLiteral("  %1 %2\n").arg(QString::fromLatin1(c->name), -12).arg(QString::fromUtf8(c->summary));
    return text;
}

} // namespace

int main(int argc, char** argv) {
    gwb::app::ensureRuntimeDir();
    gwb::app::seedHashesWhenReproducible();
    QCoreApplication::setApplicationName(QStringLiteral("gwb"));
    QCoreApplication::setOrganizationName(QStringLiteral("GrassmannWorkbench"));
    QCoreApplication::setApplicationVersion(QStringLiteral(GWB_VERSION));

    const QString first = argc > 1 ? QString::fromLocal8Bit(argv[1]) : QString();
    if (first == QLatin1String("-h") || first == QLatin1String("--help") || first == QLatin1String("help")) {
        QTextStream(stdout) << helpText();
        return 0;
    }
    if (first == QLatin1String("-v") || first == QLatin1String("--version")) {
        QTextStream(stdout) << "gwb " << GWB_VERSION << "\n";
        return 0;
    }
    if (first.isEmpty() || first.startsWith(QLatin1Char('-'))) {
#ifdef GWB_HEADLESS
        QTextStream(stderr) << "gwb: this build has no window (GWB_BUILD_GUI=OFF); name a command\n\n" << helpText();
        return 2;
#else
        // QGuiApplication takes "-session NAME" / "--session NAME" out of argv for X11 session
        // management, so gwb's own --session FILE would never arrive. Joined into one argument
        // ("--session=FILE") it passes through untouched.
        static std::vector<std::string> joined;
        static std::vector<char*> guiArgv;
        for (int i = 0; i < argc; ++i) {
            const std::string a = argv[i];
            if ((a == "--session" || a == "-session") && i + 1 < argc) {
                joined.push_back("--session=" + std::string(argv[++i]));
            } else {
                joined.push_back(a);
            }
        }
        for (std::string& a : joined)
            guiArgv.push_back(a.data());
        guiArgv.push_back(nullptr);
        int guiArgc = static_cast<int>(joined.size());
        QApplication app(guiArgc, guiArgv.data());
        return gwb::app::runGui(app);
#endif
    }

    const auto* command = findCommand(first);
    if (!command) {
        QTextStream(stderr) << "gwb: unknown command '" << first << "'\n\n" << helpText();
        return 2;
    }
    // The command sees argv as "gwb <name>" followed by its own options, so its --help reads
    // "Usage: gwb <name> [options]". QCoreApplication keeps argc/argv: they must outlive it.
    static std::string program;
    program = std::string("gwb ") + argv[1];
    static std::vector<char*> commandArgv;
    commandArgv.assign(argv, argv + argc);
    commandArgv[1] = program.data();
    commandArgv.erase(commandArgv.begin());
    commandArgv.push_back(nullptr);
    int commandArgc = argc - 1;
    char** cargv = commandArgv.data();
    std::unique_ptr<QCoreApplication> app;
#ifndef GWB_HEADLESS
    // Headless commands that draw (figure) need a QGuiApplication even without a display.
    if (command->needsGui) {
        if (qEnvironmentVariableIsEmpty("DISPLAY") && qEnvironmentVariableIsEmpty("WAYLAND_DISPLAY") &&
            qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM"))
            qputenv("QT_QPA_PLATFORM", "offscreen");
        app = std::make_unique<QGuiApplication>(commandArgc, cargv);
    }
#endif
    if (!app) app = std::make_unique<QCoreApplication>(commandArgc, cargv);
    QStringList args = app->arguments();
    args[0] = QString::fromStdString(program);
    return command->run(args);
}
