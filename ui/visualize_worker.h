#pragma once

// Feature visualisation (core/visualize) on a thread of its own: it loads its own copy of the
// model, so the window's runs go on beside it. Requests in as calls, progress and results out as
// signals; cancel keeps the image so far.

#include "preprocess/preprocessing.h"
#include "visualize/visualization.h"

#include <QImage>
#include <QObject>
#include <QStringList>
#include <QThread>

#include <atomic>
#include <string>
#include <vector>

namespace torchscope {

struct VisualizeRequest {
    std::string model;
    std::string device = "cpu";
    Preprocessing preprocessing;
    VisualizeConfig config; // one objective
    std::vector<std::string> topImages; // also the channel's map over each of these images
    bool mapsOnly = false; // only the maps over the top images (the image is known)
    // The key an optimised image is cached under: the model, its device, input setup and every
    // setting (not the top images: their maps are quick and depend on the recording).
    std::string cacheKey() const;
};

struct VisualizeOutcome {
    std::string key; // the request's cacheKey()
    bool mapsOnly = false; // only topMaps is set
    QImage image; // the optimised image, RGB
    double value = 0.0; // its objective, untransformed
    QStringList warnings;
    bool cancelled = false;
    int steps = 0;
    std::vector<QImage> topMaps; // per top image: the channel's map over it (null when it failed)
};

class VisualizeWorker : public QObject {
    Q_OBJECT
public:
    VisualizeWorker();
    ~VisualizeWorker() override;

    void start(const VisualizeRequest& request); // queued to the worker's thread
    void cancel() { cancelled_ = true; }

Q_SIGNALS:
    void progress(int step, int steps, double objective);
    void finished(const torchscope::VisualizeOutcome& outcome);
    void failed(const QString& title, const QString& message);

private:
    void run(const VisualizeRequest& request);

    QThread thread_;
    QObject* inThread_;
    std::atomic_bool cancelled_{false};
};

} // namespace torchscope

Q_DECLARE_METATYPE(torchscope::VisualizeOutcome)
