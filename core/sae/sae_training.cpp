#include "sae/sae_training.h"

#include "attention/attention_maps.h"
#include "common/atomic_file.h"
#include "common/error.h"
#include "common/memory_budget.h"
#include "distributed/cluster.h"
#include "distributed/lockstep.h"
#include "export/manifest.h"
#include "graph/engine.h"
#include "graph/request.h"
#include "imaging/image_folder.h"
#include "model/model.h"
#include "record/folder_run.h"
#include "sae/sparse_autoencoder.h"
#include "sae/vector_cache.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <optional>
#include <sstream>

namespace torchscope {

namespace {

// "sample:N" → N; 0 for the other choices. Throws for a choice that is none of them.
int64_t sampledPositions(const std::string& positions)
{
    if (positions == "all" || positions == "class" || positions == "patches")
        return 0;
    if (positions.rfind("sample:", 0) == 0) {
        try {
            size_t used = 0;
            const long long n = std::stoll(positions.substr(7), &used);
            if (used == positions.size() - 7 && n > 0)
                return n;
        } catch (const std::exception&) { }
    }
    throw Error("positions '" + positions + "': expected all, class, patches or sample:N (N ≥ 1)");
}

// N of each image's rows [N, P, D], chosen at random (all when it has no more).
at::Tensor sampleRows(const at::Tensor& perImage, int64_t n, at::Generator& generator)
{
    const int64_t available = perImage.size(1);
    if (n >= available)
        return perImage.reshape({-1, perImage.size(2)});
    std::vector<at::Tensor> picked;
    for (int64_t i = 0; i < perImage.size(0); ++i) {
        const at::Tensor order = at::randperm(available, generator, at::TensorOptions().dtype(at::kLong));
        picked.push_back(perImage[i].index_select(0, order.narrow(0, 0, n).to(perImage.device())));
    }
    return at::cat(picked);
}

// A layer's shuffle buffer: vectors in, shuffled batches out.
struct ShuffleBuffer {
    at::Tensor data; // [capacity, d]
    int64_t filled = 0;

    void add(const at::Tensor& vectors, const std::function<void(const at::Tensor&)>& trainOnHalf)
    {
        int64_t at = 0;
        while (at < vectors.size(0)) {
            const int64_t room = data.size(0) - filled;
            const int64_t n = std::min(room, vectors.size(0) - at);
            data.narrow(0, filled, n).copy_(vectors.narrow(0, at, n));
            filled += n;
            at += n;
            if (filled == data.size(0))
                trainOnHalf(data);
        }
    }
};

} // namespace

std::pair<int64_t, int64_t> saeTokenRange(int64_t tokens, const std::string& positions, int64_t prefix)
{
    if (prefix < 0) {
        const auto grid
            = static_cast<int64_t>(std::llround(std::sqrt(static_cast<double>(std::max<int64_t>(tokens - 1, 0)))));
        prefix = tokens > 1 && grid * grid == tokens - 1 ? 1 : 0;
    }
    if (positions == "class") {
        if (prefix < 1)
            throw Error("positions 'class': these " + std::to_string(tokens)
                + " tokens have no class token before their grid of patches");
        return {0, 1};
    }
    if (positions == "patches")
        return {prefix, tokens - prefix};
    return {0, tokens};
}

int64_t saePrefixTokens(const Model& model, const at::Tensor& activation, int64_t height, int64_t width)
{
    if (activation.dim() != 3)
        return -1;
    const TokenLayout layout = tokenLayout(model, activation.size(1), height, width, 0);
    return layout.spatial ? layout.prefix : -1;
}

at::Tensor activationVectors(const at::Tensor& activation, const std::string& positions, uint64_t seed, int64_t prefix)
{
    const int64_t sampled = sampledPositions(positions);
    at::Generator generator = at::make_generator<at::CPUGeneratorImpl>(seed);
    const at::Tensor a = activation.detach();
    if (a.dim() == 4) { // [N, C, H, W]: each position a C-vector
        if (positions == "class" || positions == "patches")
            throw Error("positions '" + positions
                + "' are a transformer's tokens; a convolution's map [N, C, H, W] has " + "all or sample:N");
        const at::Tensor perImage = a.permute({0, 2, 3, 1}).reshape({a.size(0), -1, a.size(1)});
        return sampled > 0 ? sampleRows(perImage, sampled, generator) : perImage.reshape({-1, a.size(1)});
    }
    if (a.dim() == 3) { // [N, T, D] tokens
        const auto [first, count] = saeTokenRange(a.size(1), positions, prefix);
        const at::Tensor tokens = a.narrow(1, first, count);
        return sampled > 0 ? sampleRows(tokens, sampled, generator) : tokens.reshape({-1, a.size(2)});
    }
    if (a.dim() == 2) {
        if (positions != "all")
            throw Error(
                "a layer's output [N, C] has one vector per image: positions must be all, not '" + positions + "'");
        return a;
    }
    throw Error("a layer's output of " + std::to_string(a.dim()) + " dimensions has no positions to take vectors from "
        + "(expected [N, C, H, W], tokens [N, T, D] or [N, C])");
}

std::string saeFolderFor(const std::string& out, const std::string& layer)
{
    std::string name = layer;
    std::replace(name.begin(), name.end(), '/', '_');
    return (std::filesystem::path(out) / name).string();
}

namespace {

constexpr const char* RunFile = "training.json";
constexpr const char* LogHeader = "step,vectors,loss,mse,aux_loss,fvu,l0,dead_fraction\n";

std::string logLine(int64_t step, const SaeStepMetrics& m)
{
    std::ostringstream line;
    line.precision(9);
    line << step << ',' << m.vectors << ',' << m.loss << ',' << m.mse << ',' << m.auxLoss << ',' << m.fvu << ',' << m.l0
         << ',' << m.deadFraction << '\n';
    return line.str();
}

// What a run was asked, as training.json holds it: a resume must ask the same.
nlohmann::json runDescription(
    const SaeTrainingRequest& request, const std::string& modelHash, const std::vector<std::string>& sizes)
{
    nlohmann::json asked = {{"layers", request.layers},
        {"images", std::filesystem::absolute(request.images).lexically_normal()}, {"positions", request.positions},
        {"model_sha256", modelHash}, {"batch", request.batch}, {"seed", request.seed}};
    asked["epochs"] = request.epochs;
    asked["sizes"] = sizes;
    return asked;
}

// An SAE the run trains: a layer (its index in the request) at one size.
struct SaeEntry {
    size_t layer = 0;
    int64_t expansion = 0; // d_sae = expansion × d_in, unless latents is set
    int64_t latents = 0;
    std::string size; // "x16" or "4096"
    std::string folder;
};

// Every layer at every size asked: the layers' SAEs in the request's order, each layer's sizes together.
std::vector<SaeEntry> saeEntries(const SaeTrainingRequest& request)
{
    std::vector<std::pair<int64_t, int64_t>> sizes; // expansion, latents
    if (!request.latentCounts.empty())
        for (const int64_t n : request.latentCounts)
            sizes.emplace_back(0, n);
    else if (request.latents > 0)
        sizes.emplace_back(0, request.latents);
    else if (!request.expansions.empty())
        for (const int64_t x : request.expansions)
            sizes.emplace_back(x, 0);
    else
        sizes.emplace_back(request.expansion, 0);
    for (const auto& [expansion, latents] : sizes) {
        if (latents == 0 && expansion < 1)
            throw Error("the expansion must be at least 1, got " + std::to_string(expansion));
        if (expansion == 0 && latents < 1)
            throw Error("the latents must be at least 1, got " + std::to_string(latents));
    }
    std::vector<SaeEntry> entries;
    for (size_t i = 0; i < request.layers.size(); ++i) {
        for (size_t j = 0; j < i; ++j)
            if (request.layers[j] == request.layers[i])
                throw Error("the layer '" + request.layers[i]
                    + "' is asked twice; several SAEs of one layer are several sizes (--expansion 8,16)");
        for (const auto& [expansion, latents] : sizes) {
            SaeEntry entry{i, expansion, latents,
                latents > 0 ? std::to_string(latents) : "x" + std::to_string(expansion),
                saeFolderFor(request.out, request.layers[i])};
            if (sizes.size() > 1)
                entry.folder += "-" + entry.size;
            for (const auto& other : entries)
                if (other.layer == i && other.size == entry.size)
                    throw Error("the size " + entry.size + " is asked twice");
            entries.push_back(entry);
        }
    }
    return entries;
}

} // namespace

SaeTrainingResult trainSparseAutoencoders(
    Engine& engine, const SaeTrainingRequest& request, const ProgressCallback& progress, Lockstep* lockstep)
{
    if (request.layers.empty())
        throw Error("no layer to train a sparse autoencoder on");
    sampledPositions(request.positions); // an unknown choice throws now
    if (request.batch < 1)
        throw Error("the training batch must be at least 1 vector, got " + std::to_string(request.batch));
    if (request.out.empty())
        throw Error("no folder to save the sparse autoencoders in");
    if (request.epochs < 1)
        throw Error("the epochs must be at least 1, got " + std::to_string(request.epochs));
    if (request.epochs > 1 && request.cache.empty())
        throw Error(std::to_string(request.epochs)
            + " epochs read the vectors again from a cache on disk: give a folder for it (--cache)");
    Cluster* ranks = lockstep && lockstep->cluster().size() > 1 ? &lockstep->cluster() : nullptr;
    const bool distributed = ranks != nullptr;
    if (distributed && !request.cache.empty())
        throw Error("a cache (--cache) is written by one process: run its first pass without ranks, then train "
                    "from it");
    if (distributed && request.batch % ranks->size() != 0)
        throw Error("the training batch (" + std::to_string(request.batch) + " vectors) must split evenly over the "
            + std::to_string(ranks->size()) + " ranks");
    ImageFolder folder = ImageFolder::scan(request.images, request.setup.labels);
    if (folder.images.empty())
        throw Error("the folder '" + request.images + "' has no images");
    const auto totalImages = static_cast<int64_t>(folder.images.size());
    const std::string modelHash = sha256OfFile(engine.model().path());
    const std::vector<SaeEntry> entries = saeEntries(request);
    std::vector<std::string> sizeNames;
    for (const auto& entry : entries)
        if (entry.layer == 0)
            sizeNames.push_back(entry.size);
    const nlohmann::json asked = runDescription(request, modelHash, sizeNames);
    const std::string runPath = (std::filesystem::path(request.out) / RunFile).string();

    SaeTrainingResult result;
    struct LayerState {
        std::unique_ptr<SparseAutoencoder> sae;
        ShuffleBuffer buffer;
        std::string log; // training_log.csv's text
        int64_t prefix = -1; // tokens before the patch grid, from the first batch
        at::Generator shuffle;
        std::vector<at::Tensor> ready; // with ranks: shuffled vectors waiting for a step of all ranks
        int64_t readyRows = 0;
    };
    std::vector<LayerState> states(entries.size());
    for (const auto& entry : entries)
        result.layers.push_back(SaeTrainingLayer{request.layers[entry.layer], entry.folder, 0, 0, {}});

    // The cache: read when a complete pass of this run's vectors is there, else written as they come.
    std::optional<VectorCache> cache;
    bool cacheComplete = false;
    if (!request.cache.empty()) {
        cache.emplace();
        cache->folder = request.cache;
        cache->layers = request.layers;
        cache->description = {{"layers", request.layers},
            {"images", std::filesystem::absolute(request.images).lexically_normal()}, {"positions", request.positions},
            {"model_sha256", modelHash}, {"seed", request.seed}, {"image_batch", std::max(1, request.imageBatch)}};
        const int64_t memory = request.memoryBytes > 0 ? request.memoryBytes : defaultMemoryBudget();
        cache->shardBytes = std::clamp<int64_t>(memory / 8, int64_t{64} << 10, int64_t{64} << 20);
        const nlohmann::json state = readJsonFile((std::filesystem::path(request.cache) / VectorCache::File).string());
        const bool ours = cache->open(state);
        cacheComplete = ours && state.value("complete", false);
        if (!state.is_null() && !ours && !request.resume)
            result.warnings.push_back("the cache '" + request.cache
                + "' held the vectors of another model, layers, folder, positions or seed: written anew");
    }

    int64_t epoch = 1; // the pass under way, from 1
    int64_t shardsDone = 0; // of a cached epoch
    bool finishedBefore = false; // a resumed run that had ended: nothing more to train
    if (request.resume) {
        const nlohmann::json before = readJsonFile(runPath);
        if (before.is_null())
            throw Error("nothing to resume in '" + request.out + "': it has no " + RunFile);
        for (const auto& [key, value] : asked.items()) {
            // A run written before epochs and sizes were kept had one of each.
            nlohmann::json was = before.contains(key) ? before[key] : nlohmann::json();
            if (was.is_null() && key == "epochs")
                was = 1;
            if (was.is_null() && key == "sizes" && value.size() == 1)
                was = value;
            if (was != value)
                throw Error("'" + runPath + "' was a run with " + key + " "
                    + (was.is_null() ? std::string("unsaid") : was.dump()) + ", not " + value.dump()
                    + ": resume it as it was asked, or train into another folder");
        }
        finishedBefore = before.value("finished", false);
        result.imagesBefore = before.value("images_done", int64_t{0});
        epoch = before.value("epoch", int64_t{1});
        shardsDone = before.value("shards_done", int64_t{0});
        if (result.imagesBefore < 0 || result.imagesBefore > totalImages)
            throw Error("'" + runPath + "' says " + std::to_string(result.imagesBefore) + " images were done, but '"
                + request.images + "' has " + std::to_string(totalImages));
        if (epoch < 1 || epoch > request.epochs || shardsDone < 0)
            throw Error("'" + runPath + "' says it was in epoch " + std::to_string(epoch) + " of "
                + std::to_string(request.epochs) + " after " + std::to_string(shardsDone) + " shards");
        if (cache && !cacheComplete && epoch == 1 && result.imagesBefore > 0 && result.imagesBefore < totalImages) {
            // The forward passes go on writing the cache from where both stopped.
            const nlohmann::json state
                = readJsonFile((std::filesystem::path(request.cache) / VectorCache::File).string());
            int64_t cached = 0;
            if (cache->open(state))
                for (const int64_t n : cache->shardImages)
                    cached += n;
            if (cached != result.imagesBefore)
                throw Error("the cache '" + request.cache + "' holds the vectors of " + std::to_string(cached)
                    + " images, but '" + runPath + "' says " + std::to_string(result.imagesBefore)
                    + " were done: resume with the cache it was trained with, or none");
        }
        for (size_t i = 0; i < states.size(); ++i) {
            const std::string where = result.layers[i].folder;
            if (!std::filesystem::exists(std::filesystem::path(where) / "trainer_state.json"))
                continue; // that layer had no batch yet
            states[i].sae
                = std::make_unique<SparseAutoencoder>(SparseAutoencoder::resume(where, engine.model().device()));
            result.layers[i].dIn = states[i].sae->config().dIn;
            result.layers[i].dSae = states[i].sae->config().dSae;
            states[i].log = readTextFile((std::filesystem::path(where) / "training_log.csv").string());
            const nlohmann::json cfg = readJsonFile((std::filesystem::path(where) / "cfg.json").string());
            if (cfg.is_object() && cfg.contains("metadata") && cfg["metadata"].contains("prefix_tokens"))
                states[i].prefix = cfg["metadata"]["prefix_tokens"].get<int64_t>();
        }
        folder.images.erase(folder.images.begin(), folder.images.begin() + result.imagesBefore);
    }
    if (request.resume && cacheComplete && epoch == 1 && result.imagesBefore > 0 && result.imagesBefore < totalImages) {
        // The model's pass had ended (its cache is complete) after the last checkpoint: the first
        // epoch goes on from the cache at the shard after the images done (a checkpoint writes
        // the cache's shards up to it, so a shard ends there).
        int64_t images = 0;
        shardsDone = 0;
        while (shardsDone < cache->shards() && images < result.imagesBefore)
            images += cache->shardImages[static_cast<size_t>(shardsDone++)];
        if (images != result.imagesBefore)
            throw Error("the cache '" + request.cache + "' has no shard that ends at the "
                + std::to_string(result.imagesBefore) + " images '" + runPath + "' says were done");
    }
    const bool forwardPass = !finishedBefore && epoch == 1 && !cacheComplete && result.imagesBefore < totalImages;
    const bool writingCache = cache && !cacheComplete && forwardPass;
    if (cache && !cacheComplete && !forwardPass && !finishedBefore)
        throw Error("'" + runPath + "' was past its first epoch, but the cache '" + request.cache
            + "' does not hold a complete pass of its vectors: resume with the cache it was trained with");
    if (cacheComplete)
        for (size_t i = 0; i < states.size(); ++i)
            if (states[i].prefix < 0)
                states[i].prefix = cache->prefixes[entries[i].layer];
    if (writingCache && result.imagesBefore == 0)
        cache->start();

    const int64_t memory = request.memoryBytes > 0 ? request.memoryBytes : defaultMemoryBudget();
    // A shuffle generator per SAE: each one's batches the same whichever way the vectors come.
    for (size_t i = 0; i < states.size(); ++i)
        states[i].shuffle = at::make_generator<at::CPUGeneratorImpl>(request.seed + 1 + 7919 * static_cast<uint64_t>(i)
            + static_cast<uint64_t>(result.imagesBefore + 1000003 * (epoch - 1) + shardsDone));
    const auto enough = [&](size_t i) {
        return request.vectors > 0 && states[i].sae && states[i].sae->steps() * request.batch >= request.vectors;
    };
    const auto everyEnough = [&] {
        for (size_t i = 0; i < states.size(); ++i)
            if (!enough(i))
                return false;
        return true;
    };
    int64_t imagesDone = result.imagesBefore;
    bool finished = false;
    // The images the cache has counted in this call: every image the pass has consumed, those of
    // batches that could not be read at all included, so its shards end where the images done do.
    int64_t cacheImages = 0;
    const auto countCacheImages = [&] {
        if (writingCache && imagesDone - result.imagesBefore > cacheImages) {
            cache->imagesAdded(imagesDone - result.imagesBefore - cacheImages);
            cacheImages = imagesDone - result.imagesBefore;
        }
    };
    const auto save = [&] { // every SAE with its checkpoint and log, then training.json: consistent at each step
        if (distributed && ranks->rank() != 0)
            return; // every rank holds the same SAEs: rank 0 writes them
        if (writingCache) {
            countCacheImages();
            cache->flush();
            cache->write(imagesDone == totalImages);
        }
        for (size_t i = 0; i < states.size(); ++i) {
            if (!states[i].sae || states[i].sae->steps() == 0)
                continue;
            const std::string& where = result.layers[i].folder;
            states[i].sae->save(
                where, SaeOrigin{request.layers[entries[i].layer], request.positions, modelHash, states[i].prefix, {}});
            states[i].sae->saveCheckpoint(where);
            writeFileAtomically((std::filesystem::path(where) / "training_log.csv").string(), states[i].log);
        }
        nlohmann::json state = asked;
        state["images_done"] = imagesDone;
        state["images_total"] = totalImages;
        state["epoch"] = epoch;
        state["shards_done"] = shardsDone;
        state["finished"] = finished || everyEnough();
        writeFileAtomically(runPath, state.dump(2) + "\n");
    };
    std::error_code madeError;
    std::filesystem::create_directories(request.out, madeError);
    if (madeError)
        throw Error("cannot make the folder '" + request.out + "': " + madeError.message());

    // With ranks, each trains on its part of every step's batch (request.batch / ranks vectors);
    // the steps are the ranks' together (SparseAutoencoder::trainStep).
    const int64_t stepRows = distributed ? request.batch / ranks->size() : request.batch;
    const auto trainOn = [&](size_t i, const at::Tensor& vectors) {
        LayerState& state = states[i];
        for (int64_t at = 0; at + stepRows <= vectors.size(0) && !enough(i); at += stepRows) {
            const SaeStepMetrics m = state.sae->trainStep(vectors.narrow(0, at, stepRows), ranks);
            if (state.log.empty())
                state.log = LogHeader;
            state.log += logLine(state.sae->steps(), m);
            result.layers[i].steps.push_back(m);
        }
    };
    // With ranks, the shuffled vectors wait in `ready` until every rank has a part for a step: the
    // ranks agree on the steps they all can take (each rank's full parts, the fewest of any rank).
    const auto readyParts = [&](size_t i) { return states[i].readyRows / stepRows; };
    const auto trainTogether = [&](size_t i, int64_t parts) {
        LayerState& state = states[i];
        if (parts <= 0 || !state.sae)
            return;
        const at::Tensor all = at::cat(state.ready);
        trainOn(i, all.narrow(0, 0, parts * stepRows));
        state.ready = {all.narrow(0, parts * stepRows, all.size(0) - parts * stepRows)};
        state.readyRows = all.size(0) - parts * stepRows;
    };
    const auto agreeAndTrain = [&](const std::vector<StepResult>& reports) {
        for (size_t i = 0; i < states.size(); ++i) {
            int64_t parts = std::numeric_limits<int64_t>::max();
            for (const auto& report : reports)
                parts = std::min(parts, nlohmann::json::parse(report.agreement).at(i).get<int64_t>());
            trainTogether(i, parts);
        }
    };
    const auto readyText = [&] {
        nlohmann::json parts = nlohmann::json::array();
        for (size_t i = 0; i < states.size(); ++i)
            parts.push_back(states[i].sae ? readyParts(i) : 0);
        return parts.dump();
    };
    const auto shuffled = [&](size_t i, const at::Tensor& data, int64_t n) {
        const at::Tensor order
            = at::randperm(n, states[i].shuffle, at::TensorOptions().dtype(at::kLong)).to(data.device());
        return data.narrow(0, 0, n).index_select(0, order);
    };
    // A layer's vectors into its shuffle buffer (the SAE made at the first; `planned`: the vectors
    // the whole run will feed it, for the learning rate's decay).
    const auto feed = [&](size_t i, const at::Tensor& vectors, int64_t planned) {
        LayerState& state = states[i];
        if (vectors.size(0) == 0)
            return;
        if (!state.sae) {
            SaeConfig config;
            config.dIn = vectors.size(1);
            config.dSae = entries[i].latents > 0 ? entries[i].latents : entries[i].expansion * config.dIn;
            config.k = request.k;
            config.batchTopK = request.batchTopK;
            config.matryoshkaWidths = request.matryoshkaWidths;
            config.geometricMedianInit = request.geometricMedianInit;
            config.learningRate = request.learningRate;
            config.seed = request.seed;
            if (request.vectors > 0)
                planned = std::min(planned, request.vectors);
            config.totalSteps = planned / request.batch;
            // The warm-up: 1,000 steps, or a twentieth of a shorter run.
            config.warmupSteps = std::clamp<int64_t>(config.totalSteps / 20, 1, config.warmupSteps);
            state.sae = std::make_unique<SparseAutoencoder>(config, engine.model().device());
            result.layers[i].dIn = config.dIn;
            result.layers[i].dSae = config.dSae;
        }
        if (!state.buffer.data.defined()) {
            const int64_t dIn = state.sae->config().dIn;
            const int64_t perLayer = memory / static_cast<int64_t>(entries.size());
            // 64 training batches (SAELens's n_batches_in_buffer), less where the memory cap says so.
            const int64_t capacity = std::max<int64_t>(2 * request.batch,
                std::min<int64_t>(64 * request.batch, perLayer / (dIn * static_cast<int64_t>(sizeof(float)))));
            state.buffer.data = at::empty({capacity, dIn}, vectors.options().dtype(at::kFloat));
        }
        state.buffer.add(vectors.to(state.buffer.data.device(), at::kFloat), [&](const at::Tensor& data) {
            const int64_t half = data.size(0) / 2;
            const at::Tensor mixed = shuffled(i, data, data.size(0));
            if (distributed) {
                state.ready.push_back(mixed.narrow(0, 0, half).clone());
                state.readyRows += half;
            } else {
                trainOn(i, mixed.narrow(0, 0, half));
            }
            data.narrow(0, 0, data.size(0) - half).copy_(mixed.narrow(0, half, data.size(0) - half));
            state.buffer.filled = data.size(0) - half;
        });
    };
    const auto firstValues = [&] {
        std::vector<double> values;
        if (!result.layers[0].steps.empty()) {
            const SaeStepMetrics& m = result.layers[0].steps.back();
            values = {m.loss, m.fvu, m.l0, m.deadFraction, static_cast<double>(m.vectors)};
        }
        return values;
    };
    const int64_t progressTotal = totalImages * request.epochs;
    int64_t lastCheckpoint = states[0].sae ? states[0].sae->steps() : 0;
    const auto checkpointDue = [&] {
        const int64_t steps = states[0].sae ? states[0].sae->steps() : 0;
        if (request.checkpointSteps > 0 && steps - lastCheckpoint >= request.checkpointSteps) {
            save();
            lastCheckpoint = steps;
        }
    };

    bool cancelled = false;
    result.epochs = epoch;
    if (forwardPass) {
        Request run;
        for (const auto& layer : request.layers)
            run.grabs.push_back(GrabSpec::parse(layer));
        if (distributed) {
            lockstep->orFail([&] { engine.prepare(run); });
            lockstep->agree({});
        } else {
            engine.prepare(run);
        }
        FolderRunOptions options;
        options.batchSize = std::max(1, request.imageBatch);
        if (distributed)
            options.shard = Shard{ranks->rank(), ranks->size()};
        const BatchStream stream = folderBatches(folder, request.setup.preprocessing, options);
        // A batch's vectors into the buffers (and the cache); `batchNumber` seeds sample:N.
        const auto takeBatch = [&](const ImageBatch& batch, int64_t batchNumber) {
            if (batch.error)
                std::rethrow_exception(batch.error);
            if (!batch.images.defined() || batch.images.size(0) == 0)
                return;
            const RunResult out = engine.run(run, forwardInputsFromBatch(engine.model(), batch.images));
            for (size_t j = 0; j < request.layers.size(); ++j) {
                const at::Tensor activation = out.tensor(request.layers[j]);
                const int64_t prefix
                    = saePrefixTokens(engine.model(), activation, batch.images.size(2), batch.images.size(3));
                const int64_t tokensPrefix = activation.dim() == 3
                    ? (prefix >= 0 ? prefix : saeTokenRange(activation.size(1), "patches", -1).first)
                    : -1;
                if (writingCache && activation.dim() == 3)
                    cache->prefixes[j] = tokensPrefix;
                const at::Tensor vectors = activationVectors(
                    activation, request.positions, request.seed + static_cast<uint64_t>(batchNumber), prefix);
                // The run's length: the folder's vectors at this image's count per image, each epoch.
                const int64_t perImage = vectors.size(0) / std::max<int64_t>(batch.images.size(0), 1);
                for (size_t i = 0; i < entries.size(); ++i) // every size of the layer, from the same vectors
                    if (entries[i].layer == j) {
                        if (activation.dim() == 3)
                            states[i].prefix = tokensPrefix;
                        feed(i, vectors, perImage * totalImages * request.epochs);
                    }
                if (writingCache) {
                    cache->add(j, vectors);
                    if (cache->perImage[j] == 0)
                        cache->perImage[j] = perImage;
                }
            }
        };
        if (distributed) {
            // In lockstep, as the recorders (distributed/distributed_recording.h): each step every
            // rank takes its next batch, says what it did and how many parts it has ready, and all
            // train the steps all can take; a stop or a failure on one rank ends every rank there.
            bool stopAsked = false;
            for (int64_t local = 0;; ++local) {
                StepResult mine;
                mine.stop = stopAsked;
                if (!stopAsked)
                    lockstep->orFail(
                        [&] {
                            const std::optional<ImageBatch> batch = stream.next();
                            if (!batch)
                                return;
                            mine.hadBatch = true;
                            mine.images = static_cast<int64_t>(batch->indices.size() + batch->failures.size());
                            mine.failures = batch->failures;
                            takeBatch(*batch, result.imagesBefore + options.shard.globalBatch(local));
                        },
                        stream.stop);
                mine.agreement = readyText();
                const std::vector<StepResult> reports = lockstep->exchange(mine);
                bool anyBatch = false, anyStop = false;
                for (const auto& report : reports) {
                    anyBatch = anyBatch || report.hadBatch;
                    anyStop = anyStop || report.stop;
                }
                if (anyStop) {
                    cancelled = true;
                    stream.stop();
                    break;
                }
                if (!anyBatch)
                    break;
                agreeAndTrain(reports);
                for (const auto& report : reports) {
                    imagesDone += report.images;
                    result.failures.insert(result.failures.end(), report.failures.begin(), report.failures.end());
                }
                checkpointDue();
                if (everyEnough())
                    break;
                stopAsked = progress && !progress(Progress{imagesDone, progressTotal, "training", firstValues()});
            }
            result.images = imagesDone - result.imagesBefore;
            if (!cancelled) {
                imagesDone = totalImages;
                epoch = 2;
            }
        } else {
            int64_t batchNumber = result.imagesBefore;
            int64_t reported = 0; // images the stream has handed over (failures included), before this batch
            const auto report = [&](const Progress& p) {
                reported = p.done;
                imagesDone = result.imagesBefore + p.done;
                if (everyEnough())
                    return false; // every SAE has its vectors
                return !progress
                    || progress(Progress{result.imagesBefore + p.done, progressTotal, "training", firstValues()});
            };
            const BatchLoop loop = forEachBatch(stream, report, [&](const ImageBatch& batch) {
                takeBatch(batch, batchNumber);
                ++batchNumber;
                const auto consumed = static_cast<int64_t>(batch.indices.size() + batch.failures.size());
                imagesDone = result.imagesBefore + reported + consumed;
                countCacheImages();
                checkpointDue();
            });
            result.failures = loop.failures;
            cancelled = loop.cancelled && !everyEnough();
            result.images = imagesDone - result.imagesBefore;
            if (!cancelled && !everyEnough()) {
                imagesDone = totalImages;
                if (writingCache) { // the pass is complete: the later epochs read it
                    countCacheImages();
                    cache->flush();
                    cache->write(true);
                }
                epoch = 2;
                shardsDone = 0;
            }
        }
    } else {
        result.fromCache = result.imagesBefore == 0 && epoch == 1;
        imagesDone = totalImages;
    }

    // The epochs from the cache: its shards in an order shuffled per epoch, through the same buffers.
    if (cache && !finishedBefore && !cancelled && !everyEnough() && epoch <= request.epochs) {
        if (!cacheComplete) { // just written by the pass above
            const nlohmann::json state
                = readJsonFile((std::filesystem::path(request.cache) / VectorCache::File).string());
            cache->open(state);
        }
        const int64_t shards = cache->shards();
        for (; epoch <= request.epochs && !cancelled && !everyEnough(); ++epoch, shardsDone = 0) {
            result.epochs = epoch;
            // The first epoch in the folder's order, as the forward passes would give them (so a
            // run from the cache equals one from the model); the later ones shuffled.
            at::Generator order
                = at::make_generator<at::CPUGeneratorImpl>(request.seed + 7919 * static_cast<uint64_t>(epoch));
            const at::Tensor permutation = epoch == 1
                ? at::arange(shards, at::TensorOptions().dtype(at::kLong))
                : at::randperm(shards, order, at::TensorOptions().dtype(at::kLong));
            int64_t imagesThisEpoch = 0;
            for (int64_t j = 0; j < shardsDone; ++j)
                imagesThisEpoch += cache->shardImages[permutation[j].item<int64_t>()];
            while (shardsDone < shards && !everyEnough()) {
                const int64_t shard = permutation[shardsDone].item<int64_t>();
                for (size_t j = 0; j < request.layers.size(); ++j) {
                    int64_t dIn = 0;
                    for (size_t i = 0; i < entries.size(); ++i)
                        if (entries[i].layer == j && states[i].sae)
                            dIn = states[i].sae->config().dIn;
                    const at::Tensor vectors = cache->read(j, shard, dIn);
                    // The run's length as the model's pass planned it (unreadable images included).
                    const int64_t perPass
                        = cache->perImage[j] > 0 ? cache->perImage[j] * totalImages : cache->vectors[j];
                    for (size_t i = 0; i < entries.size(); ++i)
                        if (entries[i].layer == j)
                            feed(i, vectors, perPass * request.epochs);
                }
                imagesThisEpoch += cache->shardImages[shard];
                ++shardsDone; // before a checkpoint: it holds this shard
                checkpointDue();
                if (progress
                    && !progress(Progress{
                        (epoch - 1) * totalImages + imagesThisEpoch, progressTotal, "training", firstValues()})) {
                    cancelled = !everyEnough();
                    break;
                }
            }
            if (cancelled)
                break;
        }
        if (!cancelled)
            shardsDone = shards;
    }
    epoch = std::min(epoch, request.epochs); // training.json's epoch: the last, once all are done
    result.cancelled = cancelled;
    if (!result.cancelled) { // the rest of each buffer, shuffled
        for (size_t i = 0; i < states.size(); ++i) {
            if (!states[i].sae || states[i].buffer.filled == 0)
                continue;
            const at::Tensor rest = shuffled(i, states[i].buffer.data, states[i].buffer.filled);
            if (distributed) {
                states[i].ready.push_back(rest.clone());
                states[i].readyRows += rest.size(0);
            } else {
                trainOn(i, rest);
            }
        }
        if (distributed) { // the steps every rank has a part for; the ranks' other vectors are left out
            StepResult mine;
            mine.agreement = readyText();
            agreeAndTrain(lockstep->exchange(mine));
        }
        finished = true;
    }
    if (!distributed || ranks->rank() == 0)
        save();
    for (size_t i = 0; i < states.size(); ++i)
        if (!states[i].sae || states[i].sae->steps() == 0) {
            result.warnings.push_back("'" + request.layers[entries[i].layer] + "'"
                + (entries.size() > request.layers.size() ? " at " + entries[i].size : std::string())
                + ": no SAE trained (fewer vectors than one batch of " + std::to_string(request.batch) + ")");
            result.layers[i].folder.clear();
        }
    return result;
}

SaeTrainingResult SaeTrainingAnalysis::run(AnalysisContext& context, const Request& request)
{
    auto engine = context.models.engine(context.model);
    int64_t lastVectors = -1;
    return trainSparseAutoencoders(*engine, request, [&](const Progress& p) {
        if (p.values.size() >= 5 && static_cast<int64_t>(p.values[4]) != lastVectors) {
            lastVectors = static_cast<int64_t>(p.values[4]);
            SaeTrainingPart part{request.layers.front(), p.done, p.total, {}};
            part.metrics.loss = p.values[0];
            part.metrics.fvu = p.values[1];
            part.metrics.l0 = p.values[2];
            part.metrics.deadFraction = p.values[3];
            part.metrics.vectors = lastVectors;
            context.deliver(part);
        }
        return context.reportProgress(p);
    });
}

} // namespace torchscope
