#include "sae/sae_latents.h"

#include "common/atomic_file.h"
#include "common/error.h"
#include "export/manifest.h"
#include "graph/engine.h"
#include "graph/model_output.h"
#include "graph/request.h"
#include "imaging/image_folder.h"
#include "imaging/image_tensor.h"
#include "model/model.h"
#include "record/folder_run.h"
#include "sae/sae_evaluation.h"
#include "sae/sae_training.h"
#include "sae/sparse_autoencoder.h"

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace torchscope {

namespace {

constexpr int64_t HistogramBins = 48;
constexpr double HistogramLow = -3.0, HistogramHigh = 3.0; // log10 of the activation

FloatTensor toFloatTensor(const at::Tensor& t)
{
    const at::Tensor c = t.detach().to(at::kCPU, at::kFloat).contiguous();
    return FloatTensor{c.sizes().vec(), std::vector<float>(c.data_ptr<float>(), c.data_ptr<float>() + c.numel())};
}

} // namespace

SaeLatentsResult computeSaeLatents(Engine& engine, const SaeLatentsRequest& request, const ProgressCallback& progress)
{
    if (request.top < 1)
        throw Error("the top images per latent must be at least 1, got " + std::to_string(request.top));
    SaeOrigin origin;
    const SparseAutoencoder sae = SparseAutoencoder::load(request.sae, &origin, engine.model().device());
    SaeLatentsResult result;
    result.sae = request.sae;
    result.layer = request.layer.empty() ? origin.layer : request.layer;
    result.positions = origin.positions;
    result.labels = request.setup.labels;
    if (result.layer.empty())
        throw Error("'" + request.sae + "' does not name the layer it reads (cfg.json's metadata.hook_name): give one");
    const int64_t dSae = sae.config().dSae, dIn = sae.config().dIn;
    for (const int64_t latent : request.effectLatents)
        if (latent < 0 || latent >= dSae)
            throw Error("latent " + std::to_string(latent) + " is out of range: '" + request.sae + "' has "
                + std::to_string(dSae) + " latents");
    ImageFolder folder = ImageFolder::scan(request.images, request.setup.labels);
    if (folder.images.empty())
        throw Error("the folder '" + request.images + "' has no images");
    if (request.maxImages > 0 && static_cast<int64_t>(folder.images.size()) > request.maxImages)
        folder.images.resize(static_cast<size_t>(request.maxImages));
    for (const auto& image : folder.images)
        result.images.push_back(image.path);
    for (int64_t b = 0; b <= HistogramBins; ++b)
        result.histogramEdges.push_back(
            std::pow(10.0, HistogramLow + (HistogramHigh - HistogramLow) * static_cast<double>(b) / HistogramBins));

    Request clean;
    clean.grabOutput(result.layer);
    engine.prepare(clean);
    const int64_t top = request.top;
    const auto longs = at::TensorOptions().dtype(at::kLong);
    at::Tensor fires = at::zeros({dSae}, longs), sums = at::zeros({dSae}, at::kDouble);
    at::Tensor maxima = at::zeros({dSae}), histogram = at::zeros({dSae * HistogramBins}, longs);
    at::Tensor topValues = at::full({dSae, top}, -std::numeric_limits<float>::infinity());
    at::Tensor topImages = at::full({dSae, top}, -1, longs), topPositions = at::zeros({dSae, top}, longs);
    at::Tensor topMaps; // [d_sae, top, P]

    FolderRunOptions options;
    options.batchSize = std::max(1, request.imageBatch);
    const BatchStream stream = folderBatches(folder, request.setup.preprocessing, options);
    const auto report = [&](const Progress& p) {
        return !progress || progress(Progress{p.done, p.total, "images", {}});
    };
    const BatchLoop loop = forEachBatch(stream, report, [&](const ImageBatch& batch) {
        if (batch.error)
            std::rethrow_exception(batch.error);
        const RunResult out = engine.run(clean, forwardInputsFromBatch(engine.model(), batch.images));
        const at::Tensor activation = out.tensor(result.layer);
        const int64_t height = batch.images.size(2), width = batch.images.size(3);
        const int64_t prefix = saePrefixTokens(engine.model(), activation, height, width);
        const at::Tensor x = saeEvaluationVectors(activation, result.positions, prefix);
        if (x.size(1) != dIn)
            throw Error("'" + result.layer + "' gives vectors of " + std::to_string(x.size(1)) + " values, but '"
                + request.sae + "' reads " + std::to_string(dIn));
        const int64_t n = batch.images.size(0), positions = x.size(0) / n;
        if (result.gridHeight == 0)
            std::tie(result.gridHeight, result.gridWidth)
                = saeGrid(engine.model(), activation, result.positions, height, width);
        if (result.gridHeight * result.gridWidth != positions)
            throw Error("the images of '" + request.images + "' give '" + result.layer
                + "' a different number of positions from image to image; give them one size");
        const at::Tensor codes = sae.encode(x).cpu().reshape({n, positions, dSae});
        const at::Tensor active = codes.gt(0);
        fires += active.sum({0, 1});
        sums += codes.sum({0, 1}, false, at::kDouble);
        maxima = at::maximum(maxima, codes.amax({0, 1}));
        const at::Tensor activeValues = codes.masked_select(active);
        const at::Tensor latentOf = at::arange(dSae, longs).expand({n, positions, dSae}).masked_select(active);
        const at::Tensor bins
            = ((activeValues.log10() - HistogramLow) * (HistogramBins / (HistogramHigh - HistogramLow)))
                  .floor()
                  .clamp(0, HistogramBins - 1)
                  .to(at::kLong);
        histogram += at::bincount(latentOf * HistogramBins + bins, {}, dSae * HistogramBins);
        // The streamed top-k: this batch's images as candidates beside the kept ones.
        const auto [best, where] = codes.max(1); // [n, d_sae]
        const at::Tensor imageIndex = at::tensor(batch.indices, longs).unsqueeze(1).expand({n, dSae});
        if (!topMaps.defined())
            topMaps = at::zeros({dSae, top, positions});
        const at::Tensor candidates = at::cat({topValues, best.t()}, 1);
        const at::Tensor chosen = std::get<1>(candidates.topk(top, 1));
        topValues = candidates.gather(1, chosen);
        topImages = at::cat({topImages, imageIndex.t()}, 1).gather(1, chosen);
        topPositions = at::cat({topPositions, where.t()}, 1).gather(1, chosen);
        topMaps = at::cat({topMaps, codes.permute({2, 0, 1})}, 1)
                      .gather(1, chosen.unsqueeze(2).expand({dSae, top, positions}))
                      .contiguous();
        result.vectors += x.size(0);
    });
    result.cancelled = loop.cancelled;
    result.failures = loop.failures;
    if (result.vectors == 0)
        throw Error(result.cancelled ? "cancelled before the first image was read"
                                     : "no image of '" + request.images + "' could be read");

    const auto* firesData = fires.data_ptr<int64_t>();
    const auto* sumsData = sums.data_ptr<double>();
    const auto* maxData = maxima.data_ptr<float>();
    const auto* histogramData = histogram.data_ptr<int64_t>();
    const auto values = topValues.accessor<float, 2>();
    const auto imagesOf = topImages.accessor<int64_t, 2>();
    const auto positionsOf = topPositions.accessor<int64_t, 2>();
    result.latents.resize(static_cast<size_t>(dSae));
    for (int64_t i = 0; i < dSae; ++i) {
        SaeLatent& latent = result.latents[static_cast<size_t>(i)];
        latent.index = i;
        latent.fires = firesData[i];
        latent.frequency = static_cast<double>(firesData[i]) / static_cast<double>(result.vectors);
        latent.meanActive = firesData[i] > 0 ? sumsData[i] / static_cast<double>(firesData[i]) : 0.0;
        latent.maxActivation = maxData[i];
        latent.histogram.assign(histogramData + i * HistogramBins, histogramData + (i + 1) * HistogramBins);
        for (int64_t j = 0; j < top; ++j) {
            const float value = values[i][j];
            if (!(value > 0.0f))
                break;
            const int64_t position = positionsOf[i][j];
            latent.top.push_back(
                SaeLatentImage{imagesOf[i][j], value, position / result.gridWidth, position % result.gridWidth,
                    toFloatTensor(topMaps[i][j].reshape({result.gridHeight, result.gridWidth}))});
        }
    }
    if (result.cancelled)
        return result;

    // Effects: each chosen latent ablated on its top images.
    std::vector<int64_t> chosen = request.effectLatents;
    if (chosen.empty() && request.effects > 0) {
        std::vector<int64_t> order(static_cast<size_t>(dSae));
        std::iota(order.begin(), order.end(), int64_t{0});
        std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return firesData[a] > firesData[b]; });
        for (const int64_t i : order)
            if (firesData[i] > 0 && static_cast<int64_t>(chosen.size()) < request.effects)
                chosen.push_back(i);
    }
    Request replaced;
    replaced.edits.push_back(EditSpec::make(result.layer, EditKind::Replace));
    const at::Tensor decoder = sae.weights().at("W_dec");
    int64_t done = 0;
    for (const int64_t i : chosen) {
        SaeLatent& latent = result.latents[static_cast<size_t>(i)];
        if (progress && !progress(Progress{done++, static_cast<int64_t>(chosen.size()), "effects", {}})) {
            result.cancelled = true;
            break;
        }
        if (latent.top.empty())
            continue;
        std::vector<std::string> paths;
        for (const auto& image : latent.top)
            paths.push_back(result.images[static_cast<size_t>(image.image)]);
        const at::Tensor images = loadImageBatch(paths, request.setup.preprocessing);
        const auto inputs = forwardInputsFromBatch(engine.model(), images);
        const RunResult before = engine.run(clean, inputs);
        const ScoreOutput scores = findScores(before.values.front().second, request.setup.scores);
        if (scores.kind != OutputKind::Classes) {
            result.warnings.push_back(
                "the model's output (" + scores.described + ") has no class scores [N, classes]: no effects measured");
            break;
        }
        const at::Tensor activation = before.tensor(result.layer);
        const int64_t prefix = saePrefixTokens(engine.model(), activation, images.size(2), images.size(3));
        const at::Tensor x = saeEvaluationVectors(activation, result.positions, prefix).to(at::kFloat);
        const at::Tensor code = sae.encode(x).select(1, i).cpu().unsqueeze(1);
        const at::Tensor ablated = x.cpu() - code * decoder[i].unsqueeze(0);
        const RunResult after
            = engine.run(replaced, inputs, {spliceVectors(activation, result.positions, ablated, prefix)});
        const at::Tensor logitsBefore = scores.scores.detach().to(at::kCPU, at::kDouble);
        const at::Tensor logitsAfter
            = findScores(after.values.front().second, request.setup.scores).scores.detach().to(at::kCPU, at::kDouble);
        const at::Tensor predicted = logitsBefore.argmax(1, true);
        latent.hasEffect = true;
        latent.probabilityBefore = logitsBefore.softmax(1).gather(1, predicted).mean().item<double>();
        latent.probabilityAfter = logitsAfter.softmax(1).gather(1, predicted).mean().item<double>();
        const at::Tensor change = (logitsAfter - logitsBefore).mean(0).contiguous();
        latent.logitChange.assign(change.data_ptr<double>(), change.data_ptr<double>() + change.numel());
        latent.supports = change.argmin().item<int64_t>();
    }
    return result;
}

std::vector<double> saeDecoderDirection(const std::string& sae, int64_t latent)
{
    const SparseAutoencoder loaded = SparseAutoencoder::load(sae);
    if (latent < 0 || latent >= loaded.config().dSae)
        throw Error("latent " + std::to_string(latent) + " is out of range: '" + sae + "' has "
            + std::to_string(loaded.config().dSae) + " latents");
    const at::Tensor row = loaded.weights().at("W_dec")[latent].to(at::kDouble).contiguous();
    return {row.data_ptr<double>(), row.data_ptr<double>() + row.numel()};
}

SaeLatentsResult SaeLatentsAnalysis::run(AnalysisContext& context, const Request& request)
{
    auto engine = context.models.engine(context.model);
    return computeSaeLatents(*engine, request, context.progress);
}

void writeSaeLatents(const std::string& path, const SaeLatentsResult& result, const ExportManifest* manifest)
{
    nlohmann::json latents = nlohmann::json::array();
    for (const auto& latent : result.latents) {
        nlohmann::json top = nlohmann::json::array();
        for (const auto& image : latent.top) {
            nlohmann::json rows = nlohmann::json::array();
            const int64_t width = image.map.shape.size() == 2 ? image.map.shape[1] : 1;
            for (size_t r = 0; r * static_cast<size_t>(width) < image.map.values.size(); ++r)
                rows.push_back(std::vector<float>(image.map.values.begin() + static_cast<int64_t>(r) * width,
                    image.map.values.begin() + static_cast<int64_t>(r + 1) * width));
            top.push_back({{"image", image.image}, {"path", result.images[static_cast<size_t>(image.image)]},
                {"value", image.value}, {"row", image.row}, {"column", image.column}, {"map", rows}});
        }
        nlohmann::json entry = {{"latent", latent.index}, {"fires", latent.fires}, {"frequency", latent.frequency},
            {"mean_active", latent.meanActive}, {"max_activation", latent.maxActivation},
            {"histogram", latent.histogram}, {"top", top}};
        if (latent.hasEffect) {
            entry["effect"]
                = {{"probability_before", latent.probabilityBefore}, {"probability_after", latent.probabilityAfter},
                    {"supports", latent.supports}, {"logit_change", latent.logitChange}};
            if (latent.supports >= 0 && latent.supports < static_cast<int64_t>(result.labels.size()))
                entry["effect"]["supports_label"] = result.labels[static_cast<size_t>(latent.supports)];
        }
        latents.push_back(entry);
    }
    nlohmann::json failures = nlohmann::json::array();
    for (const auto& [file, why] : result.failures)
        failures.push_back({{"path", file}, {"error", why}});
    const nlohmann::json out = {{"sae", result.sae}, {"layer", result.layer}, {"positions", result.positions},
        {"vectors", result.vectors}, {"grid", {result.gridHeight, result.gridWidth}}, {"images", result.images},
        {"histogram_edges", result.histogramEdges}, {"latents", latents}, {"cancelled", result.cancelled},
        {"failures", failures}, {"warnings", result.warnings}};
    writeFileAtomically(path, out.dump(1) + "\n");
    if (manifest) {
        ExportManifest described = *manifest;
        described.settings.emplace_back("sae", result.sae);
        described.settings.emplace_back("layer", result.layer);
        writeManifest(path, described);
    }
}

} // namespace torchscope
