#pragma once

// A sparse autoencoder's configuration, origin and step metrics (sae/sparse_autoencoder.h): plain
// values, no Torch, for the window and the CLI.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace torchscope {

struct SaeConfig {
    int64_t dIn = 0;
    int64_t dSae = 0;
    int64_t k = 32;
    bool batchTopK = false;
    // Matryoshka (Bussmann et al. 2025, SAELens's form): the latents' prefixes of these widths
    // (ascending, each below d_sae) reconstruct the input on their own too; each adds its squared
    // error to the loss. Empty: none. Encoding and decoding are those of the TopK or BatchTopK SAE.
    std::vector<int64_t> matryoshkaWidths;
    // b_dec starts at the first batch's geometric median (Weiszfeld), not its mean.
    bool geometricMedianInit = false;
    double learningRate = 4e-4;
    int64_t warmupSteps = 1000;
    // The steps a run will take, where known: the learning rate then falls linearly to 0 over the
    // last `decayFraction` of them (0: no decay).
    int64_t totalSteps = 0;
    double decayFraction = 0.2;
    double auxCoefficient = 1.0 / 32.0;
    int64_t auxK = 0; // 0: d_in / 2
    int64_t deadAfterVectors = 10'000'000;
    uint64_t seed = 0;
};

// What a saved SAE says about where it came from (cfg.json's "metadata").
struct SaeOrigin {
    std::string layer; // the module path it reads
    std::string positions = "all"; // all, class, patches, sample:N
    std::string modelSha256;
    int64_t prefixTokens = -1; // a ViT's tokens before its patch grid (class, registers); -1: not tokens
    std::map<std::string, std::string> extra;
};

struct SaeStepMetrics {
    double loss = 0.0; // mse + Matryoshka's prefixes' errors + α·aux
    double mse = 0.0; // ‖x̃ − x̂‖² per vector, in the scaled space
    double auxLoss = 0.0;
    double matryoshkaMse = 0.0; // Σ over the Matryoshka prefixes of their ‖x̃ − x̂_prefix‖² per vector
    double fvu = 0.0; // Σ‖x − x̂‖² / Σ‖x − mean(x)‖² over the batch
    double l0 = 0.0; // active latents per vector
    double deadFraction = 0.0;
    int64_t vectors = 0; // seen so far
};

} // namespace torchscope
