#pragma once

// A submitted job as its submitter sees it, in the manner of QFutureWatcher<T>: the progress, the
// result or the failure of this one job, on the GUI thread. A panel keeps the handle of the job it
// started and listens to it alone (instead of filtering shared signals by job id). The result is
// the analysis's own type: `handle->result<GradCamResult>()` once succeeded() was emitted. The
// handle deletes itself after finished(): keep it in a QPointer.

#include "jobs/job_runner.h"

#include <QObject>
#include <QPointer>
#include <QString>

#include <memory>

namespace torchscope {

class JobHandle : public QObject {
    Q_OBJECT
public:
    // `title` says what failed in an error box ("Grad-CAM Failed").
    JobHandle(JobRunner* runner, QString title, QObject* owner);

    JobId id() const { return id_; }
    const QString& title() const { return title_; }
    bool isRunning() const { return running_; }
    // A queued job never starts; a running one stops at its next progress report, keeping what it
    // has done (it then succeeds with a result that says it was cancelled).
    void cancel();
    // Cancels the job and drops whatever it hands over: the model or the images it ran on are no
    // longer the tab's (succeeded() is not emitted; finished() still is).
    void abandon();
    bool isAbandoned() const { return abandoned_; }
    // The result once succeeded() was emitted; nullptr before, or for a job without one.
    template <typename Result> std::shared_ptr<const Result> result() const
    {
        return std::static_pointer_cast<const Result>(result_);
    }

    // The newest part of the result the job handed over before its end (an analysis's header names
    // its parts' type: the attribution workbench's WorkbenchImageResult), once partDelivered() was
    // emitted; nullptr before.
    template <typename Part> std::shared_ptr<const Part> part() const
    {
        return std::static_pointer_cast<const Part>(part_);
    }

    // For the controller: binds the handle to its submitted job and delivers the outcome.
    void attach(JobId id);
    void deliverPart(std::shared_ptr<const void> part);
    void succeed(std::shared_ptr<const void> result);
    void fail(const QString& message);
    void end(); // the job is over (after succeed or fail, or cancelled before it started)

Q_SIGNALS:
    // `stage` is what the job does now ("activations", a visualisation's objective so far).
    void progress(qint64 done, qint64 total, const QString& stage);
    void partDelivered(); // one more part of the result: part<P>() (never after succeeded())
    void succeeded();
    void failed(const QString& title, const QString& message);
    void finished(); // always last

private:
    // The runner may go first when a window closes with a dialog's job still followed (the main
    // window's members before its child dialogs): a cancel then has nothing to reach.
    QPointer<JobRunner> runner_;
    QString title_;
    JobId id_ = 0;
    bool running_ = true;
    bool abandoned_ = false;
    std::shared_ptr<const void> result_;
    std::shared_ptr<const void> part_;
};

} // namespace torchscope
