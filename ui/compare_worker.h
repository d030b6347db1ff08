#pragma once

// Runs comparisons (core/compare) on a thread of its own: they load their own models, so the
// window's runs go on beside them. Requests in as calls, progress and results out as signals.

#include "common/float_tensor.h"
#include "compare/comparison.h"
#include "preprocess/preprocessing.h"

#include <QMetaType>
#include <QObject>
#include <QThread>

#include <atomic>
#include <memory>
#include <string>

namespace torchscope {

struct CompareRequest {
    CompareConfig config;
    std::string modelA;
    std::string modelB; // Cka, Checkpoints
    std::string folder; // images; subfolders are read too
    Preprocessing preprocessing; // model A's input setup, for both
    int batch = 16;
    std::string device = "cpu"; // A and B (Precision chooses its own)
};
using CompareResultPtr = std::shared_ptr<const CompareResult>;

// One image through A and B: a layer of each, for the cell of the heat map that was clicked.
struct LayerPairMaps {
    std::string image;
    std::string layerA, layerB;
    FloatTensor a, b; // one sample's output: [C, H, W], [F] ...
};

class CompareWorker : public QObject {
    Q_OBJECT
public:
    CompareWorker();
    ~CompareWorker() override;

    void compare(const CompareRequest& request); // queued to the worker's thread
    void layerMaps(const CompareRequest& request, const QString& image, const QString& layerA, const QString& layerB);
    void cancel() { cancelled_ = true; }

Q_SIGNALS:
    void progress(qint64 done, qint64 total);
    void finished(const torchscope::CompareResultPtr& result);
    void mapsReady(const torchscope::LayerPairMaps& maps);
    void mapsFailed(const QString& title, const QString& message);
    void failed(const QString& title, const QString& message);

private:
    void run(const CompareRequest& request);
    void runMaps(
        const CompareRequest& request, const std::string& image, const std::string& layerA, const std::string& layerB);

    QThread thread_;
    QObject* inThread_; // lives on thread_: queued calls run there
    std::atomic_bool cancelled_{false};
};

} // namespace torchscope

Q_DECLARE_METATYPE(torchscope::CompareResultPtr)
Q_DECLARE_METATYPE(torchscope::LayerPairMaps)
