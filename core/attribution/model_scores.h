#pragma once

// How the attribution rooms ask a model for scores: the target's score of each input of a batch,
// its gradient with respect to the input or a layer, and a layer's activations. One place, so
// that every method, metric and sanity check reads the model's output the same way.

#include <ATen/core/Tensor.h>

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace torchscope {

class Engine;
struct ProbeExtension;

// Where the scores are and which part of them is explained.
struct ScoreSource {
    std::string scores; // the output element with the scores ("" : found by itself)
    std::optional<std::array<int64_t, 4>> region; // segmentation: x0, y0, x1, y1
    std::vector<std::string> labels;
    // A probe on one of the model's layers (probe/linear_probe.h): its scores instead of the model's.
    // [N, K]: class k's logit; [N, 1] (two classes): the second's logit, and the first's its negation.
    std::shared_ptr<const ProbeExtension> probe;
};

struct InputGradients {
    at::Tensor input; // d score / d input, [B, C, H, W] float32
    int64_t target = 0; // the class explained (a negative request: the first input's prediction)
    std::string description;
    double score = 0.0; // the target's class score summed over the batch (NaN for other outputs)
};
InputGradients inputGradients(Engine& engine, const at::Tensor& batch, const ScoreSource& source, int64_t target);

// The target class's score of each input of a batch [B] float32 on the CPU, without gradients;
// `probabilities`: after a softmax over the classes. Throws torchscope::Error when the model's
// output has no class scores [N, classes] (`purpose` names what needed them).
at::Tensor classScores(Engine& engine, const at::Tensor& batch, const ScoreSource& source, int64_t target,
    const std::string& purpose, bool probabilities = false);

// Each input's predicted class [B] int64; -1 for each when the output has no class scores.
at::Tensor predictedClasses(Engine& engine, const at::Tensor& batch, const ScoreSource& source);
// "class 3 (cat)" as the engine names a target, the label when the source has one.
std::string describeClass(int64_t target, const ScoreSource& source);

// A layer's value as [N, C, h, w] maps: convolutional outputs as they are, vision transformer
// tokens [N, T, D] as their patch grid on an image of height x width (tokensAsMaps; 0 x 0: square).
// Throws torchscope::Error for other shapes.
at::Tensor asLayerMaps(const at::Tensor& value, const std::string& layer, int64_t height = 0, int64_t width = 0);

struct LayerGradients {
    at::Tensor activations; // [N, C, h, w] float32
    at::Tensor gradients; // d score / d activations, the same shape
    int64_t target = -1; // the class explained
    std::string description;
};
LayerGradients layerGradients(
    Engine& engine, const at::Tensor& batch, const ScoreSource& source, const std::string& layer, int64_t target);
at::Tensor layerActivations(Engine& engine, const at::Tensor& batch, const std::string& layer);

} // namespace torchscope
