#pragma once

// LeGrad (Bousselham et al. 2024) as torchcam 0.5 computes it: for each attention layer, the class
// score read from its block's output through the model's final norm and head, differentiated with
// respect to that layer's attention probabilities; ReLU, the mean over heads and queries, the
// prefix tokens dropped; the layers' maps averaged and each image's scaled to [0, 1].
// The block is the attention module's parent. The read-out is torchvision's heads(ln(tokens.mean(1)))
// (torchcam's), or timm's head(fc_norm(pool(norm(tokens)))) with the model's own pooling.

#include "attention/attention_maps.h"

#include <ATen/core/Tensor.h>

#include <string>
#include <vector>

namespace torchscope {

class Engine;

struct LeGradResult {
    at::Tensor maps; // [N, 1, h, w] float32
    std::vector<int64_t> targets; // the class explained per image
};

// target < 0: each image's predicted class. Throws torchscope::Error for a model without a final
// norm and head it knows, or attention whose keys are not the patch grid.
LeGradResult leGrad(Engine& engine, const at::Tensor& batch, const std::vector<std::string>& layers,
    const TokenLayout& layout, int64_t target, const std::string& scores);

} // namespace torchscope
