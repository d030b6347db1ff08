#include "visualize/activation_maximization.h"

#include "common/error.h"
#include "graph/engine.h"
#include "model/model.h"
#include "visualize/image_parameterization.h"
#include "visualize/robustness.h"
#include "visualize/seeded_random.h"
#include "visualize/unit_objective.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/optim/adam.h>

#include <cmath>
#include <optional>
#include <utility>

namespace torchscope {
namespace {

std::pair<int64_t, int64_t> imageSize(const VisualizeConfig& config, const Preprocessing& preprocessing)
{
    if (config.size > 0)
        return {config.size, config.size};
    const int height = preprocessing.outputHeight(), width = preprocessing.outputWidth();
    if (height <= 0 || width <= 0)
        throw Error("the model's setup does not fix its input size (no crop or exact resize): give the image size");
    return {height, width};
}

// Pixels in [0, 1] as the model takes them: scaled, channels reordered, normalised.
at::Tensor modelValues(const at::Tensor& pixels, const Preprocessing& p)
{
    at::Tensor x = p.scale != 1.0 ? pixels * p.scale : pixels;
    if (p.bgr && x.size(1) == 3)
        x = x.flip({1});
    if (!p.mean.empty()) {
        const auto channels = x.size(1);
        if (static_cast<int64_t>(p.mean.size()) != channels || static_cast<int64_t>(p.std.size()) != channels)
            throw Error("the preprocessing has " + std::to_string(p.mean.size()) + " mean values for an image with "
                + std::to_string(channels) + " channel(s)");
        const at::Tensor mean = at::tensor(p.mean, at::kDouble).to(x.device(), at::kFloat).view({1, channels, 1, 1});
        const at::Tensor std = at::tensor(p.std, at::kDouble).to(x.device(), at::kFloat).view({1, channels, 1, 1});
        x = (x - mean) / std;
    }
    return x;
}

// The layer's output for a batch, with its graph: the run cut at the layer when the graph allows
// it (nothing after it is computed), else the whole forward.
class LayerRun {
public:
    LayerRun(Engine& engine, const std::string& layer)
        : engine_(engine)
        , layer_(layer)
    {
        request_.grabOutput(layer);
        request_.truncateAt = layer;
        try {
            engine_.prepare(request_);
        } catch (const Error&) {
            request_.truncateAt.reset(); // a cut inside a loop: run the whole forward
            engine_.prepare(request_);
        }
    }

    at::Tensor output(const at::Tensor& input)
    {
        RunResult result = engine_.runWithGraph(request_, forwardInputsFromBatch(engine_.model(), input));
        if (!result.find(layer_) && request_.truncateAt) {
            request_.truncateAt.reset();
            result = engine_.runWithGraph(request_, forwardInputsFromBatch(engine_.model(), input));
        }
        const c10::IValue* value = result.find(layer_);
        if (!value)
            throw Error("'" + layer_ + "' was not reached for the image: it does not run in this model's forward");
        if (!value->isTensor())
            throw Error(
                "'" + layer_ + "' returns " + value->tagKind() + ", not a tensor: pick a layer with a tensor output");
        return value->toTensor();
    }

private:
    Engine& engine_;
    std::string layer_;
    Request request_;
};

// A unit that stays at one value never got a gradient (typically a channel after a ReLU that the
// starting image leaves at 0); one that is not finite comes from the model.
void warnAboutStuckObjectives(VisualizeResult& out, const std::string& layer)
{
    if (out.trajectory.size() < 2)
        return;
    for (size_t i = 0; i < out.descriptions.size(); ++i) {
        const double first = out.trajectory.front()[i];
        bool moved = false;
        for (const auto& step : out.trajectory)
            moved = moved || step[i] != first;
        if (!std::isfinite(out.trajectory.back()[i]))
            out.warnings.push_back(
                out.descriptions[i] + ": the objective is not finite (the model gives NaN or infinity)");
        else if (!moved)
            out.warnings.push_back(out.descriptions[i] + " stayed at " + std::to_string(first) + " for "
                + std::to_string(out.trajectory.size()) + " steps: no gradient reaches it (a unit after a ReLU "
                + "that the starting image leaves at 0); visualise the layer before '" + layer
                + "''s ReLU, or another seed");
    }
}

} // namespace

VisualizeResult visualize(
    Engine& engine, const Preprocessing& preprocessing, const VisualizeConfig& config, const ProgressCallback& progress)
{
    config.check();
    const auto [height, width] = imageSize(config, preprocessing);
    const int64_t channels = preprocessing.grayscale ? 1 : 3;
    const auto count = static_cast<int64_t>(config.objectives.size());
    const c10::Device device(engine.model().device());
    const torch::AutoGradMode gradients(true);

    VisualizeResult out;
    for (const auto& o : config.objectives)
        out.descriptions.push_back(o.describe());
    const auto groups = diverseGroups(config.objectives);
    if (config.diversity > 0.0 && groups.empty())
        out.warnings.push_back("the diversity term pushes apart images of one objective; no objective here has two "
                               "or more images (--images N), so it does nothing");

    try {
        LayerRun layer(engine, config.layer);
        const UnitObjectives objectives(config.objectives, config.layer, device);
        SeededRandom random(config.seed);
        ParameterizedImage image(
            config.parameterization, count, channels, height, width, config.decorrelate, random, device);
        torch::optim::Adam adam({image.parameters()}, torch::optim::AdamOptions(config.learningRate));
        for (int step = 0; step < config.steps; ++step) {
            const at::Tensor pixels = robustlyTransformed(image.pixels(), config.transforms, random);
            const at::Tensor activation = layer.output(modelValues(pixels, preprocessing));
            const at::Tensor values = objectives.values(activation);
            at::Tensor total = values.sum();
            if (config.diversity > 0.0)
                for (const auto& group : groups) {
                    const at::Tensor rows = at::tensor(group, at::kLong).to(activation.device());
                    total = total
                        + config.diversity * diversityTerm(unitMaps(activation, config.layer).index_select(0, rows));
                }
            // Gradients for the image only: backward() would also leave them on the model's weights.
            image.parameters().mutable_grad() = torch::autograd::grad({-total}, {image.parameters()}).at(0);
            adam.step();

            const at::Tensor cpu = values.detach().to(at::kCPU, at::kDouble).contiguous();
            out.trajectory.emplace_back(cpu.data_ptr<double>(), cpu.data_ptr<double>() + count);
            out.steps = step + 1;
            if (progress && !progress(Progress{out.steps, config.steps, "steps", out.trajectory.back()})) {
                out.cancelled = true;
                break;
            }
        }
        warnAboutStuckObjectives(out, config.layer);
        const torch::NoGradGuard noGradients;
        out.images = image.pixels().detach().to(at::kCPU).contiguous();
        out.objectives = objectivesOf(engine, preprocessing, config, out.images);
    } catch (const c10::Error& e) {
        throw Error("visualising '" + config.layer + "' failed: " + torchErrorMessage(e.what_without_backtrace()));
    }
    return out;
}

std::vector<double> objectivesOf(
    Engine& engine, const Preprocessing& preprocessing, const VisualizeConfig& config, const at::Tensor& images)
{
    if (images.dim() != 4 || images.size(0) != static_cast<int64_t>(config.objectives.size()))
        throw Error("objectives need one image [N, C, H, W] per objective");
    try {
        const torch::NoGradGuard noGradients;
        const c10::Device device(engine.model().device());
        LayerRun layer(engine, config.layer);
        const UnitObjectives objectives(config.objectives, config.layer, device);
        const at::Tensor values
            = objectives.values(layer.output(modelValues(images.to(device, at::kFloat), preprocessing)))
                  .to(at::kCPU, at::kDouble)
                  .contiguous();
        return {values.data_ptr<double>(), values.data_ptr<double>() + values.numel()};
    } catch (const c10::Error& e) {
        throw Error("measuring '" + config.layer + "' failed: " + torchErrorMessage(e.what_without_backtrace()));
    }
}

} // namespace torchscope
