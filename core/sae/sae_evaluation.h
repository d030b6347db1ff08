#pragma once

// How good a saved sparse autoencoder is on a layer of the loaded model, over an image folder
// (SAELens's and Gao et al.'s evaluation):
//   reconstruction  FVU = Σ‖x − x̂‖² / Σ‖x − x̄‖² over every vector (x̄ the folder's mean vector),
//                   explained variance 1 − FVU, L0 (active latents per vector), each latent's firing
//                   count; dead latents fire on none of the vectors, dense ones on more than
//                   `denseAbove` of them
//   downstream      the model run three times per batch: clean, with the SAE's reconstruction
//                   spliced in at the layer (on the positions the SAE reads), and with those
//                   positions zero-ablated. KL(clean ‖ spliced) and KL(clean ‖ zero) per image,
//                   top-1 agreement with the clean prediction, cross-entropy of each against the
//                   folder's class labels (when every image has one the model's classes hold) or
//                   else the clean prediction, and the loss recovered:
//                   (CE_zero − CE_spliced) / (CE_zero − CE_clean).
// Positions: a map [N, C, H, W] and "all" / "sample:N" tokens are evaluated at every position;
// "class" at the class token, "patches" at the patch grid's tokens (not class or register tokens).

#include "common/progress.h"
#include "graph/analysis_context.h"
#include "model/model_setup.h"

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace torchscope {

class Engine;
class Model;
struct ExportManifest;

struct SaeEvaluationRequest {
    std::string sae; // a saved SAE's folder (sae/sparse_autoencoder.h)
    std::string images; // a folder (class sub-folders give labels)
    ModelSetup setup;
    std::string layer; // "": the layer the SAE's file names
    std::string positions; // "": the SAE's own
    int64_t maxImages = 0; // 0: every image of the folder
    int imageBatch = 16;
    double denseAbove = 0.1;
};

struct SaeEvaluationResult {
    std::string sae, layer, positions;
    int64_t dIn = 0, dSae = 0, k = 0;
    int64_t images = 0;
    int64_t vectors = 0;
    double fvu = 0.0;
    double explainedVariance = 0.0;
    double meanSquaredError = 0.0; // ‖x − x̂‖² per vector
    double l0 = 0.0;
    std::vector<int64_t> fires; // per latent: the vectors it fired on
    int64_t deadLatents = 0, denseLatents = 0;

    bool downstream = false; // the model's output has class scores [N, classes]
    std::string lossAgainst; // "folder labels" or "clean predictions"
    double klSpliced = 0.0, klZero = 0.0; // mean over images, nats
    double top1Spliced = 0.0, top1Zero = 0.0; // fraction of images
    double lossClean = 0.0, lossSpliced = 0.0, lossZero = 0.0; // mean cross-entropy, nats
    double lossRecovered = 0.0; // NaN when zero-ablating costs nothing measurable (under 1e-9 of the loss)

    bool cancelled = false; // the figures are over the images done
    std::vector<std::pair<std::string, std::string>> failures; // unreadable images: path, why
    std::vector<std::string> warnings;
};

// Throws torchscope::Error for a request that cannot run (no SAE file, no images, a layer whose
// vectors are not the SAE's width). `progress` after each image batch: done / total images, values
// {FVU, L0, KL spliced} so far; returning false cancels, keeping the figures of the images done.
SaeEvaluationResult evaluateSparseAutoencoder(
    Engine& engine, const SaeEvaluationRequest& request, const ProgressCallback& progress = {});

// The vectors an SAE is evaluated on (see above), [P, D]; `prefix` as sae/sae_training.h's
// saeTokenRange takes it.
at::Tensor saeEvaluationVectors(const at::Tensor& activation, const std::string& positions, int64_t prefix = -1);
// A layer's value with the SAE's positions replaced: `replacement` holds one vector per position
// the SAE reads, in the order saeEvaluationVectors gives them.
// The grid the vectors at `positions` lie on, on images of height × width: a map's [h, w], a ViT's
// patch grid, else one row of the positions (the class token: 1 × 1).
std::pair<int64_t, int64_t> saeGrid(
    const Model& model, const at::Tensor& activation, const std::string& positions, int64_t height, int64_t width);
at::Tensor spliceVectors(
    const at::Tensor& activation, const std::string& positions, const at::Tensor& replacement, int64_t prefix = -1);

struct SaeEvaluationAnalysis {
    using Request = SaeEvaluationRequest;
    using Result = SaeEvaluationResult;
    static constexpr const char* name = "sae_evaluate";
    static Result run(AnalysisContext& context, const Request& request);
};

// FILE.json: every figure, each latent's firing frequency and the manifest. Written atomically.
void writeSaeEvaluation(
    const std::string& path, const SaeEvaluationResult& result, const ExportManifest* manifest = nullptr);

} // namespace torchscope
