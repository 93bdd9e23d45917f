#pragma once
// Running the real `gwb` executable as a process from the app tests: offscreen, with no bundled
// model fallback (GWB_MODELS_DIR points nowhere), so every test names the models it uses.

#include <QByteArray>
#include <QFile>
#include <QProcess>
#include <QString>
#include <QStringList>

#include <gtest/gtest.h>

#include <string>

namespace gwb::app::test {

struct GwbResult {
    int code = -1; ///< exit code; -1 when it crashed or timed out
    QString out, err;
};

inline QProcessEnvironment gwbEnvironment() {
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert(QStringLiteral("QT_QPA_PLATFORM"), QStringLiteral("offscreen"));
    env.insert(QStringLiteral("GWB_MODELS_DIR"), QStringLiteral("/nonexistent-gwb-models"));
    return env;
}

inline GwbResult runGwb(const QStringList& args, int timeoutMs = 120000) {
    QProcess p;
    p.setProcessEnvironment(gwbEnvironment());
    p.start(QStringLiteral(GWB_EXECUTABLE), args);
    if (!p.waitForFinished(timeoutMs)) {
        p.kill();
        p.waitForFinished();
        return {};
    }
    GwbResult r{p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1,
                QString::fromLocal8Bit(p.readAllStandardOutput()), QString::fromLocal8Bit(p.readAllStandardError())};
    // A command that asks its parser about an option it never added gets Qt's warning and a
    // silently ignored option: every process run by the tests is checked for it.
    if (r.err.contains(QStringLiteral("QCommandLineParser: option not defined")))
        ADD_FAILURE() << "gwb " << args.join(QLatin1Char(' ')).toStdString() << " uses an undefined option:\n"
                      << r.err.toStdString();
    return r;
}

/// Writes a file for a gwb process to read (a corpus, a prompt); fails the test when it cannot.
inline void writeText(const QString& path, const QByteArray& text) {
    QFile f(path);
    ASSERT_TRUE(f.open(QIODevice::WriteOnly)) << path.toStdString();
    f.write(text);
}

/// Both streams, for failure messages.
inline std::string show(const GwbResult& r) {
    return ("stdout: " + r.out + "\nstderr: " + r.err).toStdString();
}

} // namespace gwb::app::test
