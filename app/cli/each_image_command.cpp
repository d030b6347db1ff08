#include "each_image_command.h"

#include "cli_manifest.h"
#include "common/error.h"
#include "graph/engine.h"
#include "image_inputs.h"
#include "inputs.h"
#include "model/model.h"
#include "open_model.h"
#include "prediction_text.h"
#include "problems.h"
#include "run/image_run.h"
#include "run_request.h"
#include "stop_requests.h"

#include <atomic>
#include <csignal>
#include <iostream>

namespace torchscope::cli {
namespace {

// Each image's gradient is of its own target (with --target -1 its own predicted class): one line
// when they agree, else one per image.
void printGradientTargets(const ImageRunResult& result)
{
    if (result.gradientTarget.empty())
        return;
    bool same = true;
    for (const auto& image : result.images)
        same = same && image.gradientTarget == result.images.front().gradientTarget;
    if (same) {
        std::cout << "gradients are of " << result.gradientTarget << (result.images.size() > 1 ? " in every image" : "")
                  << '\n';
        return;
    }
    std::cout << "gradients are of each image's own target:\n";
    for (const auto& image : result.images)
        std::cout << "  " << image.path << ": " << image.gradientTarget << '\n';
}

} // namespace

int runEachImage(const CliOptions& options)
{
    if (!options.probes.empty())
        throw Error("--each-image runs the model alone; --probe runs with one batch (leave out --each-image)");
    for (const auto& input : options.inputs)
        if (isTensorFile(input))
            throw Error("--each-image takes images and folders of images; '" + input
                + "' is a tensor file (leave out --each-image to run it as a batch)");
    auto model = openModel(options);
    ImageRunConfig config;
    config.setup = chooseSetup(*model, options);
    std::vector<at::Tensor> editTensors;
    config.request = runRequest(options, config.setup, editTensors);
    if (!editTensors.empty())
        throw Error("--each-image takes zero and scale edits; add and replace tensors are of one batch");
    config.images = listImageInputs(options.inputs);
    config.topK = 3;
    config.thumbnailSize = 0;
    config.keepPictures = false;

    Engine engine(model);
    ImageRunner runner(model, engine);
    const StopRequests stops(false); // Ctrl+C stops after the current batch, keeping what is done
    const ImageRunResult result = runner.run(config, [](const Progress& p) {
        std::cerr << "\r" << p.done << " / " << p.total << " images" << std::flush;
        return !StopRequests::asked();
    });
    std::cerr << '\n';

    if (!result.error.empty())
        throw Error(result.setupAdvice.empty() ? result.error : explainSetupProblem(result.error, result.setupAdvice));
    printSkipped(result.failures);
    if (result.images.empty())
        throw Error(
            "none of the " + std::to_string(config.images.size()) + " images could be run; nothing was written");
    printWarnings(result.warnings);
    ExportManifest manifest = cliManifest(options, *model, config.setup, {});
    for (const auto& image : result.images) {
        manifest.images.push_back({image.path, image.width, image.height});
        if (!image.gradientTarget.empty())
            manifest.targets.push_back(image.gradientTarget);
    }
    for (const auto& leftOut : runner.writeRecorded(options.out, &manifest))
        std::cerr << "torchscope-cli: warning: left out of " << options.out << ": " << leftOut << '\n';
    if (result.cancelled)
        std::cerr << "torchscope-cli: stopped after " << result.images.size() + result.failures.size() << " of "
                  << config.images.size() << " images; wrote what had run\n";
    std::cout << "wrote the values of " << result.images.size() << " images to " << options.out << '\n';
    printGradientTargets(result);
    if (!config.request.truncateAt && result.images.front().prediction.kind != OutputKind::Other) {
        std::cout << '\n' << predictionHeading(result.images.front().prediction.kind) << ":\n";
        for (const auto& image : result.images)
            std::cout << predictionText(image.path, image.prediction);
    }
    return 0;
}

} // namespace torchscope::cli
