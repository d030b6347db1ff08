#include "compare_worker.h"

#include "common/error.h"
#include "common/tensor_conversion.h"
#include "compare/compare_run.h"
#include "graph/engine.h"
#include "imaging/folder_run.h"
#include "imaging/image_folder.h"
#include "imaging/image_tensor.h"
#include "model/model.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <c10/util/Exception.h>

#include <QMetaObject>

namespace torchscope {
namespace {

// Runs `body`, turning every error into a message ("" when none).
template <typename F> QString failureOf(F&& body)
{
    try {
        body();
    } catch (const Error& e) {
        return QString::fromStdString(e.what());
    } catch (const c10::Error& e) {
        return QString::fromStdString(torchErrorMessage(e.what_without_backtrace()));
    } catch (const std::exception& e) {
        return QString::fromStdString(e.what());
    }
    return {};
}

std::shared_ptr<Model> load(const std::string& path, const std::string& device)
{
    LoadOptions options;
    options.device = device;
    return Model::load(path, options);
}

} // namespace

CompareWorker::CompareWorker()
    : inThread_(new QObject)
{
    qRegisterMetaType<CompareResultPtr>();
    qRegisterMetaType<LayerPairMaps>();
    inThread_->moveToThread(&thread_);
    connect(&thread_, &QThread::finished, inThread_, &QObject::deleteLater);
    thread_.setObjectName("torchscope-compare");
    thread_.start();
}

CompareWorker::~CompareWorker()
{
    cancelled_ = true;
    thread_.requestInterruption();
    thread_.quit();
    thread_.wait();
}

void CompareWorker::compare(const CompareRequest& request)
{
    cancelled_ = false;
    QMetaObject::invokeMethod(
        inThread_, [this, request] { run(request); }, Qt::QueuedConnection);
}

void CompareWorker::layerMaps(
    const CompareRequest& request, const QString& image, const QString& layerA, const QString& layerB)
{
    QMetaObject::invokeMethod(
        inThread_,
        [this, request, image = image.toStdString(), a = layerA.toStdString(), b = layerB.toStdString()] {
            runMaps(request, image, a, b);
        },
        Qt::QueuedConnection);
}

void CompareWorker::run(const CompareRequest& request)
{
    CompareResult result;
    const QString failure = failureOf([&] {
        const ImageFolder folder = ImageFolder::scan(request.folder);
        if (folder.images.empty())
            throw Error("the folder '" + request.folder + "' holds no images (.png, .jpg, .bmp, .tif, .webp)");
        FolderRunOptions options;
        options.batchSize = request.batch;
        const BatchStream stream = folderBatches(folder, request.preprocessing, options);
        const auto progress = [this](const FolderRunProgress& p) {
            Q_EMIT this->progress(p.imagesDone, p.imagesTotal);
            return !cancelled_ && !thread_.isInterruptionRequested();
        };
        if (request.config.mode == CompareMode::Precision) {
            result = comparePrecisions(request.modelA, LoadOptions{}, request.config, stream, progress);
        } else {
            const auto a = load(request.modelA, request.device);
            const auto b = request.modelB == request.modelA ? a : load(request.modelB, request.device);
            result = compareModels(a, b, request.config, stream, progress);
        }
    });
    if (!failure.isEmpty())
        Q_EMIT failed(tr("Comparison Failed"), failure);
    else
        Q_EMIT finished(std::make_shared<const CompareResult>(std::move(result)));
}

void CompareWorker::runMaps(
    const CompareRequest& request, const std::string& image, const std::string& layerA, const std::string& layerB)
{
    LayerPairMaps maps;
    maps.image = image;
    maps.layerA = layerA;
    maps.layerB = layerB;
    const QString failure = failureOf([&] {
        const at::NoGradGuard noGrad;
        const at::Tensor batch = loadImageBatch({image}, request.preprocessing);
        auto outputOf = [&](const std::string& path, const std::string& layer, const std::string& dtype) {
            LoadOptions options;
            options.device = request.config.mode == CompareMode::Precision ? "cpu" : request.device;
            options.dtype = dtype;
            const auto model = Model::load(path, options);
            Engine engine(model);
            Request grab;
            grab.grabOutput(layer);
            const at::Tensor input = dtype.empty() ? batch : batch.to(scalarTypeNamed(dtype));
            const RunResult result
                = engine.run(grab, forwardInputsFromBatch(*model, input.to(c10::Device(model->device()))));
            return toFloatTensor(result.tensor(layer)[0]);
        };
        if (request.config.mode == CompareMode::Precision) {
            maps.a = outputOf(request.modelA, layerA, "float64");
            maps.b = outputOf(request.modelA, layerB, "float32");
        } else {
            maps.a = outputOf(request.modelA, layerA, "");
            maps.b = outputOf(request.modelB, layerB, "");
        }
    });
    if (!failure.isEmpty())
        Q_EMIT mapsFailed(tr("Layer Maps Failed"), failure);
    else
        Q_EMIT mapsReady(maps);
}

} // namespace torchscope
