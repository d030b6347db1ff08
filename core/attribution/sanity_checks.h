#pragma once

// The model-parameter randomisation test (Adebayo et al. 2018): a map that stays the same when the
// weights are randomised explains nothing. The layers are re-initialised on a copy of the model
// (attribution/parameter_randomisation.h; the loaded model is never changed), cascading (from the
// output down, each layer added to those before, as Quantus's MPRT "top_down") or independent (one
// layer at a time, the others as trained, in module order as Quantus's "independent"), and each
// randomised map is compared with the original one (attribution/map_similarity.h), the target
// classes fixed to those the original model explained.

#include "attribution/input_attributions.h"
#include "common/progress.h"

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace torchscope {

class Engine;
class Model;

enum class RandomisationMode { Cascading, Independent };
RandomisationMode parseRandomisationMode(const std::string& name); // "cascading", "independent"; throws
std::string randomisationModeName(RandomisationMode mode);

struct SanityRequest {
    InputAttributionRequest attribution; // the methods and their settings
    RandomisationMode mode = RandomisationMode::Cascading;
    uint64_t seed = 42; // each layer drawn with seed + 1 (Quantus's MPRT)
    bool keepMaps = false; // return every randomised map
};

struct LayerSimilarity {
    std::string layer;
    std::string type; // "Conv2d"
    // Per image: Spearman of |maps| and of the signed maps (every value of the map), SSIM of the
    // maps summed over their channels (a layer method's map upsampled to the input).
    std::vector<double> spearmanAbs, spearman, ssim;
    at::Tensor maps; // [N, ...] the randomised maps, when kept
};

struct MethodSanity {
    std::string method;
    at::Tensor original; // the original model's maps
    std::vector<LayerSimilarity> layers; // in the order randomised
};

struct SanityResult {
    std::vector<MethodSanity> methods;
    std::vector<int64_t> targets;
    std::vector<std::string> targetDescriptions; // "class 3 (Dress)"
    std::vector<std::string> skipped; // modules with parameters whose initialiser TorchScope does not know
    // With a probe: the layers that run after the probe's layer, as "PATH (TYPE)". They cannot change
    // the probe's score (the forward stops at its layer), so randomising them would only add rows of 1.
    std::vector<std::string> afterProbe;
    bool cancelled = false; // the layers finished are in the report
};

// `original` runs the loaded model; `scratch` is a second copy of it, loaded for this, that this
// changes (its layers randomised and, in independent mode, put back). Progress counts layers.
// Throws torchscope::Error for a model without a layer to randomise.
SanityResult checkSanity(Engine& original, const std::shared_ptr<Model>& scratch, const at::Tensor& images,
    const SanityRequest& request, const ProgressCallback& progress = {});

} // namespace torchscope
