#include "model_setup.h"

#include "model/model.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <thread>

namespace torchscope::cli {

std::shared_ptr<Model> openModel(const CliOptions& options)
{
    // LibTorch's default here is one thread; 1x1 convolutions at small batches then crawl.
    at::set_num_threads(
        options.threads > 0 ? options.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
    LoadOptions load;
    load.device = options.device;
    load.operatorLibraries = options.operatorLibraries;
    return Model::load(options.model, load);
}

Preprocessing choosePreprocessing(const Model& model, const CliOptions& options)
{
    if (options.preprocess)
        return Preprocessing::fromSpec(*options.preprocess);
    const ModelCard card = ModelCard::fromJson(model.extraFile("torchscope.json"));
    return card.present ? card.preprocessing : Preprocessing::imagenet();
}

} // namespace torchscope::cli
