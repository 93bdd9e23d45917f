#include "figure/figure_command.h"

#include "figure/cmd_figure_options.h"

#include "common/process_setup.h"

#include <QGuiApplication>
#include <QTextStream>

namespace gwb::app {

namespace {

/// The process's QGuiApplication, made (offscreen, kept to the end of the process) when there is
/// no Qt application yet; "" or the reason there cannot be one.
QString ensureGuiApplication() {
    if (QCoreApplication* app = QCoreApplication::instance())
        return qobject_cast<QGuiApplication*>(app)
                   ? QString()
                   : QStringLiteral("this process has a Qt application without a GUI (QCoreApplication): figures "
                                    "need a QGuiApplication");
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
    ensureRuntimeDir(); // as the gwb program does: no XDG_RUNTIME_DIR warning on stderr
    seedHashesWhenReproducible();
    static int argc = 1;
    static char name[] = "gwb";
    static char* argv[] = {name, nullptr};
    new QGuiApplication(argc, argv); // lives as long as the process: Qt's fonts and painters need it
    return {};
}

} // namespace

FigureCommandResult runFigureInProcess(const std::vector<std::string>& args) {
    FigureCommandResult r;
    if (const QString problem = ensureGuiApplication(); !problem.isEmpty()) {
        r.err = "gwb figure: " + problem.toStdString() + "\n";
        return r;
    }
    QStringList a{QStringLiteral("gwb figure")};
    for (const std::string& s : args)
        a << QString::fromStdString(s);
    QString outText, errText;
    {
        QTextStream out(&outText), err(&errText);
        r.status = runFigureCommand(a, out, err);
    }
    r.out = outText.toStdString();
    r.err = errText.toStdString();
    return r;
}

} // namespace gwb::app
