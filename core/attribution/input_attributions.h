#pragma once

// Input attributions: which input values drove a score. Saliency (|d score / d x| per value),
// Input × Gradient and Integrated Gradients (Sundararajan et al. 2017) with Captum's integration
// rules, so that `torchscope-cli attribute` equals Captum on the same model and input. Every
// method that evaluates many inputs does so in batches under a memory cap, never all steps at once.

#include "common/progress.h"
#include "graph/model_output.h"

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace torchscope {

class Engine;
class Model;

// Captum's approximation methods for the path integral: the points alpha in [0, 1] where the
// gradient is taken and the weight each gets.
enum class IntegrationRule { RiemannLeft, RiemannRight, RiemannMiddle, RiemannTrapezoid, GaussLegendre };
IntegrationRule parseIntegrationRule(const std::string& name); // "riemann_left" ... "gausslegendre"; throws
std::string integrationRuleName(IntegrationRule rule);

struct IntegrationPoints {
    std::vector<double> alphas;
    std::vector<double> weights;
};
// As captum.attr._utils.approximation_methods builds them (Gauss–Legendre: numpy's leggauss nodes
// and weights mapped from [-1, 1] to [0, 1]). Throws torchscope::Error for steps < 1 (< 2 for the
// trapezoid).
IntegrationPoints integrationPoints(IntegrationRule rule, int steps);

// The methods by their CLI names.
inline constexpr const char* Saliency = "saliency";
inline constexpr const char* InputXGradient = "input_x_gradient";
inline constexpr const char* IntegratedGradients = "integrated_gradients";
inline constexpr const char* Occlusion = "occlusion";
inline constexpr const char* ScoreCam = "score_cam"; // its masked inputs are batched under the cap
std::vector<std::string> inputAttributionMethods();

struct InputAttributionRequest {
    std::vector<std::string> methods;
    GradientTarget target; // index -1: each image's own predicted class
    std::string scores; // the output element with the scores ("" : found by itself)
    std::vector<std::string> labels;
    int steps = 50; // Integrated Gradients
    IntegrationRule rule = IntegrationRule::GaussLegendre;
    // Occlusion (Zeiler and Fergus 2014, as Captum's Occlusion): a window x window square over all
    // channels, moved by stride, filled with 0; each value gets the mean score drop of the windows
    // that covered it. Windows at the right and bottom edge may reach past it (Captum's count).
    int window = 8;
    int stride = 4;
    // The layer of the CAMs (attribution/layer_cams.h: grad_cam, grad_cam_pp, hires_cam, xgrad_cam,
    // layer_cam): [N, C, h, w] output, or vision transformer tokens on a square patch grid.
    std::string layer;
    int64_t memoryBytes = int64_t{1} << 30; // the cap one batch of evaluated inputs stays under
    int64_t bytesPerSample = 0; // what one evaluated input costs (evaluationBytesPerSample); 0: 64 × its size
};

// What one input costs to evaluate with its gradient: every module's output for one sample, twice
// (the value and its gradient), from the model's dry run (made here when the model has none).
int64_t evaluationBytesPerSample(Model& model, const at::Tensor& oneSample);

struct InputAttributionResult {
    // method -> [N, C, H, W] float32, the input's shape; a CAM: [N, 1, h, w] at the layer's size
    // under its name and [N, 1, H, W] bilinearly upsampled under "NAME:input".
    std::map<std::string, at::Tensor> maps;
    std::vector<int64_t> targets; // the class explained, per image
    std::vector<std::string> targetDescriptions;
    // Integrated Gradients' completeness error per image: sum of the attributions minus
    // (f(x) - f(baseline)) of the target score.
    std::vector<double> integratedGradientsDelta;
    int batch = 0; // the inputs evaluated together under the memory cap
    bool cancelled = false; // the images done so far are in the maps
};

// `images`: the model's input batch [N, C, H, W] (preprocessed). Occluded inputs are evaluated in
// batches under the cap, like the path of Integrated Gradients. The baseline of Integrated
// Gradients is zeros (black after preprocessing). Progress counts images. Throws torchscope::Error
// for an unknown method or a model whose output has no score to explain.
InputAttributionResult attributeInputs(Engine& engine, const at::Tensor& images, const InputAttributionRequest& request,
    const ProgressCallback& progress = {});

} // namespace torchscope
