#pragma once

#include "preprocess/preprocessing.h"

#include <ATen/core/ivalue.h>

#include <string>
#include <vector>

namespace torchscope {
class Model;
}

namespace torchscope::cli {

struct ForwardInputs {
    std::vector<c10::IValue> arguments;
    std::vector<std::string> sampleNames; // one per batch element: the image paths, when images
};

// The forward's arguments from --input paths: images and folders become one preprocessed batch;
// tensor files written by torch.save are used as they are (one per argument when several).
ForwardInputs loadForwardInputs(
    const Model& model, const std::vector<std::string>& inputs, const Preprocessing& preprocessing);

bool isTensorFile(const std::string& path);

} // namespace torchscope::cli
