#pragma once

// A TopK sparse autoencoder (Gao et al. 2024, "Scaling and evaluating sparse autoencoders") on a
// layer's activation vectors, with the recipe the field converged on:
//   encode   f = TopK(ReLU((x̃ − b_dec) W_enc + b_enc)), k latents per vector (BatchTopK: k × B per
//            batch, the largest over the whole batch)
//   decode   x̂ = f W_dec + b_dec, over the k active rows only (a sparse decoder)
//   inputs   x̃ = x · s, s = √d_in / E‖x‖ from the first batch (SAELens's
//            "expected_average_only_in"), folded into the weights when saved
//   init     W_dec's rows unit-norm, W_enc = W_decᵀ, b_enc = 0, b_dec = the first batch's mean
//            (or its geometric median)
//   train    ‖x̃ − x̂‖² + α·AuxK (the dead latents' top k_aux reconstructing the residual; α = 1/32,
//            k_aux = d_in / 2, scaled by min(dead / k_aux, 1)), Adam with a linear warm-up (and a
//            linear decay over the last fifth where the run's length is known); W_dec's
//            rows kept unit-norm, the gradient's component along each row removed before a step
//   dead     a latent that has not fired for `deadAfterVectors` vectors
//   Matryoshka (optional) each prefix of the latents of a given width adds the squared error of
//            its reconstruction alone (the codes outside it zeroed) to the loss
// Saved in SAELens's layout: a folder with sae_weights.safetensors (W_enc [d_in, d_sae],
// W_dec [d_sae, d_in], b_enc [d_sae], b_dec [d_in], float32) and cfg.json (d_in, d_sae, k,
// architecture "topk", normalize_activations "none" once s is folded in, and TorchScope's layer,
// positions and model hash under "metadata").

#include "common/progress.h"
#include "sae/sae_types.h"

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>

namespace torchscope {

class Cluster;

// The point of least summed Euclidean distance to the rows of `points` [N, D] (Weiszfeld's
// iteration from their mean, in float64), in their type; b_dec's start with geometricMedianInit.
// Throws torchscope::Error for no points.
at::Tensor geometricMedian(const at::Tensor& points, int64_t iterations = 100, double tolerance = 1e-9);

class SparseAutoencoder {
public:
    // Throws torchscope::Error for sizes that make no SAE (d_in or d_sae < 1, k outside 1..d_sae).
    SparseAutoencoder(const SaeConfig& config, const std::string& device = "cpu");
    ~SparseAutoencoder();
    SparseAutoencoder(SparseAutoencoder&&) noexcept;
    SparseAutoencoder& operator=(SparseAutoencoder&&) noexcept;

    const SaeConfig& config() const;
    bool initialised() const;

    // One step of training on raw activation vectors [B, d_in] (the first also initialises b_dec
    // and the input scale from them). Throws torchscope::Error for a batch of another width.
    // With `ranks` (a distributed run of several), every rank calls it at once with its part of
    // the step's batch, all parts of one size: the gradients are averaged over c10d, the scale,
    // b_dec, BatchTopK's threshold, the dead-latent counts and the metrics taken over all parts, so
    // the step is the one a single process takes on the parts concatenated in rank order (within
    // float rounding of the sums), and every rank's SAE stays the same.
    SaeStepMetrics trainStep(const at::Tensor& vectors, Cluster* ranks = nullptr);

    // Codes [B, d_sae] (k non-zero per row, or BatchTopK's threshold at inference) and the
    // reconstruction [B, d_in] of raw activation vectors.
    at::Tensor encode(const at::Tensor& vectors) const;
    at::Tensor decode(const at::Tensor& codes) const;
    at::Tensor reconstruct(const at::Tensor& vectors) const;

    // The weights in raw-activation space (the scale folded in): W_enc, W_dec, b_enc, b_dec.
    std::map<std::string, at::Tensor> weights() const;

    // Writes sae_weights.safetensors and cfg.json into `folder` (made if missing), each atomically.
    void save(const std::string& folder, const SaeOrigin& origin) const;
    // The training state beside the weights in `folder`: trainer_state.safetensors (the parameters
    // in the scaled space, Adam's moments, the dead-latent counters) and trainer_state.json (the
    // configuration, the scale, Adam's step and the counts), each written atomically. resume()
    // restores it exactly: training on from it equals never having stopped.
    void saveCheckpoint(const std::string& folder) const;
    // Throws torchscope::Error naming the file and what is missing or inconsistent.
    static SparseAutoencoder resume(const std::string& folder, const std::string& device = "cpu");
    int64_t steps() const;
    int64_t vectorsSeen() const;
    // The steps the run will take, once known (the learning rate's decay).
    void setTotalSteps(int64_t steps);

    // Reads a folder SAELens's layout (TorchScope's or SAELens's own TopK SAE). Throws
    // torchscope::Error saying what is missing or inconsistent, with the file.
    static SparseAutoencoder load(
        const std::string& folder, SaeOrigin* origin = nullptr, const std::string& device = "cpu");

private:
    struct State;
    std::unique_ptr<State> state_;
};

} // namespace torchscope
