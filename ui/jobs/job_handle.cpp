#include "jobs/job_handle.h"

namespace torchscope {

JobHandle::JobHandle(JobRunner* runner, QString title, QObject* owner)
    : QObject(owner)
    , runner_(runner)
    , title_(std::move(title))
{ }

void JobHandle::cancel()
{
    if (running_ && id_ != 0 && runner_)
        runner_->cancel(id_);
}

void JobHandle::abandon()
{
    abandoned_ = true;
    cancel();
}

void JobHandle::attach(JobId id)
{
    id_ = id;
    connect(
        runner_.data(), &JobRunner::progress, this, [this](JobId job, qint64 done, qint64 total, const QString& stage) {
            if (job == id_ && running_)
                Q_EMIT progress(done, total, stage);
        });
    connect(runner_.data(), &JobRunner::finished, this, [this](JobId job) {
        if (job == id_)
            end();
    });
}

void JobHandle::succeed(std::shared_ptr<const void> result)
{
    if (abandoned_)
        return; // of a model or images the tab no longer shows
    result_ = std::move(result);
    Q_EMIT succeeded();
}

void JobHandle::deliverPart(std::shared_ptr<const void> part)
{
    if (abandoned_ || !running_)
        return;
    part_ = std::move(part);
    Q_EMIT partDelivered();
}

void JobHandle::fail(const QString& message)
{
    Q_EMIT failed(title_, message);
}

void JobHandle::end()
{
    if (!running_)
        return;
    running_ = false;
    Q_EMIT finished();
    deleteLater(); // its owner keeps what it wants of the result, not the handle
}

} // namespace torchscope
