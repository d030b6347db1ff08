#include "graph/setup_advice.h"

#include "common/strings.h"
#include "graph/engine.h"
#include "model/model.h"

#include <ATen/ATen.h>
#include <torch/script.h>

#include <chrono>
#include <regex>

namespace torchscope {
namespace {

bool isConvolution(const ModuleInfo& m)
{
    return m.shortType == "Conv2d" || m.shortType == "Conv1d" || m.shortType == "Conv3d";
}

const torch::jit::Module* findModule(
    const std::vector<torch::jit::Module>& modules, const std::vector<std::string>& paths, const std::string& path)
{
    for (size_t i = 0; i < paths.size(); ++i)
        if (paths[i] == path)
            return &modules[i];
    return nullptr;
}

at::Tensor weightOf(const torch::jit::Module& module)
{
    if (!module.hasattr("weight"))
        return {};
    const c10::IValue weight = module.attr("weight");
    return weight.isTensor() ? weight.toTensor() : at::Tensor();
}

} // namespace

SetupAdvice adviseSetup(const Model& model, const ModelSetup& current, double budgetSeconds)
{
    SetupAdvice advice;
    std::vector<torch::jit::Module> modules;
    std::vector<std::string> paths;
    for (const auto& named : model.module().named_modules()) {
        modules.push_back(named.value);
        paths.push_back(named.name);
    }
    for (const auto& m : model.modules()) {
        if (!m.called || !isConvolution(m))
            continue;
        const auto* module = findModule(modules, paths, m.path);
        const at::Tensor weight = module ? weightOf(*module) : at::Tensor();
        if (!weight.defined() || weight.dim() < 3)
            continue;
        const int64_t groups = module->hasattr("groups") ? module->attr("groups").toInt() : 1;
        advice.inputChannels = weight.size(1) * groups;
        advice.firstLayer = m.path;
        advice.notes.push_back("the first convolution, " + m.path + " (" + m.shortType + "), takes "
            + std::to_string(advice.inputChannels) + " channel(s)"
            + (advice.inputChannels == 1        ? ": grey images"
                    : advice.inputChannels == 3 ? ": colour images"
                                                : ""));
        break;
    }
    for (auto it = model.modules().rbegin(); it != model.modules().rend(); ++it) {
        const ModuleInfo& m = *it;
        const bool linear = m.shortType == "Linear";
        if (!m.called || (!linear && !isConvolution(m)))
            continue;
        const auto* module = findModule(modules, paths, m.path);
        const at::Tensor weight = module ? weightOf(*module) : at::Tensor();
        if (!weight.defined() || (!linear && weight.numel() != weight.size(0) * weight.size(1)))
            continue; // a convolution counts only as a 1x1 classifier
        advice.outputs = weight.size(0);
        advice.lastLayer = m.path;
        std::string note = "the last layer, " + m.path + " (" + m.shortType + "), gives "
            + std::to_string(advice.outputs) + " outputs";
        if (!current.labels.empty() && static_cast<int64_t>(current.labels.size()) != advice.outputs)
            note += ", but the setup has " + std::to_string(current.labels.size()) + " labels";
        advice.notes.push_back(note);
        break;
    }
    if (!model.frozenNote().empty())
        advice.notes.push_back("the model is frozen (torch.jit.freeze): its layers cannot be read");

    const int channels = current.preprocessing.grayscale ? 1 : 3;
    const int64_t wanted
        = advice.inputChannels > 0 && advice.inputChannels != channels ? advice.inputChannels : channels;
    if (wanted != channels)
        advice.notes.push_back("the input setup gives " + std::to_string(channels) + " channel(s) ("
            + (channels == 1 ? "grey" : "colour") + "), but the model takes " + std::to_string(wanted) + ": choose "
            + (wanted == 1 ? "grey" : "colour"));
    std::vector<int> candidates;
    if (const int own = current.preprocessing.outputHeight(); own > 0 && own == current.preprocessing.outputWidth())
        candidates.push_back(own);
    for (int size : {224, 112, 299, 256, 128, 96, 64, 32, 28, 384})
        if (std::find(candidates.begin(), candidates.end(), size) == candidates.end())
            candidates.push_back(size);
    const auto start = std::chrono::steady_clock::now();
    const torch::NoGradGuard noGrad;
    // Runs the model on zeros of that shape; on failure, what it said.
    auto runs = [&](int64_t c, int64_t h, int64_t w, std::string& failure) {
        try {
            std::vector<c10::IValue> inputs
                = forwardInputsFromBatch(model, at::zeros({1, c, h, w}).to(c10::Device(model.device())));
            model.module().forward(inputs);
            return true;
        } catch (const std::exception& e) {
            failure = torchErrorMessage(e.what());
            return false;
        }
    };
    if (const int h = current.preprocessing.outputHeight(), w = current.preprocessing.outputWidth(); h > 0 && w > 0) {
        std::string failure;
        if (!runs(channels, h, w, failure))
            advice.notes.push_back("on the input setup (" + std::to_string(channels) + " × " + std::to_string(h) + " × "
                + std::to_string(w) + ") the model fails: " + failure);
    }
    std::vector<std::string> untried;
    for (int size : candidates) {
        if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > budgetSeconds) {
            advice.triedAll = false;
            untried.push_back(std::to_string(size));
            continue;
        }
        std::string failure;
        if (runs(wanted, size, size, failure)) {
            advice.sizes.push_back(size);
        } else {
            advice.failedSizes.push_back(size);
            if (advice.failure.empty())
                advice.failure = failure;
        }
    }
    std::vector<int> sorted = advice.sizes;
    std::sort(sorted.begin(), sorted.end());
    std::vector<std::string> ran;
    for (int size : sorted)
        ran.push_back(std::to_string(size) + "×" + std::to_string(size));
    if (advice.sizes.empty())
        advice.notes.push_back("none of the sizes tried ran on " + std::to_string(wanted) + "-channel zeros"
            + (advice.failure.empty() ? "" : " (" + advice.failure + ")"));
    else if (advice.anySize())
        advice.notes.push_back("every size tried ran (" + join(ran, ", ") + "): the model adapts to the input size");
    else
        advice.notes.push_back("input sizes that ran: " + join(ran, ", "));
    if (!untried.empty())
        advice.notes.push_back("not tried, the model being slow (over " + std::to_string(int(budgetSeconds))
            + " s): " + join(untried, ", "));
    return advice;
}

std::string inputMismatchAdvice(
    const std::string& message, const std::vector<int64_t>& inputShape, const ModelSetup& setup)
{
    static const std::regex shapeError(
        R"(shapes cannot be multiplied|size mismatch|to have \d+ channels, but got|is invalid for input of size|)"
        R"(The size of tensor a|Sizes of tensors must match|Calculated padded input size|Kernel size can't be greater|)"
        R"(Output size is too small|input image is smaller|Expected \d+D|expected input\[|non-singleton dimension)");
    if (!std::regex_search(message, shapeError))
        return {};
    return "the model got input " + shapeToString(inputShape) + " from the input setup ("
        + setup.preprocessing.describe()
        + "), and this error usually means that the input size or number of channels does not fit the model";
}

SetupAdvice SetupAdviceAnalysis::run(AnalysisContext& context, const Request& current)
{
    try {
        return adviseSetup(*context.models.model(context.model), current);
    } catch (const std::exception& e) {
        SetupAdvice unknown;
        unknown.notes.push_back(std::string("the model could not be examined: ") + e.what());
        return unknown;
    }
}

} // namespace torchscope
