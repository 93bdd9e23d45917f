// The window's one runner (app/gui/work_lane.h): a lane runs its jobs one at a time in order on
// the process pool, lanes run at once, a result comes back on the asker's thread, and is dropped
// when the asker is gone. Waits are on conditions, never on time.

#include "gui/work_lane.h"

#include "app_test_util.h"

#include <gtest/gtest.h>

#include <QCoreApplication>
#include <QTest>
#include <QThread>
#include <QThreadPool>

#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

using gwb::app::WorkLane;

namespace {
constexpr int kWaitMs = 60000;
}

TEST(WorkLane, RunsItsJobsOneAtATimeInOrder) {
    WorkLane lane;
    std::mutex m;
    std::vector<int> order;
    std::atomic<int> inside{0}, most{0};
    for (int i = 0; i < 20; ++i)
        lane.start([&, i] {
            const int now = ++inside;
            int seen = most.load();
            while (now > seen && !most.compare_exchange_weak(seen, now)) {
            }
            {
                const std::lock_guard<std::mutex> lock(m);
                order.push_back(i);
            }
            --inside;
        });
    lane.waitForDone();
    EXPECT_FALSE(lane.busy());
    ASSERT_EQ(order.size(), 20u);
    for (int i = 0; i < 20; ++i)
        EXPECT_EQ(order[static_cast<size_t>(i)], i);
    EXPECT_EQ(most.load(), 1);
    EXPECT_GE(WorkLane::pool().maxThreadCount(), 8);
}

TEST(WorkLane, TwoLanesRunAtOnceOnOnePool) {
    // Each lane's first job waits for the other lane's to start: with lanes taking turns (one
    // thread), this would never finish.
    WorkLane a, b;
    std::atomic<bool> aStarted{false}, bStarted{false}, aSawB{false}, bSawA{false};
    auto spinUntil = [](const std::atomic<bool>& flag) {
        for (int i = 0; i < 6000 && !flag.load(); ++i)
            QThread::msleep(10);
        return flag.load();
    };
    a.start([&] {
        aStarted = true;
        aSawB = spinUntil(bStarted);
    });
    b.start([&] {
        bStarted = true;
        bSawA = spinUntil(aStarted);
    });
    a.waitForDone();
    b.waitForDone();
    EXPECT_TRUE(aSawB.load());
    EXPECT_TRUE(bSawA.load());
}

TEST(WorkLane, ClearDropsTheQueuedJobsNotTheRunningOne) {
    WorkLane lane;
    std::atomic<bool> release{false}, firstRan{false}, secondRan{false};
    std::atomic<bool> firstStarted{false};
    lane.start([&] {
        firstStarted = true;
        while (!release.load())
            QThread::msleep(1);
        firstRan = true;
    });
    lane.start([&] { secondRan = true; });
    ASSERT_TRUE(QTest::qWaitFor([&] { return firstStarted.load(); }, kWaitMs));
    lane.clear();
    release = true;
    lane.waitForDone();
    EXPECT_TRUE(firstRan.load());
    EXPECT_FALSE(secondRan.load());
}

TEST(WorkLane, AResultComesBackOnTheAskersThreadOrNotAtAll) {
    gwb::app::test::ensureApp(); // an event loop on this thread to take the answers
    WorkLane lane;
    auto owner = std::make_unique<QObject>();
    QThread* asker = QThread::currentThread();
    QThread* deliveredOn = nullptr;
    int delivered = 0;
    lane.run<QObject, int>(
        owner.get(), [] { return 42; },
        [&](QObject*, const int& v) {
            deliveredOn = QThread::currentThread();
            delivered = v;
        });
    ASSERT_TRUE(QTest::qWaitFor([&] { return delivered != 0; }, kWaitMs));
    EXPECT_EQ(delivered, 42);
    EXPECT_EQ(deliveredOn, asker);
    // The asker goes while the job runs: its answer is dropped (no call on a dead object).
    std::atomic<bool> release{false}, ran{false};
    bool called = false;
    lane.run<QObject, int>(
        owner.get(),
        [&] {
            while (!release.load())
                QThread::msleep(1);
            ran = true;
            return 7;
        },
        [&](QObject*, const int&) { called = true; });
    owner.reset();
    release = true;
    lane.waitForDone();
    QCoreApplication::processEvents();
    EXPECT_TRUE(ran.load());
    EXPECT_FALSE(called);
}
