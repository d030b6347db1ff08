#include "analysis_commands.h"

#include "attribution/grad_cam_images.h"
#include "attribution/input_attributions.h"
#include "attribution_setup.h"
#include "cli_manifest.h"
#include "common/error.h"
#include "common/memory_budget.h"
#include "common/strings.h"
#include "compare/layer_pair_maps.h"
#include "graph/engine.h"
#include "image_inputs.h"
#include "imaging/image_tensor.h"
#include "inputs.h"
#include "model/model.h"
#include "open_model.h"
#include "patching/patch_images.h"
#include "problems.h"

#include <iomanip>
#include <iostream>
#include <sstream>

namespace torchscope::cli {
namespace {

void reportWritten(const std::string& path, const std::vector<std::string>& leftOut)
{
    for (const auto& key : leftOut)
        std::cerr << "torchscope-cli: warning: " << path << " cannot hold '" << key << "'; left out\n";
    std::cout << "wrote " << path << '\n';
}

} // namespace

int runGradCam(const CliOptions& options)
{
    const auto model = openModel(options);
    GradCamRequest request;
    request.setup = chooseSetup(*model, options);
    request.images = listImageInputs(options.inputs);
    request.layer = options.layer;
    request.targetClass = options.target.value_or(-1);
    request.region = options.targetBox;
    Engine engine(model);
    const GradCamResult result = computeGradCam(engine, request, [](const Progress& p) {
        std::cerr << "\r" << p.done << " / " << p.total << " images" << std::flush;
        return true;
    });
    std::cerr << '\n';
    printSkipped(result.failures);
    std::cout << "Grad-CAM at " << result.layer << " (" << outputKindName(result.outputKind) << " output):\n";
    for (const auto& image : result.images) {
        std::cout << "  " << image.image << ": " << image.targetDescription << "; Grad-CAM up to "
                  << image.gradCamRange.second << '\n';
        if (!image.note.empty())
            std::cout << "    note: " << image.note << '\n';
    }
    ExportManifest manifest = cliManifest(options, *model, request.setup, {});
    for (const auto& image : result.images) {
        manifest.images.push_back({image.image});
        manifest.targets.push_back(image.targetDescription);
    }
    reportWritten(options.out, writeGradCam(options.out, result, &manifest));
    return 0;
}

int runPatch(const CliOptions& options)
{
    const auto model = openModel(options);
    PatchRequest request;
    request.mode = parsePatchMode(options.mode.empty() ? "patch" : options.mode);
    request.setup = chooseSetup(*model, options);
    request.imageA = options.imageA;
    request.imageB = options.imageB;
    request.layer = options.layer;
    request.compareLayer = options.compareLayer;
    if (request.mode == PatchMode::Ablate) {
        if (options.ablateChannels.empty())
            throw UsageError("patch: --mode ablate needs --channels C1,C2,...");
        request.channels = options.ablateChannels;
    } else if (options.imageB.empty()) {
        throw UsageError("patch: --mode " + patchModeName(request.mode) + " needs --b IMAGE");
    }
    for (const auto& edit : options.edits)
        request.edits.push_back(EditSpec::parse(edit));
    Engine engine(model);
    const PatchResult result = patchImages(engine, request);
    for (const auto& column : result.columns) {
        std::cout << column.title << ":";
        for (const auto& p : column.predictions)
            std::cout << "  " << p.label << ' ' << std::fixed << std::setprecision(1) << 100.0 * p.probability << '%';
        std::cout << '\n';
    }
    if (result.difference) {
        std::cout << "channels of " << result.layer << " by mean |A - B|:";
        const auto& d = *result.difference;
        for (size_t i = 0; i < std::min<size_t>(d.ranked.size(), 10); ++i)
            std::cout << "  " << d.ranked[i] << " (" << std::setprecision(4) << std::defaultfloat
                      << d.channelDifference[static_cast<size_t>(d.ranked[i])] << ')';
        std::cout << '\n';
    }
    if (!options.out.empty()) {
        std::vector<std::string> images{request.imageA};
        if (!request.imageB.empty())
            images.push_back(request.imageB);
        ExportManifest manifest = cliManifest(options, *model, request.setup, images);
        manifest.settings.emplace_back("mode", patchModeName(request.mode));
        if (!options.ablateChannels.empty()) {
            std::string channels;
            for (const int64_t c : options.ablateChannels)
                channels += (channels.empty() ? "" : ",") + std::to_string(c);
            manifest.settings.emplace_back("channels", channels);
        }
        reportWritten(options.out, writePatch(options.out, result, &manifest));
    }
    return 0;
}

int runCompareMaps(const CliOptions& options, const CompareConfig& config)
{
    if (options.inputs.size() != 1 || isTensorFile(options.inputs[0]))
        throw UsageError("compare --maps takes one image as --input");
    if (options.layers.size() != 1 || options.layersB.size() > 1)
        throw UsageError("compare --maps takes one --layer (and for cka one --layer-b)");
    if (options.out.empty() || endsWith(options.out, ".json") || endsWith(options.out, ".csv"))
        throw UsageError("compare --maps needs --out FILE.pt, FILE.npz or FILE.safetensors");
    const bool precision = config.mode == CompareMode::Precision;
    LayerPairRequest request;
    request.image = options.inputs[0];
    request.layerA = options.layers[0];
    request.layerB = options.layersB.empty() ? options.layers[0] : options.layersB[0];
    auto load = [&](const std::string& path, const std::string& device, const std::string& dtype) {
        CliOptions one = options;
        one.model = path;
        one.device = device;
        if (dtype.empty())
            return openModel(one);
        LoadOptions loadOptions;
        loadOptions.device = device;
        loadOptions.dtype = dtype;
        loadOptions.operatorLibraries = options.operatorLibraries;
        return Model::load(path, loadOptions);
    };
    std::shared_ptr<Model> modelA, modelB;
    if (precision) {
        const Precision lower = config.precisions.empty() ? Precision{} : config.precisions.front();
        request.dtypeA = "float64";
        request.dtypeB = lower.dtype;
        modelA = load(options.model, "cpu", request.dtypeA);
        modelB = load(options.model, lower.device, request.dtypeB);
    } else {
        modelA = load(options.model, options.device, "");
        modelB = load(options.modelB.empty() ? options.model : options.modelB, options.device, "");
    }
    const ModelSetup setup = chooseSetup(*modelA, options);
    request.preprocessing = setup.preprocessing;
    Engine engineA(modelA);
    Engine engineB(modelB);
    const LayerPairResult result = layerPairMaps(engineA, engineB, request);
    ExportManifest manifest = cliManifest(options, *modelA, setup, {request.image});
    manifest.command += " --maps";
    if (!precision)
        manifest.modelB = modelB->path();
    manifest.dtype = request.dtypeA;
    manifest.settings.emplace_back("mode", modeName(config.mode));
    if (precision)
        manifest.settings.emplace_back("b", modelB->device() + " " + request.dtypeB);
    reportWritten(options.out, writeLayerPairMaps(options.out, result, &manifest));
    return 0;
}

} // namespace torchscope::cli
