#include "probe/probe_training.h"

#include "common/error.h"
#include "common/strings.h"

#include <torch/nn/functional/loss.h>
#include <torch/optim/adam.h>
#include <torch/torch.h>

#include <limits>

namespace torchscope {
namespace {

at::Tensor lossOf(const at::Tensor& scores, const at::Tensor& labels, int64_t classes)
{
    if (classes == 2)
        return torch::binary_cross_entropy_with_logits(scores.squeeze(1), labels.to(at::kFloat));
    return torch::cross_entropy_loss(scores, labels);
}

at::Tensor predictionsOf(const at::Tensor& scores, int64_t classes)
{
    return classes == 2 ? (scores.squeeze(1) > 0).to(at::kLong) : scores.argmax(1);
}

} // namespace

ProbePooling parseProbePooling(const std::string& text)
{
    if (text == "avg" || text == "average")
        return ProbePooling::Average;
    if (text == "flatten")
        return ProbePooling::Flatten;
    throw Error("unknown probe pooling '" + text + "'; expected avg or flatten");
}

std::string toString(ProbePooling pooling)
{
    return pooling == ProbePooling::Average ? "avg" : "flatten";
}

at::Tensor probeFeatures(const at::Tensor& activations, ProbePooling pooling)
{
    if (activations.dim() < 2)
        throw Error(
            "probe features need [samples, ...] activations, got shape " + shapeToString(activations.sizes().vec()));
    const at::Tensor a = activations.detach().to(at::kFloat);
    if (a.dim() == 2)
        return a;
    return pooling == ProbePooling::Average ? a.reshape({a.size(0), a.size(1), -1}).mean(2) : a.flatten(1);
}

ProbeTrainingResult trainLinearProbe(const at::Tensor& featuresIn, const at::Tensor& labelsIn,
    const ProbeTrainingConfig& config, const ProgressCallback& progress)
{
    const at::Tensor features = probeFeatures(featuresIn).cpu();
    const at::Tensor labels = labelsIn.to(at::kCPU, at::kLong).flatten();
    if (features.size(0) != labels.size(0))
        throw Error(std::to_string(features.size(0)) + " samples but " + std::to_string(labels.size(0)) + " labels");
    const int64_t classes = labels.max().item<int64_t>() + 1;
    if (classes < 2 || labels.min().item<int64_t>() < 0)
        throw Error("a probe needs labels 0..K-1 of at least two classes");

    // A stratified split: each class contributes the same fraction to validation.
    torch::manual_seed(config.seed);
    std::vector<at::Tensor> trainRows, validationRows;
    for (int64_t c = 0; c < classes; ++c) {
        const at::Tensor rows = (labels == c).nonzero().flatten();
        const at::Tensor shuffled = rows.index_select(0, torch::randperm(rows.size(0)));
        const auto held = static_cast<int64_t>(std::round(config.validationFraction * double(rows.size(0))));
        if (held < 1 || held >= rows.size(0))
            throw Error("class " + std::to_string(c) + " has " + std::to_string(rows.size(0))
                + " sample(s): too few for both a training and a validation part");
        validationRows.push_back(shuffled.slice(0, 0, held));
        trainRows.push_back(shuffled.slice(0, held));
    }
    const at::Tensor trainIndex = at::cat(trainRows), validationIndex = at::cat(validationRows);

    ProbeTrainingResult result;
    result.classes = classes;
    result.featureMean = features.index_select(0, trainIndex).mean(0);
    result.featureStd = features.index_select(0, trainIndex).std(0, /*unbiased=*/false).clamp_min(1e-6);
    const at::Tensor x = (features - result.featureMean) / result.featureStd;
    const at::Tensor xTrain = x.index_select(0, trainIndex), yTrain = labels.index_select(0, trainIndex);
    const at::Tensor xValidation = x.index_select(0, validationIndex),
                     yValidation = labels.index_select(0, validationIndex);

    const int64_t outputs = classes == 2 ? 1 : classes;
    torch::nn::Linear layer(features.size(1), outputs);
    torch::optim::Adam optimizer(
        layer->parameters(), torch::optim::AdamOptions(config.learningRate).weight_decay(config.weightDecay));
    double best = std::numeric_limits<double>::infinity();
    at::Tensor bestWeight, bestBias;
    int sinceBest = 0;
    for (int epoch = 0; epoch < config.maxEpochs; ++epoch) {
        // Full batch: the features of one layer for a folder fit in memory.
        optimizer.zero_grad();
        const at::Tensor loss = lossOf(layer->forward(xTrain), yTrain, classes);
        loss.backward();
        optimizer.step();
        double validationLoss = 0.0;
        {
            torch::NoGradGuard noGrad;
            validationLoss = lossOf(layer->forward(xValidation), yValidation, classes).item<double>();
        }
        result.trainLoss.push_back(loss.item<double>());
        result.validationLoss.push_back(validationLoss);
        if (validationLoss < best - 1e-6) {
            best = validationLoss;
            bestWeight = layer->weight.detach().clone();
            bestBias = layer->bias.detach().clone();
            result.bestEpoch = epoch;
            sinceBest = 0;
        } else if (++sinceBest >= config.patience) {
            break;
        }
        if (progress && !progress(Progress{epoch + 1, config.maxEpochs, "training", {validationLoss}}))
            break;
    }
    result.weight = bestWeight;
    result.bias = bestBias;

    const at::Tensor trainPredicted = predictionsOf(applyProbe(result, features.index_select(0, trainIndex)), classes);
    const at::Tensor validationPredicted
        = predictionsOf(applyProbe(result, features.index_select(0, validationIndex)), classes);
    result.trainAccuracy = (trainPredicted == yTrain).to(at::kDouble).mean().item<double>();
    result.validationAccuracy = (validationPredicted == yValidation).to(at::kDouble).mean().item<double>();
    result.confusion.assign(static_cast<size_t>(classes), std::vector<int64_t>(static_cast<size_t>(classes), 0));
    for (int64_t i = 0; i < yValidation.size(0); ++i)
        ++result.confusion[static_cast<size_t>(yValidation[i].item<int64_t>())]
                          [static_cast<size_t>(validationPredicted[i].item<int64_t>())];
    return result;
}

at::Tensor applyProbe(const ProbeTrainingResult& probe, const at::Tensor& features)
{
    torch::NoGradGuard noGrad;
    const at::Tensor x = (probeFeatures(features).cpu() - probe.featureMean) / probe.featureStd;
    return at::addmm(probe.bias, x, probe.weight.t());
}

} // namespace torchscope
