#include "attribution/grad_cam.h"

#include "common/error.h"
#include "common/strings.h"
#include "graph/engine.h"
#include "maps/channel_maps.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>

namespace torchscope {
namespace {

// [N, C, h, w] maps of a layer's output: as they are, or a transformer's patch tokens on an image of
// height x width.
at::Tensor spatialMaps(const at::Tensor& value, const std::string& layer, int64_t height, int64_t width)
{
    if (value.dim() == 4)
        return value;
    if (value.dim() == 3)
        if (at::Tensor maps = tokensAsMaps(value, height, width); maps.defined())
            return maps;
    throw Error(describeNoGrid(value, layer, height, width, "Grad-CAM"));
}

} // namespace

std::string describeNoGrid(
    const at::Tensor& value, const std::string& layer, int64_t height, int64_t width, const std::string& what)
{
    const std::string shape = shapeToString(value.sizes().vec());
    if (value.dim() != 3)
        return what
            + " needs a layer with [batch, channels, height, width] output or vision transformer tokens "
              "[batch, tokens, features]; '"
            + layer + "' gives " + shape;
    return what + " reads '" + layer + "' " + shape + " as vision transformer tokens, but no grid of patches in the "
        + (height > 0 && width > 0 ? std::to_string(height) + " x " + std::to_string(width) + " image's proportions"
                                   : std::string("square"))
        + " fits its " + std::to_string(value.size(1))
        + " tokens (after up to 16 class and register tokens): take a layer whose output is [batch, channels, "
          "height, width] or a transformer block's tokens";
}

at::Tensor tokensAsMaps(const at::Tensor& tokens, int64_t height, int64_t width)
{
    if (tokens.dim() != 3)
        return {};
    if (height > 0 && width > 0 && height != width) {
        const int64_t count = tokens.size(1);
        for (int64_t before = 0; before <= std::min<int64_t>(count - 1, 16); ++before) {
            const int64_t patches = count - before;
            const auto rows = static_cast<int64_t>(
                std::llround(std::sqrt(static_cast<double>(patches) * static_cast<double>(height) / width)));
            if (rows <= 0 || patches % rows != 0 || rows * width != patches / rows * height)
                continue;
            return tokens.narrow(1, before, patches)
                .transpose(1, 2)
                .reshape({tokens.size(0), tokens.size(2), rows, patches / rows});
        }
        return {};
    }
    const TokenGrid layout = tokenGrid({tokens.size(1), tokens.size(2)});
    if (layout.side == 0)
        return {};
    return tokens.narrow(1, layout.extraTokens, layout.side * layout.side)
        .transpose(1, 2)
        .reshape({tokens.size(0), tokens.size(2), layout.side, layout.side});
}

Attribution computeAttribution(Engine& engine, const at::Tensor& images, const std::string& layer,
    const GradientTarget& target, const std::string& scoresElement, const std::vector<std::string>& labels)
{
    if (images.dim() != 4)
        throw Error("Grad-CAM needs a batch of images [N, C, H, W], got " + shapeToString(images.sizes().vec()));
    Request request;
    request.grabs = {GrabSpec{layer, CaptureKind::Output, 0}, GrabSpec{layer, CaptureKind::Gradient, 0}};
    request.inputGradient = true;
    request.targetClass = target.index;
    request.targetRegion = target.region;
    request.scores = scoresElement;
    request.labels = labels;

    Attribution out;
    std::vector<at::Tensor> cams, upsampled, saliency, logits;
    // One image at a time: each is explained for its own class, and the score is not summed over
    // the batch.
    for (int64_t i = 0; i < images.size(0); ++i) {
        const at::Tensor image = images.narrow(0, i, 1);
        const RunResult result = engine.run(request, forwardInputsFromBatch(engine.model(), image));
        const int64_t height = images.size(2), width = images.size(3);
        const at::Tensor activation = spatialMaps(result.tensor(layer).detach().to(at::kFloat), layer, height, width);
        const at::Tensor gradient = spatialMaps(result.tensor(layer + ":grad").to(at::kFloat), layer, height, width);
        out.targets.push_back(result.targetIndex);
        out.descriptions.push_back(result.target);
        std::string note;
        if (!gradient.ne(0).any().item<bool>())
            note = "the score's gradient is zero at every position of '" + layer + "', so its Grad-CAM is zero"
                + (result.tensor(layer + ":grad").ne(0).any().item<bool>()
                        ? " (only the class token reaches the score from here, as after a vision transformer's "
                          "last block): take an earlier block, or a norm inside the last one"
                        : ": nothing of this layer reaches the score");
        out.notes.push_back(note);
        const at::Tensor weights = gradient.mean({2, 3}, /*keepdim=*/true);
        const at::Tensor cam = at::relu((weights * activation).sum(1, /*keepdim=*/true));
        cams.push_back(cam.squeeze(1).cpu());
        upsampled.push_back(
            at::upsample_bilinear2d(cam, {image.size(2), image.size(3)}, /*align_corners=*/false).squeeze(1).cpu());
        saliency.push_back(std::get<0>(result.tensor("input:grad").abs().max(1)).to(at::kFloat).cpu());
        const ScoreOutput scores = findScores(*result.find("output"), scoresElement);
        out.kind = scores.kind;
        if (scores.kind == OutputKind::Classes)
            logits.push_back(scores.scores.detach().cpu());
    }
    out.gradCam = at::cat(cams);
    out.gradCamUpsampled = at::cat(upsampled);
    out.saliency = at::cat(saliency);
    if (logits.size() == cams.size())
        out.logits = at::cat(logits);
    return out;
}

at::Tensor normalizeMap(const at::Tensor& map)
{
    const at::Tensor m = map.to(at::kFloat);
    const double lo = m.min().item<double>(), hi = m.max().item<double>();
    return hi > lo ? (m - lo) / (hi - lo) : at::zeros_like(m);
}

} // namespace torchscope
