#include "visualize/channel_visualization.h"

#include "common/tensor_conversion.h"
#include "graph/engine.h"
#include "imaging/image_decoder.h"
#include "imaging/image_tensor.h"
#include "preprocess/preprocess_tensor.h"
#include "visualize/activation_maximization.h"
#include "visualize/unit_objective.h"

#include <ATen/ATen.h>

#include <limits>

namespace torchscope {
namespace {

// The channel's map over each image, on one scale from the smallest to the largest value among
// them.
void mapsOverImages(Engine& engine, const VisualizeRequest& request, ChannelVisualization& out)
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
    for (size_t i = 0; i < maps.size(); ++i) {
        out.topPictures.push_back(toFloatTensor(pictureOfInput(inputs[i], request.preprocessing)));
        out.topMaps.push_back(toFloatTensor(((maps[i] - low) / span).clamp(0, 1).contiguous()));
    }
    out.mapLow = low;
    out.mapHigh = high;
}

// [C, H, W] in [0, 1] (C = 1 or 3) as [H, W, 3].
FloatTensor pictureOf(const at::Tensor& image)
{
    const at::Tensor rgb = image.expand({3, image.size(1), image.size(2)});
    return toFloatTensor(rgb.permute({1, 2, 0}).clamp(0, 1).to(at::kFloat).contiguous());
}

} // namespace

std::string VisualizeRequest::cacheKey() const
{
    return model + "|" + device + "|" + preprocessing.toJson() + "|" + config.cacheKey();
}

ChannelVisualization VisualizeAnalysis::run(AnalysisContext& context, const Request& request)
{
    ModelKey key;
    key.path = request.model;
    key.device = request.device.empty() ? "cpu" : request.device;
    auto engine = context.models.engine(key);
    ChannelVisualization out;
    out.key = request.cacheKey();
    out.mapsOnly = request.mapsOnly;
    if (!request.mapsOnly) {
        const VisualizeResult result = visualize(*engine, request.preprocessing, request.config, context.progress);
        out.image = pictureOf(result.images[0]);
        out.value = result.objectives.front();
        out.cancelled = result.cancelled;
        out.steps = result.steps;
        out.warnings = result.warnings;
    }
    try {
        mapsOverImages(*engine, request, out);
    } catch (const std::exception& e) {
        std::string why = e.what();
        why = why.substr(0, why.find("\nException raised from"));
        out.warnings.push_back("The channel's maps over the top images failed: " + why);
        out.topPictures.clear();
        out.topMaps.clear();
    }
    return out;
}

} // namespace torchscope
