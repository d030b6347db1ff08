#include "attribution/parameter_randomisation.h"

#include "common/error.h"
#include "model/model.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <torch/script.h>

#include <cmath>

namespace torchscope {
namespace {

bool startsWith(const std::string& text, const std::string& head)
{
    return text.compare(0, head.size(), head) == 0;
}

bool isLinearOrConvolution(const std::string& type)
{
    return type == "torch.nn.modules.linear.Linear" || type == "torch.nn.modules.linear.NonDynamicallyQuantizableLinear"
        || startsWith(type, "torch.nn.modules.conv.Conv");
}

bool isNormalisation(const std::string& type)
{
    return startsWith(type, "torch.nn.modules.batchnorm.BatchNorm")
        || type == "torch.nn.modules.normalization.LayerNorm" || type == "torch.nn.modules.normalization.GroupNorm";
}

torch::jit::Module submodule(Model& model, const std::string& path)
{
    for (const auto& named : model.module().named_modules())
        if (named.name == path)
            return named.value;
    throw Error("the model has no module '" + path + "'");
}

// What torch.nn.init does to a tensor with the default generator, drawn on the CPU from `generator`.
void uniform(at::Tensor tensor, double bound, at::Generator& generator)
{
    at::Tensor drawn = at::empty(tensor.sizes(), tensor.options().device(at::kCPU));
    drawn.uniform_(-bound, bound, generator);
    tensor.copy_(drawn);
}

int64_t fanIn(const at::Tensor& weight)
{
    int64_t receptive = 1;
    for (int64_t d = 2; d < weight.dim(); ++d)
        receptive *= weight.size(d);
    return weight.dim() < 2 ? 0 : weight.size(1) * receptive;
}

} // namespace

bool hasKnownInitialiser(const std::string& qualifiedType)
{
    return isLinearOrConvolution(qualifiedType) || isNormalisation(qualifiedType);
}

std::vector<std::string> randomisableLayers(const Model& model, std::vector<std::string>* skipped)
{
    std::vector<std::string> layers;
    for (const auto& m : model.modules()) {
        if (m.ownParameters == 0)
            continue;
        if (hasKnownInitialiser(m.qualifiedType))
            layers.push_back(m.path);
        else if (skipped)
            skipped->push_back((m.path.empty() ? std::string("(the model)") : m.path) + " (" + m.shortType + ")");
    }
    return layers;
}

LayerState saveLayerState(Model& model, const std::string& layer)
{
    const torch::jit::Module module = submodule(model, layer);
    LayerState state;
    for (const auto& p : module.named_parameters(/*recurse=*/false))
        state.emplace_back(p.name, p.value.detach().clone());
    for (const auto& b : module.named_buffers(/*recurse=*/false))
        state.emplace_back(b.name, b.value.detach().clone());
    return state;
}

void restoreLayerState(Model& model, const std::string& layer, const LayerState& state)
{
    const at::NoGradGuard noGrad;
    const torch::jit::Module module = submodule(model, layer);
    for (const auto& [name, value] : state)
        module.attr(name).toTensor().copy_(value);
}

void reinitialiseLayer(Model& model, const std::string& layer, uint64_t seed)
{
    const ModuleInfo* info = model.find(layer);
    if (!info)
        throw Error("the model has no module '" + layer + "'");
    const std::string& type = info->qualifiedType;
    if (!hasKnownInitialiser(type))
        throw Error("TorchScope does not know how PyTorch initialises " + info->shortType + " ('" + layer + "')");
    const at::NoGradGuard noGrad;
    const torch::jit::Module module = submodule(model, layer);
    const auto tensor = [&](const char* name) {
        return module.hasattr(name) && module.attr(name).isTensor() ? module.attr(name).toTensor() : at::Tensor();
    };
    at::Generator generator = at::make_generator<at::CPUGeneratorImpl>(seed + 1);
    if (isLinearOrConvolution(type)) {
        const at::Tensor weight = tensor("weight"), bias = tensor("bias");
        const int64_t fan = fanIn(weight);
        if (weight.defined() && weight.numel() > 0) {
            // kaiming_uniform_(a = sqrt(5)): gain sqrt(2 / (1 + a²)), bound sqrt(3) · gain / sqrt(fan_in)
            const double a = std::sqrt(5.0);
            const double gain = std::sqrt(2.0 / (1.0 + std::pow(a, 2)));
            uniform(weight, std::sqrt(3.0) * (gain / std::sqrt(static_cast<double>(fan))), generator);
        }
        if (bias.defined())
            uniform(bias, fan > 0 ? 1.0 / std::sqrt(static_cast<double>(fan)) : 0.0, generator);
        return;
    }
    if (const at::Tensor mean = tensor("running_mean"); mean.defined())
        mean.zero_();
    if (const at::Tensor variance = tensor("running_var"); variance.defined())
        variance.fill_(1);
    if (const at::Tensor tracked = tensor("num_batches_tracked"); tracked.defined())
        tracked.zero_();
    if (const at::Tensor weight = tensor("weight"); weight.defined())
        weight.fill_(1);
    if (const at::Tensor bias = tensor("bias"); bias.defined())
        bias.zero_();
}

} // namespace torchscope
