#pragma once

#include "visualize/visualization.h"

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <memory>
#include <string>
#include <vector>

namespace torch::jit {
struct Module;
}

namespace torchscope {

// A layer's output as [N, C, H, W] units: maps as they are, features [N, F] as [N, F, 1, 1],
// vision transformer tokens as maps of their patches. Throws torchscope::Error for other shapes.
at::Tensor unitMaps(const at::Tensor& activation, const std::string& layer);

// What each image maximises, one objective per image; probes are loaded once, here.
class UnitObjectives {
public:
    // Throws torchscope::Error for a probe file that is not one, or a probe of another layer.
    UnitObjectives(const std::vector<Objective>& objectives, const std::string& layer, c10::Device device);
    ~UnitObjectives();

    // [N]: image i's objective (negated when negative), differentiable in `activation`. Throws
    // torchscope::Error when a channel, position or direction does not fit the layer's shape.
    at::Tensor values(const at::Tensor& activation) const;

private:
    std::vector<Objective> objectives_;
    std::string layer_;
    std::vector<std::shared_ptr<torch::jit::Module>> probes_; // per objective; null unless a probe
};

// Lucid's diversity term over the images' Gram matrices G_i (channels × channels, each scaled to
// unit norm): −Σ_{i≠j} ⟨G_i, G_j⟩ / N. Larger when the images differ in style.
at::Tensor diversityTerm(const at::Tensor& maps);

// Rows of images that share an objective, for groups of two or more: the diversity term pushes
// apart images of one unit, never images of different units (they differ anyway).
std::vector<std::vector<int64_t>> diverseGroups(const std::vector<Objective>& objectives);

} // namespace torchscope
