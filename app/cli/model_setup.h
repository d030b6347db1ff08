#pragma once

#include "cli_options.h"
#include "imaging/preprocessing.h"

#include <memory>

namespace torchscope {
class Model;
}

namespace torchscope::cli {

// Sets the CPU thread count and loads the model on the requested device.
std::shared_ptr<Model> openModel(const CliOptions& options);
// --preprocess, else the model's torchscope.json, else imagenet.
Preprocessing choosePreprocessing(const Model& model, const CliOptions& options);

} // namespace torchscope::cli
