#pragma once

// Attributions: which input values (or which positions of a layer) drove a score. The one core
// operation behind `torchscope-cli attribute`, `evaluate`, `sanity` and the window's Attribution
// tab. Each method follows its reference implementation (Captum for the input methods,
// pytorch-grad-cam for the CAMs) so that the tests can hold it equal to them. Every method that
// evaluates many inputs does so in batches under a memory cap, never all steps at once.

#include "attribution/baselines.h"
#include "attribution/integration_points.h"
#include "attribution/smooth_gradients.h"
#include "common/progress.h"
#include "graph/model_output.h"
#include "relevance/relevance_rules.h"

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace torchscope {

class Engine;
class Model;
struct ProbeExtension;

// The methods by their CLI names.
inline constexpr const char* Saliency = "saliency"; // |d score / d x| per input value
inline constexpr const char* InputXGradient = "input_x_gradient";
inline constexpr const char* IntegratedGradients = "integrated_gradients"; // Sundararajan et al. 2017
inline constexpr const char* SmoothGrad = "smoothgrad"; // attribution/smooth_gradients.h
inline constexpr const char* SmoothGradSquared = "smoothgrad_sq";
inline constexpr const char* VarGrad = "vargrad";
inline constexpr const char* Occlusion = "occlusion"; // attribution/perturbation_attributions.h
inline constexpr const char* ScoreCam = "score_cam";
inline constexpr const char* EigenCam = "eigen_cam"; // attribution/layer_cams.h, no gradient
inline constexpr const char* Lrp = "lrp"; // relevance/input_relevance.h: Layer-wise Relevance Propagation
std::vector<std::string> attributionMethods(); // every name, the input methods first
bool isLayerMethod(const std::string& method); // the CAMs: they need a layer

struct InputAttributionRequest {
    std::vector<std::string> methods;
    GradientTarget target; // index -1: each image's own predicted class
    std::vector<int64_t> targets; // one per image, in place of target.index (the sanity checks fix them)
    std::string scores; // the output element with the scores ("" : found by itself)
    std::vector<std::string> labels;
    std::shared_ptr<const ProbeExtension> probe; // explain a probe's class instead (model_scores.h)
    int steps = 50; // Integrated Gradients
    IntegrationRule rule = IntegrationRule::GaussLegendre;
    Baseline baseline; // Integrated Gradients' path start
    NoiseSettings noise; // SmoothGrad, SmoothGrad², VarGrad
    int window = 8; // Occlusion's square, in pixels over all channels
    int stride = 4;
    // The layer of the CAMs: [N, C, h, w] output, or vision transformer tokens on a square grid.
    std::string layer;
    RelevanceSettings relevance; // LRP's composite, overrides and input range (zbox)
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
    std::vector<int64_t> targets; // the class explained, per image (-1: none, EigenCAM alone)
    std::vector<std::string> targetDescriptions;
    // Integrated Gradients' completeness error per image: sum of the attributions minus
    // (f(x) - f(baseline)) of the target score (NaN where the output has no class scores: a
    // segmentation region or a detection); and the baselines [N, C, H, W] unless black.
    std::vector<double> integratedGradientsDelta;
    at::Tensor integratedGradientsBaselines;
    // LRP: per image the input relevance's sum and the logit it explains (equal where the rules
    // conserve), and the rules as applied with what they left to the gradient.
    std::vector<double> relevanceSums, relevanceScores;
    RelevanceCoverage relevance;
    int batch = 0; // the inputs evaluated together under the memory cap
    bool cancelled = false; // the images done so far are in the maps
    // For people: an image whose input relevance's sum is more than twice the logit's size away from the
    // logit it explains (biases absorb or add a share, but not that: the model's own preprocessing given a
    // rule once made the demo's −50.6 of a logit 9.66).
    std::vector<std::string> warnings;
};

// The map of `method` at the input's size: a layer method's "M:input", another's "M"; nullptr
// when `maps` (a result's, or a file's) has neither. What the metrics and sanity checks compare.
const at::Tensor* inputSizedMap(const std::map<std::string, at::Tensor>& maps, const std::string& method);

// A request's ScoreSource: where its scores are and which part of them is explained.
ScoreSource scoreSourceOf(const InputAttributionRequest& request);

// `images`: the model's input batch [N, C, H, W] (preprocessed). Progress counts images. Throws
// torchscope::Error for an unknown method or a model whose output has no score to explain.
InputAttributionResult attributeInputs(Engine& engine, const at::Tensor& images, const InputAttributionRequest& request,
    const ProgressCallback& progress = {});

} // namespace torchscope
