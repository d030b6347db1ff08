#include "sae/sae_evaluation.h"

#include "attention/attention_maps.h"
#include "common/atomic_file.h"
#include "common/error.h"
#include "export/manifest.h"
#include "graph/engine.h"
#include "graph/model_output.h"
#include "graph/request.h"
#include "imaging/image_folder.h"
#include "model/model.h"
#include "record/folder_run.h"
#include "sae/sae_training.h"
#include "sae/sparse_autoencoder.h"

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <limits>

namespace torchscope {

namespace {

double meanOf(double sum, int64_t n)
{
    return n > 0 ? sum / static_cast<double>(n) : std::numeric_limits<double>::quiet_NaN();
}

} // namespace

at::Tensor saeEvaluationVectors(const at::Tensor& activation, const std::string& positions, int64_t prefix)
{
    const at::Tensor a = activation.detach();
    if (a.dim() == 4)
        return a.permute({0, 2, 3, 1}).reshape({-1, a.size(1)});
    if (a.dim() == 3) {
        const auto [first, count] = saeTokenRange(a.size(1), positions, prefix);
        return a.narrow(1, first, count).reshape({-1, a.size(2)});
    }
    if (a.dim() == 2)
        return a;
    throw Error("a layer's output of " + std::to_string(a.dim()) + " dimensions has no positions to evaluate an SAE "
        + "on (expected [N, C, H, W], tokens [N, T, D] or [N, C])");
}

std::pair<int64_t, int64_t> saeGrid(
    const Model& model, const at::Tensor& activation, const std::string& positions, int64_t height, int64_t width)
{
    if (activation.dim() == 4)
        return {activation.size(2), activation.size(3)};
    if (activation.dim() == 3) {
        const int64_t prefix = saePrefixTokens(model, activation, height, width);
        const auto [first, count] = saeTokenRange(activation.size(1), positions, prefix);
        const TokenLayout layout = tokenLayout(model, activation.size(1), height, width, 0);
        if (first > 0 && layout.spatial && layout.gridHeight * layout.gridWidth == count)
            return {layout.gridHeight, layout.gridWidth};
        return {1, count};
    }
    return {1, 1};
}

at::Tensor spliceVectors(
    const at::Tensor& activation, const std::string& positions, const at::Tensor& replacement, int64_t prefix)
{
    const at::Tensor r = replacement.to(activation.device(), activation.scalar_type());
    if (activation.dim() == 4) {
        const int64_t n = activation.size(0), c = activation.size(1), h = activation.size(2), w = activation.size(3);
        return r.reshape({n, h, w, c}).permute({0, 3, 1, 2}).contiguous();
    }
    if (activation.dim() == 3) {
        const auto [first, count] = saeTokenRange(activation.size(1), positions, prefix);
        at::Tensor spliced = activation.detach().clone();
        spliced.narrow(1, first, count).copy_(r.reshape({activation.size(0), count, activation.size(2)}));
        return spliced;
    }
    return r.reshape(activation.sizes()).contiguous();
}

SaeEvaluationResult evaluateSparseAutoencoder(
    Engine& engine, const SaeEvaluationRequest& request, const ProgressCallback& progress)
{
    SaeOrigin origin;
    const SparseAutoencoder sae = SparseAutoencoder::load(request.sae, &origin, engine.model().device());
    SaeEvaluationResult result;
    result.sae = request.sae;
    result.layer = request.layer.empty() ? origin.layer : request.layer;
    result.positions = request.positions.empty() ? origin.positions : request.positions;
    if (result.layer.empty())
        throw Error("'" + request.sae + "' does not name the layer it reads (cfg.json's metadata.hook_name): give one");
    if (result.positions != "all" && result.positions != "class" && result.positions != "patches"
        && result.positions.rfind("sample:", 0) != 0)
        throw Error("positions '" + result.positions + "': expected all, class, patches or sample:N");
    result.dIn = sae.config().dIn;
    result.dSae = sae.config().dSae;
    result.k = sae.config().k;
    if (!origin.modelSha256.empty() && origin.modelSha256 != sha256OfFile(engine.model().path()))
        result.warnings.push_back("'" + request.sae + "' was trained on another model file (SHA-256 "
            + origin.modelSha256.substr(0, 12) + "…); evaluated here all the same");

    ImageFolder folder = ImageFolder::scan(request.images, request.setup.labels);
    if (folder.images.empty())
        throw Error("the folder '" + request.images + "' has no images");
    if (request.maxImages > 0 && static_cast<int64_t>(folder.images.size()) > request.maxImages)
        folder.images.resize(static_cast<size_t>(request.maxImages));

    Request clean;
    clean.grabOutput(result.layer);
    Request edited;
    edited.edits.push_back(EditSpec::make(result.layer, EditKind::Replace));
    engine.prepare(clean);

    // Running sums, in double: Σx and Σ‖x‖² (the total variance), Σ‖x − x̂‖², Σ L0.
    at::Tensor sumVectors;
    double sumSquares = 0.0, sumError = 0.0, sumL0 = 0.0;
    at::Tensor fires = at::zeros({result.dSae}, at::kLong);
    double klSpliced = 0.0, klZero = 0.0, agreeSpliced = 0.0, agreeZero = 0.0;
    double lossClean = 0.0, lossSpliced = 0.0, lossZero = 0.0;
    int64_t scored = 0;
    const bool labelled = std::all_of(
        folder.images.begin(), folder.images.end(), [](const LabelledImage& image) { return image.label >= 0; });
    bool labelsFit = labelled;

    FolderRunOptions options;
    options.batchSize = std::max(1, request.imageBatch);
    const BatchStream stream = folderBatches(folder, request.setup.preprocessing, options);
    const auto report = [&](const Progress& p) {
        const double total = sumSquares
            - (sumVectors.defined() ? sumVectors.pow(2).sum().item<double>() : 0.0)
                / std::max<double>(static_cast<double>(result.vectors), 1.0);
        return !progress
            || progress(Progress{p.done, p.total, "evaluating",
                {sumError / std::max(total, 1e-300), meanOf(sumL0, result.vectors), meanOf(klSpliced, scored)}});
    };
    const BatchLoop loop = forEachBatch(stream, report, [&](const ImageBatch& batch) {
        if (batch.error)
            std::rethrow_exception(batch.error);
        const auto inputs = forwardInputsFromBatch(engine.model(), batch.images);
        const RunResult out = engine.run(clean, inputs);
        const at::Tensor activation = out.tensor(result.layer);
        const int64_t prefix = saePrefixTokens(engine.model(), activation, batch.images.size(2), batch.images.size(3));
        const at::Tensor x = saeEvaluationVectors(activation, result.positions, prefix).to(at::kFloat);
        if (x.size(1) != result.dIn)
            throw Error("'" + result.layer + "' gives vectors of " + std::to_string(x.size(1)) + " values, but '"
                + request.sae + "' reads " + std::to_string(result.dIn));
        const at::Tensor codes = sae.encode(x);
        const at::Tensor reconstruction = sae.decode(codes).to(x.device());
        const at::Tensor xd = x.to(at::kDouble);
        sumVectors = sumVectors.defined() ? sumVectors + xd.sum(0).cpu() : xd.sum(0).cpu();
        sumSquares += xd.pow(2).sum().item<double>();
        sumError += (xd - reconstruction.to(at::kDouble)).pow(2).sum().item<double>();
        const at::Tensor active = codes.gt(0);
        sumL0 += active.sum().item<double>();
        fires += active.sum(0).cpu().to(at::kLong);
        result.vectors += x.size(0);

        const ScoreOutput scores = findScores(out.values.front().second, request.setup.scores);
        if (scores.kind != OutputKind::Classes) {
            if (result.images == 0)
                result.warnings.push_back("the model's output (" + scores.described
                    + ") has no class scores [N, classes]: no downstream figures");
            result.images += batch.images.size(0);
            return;
        }
        const at::Tensor splicedValue = spliceVectors(activation, result.positions, reconstruction, prefix);
        const at::Tensor zeroValue
            = spliceVectors(activation, result.positions, at::zeros_like(reconstruction), prefix);
        const at::Tensor logClean = scores.scores.detach().to(at::kDouble).log_softmax(1).cpu();
        const auto logOf = [&](const at::Tensor& value) {
            const RunResult run = engine.run(edited, inputs, {value});
            return findScores(run.values.front().second, request.setup.scores)
                .scores.detach()
                .to(at::kDouble)
                .log_softmax(1)
                .cpu();
        };
        const at::Tensor logSpliced = logOf(splicedValue);
        const at::Tensor logZero = logOf(zeroValue);
        const at::Tensor predicted = logClean.argmax(1);
        at::Tensor targets = predicted;
        if (labelsFit) {
            const at::Tensor labels = at::tensor(batch.labels, at::kLong);
            labelsFit = labels.min().item<int64_t>() >= 0 && labels.max().item<int64_t>() < logClean.size(1);
            if (labelsFit)
                targets = labels;
        }
        const at::Tensor pClean = logClean.exp();
        const auto kl
            = [&](const at::Tensor& logOther) { return (pClean * (logClean - logOther)).sum(1).sum().item<double>(); };
        const auto crossEntropy
            = [&](const at::Tensor& logp) { return -logp.gather(1, targets.unsqueeze(1)).sum().item<double>(); };
        klSpliced += kl(logSpliced);
        klZero += kl(logZero);
        agreeSpliced += logSpliced.argmax(1).eq(predicted).sum().item<double>();
        agreeZero += logZero.argmax(1).eq(predicted).sum().item<double>();
        lossClean += crossEntropy(logClean);
        lossSpliced += crossEntropy(logSpliced);
        lossZero += crossEntropy(logZero);
        scored += batch.images.size(0);
        result.images += batch.images.size(0);
    });
    result.cancelled = loop.cancelled;
    result.failures = loop.failures;
    if (result.vectors == 0)
        throw Error(result.cancelled ? "cancelled before the first image was evaluated"
                                     : "no image of '" + request.images + "' could be read");
    const double n = static_cast<double>(result.vectors);
    const double total = sumSquares - sumVectors.pow(2).sum().item<double>() / n;
    result.fvu = total > 0.0 ? sumError / total : std::numeric_limits<double>::quiet_NaN();
    result.explainedVariance = 1.0 - result.fvu;
    result.meanSquaredError = sumError / n;
    result.l0 = sumL0 / n;
    result.fires = std::vector<int64_t>(fires.data_ptr<int64_t>(), fires.data_ptr<int64_t>() + fires.numel());
    for (const int64_t f : result.fires) {
        result.deadLatents += f == 0 ? 1 : 0;
        result.denseLatents += static_cast<double>(f) > request.denseAbove * n ? 1 : 0;
    }
    if (scored > 0) {
        result.downstream = true;
        result.lossAgainst = labelsFit ? "folder labels" : "clean predictions";
        // A KL divergence is never negative: what rounding leaves below zero is 0.
        result.klSpliced = std::max(0.0, meanOf(klSpliced, scored));
        result.klZero = std::max(0.0, meanOf(klZero, scored));
        result.top1Spliced = meanOf(agreeSpliced, scored);
        result.top1Zero = meanOf(agreeZero, scored);
        result.lossClean = meanOf(lossClean, scored);
        result.lossSpliced = meanOf(lossSpliced, scored);
        result.lossZero = meanOf(lossZero, scored);
        // A cost below a billionth of the loss is the rounding of float32 scores, not a cost: no share
        // of it is recovered (a model whose output ignores the layer, or a random one that scores
        // every class alike, would otherwise show any number).
        const double gap = result.lossZero - result.lossClean;
        const bool costs = gap > 1e-9 * std::max(1.0, std::abs(result.lossClean));
        result.lossRecovered
            = costs ? (result.lossZero - result.lossSpliced) / gap : std::numeric_limits<double>::quiet_NaN();
        if (!costs)
            result.warnings.push_back("zero-ablating '" + result.layer
                + "' costs the model nothing measurable here, so no share of the loss can be recovered");
    }
    return result;
}

SaeEvaluationResult SaeEvaluationAnalysis::run(AnalysisContext& context, const Request& request)
{
    auto engine = context.models.engine(context.model);
    return evaluateSparseAutoencoder(*engine, request, context.progress);
}

void writeSaeEvaluation(const std::string& path, const SaeEvaluationResult& result, const ExportManifest* manifest)
{
    const auto number = [](double value) -> nlohmann::json {
        return std::isfinite(value) ? nlohmann::json(value) : nlohmann::json(nullptr);
    };
    nlohmann::json frequencies = nlohmann::json::array();
    for (const int64_t f : result.fires)
        frequencies.push_back(static_cast<double>(f) / static_cast<double>(std::max<int64_t>(result.vectors, 1)));
    nlohmann::json out = {{"sae", result.sae}, {"layer", result.layer}, {"positions", result.positions},
        {"d_in", result.dIn}, {"d_sae", result.dSae}, {"k", result.k}, {"images", result.images},
        {"vectors", result.vectors}, {"fvu", number(result.fvu)},
        {"explained_variance", number(result.explainedVariance)}, {"mse", number(result.meanSquaredError)},
        {"l0", number(result.l0)}, {"dead_latents", result.deadLatents}, {"dense_latents", result.denseLatents},
        {"latent_frequency", frequencies}, {"cancelled", result.cancelled}, {"warnings", result.warnings}};
    if (result.downstream)
        out["downstream"] = {{"loss_against", result.lossAgainst}, {"kl_spliced", number(result.klSpliced)},
            {"kl_zero_ablated", number(result.klZero)}, {"top1_agreement_spliced", number(result.top1Spliced)},
            {"top1_agreement_zero_ablated", number(result.top1Zero)}, {"loss_clean", number(result.lossClean)},
            {"loss_spliced", number(result.lossSpliced)}, {"loss_zero_ablated", number(result.lossZero)},
            {"loss_recovered", number(result.lossRecovered)}};
    nlohmann::json failures = nlohmann::json::array();
    for (const auto& [file, why] : result.failures)
        failures.push_back({{"path", file}, {"error", why}});
    out["failures"] = failures;
    writeFileAtomically(path, out.dump(1) + "\n");
    if (manifest) {
        ExportManifest described = *manifest;
        described.settings.emplace_back("sae", result.sae);
        described.settings.emplace_back("layer", result.layer);
        described.settings.emplace_back("positions", result.positions);
        writeManifest(path, described);
    }
}

} // namespace torchscope
