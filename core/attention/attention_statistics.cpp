#include "attention/attention_statistics.h"

#include "attention/attention_maps.h"
#include "graph/engine.h"
#include "graph/request.h"

#include <ATen/ATen.h>

#include <cmath>

namespace torchscope {

at::Tensor attentionEntropy(const at::Tensor& probabilities)
{
    const at::Tensor p = probabilities.to(at::kFloat);
    return -at::special_xlogy(p, p).sum(-1).mean(-1);
}

at::Tensor attentionDistance(const at::Tensor& probabilities, int64_t prefix, int64_t gridHeight, int64_t gridWidth)
{
    const at::TensorOptions options = probabilities.options().dtype(at::kFloat);
    const at::Tensor rows = at::arange(gridHeight, options).repeat_interleave(gridWidth);
    const at::Tensor cols = at::arange(gridWidth, options).repeat(gridHeight);
    const at::Tensor dy = rows.unsqueeze(1) - rows.unsqueeze(0), dx = cols.unsqueeze(1) - cols.unsqueeze(0);
    const int64_t patches = gridHeight * gridWidth;
    const at::Tensor amongPatches = probabilities.to(at::kFloat).narrow(2, prefix, patches).narrow(3, prefix, patches);
    return (amongPatches * (dy * dy + dx * dx).sqrt()).sum(-1).mean(-1);
}

void addAttentionFigures(RunResult& result, const Model& model, const std::vector<int64_t>& batchShape)
{
    if (batchShape.size() != 4)
        return; // not images: no patch grid, no per-image rows
    const int64_t images = batchShape[0];
    std::vector<std::pair<std::string, c10::IValue>> figures;
    for (const auto& [key, value] : result.values) {
        const CaptureKey capture = CaptureKey::parse(key);
        if (capture.kind != CaptureKind::Attention || !value.isTensor() || value.toTensor().dim() != 4)
            continue;
        const at::Tensor p = value.toTensor();
        if (p.size(0) % images != 0)
            continue;
        const std::string call = capture.call == 0 ? "" : "#" + std::to_string(capture.call);
        figures.emplace_back(
            capture.path + ":entropy" + call, attentionEntropy(p).view({images, -1, p.size(1)}).mean(1));
        const TokenLayout layout = tokenLayout(model, p.size(3), batchShape[2], batchShape[3], 0);
        if (layout.spatial && p.size(0) == images)
            figures.emplace_back(capture.path + ":distance" + call,
                attentionDistance(p, layout.prefix, layout.gridHeight, layout.gridWidth)
                    * static_cast<double>(layout.patchSize));
    }
    result.values.insert(result.values.end(), figures.begin(), figures.end());
}

} // namespace torchscope
