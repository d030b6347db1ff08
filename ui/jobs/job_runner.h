#pragma once

// The window's one way to run work off the GUI thread (in the manner of Tiled's ProjectModel worker
// and PlotJuggler's worker adapters): submit(job) gives an id; progress, the result and failures
// come back by that id. Two lanes, each one thread: the interactive lane (runs on dropped images,
// Grad-CAM, patching: short, and a newer run supersedes an older one) and the batch lane
// (recordings, probe training, comparisons, feature visualisation), so long work goes on beside the
// window's runs. Every job gets its models from one ModelCache. No Torch in this header.

#include <QObject>
#include <QString>

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>

namespace torchscope {

class JobLaneThread;
class JobRunner;
class ModelCache;

enum class JobLane { Interactive, Batch };
using JobId = quint64;

// What a job's work sees, on its lane's thread.
class JobContext {
public:
    JobContext(JobId id, JobLane lane, const std::shared_ptr<std::atomic_bool>& cancelled, JobRunner* runner);

    JobId id() const { return id_; }
    JobLane lane() const { return lane_; }
    bool isCancelled() const { return *cancelled_; }
    // Reports progress (JobRunner::progress, emitted on this thread); false once the job is cancelled.
    bool progress(qint64 done, qint64 total, const QString& stage = {});
    // Runs `onGui` on the GUI thread soon (queued): a part of the result the window shows before
    // the job ends, such as one image's maps.
    void post(std::function<void()> onGui) const;
    ModelCache& models() const;

private:
    JobId id_;
    JobLane lane_;
    std::shared_ptr<std::atomic_bool> cancelled_;
    JobRunner* runner_;
};

struct Job {
    QString name; // what the researcher would call it: "Recording", "Grad-CAM"
    JobLane lane = JobLane::Batch;
    // Jobs of one non-empty group supersede each other: submitting one cancels the older ones of
    // its group (the newest run of the window wins).
    QString group;
    // Runs on the lane's thread; returns what to do with its result on the GUI thread (may be
    // empty). Throwing fails the job with the exception's message.
    std::function<std::function<void()>(JobContext&)> work;
    // On the GUI thread, when work threw.
    std::function<void(const QString& message)> failed;
};

class JobRunner : public QObject {
    Q_OBJECT
public:
    explicit JobRunner(QObject* parent = nullptr);
    ~JobRunner() override; // cancels every job and waits for the lanes to stop

    JobId submit(Job job);
    // Thread-safe. A queued job never starts; a running one is told through its context and keeps
    // what it has done (each operation decides what that is).
    void cancel(JobId id);
    void cancelAll();
    bool isActive(JobId id) const; // submitted and not yet finished
    ModelCache& models() { return *models_; }

Q_SIGNALS:
    // Emitted on the job's lane thread (queued to receivers on the GUI thread).
    void progress(torchscope::JobId id, qint64 done, qint64 total, const QString& stage);
    // On the GUI thread, after the result was handed over (also for a cancelled or failed job).
    void finished(torchscope::JobId id);
    void failed(torchscope::JobId id, const QString& name, const QString& message);

private:
    struct Entry;
    void execute(const std::shared_ptr<Entry>& entry);
    void deliver(const std::shared_ptr<Entry>& entry, std::function<void()> result, const QString& failure);

    std::unique_ptr<ModelCache> models_;
    std::unique_ptr<JobLaneThread> interactive_;
    std::unique_ptr<JobLaneThread> batch_;
    mutable std::mutex mutex_;
    std::map<JobId, std::shared_ptr<Entry>> active_;
    JobId nextId_ = 1;
};

} // namespace torchscope
