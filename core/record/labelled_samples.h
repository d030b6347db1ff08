#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

namespace torchscope {

// Samples saved with torch.save for the record and probe commands: a tensor of rows [N, ...], or
// a dict {"samples": [N, ...], "labels": [N], "classes": [names]} with labels and class names
// optional.
struct LabelledSamples {
    at::Tensor samples;
    std::vector<int64_t> labels; // empty: unlabelled
    std::vector<std::string> classes; // empty: not given
};

// Throws torchscope::Error saying what the file holds when it is neither form.
LabelledSamples readLabelledSamples(const std::string& path);

} // namespace torchscope
