#include "attribute_command.h"

#include "attribution/input_attributions.h"
#include "attribution/layer_cams.h"
#include "cli_manifest.h"
#include "common/error.h"
#include "export/write_tensors.h"
#include "graph/engine.h"
#include "inputs.h"
#include "model/model.h"
#include "open_model.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <iostream>
#include <unistd.h>

namespace torchscope::cli {
namespace {

// A quarter of the memory the machine has free, at least 256 MiB.
int64_t defaultMemoryBytes()
{
    const long pages = sysconf(_SC_AVPHYS_PAGES), size = sysconf(_SC_PAGESIZE);
    const int64_t free = pages > 0 && size > 0 ? int64_t{pages} * size : int64_t{4} << 30;
    return std::max<int64_t>(int64_t{256} << 20, free / 4);
}

} // namespace

int runAttribute(const CliOptions& options)
{
    auto model = openModel(options);
    const ModelSetup setup = chooseSetup(*model, options);
    const ForwardInputs inputs = loadForwardInputs(*model, options.inputs, setup.preprocessing);
    if (inputs.arguments.size() != 1 || !inputs.arguments[0].isTensor())
        throw Error("attribute explains a model with one tensor input; this one takes " + model->forwardSignature());
    const at::Tensor images = inputs.arguments[0].toTensor();

    InputAttributionRequest request;
    request.methods = options.methods;
    std::sort(request.methods.begin(), request.methods.end());
    request.methods.erase(std::unique(request.methods.begin(), request.methods.end()), request.methods.end());
    request.target.index = options.target.value_or(-1);
    request.scores = setup.scores;
    request.labels = setup.labels;
    request.steps = options.attributionSteps;
    request.rule = parseIntegrationRule(options.rule);
    request.window = options.window;
    request.layer = options.camLayer;
    request.stride = options.stride;
    request.memoryBytes = options.memoryMb > 0 ? options.memoryMb << 20 : defaultMemoryBytes();
    if (images.dim() == 4)
        request.bytesPerSample = evaluationBytesPerSample(*model, images.narrow(0, 0, 1));

    Engine engine(model);
    const InputAttributionResult result = attributeInputs(engine, images, request, [](const Progress& p) {
        std::cerr << "\r" << p.done << " / " << p.total << " images" << std::flush;
        return true;
    });
    std::cerr << '\n';

    NamedValues values;
    ExportManifest manifest = cliManifest(options, *model, setup, inputs.sampleNames);
    for (const auto& [method, map] : result.maps) {
        values.emplace_back(method, map.contiguous());
        const auto colon = method.find(':');
        manifest.keys.push_back(colon == std::string::npos && !isGradientCam(method) && method != ScoreCam
                ? ManifestKey{method, "", method + " of the input"}
                : ManifestKey{method, request.layer,
                    method.substr(0, colon)
                        + (colon == std::string::npos ? " at the layer" : " upsampled to the input")});
    }
    values.emplace_back("targets", at::tensor(result.targets, at::kLong));
    manifest.keys.push_back({"targets", "", "target class"});
    if (!result.integratedGradientsDelta.empty()) {
        values.emplace_back("integrated_gradients:delta", at::tensor(result.integratedGradientsDelta, at::kDouble));
        manifest.keys.push_back({"integrated_gradients:delta", "", "completeness error"});
        manifest.settings.emplace_back("steps", std::to_string(request.steps));
        manifest.settings.emplace_back("rule", options.rule);
        manifest.settings.emplace_back("baseline", options.baseline);
    }
    manifest.targets = result.targetDescriptions;
    writeTensors(options.out, values, &manifest);

    std::cout << "explained " << result.targets.size() << " image(s), evaluating " << result.batch
              << " input(s) at a time:\n";
    for (size_t i = 0; i < result.targets.size(); ++i) {
        std::cout << "  " << (i < inputs.sampleNames.size() ? inputs.sampleNames[i] : "sample " + std::to_string(i))
                  << ": " << result.targetDescriptions[i];
        if (i < result.integratedGradientsDelta.size())
            std::cout << "; integrated gradients' completeness error " << result.integratedGradientsDelta[i];
        std::cout << '\n';
    }
    std::cout << "wrote " << options.out << '\n';
    return 0;
}

} // namespace torchscope::cli
