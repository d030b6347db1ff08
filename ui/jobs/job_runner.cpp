#include "jobs/job_runner.h"

#include "jobs/model_cache.h"

#include <QMetaObject>
#include <QThread>

#include <atomic>

namespace torchscope {

// One lane: a thread and an object living on it, so that queued calls run there in order.
class JobLaneThread {
public:
    explicit JobLaneThread(const QString& name)
        : inThread_(new QObject)
    {
        inThread_->moveToThread(&thread_);
        QObject::connect(&thread_, &QThread::finished, inThread_, &QObject::deleteLater);
        thread_.setObjectName(name);
        thread_.start();
    }
    ~JobLaneThread()
    {
        thread_.quit();
        thread_.wait();
    }
    void post(std::function<void()> call)
    {
        QMetaObject::invokeMethod(inThread_, std::move(call), Qt::QueuedConnection);
    }

private:
    QThread thread_;
    QObject* inThread_;
};

struct JobRunner::Entry {
    JobId id = 0;
    Job job;
    std::shared_ptr<std::atomic_bool> cancelled = std::make_shared<std::atomic_bool>(false);
};

namespace {

// A LibTorch message without its C++ backtrace.
QString messageOf(const std::exception& e)
{
    std::string what = e.what();
    if (const auto cut = what.find("\nException raised from"); cut != std::string::npos)
        what.erase(cut);
    return QString::fromStdString(what);
}

} // namespace

JobContext::JobContext(JobId id, JobLane lane, const std::shared_ptr<std::atomic_bool>& cancelled, JobRunner* runner)
    : id_(id)
    , lane_(lane)
    , cancelled_(cancelled)
    , runner_(runner)
{ }

bool JobContext::progress(qint64 done, qint64 total, const QString& stage)
{
    Q_EMIT runner_->progress(id_, done, total, stage);
    return !*cancelled_;
}

void JobContext::post(std::function<void()> onGui) const
{
    QMetaObject::invokeMethod(runner_, std::move(onGui), Qt::QueuedConnection);
}

ModelCache& JobContext::models() const
{
    return runner_->models();
}

JobRunner::JobRunner(QObject* parent)
    : QObject(parent)
    , models_(std::make_unique<ModelCache>())
    , interactive_(std::make_unique<JobLaneThread>("torchscope-interactive"))
    , batch_(std::make_unique<JobLaneThread>("torchscope-batch"))
{ }

JobRunner::~JobRunner()
{
    cancelAll();
    interactive_.reset(); // waits for the job in progress; queued ones are dropped with the thread
    batch_.reset();
}

JobId JobRunner::submit(Job job)
{
    auto entry = std::make_shared<Entry>();
    {
        const std::lock_guard<std::mutex> lock(mutex_);
        entry->id = nextId_++;
        if (!job.group.isEmpty())
            for (const auto& [id, other] : active_)
                if (other->job.group == job.group)
                    *other->cancelled = true;
        entry->job = std::move(job);
        active_[entry->id] = entry;
    }
    JobLaneThread& lane = entry->job.lane == JobLane::Interactive ? *interactive_ : *batch_;
    lane.post([this, entry] { execute(entry); });
    return entry->id;
}

void JobRunner::cancel(JobId id)
{
    const std::lock_guard<std::mutex> lock(mutex_);
    if (const auto it = active_.find(id); it != active_.end())
        *it->second->cancelled = true;
}

void JobRunner::cancelAll()
{
    const std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& [id, entry] : active_)
        *entry->cancelled = true;
}

bool JobRunner::isActive(JobId id) const
{
    const std::lock_guard<std::mutex> lock(mutex_);
    return active_.count(id) > 0;
}

void JobRunner::execute(const std::shared_ptr<Entry>& entry)
{
    if (*entry->cancelled) { // superseded or cancelled while queued: never started
        deliver(entry, {}, {});
        return;
    }
    JobContext context(entry->id, entry->job.lane, entry->cancelled, this);
    try {
        deliver(entry, entry->job.work(context), {});
    } catch (const std::exception& e) {
        deliver(entry, {}, messageOf(e));
    } catch (...) {
        deliver(entry, {}, tr("an unknown error"));
    }
}

void JobRunner::deliver(const std::shared_ptr<Entry>& entry, std::function<void()> result, const QString& failure)
{
    QMetaObject::invokeMethod(
        this,
        [this, entry, result = std::move(result), failure] {
            {
                const std::lock_guard<std::mutex> lock(mutex_);
                active_.erase(entry->id);
            }
            if (!failure.isEmpty()) {
                if (entry->job.failed)
                    entry->job.failed(failure);
                Q_EMIT failed(entry->id, entry->job.name, failure);
            } else if (result) {
                result();
            }
            Q_EMIT finished(entry->id);
        },
        Qt::QueuedConnection);
}

} // namespace torchscope
