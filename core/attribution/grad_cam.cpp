#include "attribution/grad_cam.h"

#include "common/error.h"
#include "common/strings.h"
#include "graph/engine.h"

#include <ATen/ATen.h>

namespace torchscope {

Attribution computeAttribution(Engine& engine, const at::Tensor& images, const std::string& layer, int64_t targetClass)
{
    if (images.dim() != 4)
        throw Error("Grad-CAM needs a batch of images [N, C, H, W], got " + shapeToString(images.sizes().vec()));
    Request request;
    request.grabs = {GrabSpec{layer, CaptureKind::Output, 0}, GrabSpec{layer, CaptureKind::Gradient, 0}};
    request.inputGradient = true;
    request.targetClass = targetClass;

    Attribution out;
    std::vector<at::Tensor> cams, upsampled, saliency, logits;
    // One image at a time: each is explained for its own class, and the score is not summed over
    // the batch.
    for (int64_t i = 0; i < images.size(0); ++i) {
        const at::Tensor image = images.narrow(0, i, 1);
        const RunResult result = engine.run(request, forwardInputsFromBatch(engine.model(), image));
        const at::Tensor scores = result.tensor("output");
        const at::Tensor activation = result.tensor(layer).detach().to(at::kFloat);
        const at::Tensor gradient = result.tensor(layer + ":grad").to(at::kFloat);
        if (activation.dim() != 4)
            throw Error("Grad-CAM needs a layer with [batch, channels, height, width] output; '" + layer + "' gives "
                + shapeToString(activation.sizes().vec()));
        out.targets.push_back(targetClass >= 0 ? targetClass : scores.argmax(1).item<int64_t>());
        const at::Tensor weights = gradient.mean({2, 3}, /*keepdim=*/true);
        const at::Tensor cam = at::relu((weights * activation).sum(1, /*keepdim=*/true));
        cams.push_back(cam.squeeze(1).cpu());
        upsampled.push_back(
            at::upsample_bilinear2d(cam, {image.size(2), image.size(3)}, /*align_corners=*/false).squeeze(1).cpu());
        saliency.push_back(std::get<0>(result.tensor("input:grad").abs().max(1)).to(at::kFloat).cpu());
        logits.push_back(scores.detach().cpu());
    }
    out.gradCam = at::cat(cams);
    out.gradCamUpsampled = at::cat(upsampled);
    out.saliency = at::cat(saliency);
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
