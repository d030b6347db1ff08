// The window's job runner on its own: two lanes that do not wait for each other, jobs of a lane in
// the order submitted, superseding within a group, cancelling a queued and a running job, a failure
// and where results are handed over. No sleeps: jobs hold at gates the test opens.
#include "jobs/job_runner.h"

#include <QCoreApplication>
#include <QSignalSpy>
#include <QTest>
#include <QThread>

#include <future>
#include <mutex>
#include <stdexcept>
#include <vector>

namespace torchscope {
namespace {

constexpr int Timeout = 30000;

// A job's work that waits until the test opens its gate (or the job is cancelled), then notes its name.
struct Gate {
    std::promise<void> open;
    std::shared_future<void> opened = open.get_future().share();
};

class Journal {
public:
    void note(const QString& what)
    {
        std::lock_guard<std::mutex> lock(mutex_);
        entries_.push_back(what);
    }
    QStringList entries() const
    {
        std::lock_guard<std::mutex> lock(mutex_);
        return entries_;
    }

private:
    mutable std::mutex mutex_;
    QStringList entries_;
};

Job job(const QString& name, JobLane lane, std::function<void(JobContext&)> work, const QString& group = {})
{
    Job j;
    j.name = name;
    j.lane = lane;
    j.group = group;
    j.work = [work = std::move(work)](JobContext& context) -> std::function<void()> {
        work(context);
        return {};
    };
    return j;
}

// Waits until `id` finished (the runner's finished signal for that id).
bool waitFinished(JobRunner& runner, QSignalSpy& finished, JobId id)
{
    const auto seen = [&] {
        for (const auto& arguments : finished)
            if (arguments.at(0).value<JobId>() == id)
                return true;
        return false;
    };
    while (!seen())
        if (!finished.wait(Timeout))
            return false;
    return !runner.isActive(id);
}

} // namespace

class JobRunnerTest : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void theLanesDoNotWaitForEachOther()
    {
        JobRunner runner;
        QSignalSpy finished(&runner, &JobRunner::finished);
        Gate gate;
        const JobId batch = runner.submit(job("held", JobLane::Batch, [&](JobContext&) { gate.opened.wait(); }));
        const JobId interactive = runner.submit(job("quick", JobLane::Interactive, [](JobContext&) {}));
        QVERIFY(waitFinished(runner, finished, interactive));
        QVERIFY(runner.isActive(batch)); // still held at its gate
        gate.open.set_value();
        QVERIFY(waitFinished(runner, finished, batch));
    }

    void aLaneRunsItsJobsInOrderAndHandsResultsOverOnTheGuiThread()
    {
        JobRunner runner;
        QSignalSpy finished(&runner, &JobRunner::finished);
        Journal journal;
        Gate gate;
        std::vector<JobId> ids;
        ids.push_back(runner.submit(job("first", JobLane::Batch, [&](JobContext&) {
            gate.opened.wait();
            journal.note("first");
        })));
        QThread* guiThread = QCoreApplication::instance()->thread();
        bool handedOverOnGui = false;
        for (const QString name : {"second", "third"}) {
            Job j = job(name, JobLane::Batch, [&journal, name](JobContext&) { journal.note(name); });
            j.work = [&journal, name, guiThread, &handedOverOnGui](JobContext&) -> std::function<void()> {
                journal.note(name);
                return [guiThread, &handedOverOnGui] { handedOverOnGui = QThread::currentThread() == guiThread; };
            };
            ids.push_back(runner.submit(std::move(j)));
        }
        gate.open.set_value();
        QVERIFY(waitFinished(runner, finished, ids.back()));
        QCOMPARE(journal.entries(), QStringList({"first", "second", "third"}));
        QVERIFY(handedOverOnGui);
    }

    void aNewerJobOfAGroupSupersedesTheOlderOnes()
    {
        JobRunner runner;
        QSignalSpy finished(&runner, &JobRunner::finished);
        Journal journal;
        Gate started;
        // The running job of the group sees its cancellation; the queued one never starts.
        const JobId running = runner.submit(job(
            "running", JobLane::Interactive,
            [&](JobContext& context) {
                started.open.set_value();
                while (!context.isCancelled())
                    QThread::yieldCurrentThread();
                journal.note("running saw its cancel");
            },
            "run"));
        started.opened.wait();
        const JobId queued = runner.submit(job(
            "queued", JobLane::Interactive, [&](JobContext&) { journal.note("queued"); }, "run"));
        const JobId newest = runner.submit(job(
            "newest", JobLane::Interactive, [&](JobContext&) { journal.note("newest"); }, "run"));
        QVERIFY(waitFinished(runner, finished, newest));
        QVERIFY(waitFinished(runner, finished, running));
        QVERIFY(waitFinished(runner, finished, queued));
        QCOMPARE(journal.entries(), QStringList({"running saw its cancel", "newest"}));
        // Another group is not superseded.
        const JobId other = runner.submit(job(
            "other", JobLane::Interactive, [&](JobContext&) { journal.note("other"); }, "another"));
        QVERIFY(waitFinished(runner, finished, other));
        QCOMPARE(journal.entries().last(), QString("other"));
    }

    void cancellingAQueuedJobKeepsItFromStartingAndARunningOneIsTold()
    {
        JobRunner runner;
        QSignalSpy finished(&runner, &JobRunner::finished);
        Journal journal;
        Gate started;
        const JobId running = runner.submit(job("running", JobLane::Batch, [&](JobContext& context) {
            started.open.set_value();
            while (!context.isCancelled())
                QThread::yieldCurrentThread();
            journal.note("told");
        }));
        started.opened.wait();
        const JobId queued
            = runner.submit(job("queued", JobLane::Batch, [&](JobContext&) { journal.note("queued ran"); }));
        runner.cancel(queued);
        runner.cancel(running);
        QVERIFY(waitFinished(runner, finished, running));
        QVERIFY(waitFinished(runner, finished, queued));
        QCOMPARE(journal.entries(), QStringList({"told"}));
    }

    void aJobThatThrowsFailsWithItsMessage()
    {
        JobRunner runner;
        QSignalSpy finished(&runner, &JobRunner::finished);
        QSignalSpy failed(&runner, &JobRunner::failed);
        QString toldTheJob;
        Job j = job("Recording", JobLane::Batch, [](JobContext&) { throw std::runtime_error("the disk is full"); });
        j.failed = [&toldTheJob](const QString& message) { toldTheJob = message; };
        const JobId id = runner.submit(std::move(j));
        QVERIFY(waitFinished(runner, finished, id));
        QCOMPARE(failed.count(), 1);
        QCOMPARE(failed.first().at(0).value<JobId>(), id);
        QCOMPARE(failed.first().at(1).toString(), QString("Recording"));
        QVERIFY(failed.first().at(2).toString().contains("the disk is full"));
        QVERIFY(toldTheJob.contains("the disk is full"));
        // The lane goes on after a failure.
        const JobId next = runner.submit(job("next", JobLane::Batch, [](JobContext&) {}));
        QVERIFY(waitFinished(runner, finished, next));
        QCOMPARE(failed.count(), 1);
    }
};

} // namespace torchscope

QTEST_MAIN(torchscope::JobRunnerTest)
#include "job_runner_test.moc"
