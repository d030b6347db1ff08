#pragma once

// Linear CKA (Kornblith et al., "Similarity of Neural Network Representations Revisited", 2019)
// and its minibatch estimate with the unbiased HSIC (Nguyen, Raghu and Kornblith, "Do Wide and Deep
// Networks Learn the Same Things?", 2021), which streams: only one batch's Gram matrices are held.

#include "compare/comparison.h"

#include <ATen/core/Tensor.h>

#include <vector>

namespace torchscope {

// [N, ...] activations -> [N, F] features: every value of a sample (Flattened, in the activations'
// dtype), or each channel's mean over dims 2.. in float64 (Pooled; [N, F] stays as it is).
at::Tensor sampleFeatures(const at::Tensor& activations, CkaFeatures features);

// The linear kernel's Gram matrix X Xᵀ ([N, N]) of [N, F] features, summed in float64.
at::Tensor linearGram(const at::Tensor& features);

// The unbiased HSIC estimator (Song et al. 2012) of two [N, N] Gram matrices; N >= 4.
double unbiasedHsic(const at::Tensor& k, const at::Tensor& l);

// Full-batch linear CKA of [N, F] and [N, G] features: ||YcᵀXc||²_F / (||XcᵀXc||_F ||YcᵀYc||_F)
// with column-centred Xc, Yc (computed through the centred Gram matrices, so F may be large).
double linearCka(const at::Tensor& x, const at::Tensor& y);

// Minibatch CKA for every pair of A's and B's layers: each batch adds HSIC₁(K, L), HSIC₁(K, K) and
// HSIC₁(L, L); CKA = ΣHSIC₁(K, L) / sqrt(ΣHSIC₁(K, K) · ΣHSIC₁(L, L)).
class MinibatchCka {
public:
    MinibatchCka(size_t rows, size_t columns);

    // One batch: a Gram matrix per row layer and per column layer, all [N, N] with N >= 4.
    void add(const std::vector<at::Tensor>& gramsA, const std::vector<at::Tensor>& gramsB);
    // rows x columns, row-major; NaN where a layer's HSIC sum is not positive (a constant layer).
    std::vector<double> values() const;
    int64_t batches() const { return batches_; }

private:
    size_t rows_, columns_;
    std::vector<double> crossSums_; // rows x columns
    std::vector<double> selfSumsA_, selfSumsB_;
    int64_t batches_ = 0;
};

} // namespace torchscope
