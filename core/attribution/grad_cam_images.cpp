#include "attribution/grad_cam_images.h"

#include "attribution/grad_cam.h"
#include "common/error.h"
#include "common/tensor_conversion.h"
#include "export/manifest.h"
#include "export/write_tensors.h"
#include "graph/engine.h"
#include "imaging/image_tensor.h"
#include "preprocess/preprocess_tensor.h"

#include <ATen/ATen.h>

namespace torchscope {
namespace {

std::pair<double, double> rangeOf(const at::Tensor& map)
{
    return {map.min().item<double>(), map.max().item<double>()};
}

// The images' maps stacked as "key", or "key/i" each when their sizes differ.
void addMaps(NamedValues& values, const std::string& key, const std::vector<at::Tensor>& maps)
{
    bool sameSize = true;
    for (const auto& map : maps)
        sameSize = sameSize && map.sizes() == maps.front().sizes();
    if (sameSize) {
        values.emplace_back(key, at::stack(maps));
        return;
    }
    for (size_t i = 0; i < maps.size(); ++i)
        values.emplace_back(key + "/" + std::to_string(i), maps[i]);
}

} // namespace

GradCamResult computeGradCam(Engine& engine, const GradCamRequest& request, const ProgressCallback& progress)
{
    if (request.images.empty())
        throw Error("Grad-CAM needs at least one image");
    if (request.layer.empty())
        throw Error("Grad-CAM needs a layer: the module whose output it weighs");
    GradCamResult result;
    result.layer = request.layer;
    const auto total = static_cast<int64_t>(request.images.size());
    for (int64_t i = 0; i < total; ++i) {
        const std::string& path = request.images[static_cast<size_t>(i)];
        try {
            const at::Tensor input = loadImageBatch({path}, request.setup.preprocessing);
            const Attribution a = computeAttribution(engine, input, request.layer,
                GradientTarget{request.targetClass, request.region}, request.setup.scores, request.setup.labels);
            GradCamImage image;
            image.image = path;
            image.target = a.targets.front();
            image.targetDescription = a.descriptions.front();
            image.note = a.notes.front();
            image.picture = toFloatTensor(pictureOfInput(input, request.setup.preprocessing));
            image.gradCamAtLayer = toFloatTensor(a.gradCam[0].contiguous());
            image.gradCam = toFloatTensor(a.gradCamUpsampled[0].contiguous());
            image.saliency = toFloatTensor(a.saliency[0].contiguous());
            image.gradCamRange = rangeOf(a.gradCamUpsampled[0]);
            image.saliencyRange = rangeOf(a.saliency[0]);
            result.outputKind = a.kind;
            result.images.push_back(std::move(image));
        } catch (const std::exception& e) {
            result.failures.emplace_back(path, e.what());
        }
        if (progress && !progress(Progress{i + 1, total, "grad-cam", {}}) && i + 1 < total) {
            result.cancelled = true;
            break;
        }
    }
    // The same failure on every image is the request's, not an image's (an unknown layer).
    if (result.images.empty() && !result.cancelled)
        throw Error(result.failures.size() == 1 ? result.failures.front().second
                                                : "Grad-CAM failed on every image; the first, '"
                    + result.failures.front().first + "': " + result.failures.front().second);
    return result;
}

std::vector<std::string> writeGradCam(
    const std::string& path, const GradCamResult& result, const ExportManifest* manifest)
{
    if (result.images.empty())
        throw Error("there is no Grad-CAM map to write");
    std::vector<at::Tensor> cams, camsAtLayer, saliency;
    std::vector<int64_t> targets;
    for (const auto& image : result.images) {
        cams.push_back(toTensor(image.gradCam));
        camsAtLayer.push_back(toTensor(image.gradCamAtLayer));
        saliency.push_back(toTensor(image.saliency));
        targets.push_back(image.target);
    }
    NamedValues values;
    addMaps(values, "gradcam", cams);
    addMaps(values, "gradcam_layer", camsAtLayer);
    addMaps(values, "saliency", saliency);
    values.emplace_back("target", at::tensor(targets, at::kLong));
    if (!manifest)
        return writeTensors(path, values);
    ExportManifest described = *manifest;
    described.keys.clear();
    for (const auto& [key, value] : values) {
        const std::string map = key.substr(0, key.find('/'));
        const std::string kind = map == "gradcam" ? "grad-cam (input size)"
            : map == "gradcam_layer"              ? "grad-cam (layer size)"
            : map == "saliency"                   ? "saliency (|input gradient|, max over channels)"
                                                  : "target class";
        described.keys.push_back({key, map == "saliency" || map == "target" ? "" : result.layer, kind});
    }
    return writeTensors(path, values, &described);
}

GradCamResult GradCamAnalysis::run(AnalysisContext& context, const Request& request)
{
    return computeGradCam(*context.models.engine(context.model), request, context.progress);
}

} // namespace torchscope
