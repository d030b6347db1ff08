#pragma once

#include "cli_options.h"
#include "model/model_setup.h"

#include <memory>

namespace torchscope {
class Model;
}

namespace torchscope::cli {

// Sets the CPU thread count and loads the model on the requested device.
std::shared_ptr<Model> openModel(const CliOptions& options);
// The model's torchscope.json (else ImageNet's preprocessing), changed by --preprocess (a setup or
// preprocessing JSON file, "none" or "imagenet"), --labels and --scores.
ModelSetup chooseSetup(const Model& model, const CliOptions& options);

} // namespace torchscope::cli
