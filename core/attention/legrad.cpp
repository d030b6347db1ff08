#include "attention/legrad.h"

#include "common/error.h"
#include "graph/engine.h"
#include "graph/model_output.h"
#include "model/model.h"
#include "model/torch_names.h"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/script.h>

#include <functional>
#include <optional>

namespace torchscope {
namespace {

std::optional<torch::jit::Module> submodule(const torch::jit::Module& root, const std::string& path)
{
    for (const auto& named : root.named_modules())
        if (named.name == path)
            return named.value;
    return std::nullopt;
}

at::Tensor call(torch::jit::Module module, const at::Tensor& input)
{
    return module.forward({input}).toTensor();
}

using ScoreProjection = std::function<at::Tensor(const at::Tensor& tokens)>;

// The model's final norm and classifier applied to a block's tokens [N, T, D]: its class logits.
ScoreProjection scoreProjection(const torch::jit::Module& root)
{
    const auto ln = submodule(root, "encoder.ln"), heads = submodule(root, "heads");
    if (ln && heads) // torchvision's VisionTransformer, as torchcam reads it
        return [ln = *ln, heads = *heads](const at::Tensor& tokens) { return call(heads, call(ln, tokens.mean(1))); };
    const auto norm = submodule(root, "norm"), head = submodule(root, "head"), fcNorm = submodule(root, "fc_norm");
    if (norm && head) { // timm's VisionTransformer: its forward_head's pooling
        const std::string pool = root.hasattr("global_pool") && root.attr("global_pool").isString()
            ? root.attr("global_pool").toStringRef()
            : "token";
        const int64_t prefix = root.hasattr("num_prefix_tokens") && root.attr("num_prefix_tokens").isInt()
            ? root.attr("num_prefix_tokens").toInt()
            : 1;
        return [=](const at::Tensor& tokens) {
            const at::Tensor normed = call(*norm, tokens);
            at::Tensor pooled = pool == "token" ? normed.select(1, 0)
                : pool == "max"                 ? std::get<0>(normed.narrow(1, prefix, normed.size(1) - prefix).max(1))
                                                : normed.narrow(1, prefix, normed.size(1) - prefix).mean(1);
            return call(*head, fcNorm ? call(*fcNorm, pooled) : pooled);
        };
    }
    throw Error("LeGrad reads each block's class score through the model's final norm and classifier, and finds "
                "neither torchvision's (encoder.ln, heads) nor timm's (norm, head) in this model");
}

} // namespace

LeGradResult leGrad(Engine& engine, const at::Tensor& batch, const std::vector<std::string>& layers,
    const TokenLayout& layout, int64_t target, const std::string& scores)
{
    if (!layout.spatial)
        throw Error("LeGrad maps attention to the image's patches, but these keys are not the patch grid "
                    "(windowed attention such as Swin's)");
    const ScoreProjection project = scoreProjection(engine.model().module());
    Request request;
    request.attentionInPath = true;
    for (const auto& layer : layers) {
        request.grabs.push_back(GrabSpec{layer, CaptureKind::Attention, 0});
        request.grabOutput(parentPath(layer));
    }
    const at::Tensor input = batch.detach().clone().requires_grad_(true);
    const RunResult run = engine.runWithGraph(request, forwardInputsFromBatch(engine.model(), input));

    LeGradResult result;
    const ScoreOutput output = findScores(run.values.at(0).second, scores);
    if (output.kind != OutputKind::Classes)
        throw Error("LeGrad explains a class, but the model's output " + output.described + " has no class scores");
    const at::Tensor classes
        = target >= 0 ? at::full({batch.size(0)}, target, at::kLong) : output.scores.detach().argmax(1).to(at::kCPU);
    result.targets.assign(classes.data_ptr<int64_t>(), classes.data_ptr<int64_t>() + classes.numel());

    std::vector<at::Tensor> maps;
    for (size_t l = 0; l < layers.size(); ++l) {
        const at::Tensor attention = run.tensor(layers[l] + ":attention");
        const at::Tensor logits = project(run.tensor(parentPath(layers[l])));
        if (target >= logits.size(1))
            throw Error("class " + std::to_string(target) + " is out of range: the model has "
                + std::to_string(logits.size(1)) + " classes");
        const at::Tensor score = logits.gather(1, classes.to(logits.device()).view({-1, 1})).sum();
        const auto gradient = torch::autograd::grad({score}, {attention}, {}, true, false, true).at(0);
        if (!gradient.defined())
            throw Error("the class score read from '" + parentPath(layers[l]) + "' does not depend on '" + layers[l]
                + "''s attention");
        const at::Tensor relevance
            = gradient.relu().mean({1, 2}).narrow(1, layout.prefix, layout.tokens - layout.prefix);
        maps.push_back(relevance.reshape({batch.size(0), layout.gridHeight, layout.gridWidth}).to(at::kFloat));
    }
    at::Tensor cam = at::stack(maps).mean(0).detach();
    cam = cam - cam.amin({1, 2}, true);
    cam = cam / (cam.amax({1, 2}, true) + 1e-8);
    result.maps = cam.unsqueeze(1).to(at::kCPU);
    return result;
}

} // namespace torchscope
