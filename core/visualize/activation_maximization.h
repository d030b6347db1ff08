#pragma once

// Activation maximisation through the instrumented graph: an image optimised (Adam) to excite a
// unit of any layer of a loaded TorchScript model.

#include "common/progress.h"
#include "preprocess/preprocessing.h"
#include "visualize/visualization.h"

#include <ATen/core/Tensor.h>

#include <functional>
#include <string>
#include <vector>

namespace torchscope {

class Engine;

struct VisualizeResult {
    at::Tensor images; // [N, C, H, W] in [0, 1] on the CPU (C: 1 for grayscale models, else 3)
    std::vector<std::vector<double>> trajectory; // per step done: each image's objective
    std::vector<double> objectives; // of the finished images, untransformed
    std::vector<std::string> descriptions; // each image's objective, described
    std::vector<std::string> warnings;
    int steps = 0; // done
    bool cancelled = false;
};

// Optimises one image per objective at config.layer, each step through the run's robustness
// transforms, then `preprocessing`'s values (scale, channel order, mean and std) so that the
// image is one the model could receive. Deterministic on the CPU for a seed: the random numbers
// come from std::mt19937(seed) in a fixed order (the starting values, then per step and image:
// jitter x, jitter y, scale, angle), as tests/fixtures/visualize_reference.py reproduces.
// Progress: steps done of config.steps, values = this step's objective per image (before the
// update). Cancel (progress returning false) returns the images so far. Throws torchscope::Error.
VisualizeResult visualize(Engine& engine, const Preprocessing& preprocessing, const VisualizeConfig& config,
    const ProgressCallback& progress = {});

// The unit's objective on ready images ([N, C, H, W] in [0, 1], no transforms), one per objective
// of `config` (as many images as objectives).
std::vector<double> objectivesOf(
    Engine& engine, const Preprocessing& preprocessing, const VisualizeConfig& config, const at::Tensor& images);

} // namespace torchscope
