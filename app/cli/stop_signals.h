#pragma once
// Long commands (stats, train, generate, patch sweeps) stop cleanly on Ctrl-C (SIGINT) and on
// SIGTERM, which Slurm and other schedulers send at a job's time limit or on pre-emption (30 s
// before SIGKILL): the command writes its valid partial result, marks it incomplete and exits
// with 128 + the signal (130 for SIGINT, 143 for SIGTERM). A second signal kills at once.

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>

#include <unistd.h>

namespace gwb::app {

/// While alive, SIGINT and SIGTERM set `flag` (and are remembered) instead of killing.
class StopSignals {
public:
    explicit StopSignals(std::atomic<bool>& flag) {
        s_flag = &flag;
        s_signal.store(0);
        struct sigaction sa {};
        sa.sa_handler = &StopSignals::onSignal;
        sigemptyset(&sa.sa_mask);
        sa.sa_flags = SA_RESETHAND; // the second signal takes the default action: exit at once
        sigaction(SIGINT, &sa, &m_oldInt);
        sigaction(SIGTERM, &sa, &m_oldTerm);
    }
    ~StopSignals() {
        sigaction(SIGINT, &m_oldInt, nullptr);
        sigaction(SIGTERM, &m_oldTerm, nullptr);
        s_flag = nullptr;
    }
    StopSignals(const StopSignals&) = delete;
    StopSignals& operator=(const StopSignals&) = delete;

    /// The signal that stopped the run (SIGINT, SIGTERM), 0 when none came.
    static int received() { return s_signal.load(); }
    /// 128 + the signal (130, 143), or `otherwise` when none came.
    static int exitCode(int otherwise = 0) { return received() ? 128 + received() : otherwise; }
    /// "SIGTERM" / "Ctrl-C" for messages.
    static const char* name() { return received() == SIGTERM ? "SIGTERM" : "Ctrl-C"; }

private:
    static void onSignal(int sig) {
        s_signal.store(sig);
        if (std::atomic<bool>* f = s_flag) f->store(true);
    }
    static inline std::atomic<bool>* s_flag = nullptr;
    static inline std::atomic<int> s_signal{0};
    struct sigaction m_oldInt {
    }, m_oldTerm{};
};

/// Progress on a terminal is one line rewritten with '\r'; into a file (a batch job's log) it is
/// whole lines, at most one every `seconds`, so a long job's log does not grow with every step.
class ProgressLine {
public:
    explicit ProgressLine(double seconds = 30.0) : m_interval(seconds), m_tty(::isatty(2) != 0) {}
    bool tty() const { return m_tty; }
    /// True when a line should be written now (always on a terminal; `last` forces one).
    bool due(double elapsedSeconds, bool last = false) {
        if (m_tty || last || m_next < 0 || elapsedSeconds >= m_next) {
            m_next = elapsedSeconds + m_interval;
            return true;
        }
        return false;
    }
    const char* start() const { return m_tty ? "\r" : ""; }
    const char* end() const { return m_tty ? "   " : "\n"; }

private:
    double m_interval;
    double m_next = -1;
    bool m_tty;
};

} // namespace gwb::app
