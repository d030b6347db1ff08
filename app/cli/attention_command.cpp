#include "attention_command.h"

#include "attention/attention_maps.h"
#include "attribution_setup.h"
#include "cli_manifest.h"
#include "common/error.h"
#include "export/write_tensors.h"
#include "graph/engine.h"
#include "model/model.h"

#include <ATen/ATen.h>
#include <CLI/CLI.hpp>

#include <iostream>

namespace torchscope::cli {
namespace {

int64_t parseQuery(const std::string& text)
{
    if (text == "cls")
        return -1;
    try {
        size_t used = 0;
        const long long index = std::stoll(text, &used);
        if (used == text.size() && index >= 0)
            return index;
    } catch (const std::exception&) { }
    throw Error("--query takes cls or a token index (0, 1, ...), got '" + text + "'");
}

AttentionRequest attentionRequest(const CliOptions& options, const AttributionSetup& job)
{
    AttentionRequest request;
    request.layers = options.attentionLayers;
    if (!options.attentionMethods.empty())
        request.methods = options.attentionMethods;
    request.query = parseQuery(options.query);
    request.headFusion = options.headFusion;
    request.discard = options.discard;
    request.target = options.target.value_or(-1);
    request.scores = job.setup.scores;
    request.patchSize = options.patchSize;
    request.memoryBytes = job.request.memoryBytes;
    request.bytesPerSample = job.request.bytesPerSample;
    return request;
}

void printSummary(const AttentionResult& result, const std::vector<std::string>& names)
{
    const TokenLayout& layout = result.layout;
    std::cout << result.images << " image(s), " << result.layers.size() << " attention layer(s), " << layout.tokens
              << " tokens";
    if (layout.spatial)
        std::cout << " (" << layout.prefix << " before a " << layout.gridHeight << " x " << layout.gridWidth
                  << " grid of " << layout.patchSize << "-pixel patches)";
    std::cout << '\n';
    for (const auto& note : result.notes)
        std::cout << "note: " << note << '\n';
    for (size_t l = 0; l < result.layers.size(); ++l) {
        const at::Tensor entropy = result.entropy[l].mean(0);
        std::cout << "  " << result.layers[l] << ": entropy per head (nats) " << entropy.min().item<double>() << " to "
                  << entropy.max().item<double>();
        if (l < result.distance.size()) {
            const at::Tensor distance = result.distance[l].mean(0);
            std::cout << "; mean attention distance " << distance.min().item<double>() << " to "
                      << distance.max().item<double>() << " px";
        }
        std::cout << '\n';
    }
    for (size_t i = 0; i < result.targets.size(); ++i)
        std::cout << "  " << (i < names.size() ? names[i] : "sample " + std::to_string(i)) << ": LeGrad of class "
                  << result.targets[i] << '\n';
}

} // namespace

static int runAttention(const CliOptions& options)
{
    AttributionSetup job = prepareAttribution(options);
    Engine engine(job.model);
    const AttentionRequest request = attentionRequest(options, job);
    AttentionResult result;
    {
        const InterruptibleProgress progress("images");
        result = attentionMaps(engine, job.images, request, progress.callback());
    }
    if (result.images == 0)
        throw Error("interrupted before the first image was done; nothing written");

    const auto& names = job.inputs.sampleNames;
    const std::vector<std::string> done(
        names.begin(), names.begin() + static_cast<std::ptrdiff_t>(std::min<size_t>(names.size(), result.images)));
    ExportManifest manifest = cliManifest(options, *job.model, job.setup, done);
    NamedValues values;
    const auto add
        = [&](const std::string& key, const at::Tensor& value, const std::string& module, const std::string& what) {
              values.emplace_back(key, value.contiguous());
              manifest.keys.push_back({key, module, what});
          };
    for (size_t l = 0; l < result.layers.size(); ++l) {
        const std::string& layer = result.layers[l];
        if (l < result.probabilities.size())
            add(layer + ":attention", result.probabilities[l], layer,
                "attention probabilities [N, heads, queries, keys]");
        if (l < result.headMaps.size())
            add(layer + ":maps", result.headMaps[l], layer, "each head's attention of the query over the patches");
        add(layer + ":entropy", result.entropy[l], layer, "each head's attention entropy (nats)");
        if (l < result.distance.size())
            add(layer + ":distance", result.distance[l], layer, "each head's mean attention distance (pixels)");
    }
    if (result.rollout.defined())
        add("rollout", result.rollout, "", "attention rollout over the patches");
    if (result.legrad.defined()) {
        add("legrad", result.legrad, "", "LeGrad over the patches");
        add("targets", at::tensor(result.targets, at::kLong), "", "LeGrad's class");
    }
    manifest.settings.emplace_back("query", options.query);
    manifest.settings.emplace_back("head_fusion", request.headFusion);
    manifest.settings.emplace_back("discard", std::to_string(request.discard));
    manifest.settings.emplace_back("patch_size", std::to_string(result.layout.patchSize));
    manifest.settings.emplace_back("prefix_tokens", std::to_string(result.layout.prefix));
    writeTensors(options.out, values, &manifest);

    printSummary(result, names);
    if (result.cancelled)
        std::cerr << "torchscope-cli: interrupted after " << result.images << " of " << job.images.size(0)
                  << " images; the file holds those\n";
    std::cout << "wrote " << options.out << '\n';
    return 0;
}

// torchscope-cli attention.
Command attentionCommand()
{
    return {"attention",
        [](CLI::App& app, CliOptions& o) {
            CLI::App* attention = app.add_subcommand("attention", "where a vision transformer's heads look");
            addModelOptions(attention, o,
                "The attention probabilities of every module that computes attention (the module tree marks them;\n"
                "--layer picks some): scaled_dot_product_attention, nn.MultiheadAttention (need_weights=False and\n"
                "its fast path included) or an explicit softmax(q kᵀ·s + b), computed beside the model's own kernel.\n"
                "Methods: heads (\"PATH:attention\" [N, H, Q, K], \"PATH:maps\" [N, H, h, w]: the --query token's\n"
                "attention over the h x w patches, \"PATH:entropy\" and \"PATH:distance\" [N, H]: each head's entropy\n"
                "and mean attention distance in pixels), rollout (Abnar & Zuidema: heads fused by --head-fusion, the\n"
                "lowest --discard fraction dropped, 0.5 A + 0.5 I; \"rollout\" [N, 1, h, w]), legrad (Bousselham et\n"
                "al., as torchcam: \"legrad\" [N, 1, h, w] for --target or each image's predicted class, "
                "\"targets\").\n"
                "The class token is the first; register tokens after it and models without one are said so.\n");
            repeatable(attention, "--input", o.inputs, "images, folders of images, or one tensor file [N, C, H, W]")
                ->required();
            repeatable(
                attention, "--layer", o.attentionLayers, "attention module path, glob or type:NAME (repeatable)");
            repeatable(attention, "--method", o.attentionMethods, "heads (default), rollout or legrad (repeatable)")
                ->check(CLI::IsMember(attentionMethods()));
            attention->add_option("--query", o.query, "the query token of the maps: cls (the class token) or an index")
                ->capture_default_str();
            attention->add_option("--head-fusion", o.headFusion, "rollout: mean, max or min over the heads")
                ->check(CLI::IsMember(headFusions()))
                ->capture_default_str();
            attention
                ->add_option("--discard", o.discard, "rollout: the fraction of lowest attention set to 0 per layer")
                ->check(CLI::Range(0.0, 0.999))
                ->capture_default_str();
            attention
                ->add_option("--target", o.target, "legrad: the class explained; default: each image's predicted class")
                ->check(CLI::NonNegativeNumber);
            attention
                ->add_option("--patch-size", o.patchSize, "pixels per patch; default: the patch embedding's kernel")
                ->check(CLI::Range(int64_t{1}, int64_t{4096}));
            attention
                ->add_option("--memory-mb", o.memoryMb,
                    "the memory one batch of images may take (default: a quarter of the memory available)")
                ->check(CLI::Range(int64_t{1}, int64_t{1} << 30));
            attention->add_option("--out,-o", o.out, "FILE.pt, FILE.npz or FILE.safetensors")->required();
            return attention;
        },
        runAttention};
}

} // namespace torchscope::cli
