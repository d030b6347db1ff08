#pragma once

#include "common/progress.h"

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace torchscope {

// hybrid_learning's concept probe / TCAV's linear classifier: a linear layer on a layer's
// activations (global-average-pooled when spatial), trained with a held-out validation split and
// early stopping. Two classes train one logit (logistic regression), more train a softmax.
struct ProbeTrainingConfig {
    double validationFraction = 0.25;
    int maxEpochs = 200;
    int patience = 15; // epochs without a better validation loss before stopping
    double learningRate = 0.05; // Adam
    double weightDecay = 1e-4;
    int64_t seed = 0; // the split and the initial weights
};

struct ProbeTrainingResult {
    at::Tensor weight; // [outputs, features]: outputs = 1 for two classes
    at::Tensor bias; // [outputs]
    at::Tensor featureMean; // [features]: features are standardised before the layer
    at::Tensor featureStd; // [features]
    int64_t classes = 0;
    double trainAccuracy = 0.0;
    double validationAccuracy = 0.0;
    std::vector<double> trainLoss; // per epoch
    std::vector<double> validationLoss; // per epoch
    int bestEpoch = 0;
    std::vector<std::vector<int64_t>> confusion; // validation: [true][predicted]
};

// How a layer's [N, C, ...] activations become a probe's [N, F] features.
enum class ProbePooling {
    Average, // the mean over positions of each channel (F = C)
    Flatten // every value (F = C * H * W)
};
ProbePooling parseProbePooling(const std::string& text); // "avg" | "flatten"; throws torchscope::Error
std::string toString(ProbePooling pooling);

// [N, C, ...] or [N, F] activations -> [N, F] float features on the activations' device.
at::Tensor probeFeatures(const at::Tensor& activations, ProbePooling pooling = ProbePooling::Average);

// labels: [N] class indices 0..K-1. progress (epochs done of maxEpochs, values = {validation
// loss}) returns false to cancel
// (the best weights so far are kept). Throws torchscope::Error for fewer than two classes or a
// class with no sample in either split.
ProbeTrainingResult trainLinearProbe(const at::Tensor& features, const at::Tensor& labels,
    const ProbeTrainingConfig& config = {}, const ProgressCallback& progress = {});

// The probe's class scores for features: [N, outputs].
at::Tensor applyProbe(const ProbeTrainingResult& probe, const at::Tensor& features);

} // namespace torchscope
