#pragma once

#include "analysis/analysis_table.h"
#include "jobs/job_handle.h"
#include "jobs/job_runner.h"
#include "jobs/run_metatypes.h"

#include <QObject>
#include <QTimer>

#include <functional>
#include <memory>

namespace torchscope {

class Document;
struct WorkbenchState;

// The window's one way to its work. It owns the open model and the run of the Document's images
// (re-run whenever the Document's request changes, debounced; the newest run supersedes the one in
// progress, results of an outdated request are dropped). Every other piece of work is an analysis
// (graph/analysis_context.h) a panel starts with start<XAnalysis>(request, panel): it runs as a job on
// the lane the table of analyses names, on the Document's model and device from the runner's one
// ModelCache, and the panel follows the JobHandle it gets back. Plain tasks (writing a result the
// panel holds) go through startTask. Failures are also reported through failed(), for the window's
// error box and log.
class RunController : public QObject {
    Q_OBJECT
public:
    explicit RunController(Document* document, QObject* parent = nullptr);
    ~RunController() override;

    static QStringList availableDevices(); // "cpu", and "cuda" when LibTorch sees a GPU

    void openModel(const QString& path, const QStringList& operatorLibraries = {});
    bool isOpeningModel() const { return openingModel_; }
    bool isBusy() const { return busy_; }
    void cancel(); // the image run in progress
    // The runner, for tests that must stop a job at a known point (a blocking connection to its
    // progress signal, emitted on the job's thread, holds the job there until the slot returns).
    JobRunner* jobs() const { return jobs_; }
    // The last run's tensors (the run is the controller's own analysis).
    void exportTensors(const QString& path);
    // The model the Document has open, on its device, as analyses ask for it.
    ModelKey modelKey() const;

    // Starts an analysis on the Document's model; `owner` (the panel) owns the handle, which
    // deletes itself once the job is over. Interactive analyses of one kind supersede each other.
    template <typename Analysis> JobHandle* start(const typename Analysis::Request& request, QObject* owner)
    {
        return submit(
            analysisInfo(Analysis::name),
            [request](AnalysisContext& context) -> std::shared_ptr<const void> {
                return std::make_shared<const typename Analysis::Result>(Analysis::run(context, request));
            },
            owner);
    }
    // A plain task on a lane (writing a file from a result a panel holds): succeeds without a result.
    JobHandle* startTask(
        const QString& title, JobLane lane, std::function<void(ModelSource& models)> work, QObject* owner);

Q_SIGNALS:
    void busyChanged(bool busy);
    void progress(int done, int total);
    void modelOpened(const QString& path);
    // Any job's failure: the window reports it (the handle of the job says it to its panel too).
    void failed(const QString& title, const QString& message);
    // The model failed on every image in a way that points at the input setup (size, channels).
    void setupProblemFound(const QString& message);
    void runCompleted(double seconds, int images, int failures, bool cancelled);
    void exported(const QString& path, const QStringList& leftOut);

private:
    using AnalysisWork = std::function<std::shared_ptr<const void>(AnalysisContext& context)>;
    JobHandle* submit(const AnalysisInfo& info, AnalysisWork work, QObject* owner);
    using PartSink = std::function<void(std::shared_ptr<const void> part)>; // to the job's handle
    JobHandle* submitHandle(const QString& title, JobLane lane, const QString& group,
        std::function<std::shared_ptr<const void>(JobContext&, ModelSource&, const PartSink&)> work, QObject* owner);
    JobId submitOwn(const QString& title, std::function<std::function<void()>(JobContext&)> work,
        const QString& group = {}, bool opening = false);
    void scheduleRun();
    void startRun();
    void setBusy(bool busy);
    void finishRun(const RunJobResultPtr& snapshot);

    Document* document_;
    JobRunner* jobs_;
    std::shared_ptr<WorkbenchState> state_;
    QStringList operatorLibraries_;
    QTimer debounce_;
    int generation_ = 0;
    JobId runJob_ = 0;
    bool busy_ = false;
    bool openingModel_ = false;
};

} // namespace torchscope
