#pragma once

// Faithfulness metrics: does a map point at what the model uses? Deletion and insertion (Petsiuk
// et al. 2018, RISE): the pixels removed from (or put back into) the image most important first,
// the target's probability after each step, and the area under that curve. Average Drop and
// Increase in Confidence (Chattopadhay et al. 2018): the image multiplied by the map scaled to
// [0, 1]. The perturbed images are evaluated in batches under the memory cap.

#include "attribution/attribution_measures.h" // MetricValues
#include "attribution/model_scores.h"
#include "common/progress.h"

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace torchscope {

class Engine;

inline constexpr const char* Deletion = "deletion";
inline constexpr const char* Insertion = "insertion";
inline constexpr const char* AverageDrop = "average_drop";
inline constexpr const char* IncreaseConfidence = "increase_confidence";
// ROAD (Rong et al. 2022; attribution/road_imputation.h): the most (MoRF) or least (LeRF) relevant
// pixels above each percentile 10 … 90 imputed from their neighbours; the mean change of the
// target's probability, as pytorch-grad-cam's ROADMostRelevantFirstAverage / ...LeastRelevant...
inline constexpr const char* RoadMorf = "road_morf";
inline constexpr const char* RoadLerf = "road_lerf";
std::vector<std::string> faithfulnessMetrics();

// What removed pixels become (deletion) and where insertion starts: zeros, the image blurred
// (attribution/baselines.h's Gaussian) or the image's per-channel mean.
enum class Fill { Zero, Blur, Mean };
Fill parseFill(const std::string& name); // "zero", "blur", "mean"; throws
std::string fillName(Fill fill);

struct FaithfulnessRequest {
    std::vector<std::string> metrics;
    ScoreSource source;
    int64_t pixelsPerStep = 0; // 0: a hundredth of the image's pixels, rounded up
    Fill deletionFill = Fill::Zero; // RISE's choices
    Fill insertionStart = Fill::Blur;
    double blurSigma = 0.0; // 0: a tenth of the shorter side
    double roadNoise = 0.01; // ROAD's imputation noise (absolute, as its authors')
    uint64_t seed = 0; // image i's ROAD noise from a CPU generator seeded seed + i (MoRF and LeRF each)
    int64_t memoryBytes = int64_t{1} << 30;
    int64_t bytesPerSample = 0; // one evaluated input, without gradients; 0: 16 × its size
};

struct FaithfulnessResult {
    std::map<std::string, MetricValues> metrics; // metric -> values
    int64_t pixelsPerStep = 0;
    int batch = 0;
    bool cancelled = false;
};

// The importance of each pixel: the map summed over its channels, [N, H, W]; a map at another size
// than the images (a CAM at its layer) is upsampled bilinearly first.
at::Tensor pixelImportance(const at::Tensor& maps, int64_t height, int64_t width);

// RISE's area under a curve of n + 1 points at unit spacing, scaled to [0, 1] steps.
double areaUnderCurve(const std::vector<double>& curve);

// images [N, C, H, W] (preprocessed), maps [N, K, H, W] or [N, 1, h, w], targets [N] (the class
// whose softmax probability is watched). Progress counts images. Throws torchscope::Error for
// unknown metrics, shapes that do not fit, or a model without class scores.
FaithfulnessResult evaluateFaithfulness(Engine& engine, const at::Tensor& images, const at::Tensor& maps,
    const std::vector<int64_t>& targets, const FaithfulnessRequest& request, const ProgressCallback& progress = {});

} // namespace torchscope
