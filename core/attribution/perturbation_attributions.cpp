#include "attribution/perturbation_attributions.h"

#include "common/error.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

namespace torchscope {

// Windows are enumerated with the row offset changing fastest, as Captum numbers them, so that
// each value's sum of score drops adds up in Captum's order.
at::Tensor occlusion(Engine& engine, const at::Tensor& x, const ScoreSource& source, int64_t target, int64_t window,
    int64_t stride, int64_t batch)
{
    const int64_t height = x.size(2), width = x.size(3);
    if (window < 1 || stride < 1 || window > std::min(height, width)
        || (stride > window && (height > window || width > window)))
        throw Error("occlusion needs 1 <= --stride <= --window <= the input's size (" + std::to_string(height) + " x "
            + std::to_string(width) + "), got window " + std::to_string(window) + ", stride " + std::to_string(stride));
    const auto shifts = [&](int64_t size) { return (size - window + stride - 1) / stride + 1; };
    std::vector<std::pair<int64_t, int64_t>> origins; // (row, column)
    for (int64_t column = 0; column < shifts(width); ++column)
        for (int64_t row = 0; row < shifts(height); ++row)
            origins.emplace_back(row * stride, column * stride);
    const float initial = classScores(engine, x, source, target, "occlusion")[0].item<float>();
    at::Tensor total = at::zeros({1, x.size(1), height, width}, at::kFloat);
    at::Tensor covered = at::zeros_like(total);
    for (size_t first = 0; first < origins.size(); first += static_cast<size_t>(batch)) {
        const size_t count = std::min(origins.size() - first, static_cast<size_t>(batch));
        at::Tensor occluded = x.repeat({static_cast<int64_t>(count), 1, 1, 1});
        for (size_t k = 0; k < count; ++k) {
            const auto [row, column] = origins[first + k];
            occluded[static_cast<int64_t>(k)]
                .narrow(1, row, std::min(window, height - row))
                .narrow(2, column, std::min(window, width - column))
                .zero_();
        }
        const at::Tensor scores = classScores(engine, occluded, source, target, "occlusion");
        for (size_t k = 0; k < count; ++k) {
            const auto [row, column] = origins[first + k];
            const float drop = initial - scores[static_cast<int64_t>(k)].item<float>();
            const int64_t rows = std::min(window, height - row), columns = std::min(window, width - column);
            total.narrow(2, row, rows).narrow(3, column, columns).add_(drop);
            covered.narrow(2, row, rows).narrow(3, column, columns).add_(1.0f);
        }
    }
    return total / covered;
}

at::Tensor scoreCam(Engine& engine, const at::Tensor& x, const at::Tensor& activations, const ScoreSource& source,
    int64_t target, int64_t batch)
{
    const at::NoGradGuard noGrad;
    const int64_t channels = activations.size(1);
    const at::Tensor input = x.to(activations.device()); // the activations are on the model's device
    std::vector<at::Tensor> scores;
    // The masks of one batch at a time: all of them at once would hold channels × the input.
    for (int64_t first = 0; first < channels; first += batch) {
        const int64_t count = std::min(batch, channels - first);
        at::Tensor masks = at::upsample_bilinear2d(
            activations.narrow(1, first, count), {input.size(2), input.size(3)}, /*align_corners=*/true);
        const at::Tensor flat = masks.view({1, count, -1});
        const at::Tensor highs = std::get<0>(flat.max(-1)).view({1, count, 1, 1});
        const at::Tensor lows = std::get<0>(flat.min(-1)).view({1, count, 1, 1});
        masks = (masks - lows) / (highs - lows + 1e-8);
        const at::Tensor masked = (input.unsqueeze(1) * masks.unsqueeze(2)).squeeze(0); // [count, Cin, H, W]
        scores.push_back(classScores(engine, masked, source, target, "score_cam"));
    }
    const at::Tensor weights = at::softmax(at::cat(scores), 0).view({1, channels, 1, 1}).to(activations.device());
    return at::relu((weights * activations).sum(1, true));
}

} // namespace torchscope
