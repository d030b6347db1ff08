// The window's analyses as jobs: Grad-CAM, patching and probe files on the interactive lane;
// comparisons, a heat-map cell's layer maps and feature visualisation on the batch lane.
#include "jobs/workbench_jobs.h"

#include "common/error.h"
#include "common/tensor_conversion.h"
#include "compare/compare_run.h"
#include "graph/engine.h"
#include "imaging/folder_run.h"
#include "imaging/grad_cam_images.h"
#include "imaging/image_decoder.h"
#include "imaging/image_folder.h"
#include "imaging/image_tensor.h"
#include "imaging/layer_pair_maps.h"
#include "imaging/patch_images.h"
#include "jobs/job_runner.h"
#include "model/model.h"
#include "preprocess/preprocess_tensor.h"
#include "probe/linear_probe.h"
#include "probe/model_extender.h"
#include "views/overlay_image.h"
#include "visualize/activation_maximization.h"
#include "visualize/unit_objective.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>

#include <QCoreApplication>

#include <limits>

namespace torchscope {
namespace {

ProgressCallback progressOf(JobContext& job)
{
    return [&job](const Progress& p) { return job.progress(p.done, p.total, QString::fromStdString(p.stage)); };
}

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
std::vector<QImage> mapsOverImages(Engine& engine, const VisualizeRequest& request, float& low, float& high)
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
    low = std::numeric_limits<float>::max();
    high = std::numeric_limits<float>::lowest();
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

ModelKey keyOf(const std::string& path, const std::string& device, const std::string& dtype = "")
{
    ModelKey key;
    key.path = path;
    key.device = device.empty() ? "cpu" : device;
    key.dtype = dtype;
    return key;
}

} // namespace

std::string VisualizeRequest::cacheKey() const
{
    return model + "|" + device + "|" + preprocessing.toJson() + "|" + config.cacheKey();
}

namespace jobs {

GradCamResultPtr gradCam(JobContext& job, const ModelKey& key, const GradCamRequest& request)
{
    auto engine = job.models().engine(JobLane::Interactive, key);
    return std::make_shared<const GradCamResult>(computeGradCam(*engine, request, progressOf(job)));
}

AttributionWorkbenchResultPtr attributionWorkbench(
    JobContext& job, const ModelKey& key, const AttributionWorkbenchRequest& request)
{
    auto engine = job.models().engine(JobLane::Batch, key);
    std::shared_ptr<Model> scratch; // the sanity check randomises a copy of its own
    if (!request.sanityMode.empty()) {
        LoadOptions load;
        load.device = key.device;
        load.dtype = key.dtype;
        load.operatorLibraries = key.operatorLibraries;
        scratch = Model::load(key.path, load);
    }
    return std::make_shared<const AttributionWorkbenchResult>(
        runAttributionWorkbench(*engine, scratch, request, progressOf(job)));
}

AttentionWorkbenchResultPtr attentionWorkbench(
    JobContext& job, const ModelKey& key, const AttentionWorkbenchRequest& request)
{
    auto engine = job.models().engine(JobLane::Batch, key);
    return std::make_shared<const AttentionWorkbenchResult>(runAttentionWorkbench(*engine, request, progressOf(job)));
}

PatchResultPtr patch(JobContext& job, const ModelKey& key, const PatchRequest& request)
{
    auto engine = job.models().engine(JobLane::Interactive, key);
    return std::make_shared<const PatchResult>(patchImages(*engine, request, progressOf(job)));
}

ProbeScoresPtr applyProbeFile(
    JobContext& job, const ModelKey& key, const QString& path, const QStringList& images, const ModelSetup& setup)
{
    const auto model = job.models().model(JobLane::Interactive, key);
    const ProbeExtension probe = loadProbeExtension(path.toStdString());
    if (probe.layer.empty())
        throw Error("'" + path.toStdString() + "' does not say which layer it reads (it is not a TorchScope probe)");
    ModelExtender extender(model); // checks the layer and moves the probe to the model's device
    extender.registerProbe("probe", probe);
    auto scores = std::make_shared<ProbeScores>();
    scores->file = path.toStdString();
    scores->layer = probe.layer;
    scores->classNames = probe.classNames;
    for (const auto& image : images) {
        // Only the probe's output is wanted: the forward stops after its layer.
        const ExtendedOutput out = extender.forward(
            forwardInputsFromBatch(*model, loadImageBatch({image.toStdString()}, setup.preprocessing)), false);
        scores->images.push_back(image.toStdString());
        scores->probabilities.push_back(probeProbabilities(out.extensions.at("probe")));
        if (!job.progress(scores->images.size(), images.size()))
            break;
    }
    return scores;
}

CompareResultPtr compare(JobContext& job, const CompareRequest& request)
{
    const ImageFolder folder = ImageFolder::scan(request.folder);
    if (folder.images.empty())
        throw Error("the folder '" + request.folder + "' holds no images (.png, .jpg, .bmp, .tif, .webp)");
    FolderRunOptions options;
    options.batchSize = request.batch;
    const BatchStream stream = folderBatches(folder, request.preprocessing, options);
    const auto progress = [&](const Progress& p) { return job.progress(p.done, p.total); };
    if (request.config.mode == CompareMode::Precision) // loads the model once per precision itself
        return std::make_shared<const CompareResult>(
            comparePrecisions(request.modelA, LoadOptions{}, request.config, stream, progress));
    const auto a = job.models().model(JobLane::Batch, keyOf(request.modelA, request.device));
    const auto b = job.models().model(JobLane::Batch, keyOf(request.modelB, request.device));
    return std::make_shared<const CompareResult>(compareModels(a, b, request.config, stream, progress));
}

LayerPairResult layerPairMaps(JobContext& job, const CompareRequest& request, const std::string& image,
    const std::string& layerA, const std::string& layerB)
{
    const bool precision = request.config.mode == CompareMode::Precision;
    LayerPairRequest pair{
        image, layerA, layerB, request.preprocessing, precision ? "float64" : "", precision ? "float32" : ""};
    const std::string device = precision ? "cpu" : request.device;
    auto a = job.models().engine(JobLane::Batch, keyOf(request.modelA, device, pair.dtypeA));
    auto b
        = job.models().engine(JobLane::Batch, keyOf(precision ? request.modelA : request.modelB, device, pair.dtypeB));
    return torchscope::layerPairMaps(*a, *b, pair);
}

VisualizeJobResult visualize(JobContext& job, const VisualizeRequest& request)
{
    auto engine = job.models().engine(JobLane::Batch, keyOf(request.model, request.device));
    VisualizeJobResult outcome;
    outcome.key = request.cacheKey();
    outcome.mapsOnly = request.mapsOnly;
    if (!request.mapsOnly) {
        const VisualizeResult result
            = torchscope::visualize(*engine, request.preprocessing, request.config, [&](const Progress& p) {
                  return job.progress(p.done, p.total, QString::number(p.values.front(), 'g', 4));
              });
        outcome.image = pictureOf(result.images[0]);
        outcome.value = result.objectives.front();
        outcome.cancelled = result.cancelled;
        outcome.steps = result.steps;
        for (const auto& warning : result.warnings)
            outcome.warnings << QString::fromStdString(warning);
    }
    try {
        outcome.topMaps = mapsOverImages(*engine, request, outcome.mapLow, outcome.mapHigh);
    } catch (const std::exception& e) {
        outcome.warnings << QCoreApplication::translate(
            "torchscope::ChannelPage", "The channel's maps over the top images failed: %1")
                                .arg(QString::fromStdString(e.what()).section("\nException raised from", 0, 0));
    }
    return outcome;
}

} // namespace jobs
} // namespace torchscope
