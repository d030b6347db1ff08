#include "visualize_worker.h"

#include "common/error.h"
#include "common/tensor_conversion.h"
#include "graph/engine.h"
#include "imaging/image_decoder.h"
#include "imaging/image_tensor.h"
#include "model/model.h"
#include "overlay_image.h"
#include "preprocess/preprocess_tensor.h"
#include "visualize/activation_maximization.h"
#include "visualize/unit_objective.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include <QMetaObject>

#include <limits>

namespace torchscope {
namespace {

// [C, H, W] in [0, 1] (C = 1 or 3) as an RGB picture.
QImage pictureOf(const at::Tensor& image)
{
    const at::Tensor rgb = image.expand({3, image.size(1), image.size(2)});
    const at::Tensor bytes = (rgb.permute({1, 2, 0}).clamp(0, 1) * 255.0).round().to(at::kByte).contiguous();
    const auto height = static_cast<int>(bytes.size(0)), width = static_cast<int>(bytes.size(1));
    return QImage(bytes.data_ptr<uint8_t>(), width, height, width * 3, QImage::Format_RGB888).copy();
}

// The channel's map over each image, on one scale from the smallest to the largest value among
// them (a channel may be negative everywhere, before a ReLU).
std::vector<QImage> mapsOverImages(Engine& engine, const VisualizeRequest& request)
{
    const std::string& layer = request.config.layer;
    const int64_t channel = request.config.objectives.front().channel;
    std::vector<at::Tensor> inputs, maps;
    for (const auto& path : request.topImages) {
        inputs.push_back(preprocessImage(imageToTensor(decodeImage(path)), request.preprocessing).unsqueeze(0));
        Request grab;
        grab.grabOutput(layer);
        const RunResult result = engine.run(grab, forwardInputsFromBatch(engine.model(), inputs.back()));
        maps.push_back(unitMaps(result.tensor(layer), layer)[0][channel].to(at::kCPU, at::kFloat));
    }
    float low = std::numeric_limits<float>::max(), high = std::numeric_limits<float>::lowest();
    for (const auto& map : maps) {
        low = std::min(low, map.min().item<float>());
        high = std::max(high, map.max().item<float>());
    }
    const float span = high > low ? high - low : 1.0f;
    std::vector<QImage> out;
    for (size_t i = 0; i < maps.size(); ++i) {
        const at::Tensor scaled = ((maps[i] - low) / span).clamp(0, 1).contiguous();
        const FloatTensor picture = toFloatTensor(pictureOfInput(inputs[i], request.preprocessing));
        out.push_back(
            overlayImage(picture, scaled.data_ptr<float>(), scaled.size(1), scaled.size(0), ColorMap::Magma, 0.55f));
    }
    return out;
}

} // namespace

std::string VisualizeRequest::cacheKey() const
{
    return model + "|" + device + "|" + preprocessing.toJson() + "|" + config.cacheKey();
}

VisualizeWorker::VisualizeWorker()
    : inThread_(new QObject)
{
    qRegisterMetaType<VisualizeOutcome>();
    inThread_->moveToThread(&thread_);
    connect(&thread_, &QThread::finished, inThread_, &QObject::deleteLater);
    thread_.setObjectName("torchscope-visualize");
    thread_.start();
}

VisualizeWorker::~VisualizeWorker()
{
    cancelled_ = true;
    thread_.requestInterruption();
    thread_.quit();
    thread_.wait();
}

void VisualizeWorker::start(const VisualizeRequest& request)
{
    cancelled_ = false;
    QMetaObject::invokeMethod(
        inThread_, [this, request] { run(request); }, Qt::QueuedConnection);
}

void VisualizeWorker::run(const VisualizeRequest& request)
{
    QString message;
    try {
        LoadOptions options;
        options.device = request.device;
        Engine engine(Model::load(request.model, options));
        VisualizeOutcome outcome;
        outcome.key = request.cacheKey();
        outcome.mapsOnly = request.mapsOnly;
        if (!request.mapsOnly) {
            const Visualization result
                = visualize(engine, request.preprocessing, request.config, [this](const VisualizeProgress& p) {
                      Q_EMIT progress(p.step, p.steps, p.objectives.front());
                      return !cancelled_ && !QThread::currentThread()->isInterruptionRequested();
                  });
            outcome.image = pictureOf(result.images[0]);
            outcome.value = result.objectives.front();
            outcome.cancelled = result.cancelled;
            outcome.steps = result.steps;
            for (const auto& warning : result.warnings)
                outcome.warnings << QString::fromStdString(warning);
        }
        try {
            outcome.topMaps = mapsOverImages(engine, request);
        } catch (const Error& e) {
            outcome.warnings << tr("The channel's maps over the top images failed: %1").arg(e.what());
        } catch (const c10::Error& e) {
            outcome.warnings << tr("The channel's maps over the top images failed: %1")
                                    .arg(QString::fromStdString(torchErrorMessage(e.what_without_backtrace())));
        } catch (const std::exception& e) {
            outcome.warnings << tr("The channel's maps over the top images failed: %1").arg(e.what());
        }
        Q_EMIT finished(outcome);
        return;
    } catch (const Error& e) {
        message = QString::fromStdString(e.what());
    } catch (const c10::Error& e) {
        message = QString::fromStdString(torchErrorMessage(e.what_without_backtrace()));
    } catch (const std::exception& e) {
        message = QString::fromStdString(e.what());
    }
    Q_EMIT failed(tr("Feature visualisation failed"), message);
}

} // namespace torchscope
