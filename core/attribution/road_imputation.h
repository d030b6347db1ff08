#pragma once

// ROAD (Rong et al. 2022, "A Consistent and Efficient Evaluation Strategy for Attribution
// Methods"): removed pixels are not blanked but imputed from their neighbours, so that the model
// cannot tell where pixels were removed from the shape of the hole. Noisy linear imputation as the
// authors' code (and pytorch-grad-cam's copy of it) does: each removed pixel is the weighted mean of
// its 8 neighbours (1/6 beside, 1/12 diagonal), a sparse linear system per channel, here solved by
// conjugate gradients, plus N(0, noise²).

#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>

#include <vector>

namespace torchscope {

// image [C, H, W] float32 on the CPU, keep [H, W] (true: known). The noise is drawn as
// `torch.randn_like(res.t())` draws it for the removed pixels in row-major order.
at::Tensor noisyLinearImputation(
    const at::Tensor& image, const at::Tensor& keep, double noise, at::Generator& generator);

// numpy.percentile's default ("linear") of every value of `values`.
double percentile(const at::Tensor& values, double q);

// The pixels ROAD keeps at percentile q of `importance` [H, W] (pytorch-grad-cam's
// RemoveMostRelevantFirst: those below the percentile; RemoveLeastRelevantFirst: those of
// 1 - importance below it).
at::Tensor roadKeepMask(const at::Tensor& importance, double q, bool mostRelevantFirst);

// The percentiles ROAD averages over, as pytorch-grad-cam: 10, 20, ..., 90.
std::vector<double> roadPercentiles();

} // namespace torchscope
