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

// A module's forward on one tensor. A module of a .pt2 whose call left no operation (timm's
// fc_norm as nn.Identity, an eval-mode Dropout) has no forward: its output is its input. One that
// holds weights and has no forward is not such a pass-through, and is refused by name.
at::Tensor call(torch::jit::Module module, const std::string& path, const at::Tensor& input)
{
    if (module.find_method("forward"))
        return module.forward({input}).toTensor();
    if (module.parameters().size() == 0)
        return input;
    throw Error("LeGrad reads the class score through '" + path
        + "', which holds weights but has no forward in this "
          "model: the program never calls it");
}

// The grab of the tokens timm's final norm reads: "norm:in0" where the norm runs, else the output
// of "blocks" (a Sequential); "" for torchvision's layout (checked by torchcam's definition instead).
std::string finalTokensKey(const Model& model)
{
    if (model.find("heads"))
        return {};
    if (const ModuleInfo* norm = model.find("norm"); norm && norm->called)
        return "norm:in0";
    if (const ModuleInfo* blocks = model.find("blocks"); blocks && blocks->called)
        return "blocks";
    return {};
}

using ScoreProjection = std::function<at::Tensor(const at::Tensor& tokens)>;

// timm's forward_head: pool (the class token, or the patches' mean, max or both), fc_norm, head.
at::Tensor timmPool(const at::Tensor& normed, const std::string& pool, int64_t prefix)
{
    if (pool == "token")
        return normed.select(1, 0);
    const at::Tensor patches = normed.narrow(1, prefix, normed.size(1) - prefix);
    if (pool == "max")
        return std::get<0>(patches.max(1));
    if (pool == "avgmax")
        return 0.5 * (std::get<0>(patches.max(1)) + patches.mean(1));
    return patches.mean(1);
}

// The model's final norm and classifier applied to a block's tokens [N, T, D]: its class logits.
// `finalTokens` are the tokens the model's own norm reads and `scores` its output: timm's pooling
// is the model's global_pool when it is stored (a scripted model), else the one of token, avg, max
// and avgmax that reproduces the model's output from `finalTokens` (a .pt2 keeps no such
// attribute); a read-out that reproduces nothing is refused, never guessed.
ScoreProjection scoreProjection(
    const torch::jit::Module& root, const TokenLayout& layout, const at::Tensor& finalTokens, const at::Tensor& scores)
{
    const auto ln = submodule(root, "encoder.ln"), heads = submodule(root, "heads");
    if (ln && heads) // torchvision's VisionTransformer, as torchcam reads it
        return [ln = *ln, heads = *heads](
                   const at::Tensor& tokens) { return call(heads, "heads", call(ln, "encoder.ln", tokens.mean(1))); };
    const auto norm = submodule(root, "norm"), head = submodule(root, "head"), fcNorm = submodule(root, "fc_norm");
    if (!norm || !head)
        throw Error("LeGrad reads each block's class score through the model's final norm and classifier, and finds "
                    "neither torchvision's (encoder.ln, heads) nor timm's (norm, head) in this model");
    const int64_t prefix = root.hasattr("num_prefix_tokens") && root.attr("num_prefix_tokens").isInt()
        ? root.attr("num_prefix_tokens").toInt()
        : layout.prefix;
    std::vector<std::string> pools{"token", "avg", "max", "avgmax"};
    if (root.hasattr("global_pool") && root.attr("global_pool").isString())
        pools = {root.attr("global_pool").toStringRef()};
    const auto project
        = [norm = *norm, head = *head, fcNorm, prefix](const at::Tensor& tokens, const std::string& pool) {
              const at::Tensor pooled = timmPool(call(norm, "norm", tokens), pool, prefix);
              return call(head, "head", fcNorm ? call(*fcNorm, "fc_norm", pooled) : pooled);
          };
    if (!finalTokens.defined())
        throw Error("LeGrad checks timm's read-out on the tokens the final norm reads, and this model runs neither its "
                    "'norm' nor a 'blocks' module");
    const at::Tensor want = scores.detach().to(at::kDouble);
    for (const auto& pool : pools) {
        at::Tensor got;
        {
            const at::NoGradGuard noGrad;
            got = project(finalTokens.detach(), pool).to(at::kDouble);
        }
        if (got.sizes() == want.sizes()
            && (got - want).abs().max().item<double>() <= 1e-4 * (1.0 + want.abs().max().item<double>()))
            return [project, pool](const at::Tensor& tokens) { return project(tokens, pool); };
    }
    std::string tried;
    for (const auto& pool : pools)
        tried += (tried.empty() ? "" : ", ") + pool;
    throw Error("LeGrad reads each block's class score as timm's head(fc_norm(pool(norm(tokens)))), but no pooling ("
        + tried + ") gives the model's own output from the tokens its norm reads: this model's read-out is another");
}

} // namespace

LeGradResult leGrad(Engine& engine, const at::Tensor& batch, const std::vector<std::string>& layers,
    const TokenLayout& layout, int64_t target, const std::string& scores)
{
    if (!layout.spatial)
        throw Error("LeGrad maps attention to the image's patches, but these keys are not the patch grid "
                    "(windowed attention such as Swin's)");
    const torch::jit::Module& root = engine.model().module();
    Request request;
    request.attentionInPath = true;
    for (const auto& layer : layers) {
        request.grabs.push_back(GrabSpec{layer, CaptureKind::Attention, 0});
        request.grabOutput(parentPath(layer));
    }
    // timm's read-out is checked on the tokens its final norm reads: the norm's input, or where a
    // .pt2's norm left no operation (nn.Identity before fc_norm), the output of its blocks.
    const std::string finalTokens = finalTokensKey(engine.model());
    if (!finalTokens.empty())
        request.grabs.push_back(GrabSpec::parse(finalTokens));
    const at::Tensor input = batch.detach().clone().requires_grad_(true);
    const RunResult run = engine.runWithGraph(request, forwardInputsFromBatch(engine.model(), input));

    LeGradResult result;
    const ScoreOutput output = findScores(run.values.at(0).second, scores);
    if (output.kind != OutputKind::Classes)
        throw Error("LeGrad explains a class, but the model's output " + output.described + " has no class scores");
    const ScoreProjection project
        = scoreProjection(root, layout, finalTokens.empty() ? at::Tensor() : run.tensor(finalTokens), output.scores);
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
