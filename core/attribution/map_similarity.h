#pragma once

// How alike two attribution maps are, as the sanity checks of Adebayo et al. (2018) measure it:
// Spearman's rank correlation (ties get their average rank, as scipy.stats.spearmanr) and the
// structural similarity of two 2-D maps (skimage.metrics.structural_similarity's defaults: a 7 x 7
// uniform window, sample covariance, K1 = 0.01, K2 = 0.03, the mean over the window positions that
// fit; the data range from both maps together, as Quantus's ssim takes it).

#include <ATen/core/Tensor.h>

namespace torchscope {

double spearmanCorrelation(const at::Tensor& a, const at::Tensor& b); // over every value; NaN when one is constant
double structuralSimilarity(const at::Tensor& a, const at::Tensor& b); // [H, W] each, both sides >= 7

} // namespace torchscope
