#include "relevance/input_relevance.h"

#include "common/error.h"
#include "graph/engine.h"
#include "graph/model_output.h"
#include "preprocess/preprocessing.h"

#include <ATen/ATen.h>

#include <cmath>

namespace torchscope {

InputRelevance inputRelevance(Engine& engine, const at::Tensor& batch, const ScoreSource& source, int64_t target,
    const RelevanceSettings& settings)
{
    if (source.probe)
        throw Error("LRP explains the model's own class scores; a probe's classes are not among them (use "
                    "saliency or Integrated Gradients for a probe)");
    Request run;
    run.targetClass = target;
    run.targetRegion = source.region;
    run.scores = source.scores;
    run.labels = source.labels;
    run.inputGradient = true;
    run.relevance = settings;
    const RunResult result = engine.run(run, forwardInputsFromBatch(engine.model(), batch));
    const ScoreOutput scores = findScores(*result.find("output"), source.scores);
    if (scores.kind != OutputKind::Classes)
        throw Error("LRP explains a class score [N, classes]; this model's output is " + scores.described);
    InputRelevance out;
    out.target = result.targetIndex;
    out.description = result.target;
    out.coverage = result.relevance;
    // The backward was seeded with 1 per image: relevance is linear in its seed, so the score's own
    // relevance is this times the score.
    const at::Tensor logits = scores.scores.select(1, out.target).to(at::kFloat).detach();
    out.score = logits.sum().item<double>();
    at::Tensor relevance = result.tensor("input:grad").to(batch.device(), at::kFloat);
    std::vector<int64_t> shape(static_cast<size_t>(relevance.dim()), 1);
    shape[0] = logits.size(0);
    out.relevance = relevance * logits.to(batch.device()).reshape(shape);
    return out;
}

std::pair<std::vector<double>, std::vector<double>> inputRange(const Preprocessing& preprocessing)
{
    const size_t channels = !preprocessing.mean.empty() ? preprocessing.mean.size() : preprocessing.grayscale ? 1 : 3;
    std::vector<double> low(channels), high(channels);
    for (size_t c = 0; c < channels; ++c) {
        const double mean = c < preprocessing.mean.size() ? preprocessing.mean[c] : 0.0;
        const double sd = c < preprocessing.std.size() && preprocessing.std[c] != 0.0 ? preprocessing.std[c] : 1.0;
        low[c] = (0.0 - mean) / sd;
        high[c] = (preprocessing.scale - mean) / sd;
    }
    return {low, high};
}

} // namespace torchscope
