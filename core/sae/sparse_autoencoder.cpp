#include "sae/sparse_autoencoder.h"

#include "common/atomic_file.h"
#include "common/error.h"
#include "distributed/cluster.h"
#include "export/array_files.h"
#include "export/read_tensors.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <nlohmann/json.hpp>
#include <torch/optim/adam.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

namespace torchscope {

namespace {

constexpr const char* WeightsFile = "sae_weights.safetensors";
constexpr const char* ConfigFile = "cfg.json";
constexpr const char* StateTensorsFile = "trainer_state.safetensors";
constexpr const char* StateFile = "trainer_state.json";
constexpr const char* ParameterNames[] = {"W_enc", "W_dec", "b_enc", "b_dec"};

void checkConfig(const SaeConfig& c)
{
    if (c.dIn < 1 || c.dSae < 1)
        throw Error("a sparse autoencoder needs d_in and d_sae of at least 1 (got d_in " + std::to_string(c.dIn)
            + ", d_sae " + std::to_string(c.dSae) + ")");
    if (c.k < 1 || c.k > c.dSae)
        throw Error("k (" + std::to_string(c.k) + ") must be between 1 and d_sae (" + std::to_string(c.dSae) + ")");
    if (!(c.learningRate > 0.0) || !std::isfinite(c.learningRate))
        throw Error("the learning rate must be a positive number (got " + std::to_string(c.learningRate) + ")");
    int64_t previous = 0;
    for (const int64_t width : c.matryoshkaWidths) {
        if (width <= previous || width >= c.dSae)
            throw Error("Matryoshka widths must rise from at least 1 and stay below d_sae (" + std::to_string(c.dSae)
                + "); got " + std::to_string(width) + (previous > 0 ? " after " + std::to_string(previous) : ""));
        previous = width;
    }
}

// Σ_rows values_i · W[indices_i]: the decoder over the k active rows only.
at::Tensor sparseDecode(const at::Tensor& weight, const at::Tensor& indices, const at::Tensor& values)
{
    // As F.embedding_bag takes indices [B, k]: flat, with a bag starting every k.
    const int64_t rows = indices.size(0), k = indices.size(1);
    const at::Tensor offsets = at::arange(0, rows * k, k, indices.options());
    return std::get<0>(at::embedding_bag(weight, indices.flatten(), offsets, /*scale_grad_by_freq=*/false,
        /*mode=*/0, /*sparse=*/false, values.flatten()));
}

// Every rank's rows [n_r, d] in rank order (the rows themselves without ranks).
at::Tensor gatherRows(Cluster* ranks, const at::Tensor& rows)
{
    if (!ranks)
        return rows;
    const at::Tensor mine = rows.to(at::kCPU, at::kFloat).contiguous();
    const int64_t width = mine.size(1);
    const std::vector<std::string> all = ranks->allGather(std::string(
        reinterpret_cast<const char*>(mine.data_ptr<float>()), static_cast<size_t>(mine.numel()) * sizeof(float)));
    std::vector<at::Tensor> parts;
    for (const std::string& bytes : all) {
        const auto count = static_cast<int64_t>(bytes.size() / sizeof(float));
        at::Tensor part = at::empty({count / std::max<int64_t>(width, 1), width}, at::kFloat);
        std::memcpy(part.data_ptr<float>(), bytes.data(), static_cast<size_t>(part.numel()) * sizeof(float));
        parts.push_back(part);
    }
    return at::cat(parts).to(rows.device(), rows.scalar_type());
}

// The learning rate's factor at a step: the warm-up's ramp, then the decay's over the last part.
double rateFactor(const SaeConfig& c, int64_t step)
{
    double factor = 1.0;
    if (c.warmupSteps > 0)
        factor = std::min(factor, static_cast<double>(step + 1) / static_cast<double>(c.warmupSteps));
    const auto decaySteps = static_cast<int64_t>(static_cast<double>(c.totalSteps) * c.decayFraction);
    if (c.totalSteps > 0 && decaySteps > 0 && step >= c.totalSteps - decaySteps)
        factor = std::min(factor, static_cast<double>(c.totalSteps - step) / static_cast<double>(decaySteps));
    return std::max(factor, 0.0);
}

} // namespace

at::Tensor geometricMedian(const at::Tensor& points, int64_t iterations, double tolerance)
{
    if (points.dim() != 2 || points.size(0) == 0)
        throw Error("the geometric median takes points [N, D] with N ≥ 1");
    const at::Tensor p = points.to(at::kDouble);
    at::Tensor median = p.mean(0);
    for (int64_t i = 0; i < iterations; ++i) {
        // Weiszfeld: the mean weighted by each point's inverse distance (a point at the estimate
        // counts as at distance 1e-12, as SAELens's compute_geometric_median clamps it).
        const at::Tensor weights = (p - median).norm(2, {1}).clamp_min(1e-12).reciprocal();
        const at::Tensor next = (weights.unsqueeze(1) * p).sum(0) / weights.sum();
        const double moved = (next - median).norm().item<double>();
        median = next;
        if (moved <= tolerance * (1.0 + median.norm().item<double>()))
            break;
    }
    return median.to(points.scalar_type());
}

struct SparseAutoencoder::State {
    SaeConfig config;
    c10::Device device = c10::kCPU;
    at::Tensor encoderWeight, decoderWeight, encoderBias, decoderBias; // W_enc [d_in, d_sae], W_dec [d_sae, d_in]
    double scale = 1.0; // x̃ = x · scale
    bool initialised = false;
    std::unique_ptr<torch::optim::Adam> optimiser;
    at::Tensor sinceFired; // [d_sae] vectors since each latent last fired
    at::Tensor batchThreshold; // BatchTopK's running threshold for inference
    int64_t steps = 0;
    int64_t vectors = 0;

    at::Tensor scaled(const at::Tensor& x) const
    {
        if (x.dim() != 2 || x.size(1) != config.dIn)
            throw Error("the SAE reads vectors [N, " + std::to_string(config.dIn) + "]; got "
                + (x.dim() == 2 ? "[" + std::to_string(x.size(0)) + ", " + std::to_string(x.size(1)) + "]"
                                : std::to_string(x.dim()) + " dimensions"));
        return x.to(device, at::kFloat) * scale;
    }
    at::Tensor preActivation(const at::Tensor& xs) const
    {
        return at::addmm(encoderBias, xs - decoderBias, encoderWeight);
    }
    // BatchTopK: the k · B largest activations over the step's batch of `rows` (on every rank:
    // the largest of each rank's own largest).
    at::Tensor batchCodes(const at::Tensor& pre, int64_t rows, Cluster* ranks) const
    {
        const at::Tensor positive = pre.relu();
        const int64_t keep = config.k * rows;
        at::Tensor largest = std::get<0>(positive.flatten().topk(std::min(keep, positive.numel())));
        largest = gatherRows(ranks, largest.unsqueeze(1)).flatten();
        const at::Tensor threshold = std::get<0>(largest.topk(std::min(keep, largest.numel()))).min();
        return positive * positive.ge(threshold).logical_and(positive.gt(0)).to(positive.dtype());
    }
};

SparseAutoencoder::SparseAutoencoder(const SaeConfig& config, const std::string& device)
    : state_(std::make_unique<State>())
{
    checkConfig(config);
    State& s = *state_;
    s.config = config;
    if (s.config.auxK <= 0)
        s.config.auxK = std::max<int64_t>(1, config.dIn / 2);
    try {
        s.device = c10::Device(device);
    } catch (const c10::Error&) {
        throw Error("unknown device '" + device + "' (cpu, cuda, cuda:N)");
    }
    at::Generator generator = at::make_generator<at::CPUGeneratorImpl>(config.seed);
    at::Tensor decoder = at::randn({config.dSae, config.dIn}, generator, at::kFloat);
    decoder = decoder / decoder.norm(2, {1}, true);
    const auto options = at::TensorOptions().dtype(at::kFloat).device(s.device);
    s.encoderWeight = decoder.t().contiguous().to(s.device).requires_grad_(true);
    s.decoderWeight = decoder.to(s.device).clone().requires_grad_(true);
    s.encoderBias = at::zeros({config.dSae}, options).requires_grad_(true);
    s.decoderBias = at::zeros({config.dIn}, options).requires_grad_(true);
    s.sinceFired = at::zeros({config.dSae}, options.dtype(at::kLong));
    s.batchThreshold = at::zeros({}, options);
    s.optimiser = std::make_unique<torch::optim::Adam>(
        std::vector<at::Tensor>{s.encoderWeight, s.decoderWeight, s.encoderBias, s.decoderBias},
        torch::optim::AdamOptions(config.learningRate));
}

SparseAutoencoder::~SparseAutoencoder() = default;
SparseAutoencoder::SparseAutoencoder(SparseAutoencoder&&) noexcept = default;
SparseAutoencoder& SparseAutoencoder::operator=(SparseAutoencoder&&) noexcept = default;

const SaeConfig& SparseAutoencoder::config() const
{
    return state_->config;
}
bool SparseAutoencoder::initialised() const
{
    return state_->initialised;
}

SaeStepMetrics SparseAutoencoder::trainStep(const at::Tensor& vectors, Cluster* ranks)
{
    State& s = *state_;
    const SaeConfig& c = s.config;
    if (vectors.dim() == 2 && vectors.size(0) == 0)
        throw Error("an empty batch of vectors");
    if (ranks && ranks->size() < 2)
        ranks = nullptr;
    s.scaled(vectors); // the width check
    const int64_t batch = vectors.size(0);
    // With ranks, each holds its part of the step's batch, all parts of one size: the step is the
    // one a single process would take on their concatenation in rank order.
    int64_t rows = batch; // the whole step's
    if (ranks) {
        double counts[2] = {static_cast<double>(batch), static_cast<double>(batch) * static_cast<double>(batch)};
        ranks->allReduceSum(counts, 2);
        rows = static_cast<int64_t>(counts[0]);
        if (counts[1] * static_cast<double>(ranks->size()) != counts[0] * counts[0])
            throw Error("the ranks' parts of a training step differ in size (this rank's: " + std::to_string(batch)
                + " vectors, all: " + std::to_string(rows) + ")");
    }
    if (!s.initialised) {
        const at::Tensor x = gatherRows(ranks, vectors.to(s.device, at::kFloat));
        const double meanNorm = x.norm(2, {1}).mean().item<double>();
        if (!(meanNorm > 0.0) || !std::isfinite(meanNorm))
            throw Error("the first batch's vectors are all zero or not finite: no scale to start from");
        s.scale = std::sqrt(static_cast<double>(c.dIn)) / meanNorm;
        const at::NoGradGuard noGrad;
        s.decoderBias.copy_(c.geometricMedianInit ? geometricMedian(x * s.scale) : (x * s.scale).mean(0));
        s.initialised = true;
    }
    const at::Tensor xs = s.scaled(vectors);
    const at::Tensor pre = s.preActivation(xs);
    at::Tensor reconstruction, fired;
    at::Tensor inner = at::zeros({}, xs.options()); // Matryoshka's prefixes' squared errors
    double l0 = 0.0;
    if (c.batchTopK) {
        const at::Tensor codes = s.batchCodes(pre, rows, ranks);
        reconstruction = at::addmm(s.decoderBias, codes, s.decoderWeight);
        for (const int64_t width : c.matryoshkaWidths) {
            const at::Tensor prefix
                = at::addmm(s.decoderBias, codes.narrow(1, 0, width), s.decoderWeight.narrow(0, 0, width));
            inner = inner + (xs - prefix).pow(2).sum(-1).mean();
        }
        const at::Tensor active = codes.detach().gt(0);
        fired = active.any(0);
        l0 = active.sum(1).to(at::kDouble).mean().item<double>();
        const at::NoGradGuard noGrad;
        const at::Tensor positive = codes.detach().masked_select(active);
        // Inference's threshold: the running mean of the batches' smallest kept value.
        at::Tensor smallest = positive.numel() > 0 ? positive.min().reshape({1}) : at::empty({0}, positive.options());
        smallest = gatherRows(ranks, smallest.unsqueeze(1)).flatten();
        if (smallest.numel() > 0)
            s.batchThreshold.mul_(0.99).add_(smallest.min() * 0.01);
    } else {
        auto [values, indices] = pre.topk(c.k, -1);
        values = values.relu();
        reconstruction = sparseDecode(s.decoderWeight, indices, values) + s.decoderBias;
        for (const int64_t width : c.matryoshkaWidths) {
            const at::Tensor prefix
                = sparseDecode(s.decoderWeight, indices, values * indices.lt(width).to(values.dtype())) + s.decoderBias;
            inner = inner + (xs - prefix).pow(2).sum(-1).mean();
        }
        const at::Tensor active = values.detach().gt(0);
        fired = at::zeros({c.dSae}, active.options())
                    .index_put_({indices.masked_select(active)}, at::scalar_tensor(true, active.options()));
        l0 = active.sum(1).to(at::kDouble).mean().item<double>();
    }
    const at::Tensor residual = xs - reconstruction;
    const at::Tensor mse = residual.pow(2).sum(-1).mean();

    if (ranks) { // a latent fired in the step when it fired on any rank
        at::Tensor counts = fired.to(at::kCPU, at::kFloat).contiguous();
        ranks->allReduceSum(counts.data_ptr<float>(), counts.numel());
        fired = counts.gt(0).to(fired.device());
    }
    s.sinceFired.add_(rows).masked_fill_(fired, 0);
    const at::Tensor dead = s.sinceFired.ge(c.deadAfterVectors);
    const int64_t deadCount = dead.sum().item<int64_t>();
    at::Tensor aux = at::zeros({}, mse.options());
    if (deadCount > 0) {
        const int64_t kAux = std::min(c.auxK, deadCount);
        const at::Tensor masked
            = pre.masked_fill(dead.logical_not().unsqueeze(0), -std::numeric_limits<float>::infinity());
        auto [values, indices] = masked.topk(kAux, -1);
        const at::Tensor auxReconstruction = sparseDecode(s.decoderWeight, indices, values.relu());
        const double weight = std::min(1.0, static_cast<double>(deadCount) / static_cast<double>(c.auxK));
        aux = (auxReconstruction - residual.detach()).pow(2).sum(-1).mean() * weight;
    }
    const at::Tensor loss = mse + inner + aux * c.auxCoefficient;

    s.optimiser->zero_grad();
    loss.backward();
    {
        const at::NoGradGuard noGrad;
        if (ranks) // each rank's loss is the mean over its equal part: the step's gradient is their mean
            for (const at::Tensor& parameter : {s.encoderWeight, s.decoderWeight, s.encoderBias, s.decoderBias}) {
                at::Tensor g = parameter.grad();
                if (!g.defined())
                    continue;
                at::Tensor summed = g.to(at::kCPU).contiguous();
                ranks->allReduceSum(summed.data_ptr<float>(), summed.numel());
                g.copy_(summed.div_(static_cast<double>(ranks->size())));
            }
        // The decoder's rows stay unit-norm: the gradient's component along each row is removed
        // before the step, and the rows are renormalised after it.
        if (s.decoderWeight.grad().defined()) {
            at::Tensor g = s.decoderWeight.grad();
            g.sub_((g * s.decoderWeight).sum(1, true) * s.decoderWeight);
        }
        for (auto& group : s.optimiser->param_groups())
            static_cast<torch::optim::AdamOptions&>(group.options()).lr(c.learningRate * rateFactor(c, s.steps));
        s.optimiser->step();
        s.decoderWeight.div_(s.decoderWeight.norm(2, {1}, true).clamp_min(1e-12));
    }
    ++s.steps;
    s.vectors += rows;

    SaeStepMetrics m;
    m.mse = mse.item<double>();
    m.auxLoss = aux.item<double>();
    m.matryoshkaMse = inner.item<double>();
    m.loss = loss.item<double>();
    if (!ranks) {
        const at::Tensor centred = xs - xs.mean(0, true);
        m.fvu = residual.detach().pow(2).sum().item<double>() / std::max(centred.pow(2).sum().item<double>(), 1e-30);
        m.l0 = l0;
    } else { // the step's figures from every rank's sums: Σ‖r‖², Σ‖x̃‖², Σx̃, and the means of equal parts
        const at::Tensor x = xs.to(at::kCPU, at::kDouble);
        at::Tensor sums
            = at::cat({at::tensor({residual.detach().to(at::kDouble).pow(2).sum().item<double>(),
                                      x.pow(2).sum().item<double>(), m.mse, m.auxLoss, m.matryoshkaMse, m.loss, l0},
                           at::kDouble),
                          x.sum(0)})
                  .contiguous();
        ranks->allReduceSum(sums.data_ptr<double>(), sums.numel());
        const double n = static_cast<double>(rows), parts = static_cast<double>(ranks->size());
        const at::Tensor mean = sums.narrow(0, 7, c.dIn) / n;
        const double centred = sums[1].item<double>() - n * mean.pow(2).sum().item<double>();
        m.fvu = sums[0].item<double>() / std::max(centred, 1e-30);
        m.mse = sums[2].item<double>() / parts;
        m.auxLoss = sums[3].item<double>() / parts;
        m.matryoshkaMse = sums[4].item<double>() / parts;
        m.loss = sums[5].item<double>() / parts;
        m.l0 = sums[6].item<double>() / parts;
    }
    m.deadFraction = static_cast<double>(deadCount) / static_cast<double>(c.dSae);
    m.vectors = s.vectors;
    return m;
}

at::Tensor SparseAutoencoder::encode(const at::Tensor& vectors) const
{
    const State& s = *state_;
    const at::NoGradGuard noGrad;
    const at::Tensor pre = s.preActivation(s.scaled(vectors));
    if (s.config.batchTopK) {
        const at::Tensor positive = pre.relu();
        return positive * positive.gt(s.batchThreshold).to(positive.dtype());
    }
    auto [values, indices] = pre.topk(s.config.k, -1);
    return at::zeros_like(pre).scatter_(1, indices, values.relu());
}

at::Tensor SparseAutoencoder::decode(const at::Tensor& codes) const
{
    const State& s = *state_;
    if (codes.dim() != 2 || codes.size(1) != s.config.dSae)
        throw Error("the SAE decodes codes [N, " + std::to_string(s.config.dSae) + "]");
    const at::NoGradGuard noGrad;
    return at::addmm(s.decoderBias, codes.to(s.device, at::kFloat), s.decoderWeight) / s.scale;
}

at::Tensor SparseAutoencoder::reconstruct(const at::Tensor& vectors) const
{
    return decode(encode(vectors));
}

std::map<std::string, at::Tensor> SparseAutoencoder::weights() const
{
    const State& s = *state_;
    const at::NoGradGuard noGrad;
    std::map<std::string, at::Tensor> out{{"W_enc", (s.encoderWeight * s.scale).cpu().contiguous()},
        {"W_dec", (s.decoderWeight / s.scale).cpu().contiguous()}, {"b_enc", s.encoderBias.detach().cpu().clone()},
        {"b_dec", (s.decoderBias / s.scale).cpu().contiguous()}};
    if (s.config.batchTopK) // the codes' threshold at inference (SAELens's JumpReLU form of BatchTopK)
        out["threshold"] = s.batchThreshold.cpu().reshape({1});
    return out;
}

void SparseAutoencoder::save(const std::string& folder, const SaeOrigin& origin) const
{
    const SaeConfig& c = state_->config;
    std::error_code error;
    std::filesystem::create_directories(folder, error);
    if (error)
        throw Error("cannot make the folder '" + folder + "' for the SAE: " + error.message());
    const auto w = weights();
    NamedTensors tensors;
    for (const auto& [key, tensor] : w)
        tensors.emplace_back(key, tensor);
    writeSafetensors((std::filesystem::path(folder) / WeightsFile).string(), tensors);
    nlohmann::json metadata = {{"hook_name", origin.layer}, {"positions", origin.positions},
        {"model_sha256", origin.modelSha256}, {"writer", "TorchScope"}};
    if (origin.prefixTokens >= 0)
        metadata["prefix_tokens"] = origin.prefixTokens;
    for (const auto& [key, value] : origin.extra)
        metadata[key] = value;
    nlohmann::json cfg
        = {{"architecture", c.batchTopK ? "batchtopk" : "topk"}, {"d_in", c.dIn}, {"d_sae", c.dSae}, {"k", c.k},
            {"dtype", "float32"}, {"device", "cpu"}, {"apply_b_dec_to_input", true}, {"normalize_activations", "none"},
            {"activation_fn", "topk"}, {"activation_fn_kwargs", {{"k", c.k}}}, {"metadata", metadata}};
    if (!c.matryoshkaWidths.empty()) // how it was trained; its codes are those of its architecture
        cfg["matryoshka_widths"] = c.matryoshkaWidths;
    writeFileAtomically((std::filesystem::path(folder) / ConfigFile).string(), cfg.dump(2) + "\n");
}

int64_t SparseAutoencoder::steps() const
{
    return state_->steps;
}
int64_t SparseAutoencoder::vectorsSeen() const
{
    return state_->vectors;
}
void SparseAutoencoder::setTotalSteps(int64_t steps)
{
    state_->config.totalSteps = std::max<int64_t>(steps, 0);
}

void SparseAutoencoder::saveCheckpoint(const std::string& folder) const
{
    const State& s = *state_;
    const SaeConfig& c = s.config;
    std::error_code error;
    std::filesystem::create_directories(folder, error);
    if (error)
        throw Error("cannot make the folder '" + folder + "' for the SAE's checkpoint: " + error.message());
    const at::NoGradGuard noGrad;
    const std::vector<at::Tensor> parameters{s.encoderWeight, s.decoderWeight, s.encoderBias, s.decoderBias};
    NamedTensors tensors;
    int64_t adamStep = 0;
    for (size_t i = 0; i < parameters.size(); ++i) {
        tensors.emplace_back(ParameterNames[i], parameters[i].detach().cpu().contiguous());
        const auto found = s.optimiser->state().find(parameters[i].unsafeGetTensorImpl());
        if (found == s.optimiser->state().end())
            continue; // no step yet
        const auto& adam = static_cast<const torch::optim::AdamParamState&>(*found->second);
        tensors.emplace_back(std::string("exp_avg.") + ParameterNames[i], adam.exp_avg().cpu().contiguous());
        tensors.emplace_back(std::string("exp_avg_sq.") + ParameterNames[i], adam.exp_avg_sq().cpu().contiguous());
        adamStep = adam.step();
    }
    tensors.emplace_back("since_fired", s.sinceFired.cpu().contiguous());
    tensors.emplace_back("batch_threshold", s.batchThreshold.cpu().reshape({1}).contiguous());
    writeSafetensors((std::filesystem::path(folder) / StateTensorsFile).string(), tensors);
    const nlohmann::json state = {{"d_in", c.dIn}, {"d_sae", c.dSae}, {"k", c.k}, {"batch_topk", c.batchTopK},
        {"learning_rate", c.learningRate}, {"warmup_steps", c.warmupSteps}, {"total_steps", c.totalSteps},
        {"decay_fraction", c.decayFraction}, {"aux_coefficient", c.auxCoefficient}, {"aux_k", c.auxK},
        {"dead_after_vectors", c.deadAfterVectors}, {"seed", c.seed}, {"matryoshka_widths", c.matryoshkaWidths},
        {"geometric_median_init", c.geometricMedianInit}, {"scale", s.scale}, {"initialised", s.initialised},
        {"steps", s.steps}, {"vectors", s.vectors}, {"adam_step", adamStep}};
    writeFileAtomically((std::filesystem::path(folder) / StateFile).string(), state.dump(2) + "\n");
}

SparseAutoencoder SparseAutoencoder::resume(const std::string& folder, const std::string& device)
{
    const std::string statePath = (std::filesystem::path(folder) / StateFile).string();
    const std::string tensorsPath = (std::filesystem::path(folder) / StateTensorsFile).string();
    std::ifstream in(statePath);
    if (!in)
        throw Error("'" + folder + "' holds no training checkpoint: it has no " + StateFile);
    nlohmann::json state;
    try {
        state = nlohmann::json::parse(in);
    } catch (const nlohmann::json::exception& e) {
        throw Error("'" + statePath + "' is not JSON: " + e.what());
    }
    const auto field = [&](const char* key) -> const nlohmann::json& {
        if (!state.contains(key) || state[key].is_null() || state[key].is_object() || state[key].is_array())
            throw Error("'" + statePath + "' has no '" + key + "'");
        return state[key];
    };
    SaeConfig c;
    try {
        c.dIn = field("d_in").get<int64_t>();
        c.dSae = field("d_sae").get<int64_t>();
        c.k = field("k").get<int64_t>();
        c.batchTopK = field("batch_topk").get<bool>();
        c.learningRate = field("learning_rate").get<double>();
        c.warmupSteps = field("warmup_steps").get<int64_t>();
        c.totalSteps = field("total_steps").get<int64_t>();
        c.decayFraction = field("decay_fraction").get<double>();
        c.auxCoefficient = field("aux_coefficient").get<double>();
        c.auxK = field("aux_k").get<int64_t>();
        c.deadAfterVectors = field("dead_after_vectors").get<int64_t>();
        c.seed = field("seed").get<uint64_t>();
        c.matryoshkaWidths = state.value("matryoshka_widths", std::vector<int64_t>{});
        c.geometricMedianInit = state.value("geometric_median_init", false);
    } catch (const nlohmann::json::exception& e) {
        throw Error("'" + statePath + "': " + e.what());
    }
    SparseAutoencoder sae(c, device);
    State& s = *sae.state_;
    const auto tensors = readNamedTensors(tensorsPath);
    const auto take = [&](const std::string& key, const at::Tensor& like) {
        const auto found = tensors.find(key);
        if (found == tensors.end())
            throw Error("'" + tensorsPath + "' has no " + key);
        if (found->second.sizes() != like.sizes() || found->second.scalar_type() != like.scalar_type()) {
            std::ostringstream message;
            message << "'" << tensorsPath << "': " << key << " is " << found->second.sizes() << " "
                    << found->second.scalar_type() << ", but " << StateFile << " makes it " << like.sizes() << " "
                    << like.scalar_type();
            throw Error(message.str());
        }
        return found->second.to(s.device);
    };
    try {
        s.scale = field("scale").get<double>();
        s.initialised = field("initialised").get<bool>();
        s.steps = field("steps").get<int64_t>();
        s.vectors = field("vectors").get<int64_t>();
        const auto adamStep = field("adam_step").get<int64_t>();
        const at::NoGradGuard noGrad;
        const std::vector<at::Tensor> parameters{s.encoderWeight, s.decoderWeight, s.encoderBias, s.decoderBias};
        for (size_t i = 0; i < parameters.size(); ++i) {
            parameters[i].copy_(take(ParameterNames[i], parameters[i]));
            if (adamStep == 0)
                continue;
            auto adam = std::make_unique<torch::optim::AdamParamState>();
            adam->step(adamStep);
            adam->exp_avg(take(std::string("exp_avg.") + ParameterNames[i], parameters[i]).clone());
            adam->exp_avg_sq(take(std::string("exp_avg_sq.") + ParameterNames[i], parameters[i]).clone());
            s.optimiser->state()[parameters[i].unsafeGetTensorImpl()] = std::move(adam);
        }
        s.sinceFired.copy_(take("since_fired", s.sinceFired));
        s.batchThreshold.copy_(take("batch_threshold", s.batchThreshold.reshape({1})).reshape({}));
    } catch (const nlohmann::json::exception& e) {
        throw Error("'" + statePath + "': " + e.what());
    }
    if (!(s.scale > 0.0) || !std::isfinite(s.scale))
        throw Error("'" + statePath + "': the input scale " + std::to_string(s.scale) + " is not a positive number");
    return sae;
}

SparseAutoencoder SparseAutoencoder::load(const std::string& folder, SaeOrigin* origin, const std::string& device)
{
    const std::string cfgPath = (std::filesystem::path(folder) / ConfigFile).string();
    const std::string weightsPath = (std::filesystem::path(folder) / WeightsFile).string();
    std::ifstream in(cfgPath);
    if (!in)
        throw Error("'" + folder + "' is not a saved SAE: it has no " + ConfigFile);
    nlohmann::json cfg;
    try {
        cfg = nlohmann::json::parse(in);
    } catch (const nlohmann::json::exception& e) {
        throw Error("'" + cfgPath + "' is not JSON: " + e.what());
    }
    const auto integer = [&](const char* key) -> int64_t {
        if (!cfg.contains(key) || !cfg[key].is_number_integer())
            throw Error("'" + cfgPath + "' has no whole number '" + key + "'");
        return cfg[key].get<int64_t>();
    };
    SaeConfig c;
    c.dIn = integer("d_in");
    c.dSae = integer("d_sae");
    const std::string architecture = cfg.value("architecture", cfg.value("activation_fn", std::string("topk")));
    if (architecture != "topk" && architecture != "batchtopk")
        throw Error("'" + cfgPath + "' is a '" + architecture + "' SAE; TorchScope reads TopK and BatchTopK SAEs");
    c.batchTopK = architecture == "batchtopk";
    if (cfg.contains("k"))
        c.k = integer("k");
    else if (cfg.contains("activation_fn_kwargs") && cfg["activation_fn_kwargs"].contains("k"))
        c.k = cfg["activation_fn_kwargs"]["k"].get<int64_t>();
    else
        throw Error("'" + cfgPath + "' does not say k (neither 'k' nor activation_fn_kwargs.k)");
    const std::string normalise = cfg.value("normalize_activations", std::string("none"));
    if (normalise != "none")
        throw Error("'" + cfgPath + "' expects its inputs normalised ('" + normalise
            + "') by a factor the file does not hold; fold it into the weights (SAELens: "
              "fold_activation_norm_scaling_factor) and save again");
    if (cfg.contains("matryoshka_widths")) {
        try {
            c.matryoshkaWidths = cfg["matryoshka_widths"].get<std::vector<int64_t>>();
        } catch (const nlohmann::json::exception&) {
            throw Error("'" + cfgPath + "': matryoshka_widths is not a list of whole numbers");
        }
    }
    std::unique_ptr<SparseAutoencoder> made;
    try {
        made = std::make_unique<SparseAutoencoder>(c, device);
    } catch (const Error& e) {
        throw Error("'" + cfgPath + "': " + e.what());
    }
    SparseAutoencoder sae = std::move(*made);
    const auto tensors = readNamedTensors(weightsPath);
    const auto take = [&](const char* key, std::vector<int64_t> shape) {
        const auto found = tensors.find(key);
        if (found == tensors.end())
            throw Error("'" + weightsPath + "' has no " + key);
        if (found->second.sizes() != c10::IntArrayRef(shape)) {
            std::ostringstream message;
            message << "'" << weightsPath << "': " << key << " is " << found->second.sizes() << ", but cfg.json's d_in "
                    << c.dIn << " and d_sae " << c.dSae << " make it " << c10::IntArrayRef(shape);
            throw Error(message.str());
        }
        return found->second.to(at::kFloat);
    };
    State& s = *sae.state_;
    {
        const at::NoGradGuard noGrad;
        s.encoderWeight.copy_(take("W_enc", {c.dIn, c.dSae}));
        s.decoderWeight.copy_(take("W_dec", {c.dSae, c.dIn}));
        s.encoderBias.copy_(take("b_enc", {c.dSae}));
        s.decoderBias.copy_(take("b_dec", {c.dIn}));
        if (c.batchTopK)
            s.batchThreshold.copy_(take("threshold", {1}).reshape({}));
    }
    s.initialised = true;
    if (origin && cfg.contains("metadata") && cfg["metadata"].is_object()) {
        const auto& m = cfg["metadata"];
        origin->layer = m.value("hook_name", std::string());
        origin->positions = m.value("positions", std::string("all"));
        origin->modelSha256 = m.value("model_sha256", std::string());
        if (m.contains("prefix_tokens") && m["prefix_tokens"].is_number_integer())
            origin->prefixTokens = m["prefix_tokens"].get<int64_t>();
    }
    return sae;
}

} // namespace torchscope
