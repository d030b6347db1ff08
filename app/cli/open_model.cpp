#include "open_model.h"

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

ModelSetup chooseSetup(const Model& model, const CliOptions& options)
{
    ModelSetup setup = defaultSetup(model);
    if (options.preprocess)
        setup = readSetupSpec(*options.preprocess, setup);
    if (options.labels)
        setup.labels = readLabelsFile(*options.labels);
    if (options.scores)
        setup.scores = *options.scores;
    return setup;
}

} // namespace torchscope::cli
