#include "attribute_command.h"

#include "attribution/input_attributions.h"
#include "attribution_setup.h"
#include "cli_manifest.h"
#include "common/error.h"
#include "export/write_tensors.h"
#include "graph/engine.h"
#include "model/model.h"

#include <ATen/ATen.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <iostream>

namespace torchscope::cli {
namespace {

ManifestKey manifestKey(const std::string& key, const std::string& layer)
{
    const auto colon = key.find(':');
    const std::string method = key.substr(0, colon);
    if (!isLayerMethod(method))
        return {key, "", method + " of the input"};
    return {key, layer, method + (colon == std::string::npos ? " at the layer" : " upsampled to the input")};
}

void addSettings(ExportManifest& manifest, const AttributionSetup& job, int batch)
{
    const InputAttributionRequest& request = job.request;
    const auto uses = [&](const char* method) {
        return std::find(request.methods.begin(), request.methods.end(), method) != request.methods.end();
    };
    if (uses(IntegratedGradients)) {
        manifest.settings.emplace_back("steps", std::to_string(request.steps));
        manifest.settings.emplace_back("rule", job.settings.rule);
        manifest.settings.emplace_back("baseline", job.settings.baseline);
    }
    if (uses(SmoothGrad) || uses(SmoothGradSquared) || uses(VarGrad)) {
        manifest.settings.emplace_back("samples", std::to_string(request.noise.samples));
        manifest.settings.emplace_back("noise", std::to_string(request.noise.noise));
    }
    if (uses(SmoothGrad) || uses(SmoothGradSquared) || uses(VarGrad) || job.settings.baseline == "noise")
        manifest.settings.emplace_back("seed", std::to_string(request.noise.seed));
    if (uses(Occlusion)) {
        manifest.settings.emplace_back("window", std::to_string(request.window));
        manifest.settings.emplace_back("stride", std::to_string(request.stride));
    }
    // The cap decides how many inputs (path points, noisy copies, occluded images) run together; another
    // batch can move a value in its last bits (another kernel's summation order): both are recorded.
    manifest.settings.emplace_back("memory_mb", std::to_string(request.memoryBytes >> 20));
    manifest.settings.emplace_back("batch", std::to_string(batch));
    if (uses(Lrp)) {
        manifest.settings.emplace_back("composite", request.relevance.composite);
        manifest.settings.emplace_back("attention_rule", request.relevance.attention);
        for (const auto& o : request.relevance.overrides)
            manifest.settings.emplace_back("rule", o.toString());
    }
}

} // namespace

static int runAttribute(const CliOptions& options)
{
    AttributionSetup job = prepareAttribution(options);
    Engine engine(job.model);
    InputAttributionResult result;
    {
        const InterruptibleProgress progress("images");
        result = attributeInputs(engine, job.images, job.request, progress.callback());
    }
    if (result.targets.empty())
        throw Error("interrupted before the first image was explained; nothing written");

    NamedValues values;
    const auto& names = job.inputs.sampleNames;
    const std::vector<std::string> explained(
        names.begin(), names.begin() + static_cast<std::ptrdiff_t>(std::min(names.size(), result.targets.size())));
    ExportManifest manifest = cliManifest(options, *job.model, job.setup, explained);
    for (const auto& [key, map] : result.maps) {
        values.emplace_back(key, map.contiguous());
        manifest.keys.push_back(manifestKey(key, job.request.layer));
    }
    values.emplace_back("targets", at::tensor(result.targets, at::kLong));
    manifest.keys.push_back({"targets", "", "target class"});
    if (!result.integratedGradientsDelta.empty()) {
        values.emplace_back("integrated_gradients:delta", at::tensor(result.integratedGradientsDelta, at::kDouble));
        manifest.keys.push_back({"integrated_gradients:delta", "", "completeness error"});
    }
    if (result.integratedGradientsBaselines.defined()) {
        values.emplace_back("integrated_gradients:baseline", result.integratedGradientsBaselines.contiguous());
        manifest.keys.push_back({"integrated_gradients:baseline", "", "the path's start"});
    }
    if (!result.relevanceSums.empty()) {
        values.emplace_back("lrp:relevance_sum", at::tensor(result.relevanceSums, at::kDouble));
        manifest.keys.push_back({"lrp:relevance_sum", "", "the input relevance's sum per image"});
        values.emplace_back("lrp:logit", at::tensor(result.relevanceScores, at::kDouble));
        manifest.keys.push_back({"lrp:logit", "", "the logit explained (relevance is conserved where they agree)"});
    }
    addSettings(manifest, job, result.batch);
    manifest.targets = result.targetDescriptions;
    writeTensors(options.out, values, &manifest);

    std::cout << "explained " << result.targets.size() << " image(s), evaluating " << result.batch
              << " input(s) at a time:\n";
    for (size_t i = 0; i < result.targets.size(); ++i) {
        std::cout << "  " << (i < names.size() ? names[i] : "sample " + std::to_string(i)) << ": "
                  << result.targetDescriptions[i];
        if (i < result.integratedGradientsDelta.size()) {
            if (std::isnan(result.integratedGradientsDelta[i]))
                std::cout << "; no completeness error (the output has no class scores to compare)";
            else
                std::cout << "; integrated gradients' completeness error " << result.integratedGradientsDelta[i];
        }
        if (i < result.relevanceSums.size())
            std::cout << "; lrp: the input relevance sums to " << result.relevanceSums[i] << " of the logit "
                      << result.relevanceScores[i];
        std::cout << '\n';
    }
    if (!result.relevanceSums.empty()) {
        std::cout << "lrp (" << job.request.relevance.composite << "): " << result.relevance.layers.size()
                  << " layer(s) ruled";
        for (const auto& layer : result.relevance.layers)
            std::cout << "\n  " << layer;
        std::cout << '\n';
        for (const auto& op : result.relevance.uncovered)
            std::cerr << "torchscope-cli: lrp: no rule for " << op << '\n';
    }
    for (const auto& warning : result.warnings)
        std::cerr << "torchscope-cli: warning: " << warning << '\n';
    if (result.cancelled)
        std::cerr << "torchscope-cli: interrupted after " << result.targets.size() << " of " << job.images.size(0)
                  << " images; the file holds those\n";
    std::cout << "wrote " << options.out << '\n';
    return 0;
}

// torchscope-cli attribute.
Command attributeCommand()
{
    return {"attribute",
        [](CLI::App& app, CliOptions& o) {
            CLI::App* attribute = app.add_subcommand("attribute", "attributions: which input values drove the score");
            addModelOptions(attribute, o,
                "Input methods (as Captum computes them): saliency (|d score / d input|), input_x_gradient,\n"
                "integrated_gradients (Sundararajan et al. 2017: from --baseline, the path integral by --rule with\n"
                "--steps points), smoothgrad, smoothgrad_sq, vargrad (the gradient over --samples noisy copies,\n"
                "sigma = --noise times the input's range, image i seeded --seed + i), occlusion (the mean score drop\n"
                "when a --window square, moved by --stride, is filled with 0). Layer methods (as pytorch-grad-cam\n"
                "computes them) at --layer: grad_cam, grad_cam_pp, hires_cam, xgrad_cam, layer_cam, score_cam,\n"
                "eigen_cam (no gradient: any output). lrp: Layer-wise Relevance Propagation on the model's graph,\n"
                "Zennit's rules by --composite with --rule PATH=RULE overrides (batch norm merged into the layer\n"
                "before it, residual sums split by share), seeded with the logit: \"lrp:relevance_sum\" and\n"
                "\"lrp:logit\" say per image how much is conserved. Many inputs are evaluated in batches under\n"
                "--memory-mb.\n"
                "Each image is explained for its own predicted class unless --target names one. Writes\n"
                "FILE.pt/.npz/.safetensors: for each method M a float32 [N, C, H, W] tensor \"M\" (the model's\n"
                "input size; a layer method [N, 1, h, w] at the layer and \"M:input\" upsampled to the input),\n"
                "\"targets\" (int64 [N]), \"integrated_gradients:delta\" ([N]: the attributions' sum minus the\n"
                "score's change from the baseline) and, unless black, \"integrated_gradients:baseline\".\n");
            addAttributionOptions(attribute, o);
            attribute->add_option("--out,-o", o.out, "FILE.pt, FILE.npz or FILE.safetensors")->required();
            return attribute;
        },
        runAttribute};
}

} // namespace torchscope::cli
