#pragma once

// What each latent of a saved sparse autoencoder sees, over an image folder: the figures of the
// latent table and the latent pages. One pass encodes the layer's vectors (the SAE's positions;
// a map's every position) and keeps per latent:
//   frequency   the share of vectors it fires on; its mean activation when it fires; its largest
//   histogram   its non-zero activations in log10 bins from 1e-3 to 1e3 (48 bins; below and above
//               counted in the first and last)
//   top images  the `top` images with its largest activation (streamed top-k, as the recorders do),
//               each with the position where it peaks and its map over the image's positions [h, w]
//               (a map's grid; a ViT's patch grid, class-token SAEs one value)
// Then, for the `effects` most frequent latents (or the ones asked for), the effect of ablating
// it on its top images: the model run on them with the latent's part of the reconstruction removed
// (x − f_i W_dec[i] at every position, the splice's ablation), the softmax probability of each
// image's clean prediction before and after, and per class the mean change in its logit; the class
// whose logit falls most is the class the latent supports.

#include "common/float_tensor.h"
#include "common/progress.h"
#include "graph/analysis_context.h"
#include "model/model_setup.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace torchscope {

class Engine;
struct ExportManifest;

struct SaeLatentsRequest {
    std::string sae; // a saved SAE's folder
    std::string images; // a folder
    ModelSetup setup;
    std::string layer; // "": the SAE's own
    int64_t top = 9;
    int64_t effects = 256; // the most frequent latents whose ablation is measured (0: none)
    std::vector<int64_t> effectLatents; // these instead, when given
    int64_t maxImages = 0;
    int imageBatch = 16;
};

struct SaeLatentImage {
    int64_t image = 0; // its place in `images`
    float value = 0.0f; // the latent's largest activation in it
    int64_t row = 0, column = 0; // where, on the map's grid
    FloatTensor map; // [h, w]: the latent's activation at each position
};

struct SaeLatent {
    int64_t index = 0;
    int64_t fires = 0;
    double frequency = 0.0;
    double meanActive = 0.0; // mean activation where it fires
    double maxActivation = 0.0;
    std::vector<int64_t> histogram; // SaeLatentsResult::histogramEdges's bins
    std::vector<SaeLatentImage> top; // largest first
    bool hasEffect = false;
    double probabilityBefore = 0.0, probabilityAfter = 0.0; // of each top image's clean prediction, mean
    int64_t supports = -1; // the class whose logit falls most when it is ablated
    std::vector<double> logitChange; // per class, mean over its top images
};

struct SaeLatentsResult {
    std::string sae, layer, positions;
    std::vector<std::string> images; // the folder's images, in the order `image` indices count
    std::vector<std::string> labels; // the model's class names, where it has them
    std::vector<double> histogramEdges; // 49 edges, log10 spaced
    int64_t vectors = 0;
    int64_t gridHeight = 0, gridWidth = 0;
    std::vector<SaeLatent> latents; // every latent, by index
    bool cancelled = false;
    std::vector<std::pair<std::string, std::string>> failures;
    std::vector<std::string> warnings;
};

// Throws torchscope::Error for a request that cannot run. `progress`: images of the pass, then
// latents of the effects ("effects"); returning false cancels, keeping what is done.
SaeLatentsResult computeSaeLatents(
    Engine& engine, const SaeLatentsRequest& request, const ProgressCallback& progress = {});

struct SaeLatentsAnalysis {
    using Request = SaeLatentsRequest;
    using Result = SaeLatentsResult;
    static constexpr const char* name = "sae_latents";
    static Result run(AnalysisContext& context, const Request& request);
};

// Latent `latent`'s decoder row W_dec[latent] of the saved SAE in `sae` (raw activation space): the
// direction its feature visualisation maximises. Throws torchscope::Error for a latent out of range.
std::vector<double> saeDecoderDirection(const std::string& sae, int64_t latent);

// FILE.json: the table (every latent's figures), its top images with their maps, its effects, the
// manifest beside. Written atomically.
void writeSaeLatents(const std::string& path, const SaeLatentsResult& result, const ExportManifest* manifest = nullptr);

} // namespace torchscope
