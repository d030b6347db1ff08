#include "visualize/unit_objective.h"

#include "attribution/grad_cam.h"
#include "common/error.h"
#include "common/strings.h"
#include "probe/linear_probe.h"

#include <ATen/ATen.h>
#include <torch/script.h>

namespace torchscope {

at::Tensor unitMaps(const at::Tensor& activation, const std::string& layer)
{
    if (activation.dim() == 4)
        return activation;
    if (activation.dim() == 2)
        return activation.view({activation.size(0), activation.size(1), 1, 1});
    if (activation.dim() == 3)
        if (at::Tensor maps = tokensAsMaps(activation); maps.defined())
            return maps;
    throw Error("a unit to visualise needs a layer with [batch, channels, height, width] maps, [batch, features] "
                "or vision transformer tokens; '"
        + layer + "' gives " + shapeToString(activation.sizes().vec()));
}

UnitObjectives::UnitObjectives(const std::vector<Objective>& objectives, const std::string& layer, c10::Device device)
    : objectives_(objectives)
    , layer_(layer)
{
    for (const auto& objective : objectives_) {
        std::shared_ptr<torch::jit::Module> probe;
        if (objective.kind == ObjectiveKind::Probe) {
            const ProbeExtension extension = loadProbeExtension(objective.probePath);
            if (!extension.layer.empty() && extension.layer != layer)
                throw Error("the probe '" + objective.probePath + "' reads layer '" + extension.layer + "', not '"
                    + layer + "': visualise it at its own layer");
            probe = extension.module;
            probe->eval();
            probe->to(device);
        }
        probes_.push_back(probe);
    }
}

UnitObjectives::~UnitObjectives() = default;

at::Tensor UnitObjectives::values(const at::Tensor& activation) const
{
    if (activation.size(0) != static_cast<int64_t>(objectives_.size()))
        throw Error("the layer gave " + std::to_string(activation.size(0)) + " results for "
            + std::to_string(objectives_.size()) + " images");
    const at::Tensor maps = unitMaps(activation, layer_);
    const int64_t channels = maps.size(1), height = maps.size(2), width = maps.size(3);
    std::vector<at::Tensor> values;
    for (size_t i = 0; i < objectives_.size(); ++i) {
        const Objective& o = objectives_[i];
        const auto row = static_cast<int64_t>(i);
        at::Tensor value;
        if (o.kind == ObjectiveKind::Channel || o.kind == ObjectiveKind::Neuron) {
            if (o.channel < 0 || o.channel >= channels)
                throw Error("channel " + std::to_string(o.channel) + " is not in '" + layer_ + "', which has "
                    + std::to_string(channels) + " channels (0 to " + std::to_string(channels - 1) + ")");
            const at::Tensor map = maps[row][o.channel];
            if (o.kind == ObjectiveKind::Channel) {
                value = map.mean();
            } else {
                const int64_t y = o.y < 0 ? height / 2 : o.y, x = o.x < 0 ? width / 2 : o.x;
                if (y >= height || x >= width)
                    throw Error("position (" + std::to_string(y) + ", " + std::to_string(x) + ") is outside '" + layer_
                        + "''s " + std::to_string(height) + "×" + std::to_string(width) + " maps");
                value = map[y][x];
            }
        } else if (o.kind == ObjectiveKind::Direction) {
            if (static_cast<int64_t>(o.direction.size()) != channels)
                throw Error("the direction has " + std::to_string(o.direction.size()) + " values, but '" + layer_
                    + "' has " + std::to_string(channels) + " channels");
            const at::Tensor direction
                = at::tensor(o.direction, at::kDouble).to(maps.device(), maps.scalar_type()).view({channels, 1, 1});
            value = (maps[row] * direction).sum(0).mean();
        } else {
            // The probe reads the raw layer output of this image (its own pooling inside).
            const at::Tensor scores = probes_[i]->forward({activation.narrow(0, row, 1)}).toTensor();
            const int64_t classes = scores.size(1);
            if (classes == 1) {
                if (o.channel != 0 && o.channel != 1)
                    throw Error("a two-class probe has classes 0 and 1, not " + std::to_string(o.channel));
                value = o.channel == 1 ? scores[0][0] : -scores[0][0];
            } else {
                if (o.channel < 0 || o.channel >= classes)
                    throw Error("the probe has " + std::to_string(classes) + " classes (0 to "
                        + std::to_string(classes - 1) + "), not " + std::to_string(o.channel));
                value = scores[0][o.channel];
            }
        }
        values.push_back(o.negative ? -value : value);
    }
    return at::stack(values).to(at::kFloat);
}

at::Tensor diversityTerm(const at::Tensor& maps)
{
    const int64_t n = maps.size(0);
    const at::Tensor flat = maps.reshape({n, maps.size(1), -1});
    at::Tensor grams = at::matmul(flat, flat.transpose(1, 2)).reshape({n, -1});
    grams = grams / grams.norm(2, {1}, /*keepdim=*/true).clamp_min(1e-12);
    const at::Tensor products = at::matmul(grams, grams.t());
    return -(products.sum() - products.diagonal().sum()) / static_cast<double>(n);
}

std::vector<std::vector<int64_t>> diverseGroups(const std::vector<Objective>& objectives)
{
    std::vector<std::vector<int64_t>> groups;
    std::vector<bool> grouped(objectives.size(), false);
    for (size_t i = 0; i < objectives.size(); ++i) {
        if (grouped[i])
            continue;
        std::vector<int64_t> group{static_cast<int64_t>(i)};
        for (size_t j = i + 1; j < objectives.size(); ++j)
            if (!grouped[j] && objectives[j] == objectives[i]) {
                grouped[j] = true;
                group.push_back(static_cast<int64_t>(j));
            }
        if (group.size() > 1)
            groups.push_back(std::move(group));
    }
    return groups;
}

} // namespace torchscope
