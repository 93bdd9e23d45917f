#include "gui/work_lane.h"

#include <QMutex>
#include <QThread>
#include <QThreadPool>
#include <QWaitCondition>

#include <algorithm>
#include <deque>

namespace gwb::app {

struct WorkLane::State {
    mutable QMutex mutex;
    QWaitCondition idle;
    std::deque<std::function<void()>> queue;
    bool running = false; ///< a drain of this lane is on the pool
};

namespace {
/// Runs the lane's jobs one after another on one pool thread until its queue is empty.
void drain(const std::shared_ptr<WorkLane::State>& s);
} // namespace

QThreadPool& WorkLane::pool() {
    static QThreadPool* const p = [] {
        auto* pool = new QThreadPool; // never destroyed: lanes wait for their jobs when they go
        pool->setMaxThreadCount(std::max(8, QThread::idealThreadCount()));
        pool->setExpiryTimeout(-1);
        return pool;
    }();
    return *p;
}

WorkLane::WorkLane() : m_state(std::make_shared<State>()) {}

WorkLane::~WorkLane() {
    clear();
    waitForDone();
}

void WorkLane::start(std::function<void()> job) {
    {
        const QMutexLocker lock(&m_state->mutex);
        m_state->queue.push_back(std::move(job));
        if (m_state->running) return; // the drain under way takes it
        m_state->running = true;
    }
    std::shared_ptr<State> s = m_state;
    pool().start([s] { drain(s); });
}

void WorkLane::clear() {
    const QMutexLocker lock(&m_state->mutex);
    m_state->queue.clear();
}

void WorkLane::waitForDone() {
    QMutexLocker lock(&m_state->mutex);
    while (m_state->running)
        m_state->idle.wait(&m_state->mutex);
}

bool WorkLane::busy() const {
    const QMutexLocker lock(&m_state->mutex);
    return m_state->running;
}

namespace {
void drain(const std::shared_ptr<WorkLane::State>& s) {
    for (;;) {
        std::function<void()> job;
        {
            const QMutexLocker lock(&s->mutex);
            if (s->queue.empty()) {
                s->running = false;
                s->idle.wakeAll();
                return;
            }
            job = std::move(s->queue.front());
            s->queue.pop_front();
        }
        job();
    }
}
} // namespace

} // namespace gwb::app
