#include "sae/sae_training.h"

#include "common/error.h"
#include "common/memory_budget.h"
#include "export/manifest.h"
#include "graph/engine.h"
#include "graph/request.h"
#include "imaging/image_folder.h"
#include "model/model.h"
#include "record/folder_run.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <memory>

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

at::Tensor activationVectors(const at::Tensor& activation, const std::string& positions, uint64_t seed)
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
        const int64_t t = a.size(1);
        const auto grid
            = static_cast<int64_t>(std::llround(std::sqrt(static_cast<double>(std::max<int64_t>(t - 1, 0)))));
        const bool classToken = t > 1 && grid * grid == t - 1;
        if (positions == "class") {
            if (!classToken)
                throw Error("positions 'class': these " + std::to_string(t) + " tokens are not a class token and a "
                    + "square grid of patches");
            return a.select(1, 0).contiguous();
        }
        const at::Tensor tokens = positions == "patches" && classToken ? a.narrow(1, 1, t - 1) : a;
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

SaeTrainingResult trainSparseAutoencoders(
    Engine& engine, const SaeTrainingRequest& request, const ProgressCallback& progress)
{
    if (request.layers.empty())
        throw Error("no layer to train a sparse autoencoder on");
    sampledPositions(request.positions); // an unknown choice throws now
    if (request.batch < 1)
        throw Error("the training batch must be at least 1 vector, got " + std::to_string(request.batch));
    if (request.out.empty())
        throw Error("no folder to save the sparse autoencoders in");
    const ImageFolder folder = ImageFolder::scan(request.images, request.setup.labels);
    if (folder.images.empty())
        throw Error("the folder '" + request.images + "' has no images");

    Request run;
    for (const auto& layer : request.layers)
        run.grabs.push_back(GrabSpec::parse(layer));
    engine.prepare(run);

    SaeTrainingResult result;
    struct LayerState {
        std::unique_ptr<SparseAutoencoder> sae;
        ShuffleBuffer buffer;
        int64_t trained = 0;
    };
    std::vector<LayerState> states(request.layers.size());
    for (size_t i = 0; i < request.layers.size(); ++i)
        result.layers.push_back(SaeTrainingLayer{request.layers[i], {}, 0, 0, {}});
    const int64_t memory = request.memoryBytes > 0 ? request.memoryBytes : defaultMemoryBudget();
    at::Generator shuffle = at::make_generator<at::CPUGeneratorImpl>(request.seed + 1);
    const auto enough = [&](size_t i) { return request.vectors > 0 && states[i].trained >= request.vectors; };
    const auto trainOn = [&](size_t i, const at::Tensor& vectors) {
        LayerState& state = states[i];
        for (int64_t at = 0; at + request.batch <= vectors.size(0) && !enough(i); at += request.batch) {
            result.layers[i].steps.push_back(state.sae->trainStep(vectors.narrow(0, at, request.batch)));
            state.trained += request.batch;
        }
    };
    const auto shuffled = [&](const at::Tensor& data, int64_t n) {
        const at::Tensor order = at::randperm(n, shuffle, at::TensorOptions().dtype(at::kLong)).to(data.device());
        return data.narrow(0, 0, n).index_select(0, order);
    };

    FolderRunOptions options;
    options.batchSize = std::max(1, request.imageBatch);
    const BatchStream stream = folderBatches(folder, request.setup.preprocessing, options);
    int64_t batchNumber = 0;
    const auto report = [&](const Progress& p) {
        std::vector<double> values;
        if (!result.layers.empty() && !result.layers[0].steps.empty()) {
            const SaeStepMetrics& m = result.layers[0].steps.back();
            values = {m.loss, m.fvu, m.l0, m.deadFraction};
        }
        bool done = true;
        for (size_t i = 0; i < states.size(); ++i)
            done = done && enough(i);
        if (done)
            return false; // every SAE has its vectors
        return !progress || progress(Progress{p.done, p.total, "training", values});
    };
    const BatchLoop loop = forEachBatch(stream, report, [&](const ImageBatch& batch) {
        if (batch.error)
            std::rethrow_exception(batch.error);
        const RunResult out = engine.run(run, forwardInputsFromBatch(engine.model(), batch.images));
        for (size_t i = 0; i < request.layers.size(); ++i) {
            const at::Tensor vectors = activationVectors(
                out.tensor(request.layers[i]), request.positions, request.seed + static_cast<uint64_t>(batchNumber));
            LayerState& state = states[i];
            if (!state.sae) {
                SaeConfig config;
                config.dIn = vectors.size(1);
                config.dSae = request.latents > 0 ? request.latents : request.expansion * config.dIn;
                config.k = request.k;
                config.learningRate = request.learningRate;
                config.seed = request.seed;
                state.sae = std::make_unique<SparseAutoencoder>(config, vectors.device().str());
                result.layers[i].dIn = config.dIn;
                result.layers[i].dSae = config.dSae;
                const int64_t perLayer = memory / static_cast<int64_t>(request.layers.size());
                const int64_t capacity = std::max<int64_t>(
                    2 * request.batch, perLayer / (config.dIn * static_cast<int64_t>(sizeof(float))));
                state.buffer.data = at::empty({capacity, config.dIn}, vectors.options().dtype(at::kFloat));
            }
            state.buffer.add(vectors.to(at::kFloat), [&](const at::Tensor& data) {
                const int64_t half = data.size(0) / 2;
                const at::Tensor mixed = shuffled(data, data.size(0));
                trainOn(i, mixed.narrow(0, 0, half));
                data.narrow(0, 0, data.size(0) - half).copy_(mixed.narrow(0, half, data.size(0) - half));
                state.buffer.filled = data.size(0) - half;
            });
        }
        ++batchNumber;
    });
    result.images = loop.samples;
    result.failures = loop.failures;
    bool everyDone = true;
    for (size_t i = 0; i < states.size(); ++i)
        everyDone = everyDone && enough(i);
    result.cancelled = loop.cancelled && !everyDone;
    if (!result.cancelled) // the rest of each buffer, shuffled
        for (size_t i = 0; i < states.size(); ++i)
            if (states[i].sae && states[i].buffer.filled > 0)
                trainOn(i, shuffled(states[i].buffer.data, states[i].buffer.filled));

    const std::string modelHash = sha256OfFile(engine.model().path());
    for (size_t i = 0; i < states.size(); ++i) {
        if (!states[i].sae || result.layers[i].steps.empty()) {
            result.warnings.push_back("'" + request.layers[i] + "': no SAE trained (fewer vectors than one batch of "
                + std::to_string(request.batch) + ")");
            continue;
        }
        std::string name = request.layers[i];
        std::replace(name.begin(), name.end(), '/', '_');
        const std::string where = (std::filesystem::path(request.out) / name).string();
        states[i].sae->save(where, SaeOrigin{request.layers[i], request.positions, modelHash, {}});
        result.layers[i].folder = where;
    }
    return result;
}

} // namespace torchscope
