#include "relevance/concept_relevance.h"

#include "attribution/grad_cam.h"
#include "attribution/model_scores.h"
#include "common/atomic_file.h"
#include "common/batch_stream.h"
#include "common/cancel_scope.h"
#include "common/error.h"
#include "common/memory_budget.h"
#include "common/strings.h"
#include "common/tensor_conversion.h"
#include "export/manifest.h"
#include "export/write_tensors.h"
#include "graph/engine.h"
#include "graph/model_output.h"
#include "imaging/image_folder.h"
#include "imaging/image_tensor.h"
#include "imaging/same_size_images.h"
#include "model/batch_limit.h"
#include "model/model.h"
#include "record/folder_run.h"
#include "record/tensor_statistics.h"
#include "relevance/input_relevance.h"

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>
#include <torch/csrc/autograd/autograd.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

namespace torchscope {
namespace {

// zennit-crp's ChannelConcept.attribute / reference_sampling: x / (Σ|x| + 1e-10) over the channels.
constexpr double NormStabiliser = 1e-10;

// One batch through the rewritten graph, with the relevance at the layer (and, kept for the
// conditions, the graph back to the input).
struct LayerPass {
    at::Tensor input; // the leaf the input relevance is taken at
    at::Tensor value; // the layer's value, on the graph
    at::Tensor seedGradient; // d score / d value for a seed of 1: the relevance per unit of logit
    at::Tensor scores; // [N] the explained logits
    std::vector<int64_t> targets;
    std::vector<std::string> descriptions;
    at::Tensor relevance; // at the layer, for the logits, detached float32
    at::Tensor inputRelevance; // at the input, likewise (when asked)
    RelevanceCoverage coverage;
    std::vector<std::string> warnings;
};

// [N, ...] scaled row by row by s [N].
at::Tensor perRow(const at::Tensor& values, const at::Tensor& s)
{
    std::vector<int64_t> shape(static_cast<size_t>(values.dim()), 1);
    shape[0] = s.size(0);
    return values * s.to(values.device(), values.scalar_type()).reshape(shape);
}

bool readsTokens(const at::Tensor& value, int64_t height, int64_t width)
{
    return value.dim() == 3 && tokensAsMaps(value.detach().to(at::kFloat), height, width).defined();
}

// [N, C, P]: the channels first, the positions flattened.
at::Tensor byChannel(const at::Tensor& value, bool tokens)
{
    const at::Tensor t = tokens ? value.transpose(1, 2) : value;
    return t.reshape({t.size(0), t.size(1), -1});
}

// The share of each channel: x / (Σ|x| + 1e-10) over the channels [N, C].
at::Tensor normalisedOverChannels(const at::Tensor& sums)
{
    return sums / (sums.abs().sum(1, /*keepdim=*/true) + NormStabiliser);
}

Request layerRequest(const ConceptRelevanceRequest& request, const RelevanceSettings& settings)
{
    Request run;
    run.grabs = {GrabSpec{request.layer, CaptureKind::Output, 0}};
    run.scores = request.setup.scores;
    run.labels = request.setup.labels;
    run.relevance = settings;
    run.grabsOnPath = true;
    return run;
}

// `wanted`: one class per row, -1 for the row's prediction. `toInput`: the input's relevance too,
// and the graph kept for the conditions. `backward` false: the forward alone (ActMax).
LayerPass layerPass(Engine& engine, const Request& run, const std::string& layer, const at::Tensor& batch,
    const std::vector<int64_t>& wanted, bool toInput, bool backward = true)
{
    LayerPass out;
    out.input = batch.detach().clone().requires_grad_(true);
    const RunResult result = engine.runWithGraph(run, forwardInputsFromBatch(engine.model(), out.input));
    out.coverage = result.relevance;
    out.warnings = result.warnings;
    const ScoreOutput scores = findScores(*result.find("output"), run.scores);
    if (scores.kind != OutputKind::Classes)
        throw Error("CRP explains a class score [N, classes]; this model's output is " + scores.described);
    const c10::IValue* grabbed = result.find(layer);
    if (!grabbed || !grabbed->isTensor())
        throw Error("'" + layer + "' gives no tensor for this input, so it has no channels for CRP");
    out.value = grabbed->toTensor();
    if (out.value.dim() < 2)
        throw Error("'" + layer + "' gives a value of shape " + shapeToString(out.value.sizes().vec())
            + ": CRP needs channels ([N, C, ...], or tokens [N, T, D])");
    const at::Tensor logits = scores.scores;
    const int64_t classes = logits.size(1);
    const at::Tensor predicted = logits.detach().argmax(1).cpu();
    ScoreSource source;
    source.labels = run.labels;
    for (int64_t i = 0; i < logits.size(0); ++i) {
        const int64_t want = i < static_cast<int64_t>(wanted.size()) ? wanted[static_cast<size_t>(i)] : -1;
        if (want >= classes)
            throw Error("class " + std::to_string(want) + " is out of range: the model has " + std::to_string(classes)
                + " classes");
        out.targets.push_back(want >= 0 ? want : predicted[i].item<int64_t>());
        out.descriptions.push_back(describeClass(out.targets.back(), source));
    }
    const at::Tensor index = at::tensor(out.targets, at::kLong).to(logits.device()).unsqueeze(1);
    out.scores = logits.detach().gather(1, index).squeeze(1).to(at::kFloat).cpu();
    if (!backward)
        return out;
    if (!out.value.requires_grad())
        throw Error("the class score does not depend on '" + layer + "' through anything differentiable");
    const at::Tensor seed = at::zeros_like(logits).scatter_(1, index, 1.0);
    std::vector<at::Tensor> wrt{out.value};
    if (toInput)
        wrt.push_back(out.input);
    const auto grads = torch::autograd::grad({logits}, wrt, {seed}, /*retain_graph=*/toInput, false, true);
    if (!grads[0].defined())
        throw Error("the class score does not depend on '" + layer + "' (it runs after the scores, or beside them)");
    out.seedGradient = grads[0];
    out.relevance = perRow(grads[0].detach().to(at::kFloat), out.scores);
    if (toInput)
        out.inputRelevance = grads[1].defined() ? perRow(grads[1].detach().to(at::kFloat).cpu(), out.scores)
                                                : at::zeros_like(out.input, at::kFloat);
    return out;
}

// The input relevance of the relevance at the layer masked to one channel per row (CRP's condition).
at::Tensor conditionalRelevance(const LayerPass& pass, const at::Tensor& channels, bool tokens, bool keepGraph)
{
    const int64_t n = pass.value.size(0);
    const int64_t channelDim = tokens ? 2 : 1;
    at::Tensor mask = at::zeros({n, pass.value.size(channelDim)}, pass.seedGradient.options());
    mask.scatter_(1, channels.to(mask.device()).unsqueeze(1), 1.0);
    std::vector<int64_t> shape(static_cast<size_t>(pass.value.dim()), 1);
    shape[0] = n;
    shape[static_cast<size_t>(channelDim)] = mask.size(1);
    const auto grads = torch::autograd::grad(
        {pass.value}, {pass.input}, {pass.seedGradient * mask.reshape(shape)}, keepGraph, false, true);
    const at::Tensor g = grads[0].defined() ? grads[0].detach().to(at::kFloat).cpu() : at::zeros_like(pass.input);
    return perRow(g, pass.scores);
}

std::vector<double> rowOf(const at::Tensor& values)
{
    const at::Tensor row = values.to(at::kDouble).contiguous().cpu();
    return {row.data_ptr<double>(), row.data_ptr<double>() + row.numel()};
}

// The chosen channels of each row [N, K] (long), from the shares [N, C].
at::Tensor chooseChannels(const ChannelChoice& choice, const at::Tensor& shares, const std::string& layer)
{
    const int64_t count = shares.size(1);
    if (!choice.channels.empty()) {
        for (const int64_t c : choice.channels)
            if (c < 0 || c >= count)
                throw Error("channel " + std::to_string(c) + " is out of range: '" + layer + "' has "
                    + std::to_string(count) + " channels");
        return at::tensor(choice.channels, at::kLong).unsqueeze(0).expand({shares.size(0), -1}).contiguous();
    }
    const int64_t k = std::min(choice.top, count);
    const at::Tensor order = std::get<1>(at::sort(shares.cpu(), /*stable=*/true, /*dim=*/1, /*descending=*/true));
    return order.narrow(1, 0, k).contiguous();
}

RelevanceSettings relevanceSettings(const ConceptRelevanceRequest& request)
{
    RelevanceSettings settings;
    settings.composite = request.composite;
    settings.attention = request.attentionRule;
    for (const auto& rule : request.relevanceRules)
        settings.overrides.push_back(RuleOverride::parse(rule));
    std::tie(settings.low, settings.high) = inputRange(request.setup.preprocessing);
    return settings;
}

// The input pixels of a position at the layer: its cell of the layer's h x w grid on the image.
std::array<int64_t, 4> cellOf(
    int64_t position, const std::vector<int64_t>& layerShape, bool tokens, int64_t height, int64_t width)
{
    if (layerShape.size() == 1)
        return {0, 0, width, height}; // [C]: the whole image
    if (tokens || layerShape.size() != 3)
        return {-1, -1, -1, -1};
    const int64_t h = layerShape[1], w = layerShape[2];
    const int64_t row = position / w, col = position % w;
    return {col * width / w, row * height / h, (col + 1) * width / w, (row + 1) * height / h};
}

void addWarnings(std::vector<std::string>& into, const std::vector<std::string>& warnings)
{
    for (const auto& w : warnings)
        appendUnique(into, w);
}

// The references: every image of the folder through the model in batches, the recorders' top-k per
// chosen channel kept as they come (values, folder positions, peak positions, classes).
void collectReferences(Engine& engine, const ConceptRelevanceRequest& request, const Request& run,
    const std::vector<int64_t>& channels, int64_t batchSize, int64_t height, int64_t width,
    const ConceptRelevanceReports& reports, ConceptRelevanceResult& result)
{
    const ImageFolder folder = ImageFolder::scan(request.referenceFolder, request.setup.labels);
    if (folder.images.empty())
        throw Error("the reference folder '" + request.referenceFolder + "' has no images");
    FolderRunOptions options;
    options.batchSize = static_cast<int>(std::max<int64_t>(1, batchSize));
    const BatchStream stream = folderBatches(folder, request.setup.preprocessing, options);
    const bool byRelevance = request.referenceBy == "relevance";
    const at::Tensor columns = at::tensor(channels, at::kLong);
    at::Tensor values, ids, positions, targets; // the kept rows [k, R]
    const auto progress = [&](const Progress& p) {
        return !reports.progress || reports.progress(Progress{p.done, p.total, "references", {}});
    };
    const BatchLoop loop = forEachBatch(stream, progress, [&](const ImageBatch& batch) {
        if (batch.error)
            std::rethrow_exception(batch.error);
        if (batch.images.size(2) != height || batch.images.size(3) != width)
            throw Error("the reference images are " + std::to_string(batch.images.size(3)) + " x "
                + std::to_string(batch.images.size(2)) + " as preprocessed, the explained ones " + std::to_string(width)
                + " x " + std::to_string(height) + ": give the Input Setup a resize so that positions compare");
        std::vector<int64_t> wanted;
        for (size_t i = 0; i < batch.indices.size(); ++i)
            wanted.push_back(request.targetClass >= 0 ? request.targetClass
                    : i < batch.labels.size()         ? batch.labels[i]
                                                      : -1);
        const LayerPass pass = layerPass(engine, run, request.layer, batch.images, wanted, false, byRelevance);
        addWarnings(result.warnings, pass.warnings);
        const at::Tensor source
            = byChannel(byRelevance ? pass.relevance : pass.value.detach().to(at::kFloat), result.tokens).cpu();
        if (columns.numel() && columns.max().item<int64_t>() >= source.size(1))
            throw Error(
                "'" + request.layer + "' has " + std::to_string(source.size(1)) + " channels for the reference images");
        const at::Tensor shares = normalisedOverChannels(source.sum(2)).index_select(1, columns);
        const at::Tensor peaks = source.argmax(2).index_select(1, columns);
        const int64_t n = shares.size(0);
        const at::Tensor rowIds
            = at::tensor(batch.indices, at::kLong).unsqueeze(1).expand({n, columns.numel()}).contiguous();
        const at::Tensor rowTargets = byRelevance
            ? at::tensor(pass.targets, at::kLong).unsqueeze(1).expand({n, columns.numel()}).contiguous()
            : at::full({n, columns.numel()}, -1, at::kLong);
        const auto join = [](const at::Tensor& kept, const at::Tensor& fresh) {
            return kept.defined() ? at::cat({kept, fresh}) : fresh;
        };
        values = join(values, shares.to(at::kDouble));
        ids = join(ids, rowIds);
        positions = join(positions, peaks);
        targets = join(targets, rowTargets);
        const at::Tensor rows = topRowsPerChannel(values, ids, request.top);
        values = values.gather(0, rows);
        ids = ids.gather(0, rows);
        positions = positions.gather(0, rows);
        targets = targets.gather(0, rows);
    });
    result.referenceImages = loop.samples;
    result.failures.insert(result.failures.end(), loop.failures.begin(), loop.failures.end());
    if (loop.cancelled)
        result.cancelled = true;
    for (size_t r = 0; r < channels.size(); ++r) {
        CrpChannelReferences entry;
        entry.channel = channels[r];
        for (int64_t k = 0; values.defined() && k < values.size(0); ++k) {
            const auto col = static_cast<int64_t>(r);
            CrpReference ref;
            ref.sample = ids[k][col].item<int64_t>();
            ref.image = folder.images.at(static_cast<size_t>(ref.sample)).path;
            ref.value = values[k][col].item<double>();
            ref.target = targets[k][col].item<int64_t>();
            ref.position = positions[k][col].item<int64_t>();
            ref.box = cellOf(ref.position, result.layerShape, result.tokens, height, width);
            entry.references.push_back(ref);
        }
        result.references.push_back(std::move(entry));
    }
    // The pictures of the images kept, read again (a folder's images are not held while it streams).
    std::vector<std::string> kept;
    std::vector<int64_t> samples;
    for (const auto& entry : result.references)
        for (const auto& r : entry.references)
            if (std::find(samples.begin(), samples.end(), r.sample) == samples.end()) {
                samples.push_back(r.sample);
                kept.push_back(r.image);
            }
    if (kept.empty())
        return;
    SameSizeImages pictures = loadSameSizeImages(kept, request.setup.preprocessing, "", "");
    for (size_t i = 0; i < pictures.paths.size(); ++i)
        for (size_t s = 0; s < kept.size(); ++s)
            if (kept[s] == pictures.paths[i])
                result.referencePictures[samples[s]] = std::move(pictures.pictures[i]);
}

} // namespace

ConceptRelevanceResult computeConceptRelevance(
    Engine& engine, const ConceptRelevanceRequest& request, const ConceptRelevanceReports& reports)
{
    if (request.layer.empty())
        throw Error("CRP needs a layer (--layer PATH): the channels whose relevance it measures");
    const auto& modes = referenceModes();
    if (std::find(modes.begin(), modes.end(), request.referenceBy) == modes.end())
        throw Error("references are by relevance or activation, not '" + request.referenceBy + "'");
    if (request.top < 1)
        throw Error("references per channel must be at least 1, got " + std::to_string(request.top));
    ConceptRelevanceResult result;
    result.layer = request.layer;
    result.referenceFolder = request.referenceFolder;
    result.referenceBy = request.referenceBy;
    SameSizeImages loaded = loadSameSizeImages(request.images, request.setup.preprocessing,
        "the channels' relevances are compared across images: give the Input Setup a resize",
        "CRP needs at least one image");
    result.failures = std::move(loaded.failures);
    const at::Tensor& images = loaded.batch;
    const int64_t count = images.size(0), height = images.size(2), width = images.size(3);
    const RelevanceSettings settings = relevanceSettings(request);
    const Request run = layerRequest(request, settings);

    const CancelScope scope(reports.cancelled);
    const int64_t recorded = recordedBytesPerSample(engine.model(), images[0].numel());
    const int64_t perSample = request.bytesPerSample > 0 ? request.bytesPerSample
        : recorded > 0                                   ? recorded
                                                         : 64 * images[0].numel() * static_cast<int64_t>(sizeof(float));
    const int64_t memoryBytes = request.memoryMb > 0 ? request.memoryMb << 20 : defaultMemoryBudget();
    // On the CPU no more than 8 at once: a larger batch only adds page faults (its gigabytes are mapped
    // afresh each time); ResNet-50's references over 32 images took 12 s in batches of 8, 20 s in
    // batches of 20 and 30 s in one. A GPU takes what the cap allows.
    const int64_t useful = startsWith(engine.model().device(), "cuda") ? 64 : 8;
    const int64_t batch = batchUnderCap(engine.model(), memoryBytes, perSample, std::min(useful, count));
    std::vector<int64_t> referenced; // the chosen channels, each once, in the order first chosen
    for (int64_t start = 0; start < count && !result.cancelled; start += batch) {
        const int64_t n = std::min(batch, count - start);
        const std::vector<int64_t> wanted(static_cast<size_t>(n), request.targetClass);
        const LayerPass pass = layerPass(engine, run, request.layer, images.narrow(0, start, n), wanted, true);
        if (start == 0) {
            result.layerShape = pass.value.sizes().slice(1).vec();
            result.tokens = readsTokens(pass.value, height, width);
            result.coverage = pass.coverage;
            result.channelCount = pass.value.size(result.tokens ? 2 : 1);
        }
        addWarnings(result.warnings, pass.warnings);
        const at::Tensor relevance = byChannel(pass.relevance, result.tokens).sum(2).to(at::kDouble).cpu(); // [n, C]
        const at::Tensor shares = normalisedOverChannels(relevance);
        const at::Tensor chosen = chooseChannels(request.channels, shares, request.layer); // [n, K]
        const int64_t k = chosen.size(1);
        std::vector<at::Tensor> maps; // per condition [n, Cin, H, W]
        for (int64_t c = 0; c < k; ++c)
            maps.push_back(conditionalRelevance(pass, chosen.select(1, c), result.tokens, c + 1 < k));
        for (int64_t i = 0; i < n; ++i) {
            const auto at = static_cast<size_t>(start + i);
            CrpImage image;
            image.image = loaded.paths[at];
            image.picture = std::move(loaded.pictures[at]);
            image.target = pass.targets[static_cast<size_t>(i)];
            image.targetDescription = pass.descriptions[static_cast<size_t>(i)];
            image.score = pass.scores[i].item<double>();
            image.relevance = rowOf(relevance[i]);
            image.shares = rowOf(shares[i]);
            image.layerSum = relevance[i].sum().item<double>();
            const at::Tensor whole = pass.inputRelevance[i].cpu();
            image.inputSum = whole.sum().item<double>();
            image.map = toFloatTensor(whole.sum(0));
            for (int64_t c = 0; c < k; ++c) {
                CrpChannel channel;
                channel.channel = chosen[i][c].item<int64_t>();
                channel.relevance = image.relevance.at(static_cast<size_t>(channel.channel));
                channel.share = image.shares.at(static_cast<size_t>(channel.channel));
                const at::Tensor conditioned = maps[static_cast<size_t>(c)][i];
                channel.map = toFloatTensor(conditioned.sum(0));
                channel.mapSum = conditioned.sum().item<double>();
                image.channels.push_back(std::move(channel));
                if (std::find(referenced.begin(), referenced.end(), chosen[i][c].item<int64_t>()) == referenced.end())
                    referenced.push_back(chosen[i][c].item<int64_t>());
            }
            if (reports.onImage)
                reports.onImage(result.images.size(), image);
            result.images.push_back(std::move(image));
        }
        if (reports.progress && !reports.progress(Progress{start + n, count, "images", {}}))
            result.cancelled = true;
    }
    // Measured at a convolution or linear layer, the batch norm after it cannot be merged (its output is
    // read twice); the norm is then named among the uncovered ops, and the warning says what to take.
    const auto& modules = engine.model().modules();
    const auto layer
        = std::find_if(modules.begin(), modules.end(), [&](const ModuleInfo& m) { return m.path == request.layer; });
    const bool weighted = layer != modules.end()
        && (layer->shortType.find("Conv") != std::string::npos || layer->shortType == "Linear");
    for (const auto& line : result.coverage.uncovered)
        if (weighted && line.find("batch_norm") != std::string::npos) {
            result.warnings.push_back("'" + request.layer
                + "' is a convolution or linear layer measured before the batch norm after it, which then keeps "
                  "its plain gradient ("
                + line + "); the norm's or the activation's output after it has the norm merged");
            break;
        }
    if (!request.referenceFolder.empty() && !result.cancelled)
        collectReferences(engine, request, run, referenced,
            batchUnderCap(engine.model(), memoryBytes, perSample, useful), height, width, reports, result);
    return result;
}

ConceptRelevanceResult ConceptRelevanceAnalysis::run(AnalysisContext& context, const Request& request)
{
    auto engine = context.models.engine(context.model);
    // What one image costs, from the model's output shapes: a dry run on the first image records them
    // where the model has none yet, for the window and the CLI alike (an unreadable first image is
    // computeConceptRelevance's to report).
    Request sized = request;
    if (sized.bytesPerSample <= 0 && !sized.images.empty()) {
        const auto model = context.models.model(context.model);
        try {
            const at::Tensor first = loadImageBatch({sized.images.front()}, sized.setup.preprocessing);
            if (recordedBytesPerSample(*model, first.numel()) <= 0)
                dryRun(*model, forwardInputsFromBatch(*model, first));
            sized.bytesPerSample = recordedBytesPerSample(*model, first.numel());
        } catch (const Error&) { }
    }
    ConceptRelevanceReports reports;
    reports.progress = context.progress;
    reports.cancelled = context.cancelled;
    reports.onImage = [&context](size_t index, const CrpImage& image) {
        context.deliver(CrpImageResult{index, image});
    };
    return computeConceptRelevance(*engine, sized, reports);
}

namespace {

nlohmann::json mapJson(const FloatTensor& map)
{
    nlohmann::json rows = nlohmann::json::array();
    const int64_t width = map.shape.size() == 2 ? map.shape[1] : 0;
    for (int64_t r = 0; width && r < map.shape[0]; ++r)
        rows.push_back(std::vector<float>(map.values.begin() + r * width, map.values.begin() + (r + 1) * width));
    return rows;
}

nlohmann::json resultJson(const ConceptRelevanceResult& result)
{
    nlohmann::json images = nlohmann::json::array();
    for (const auto& image : result.images) {
        nlohmann::json channels = nlohmann::json::array();
        for (const auto& c : image.channels)
            channels.push_back({{"channel", c.channel}, {"relevance", c.relevance}, {"share", c.share},
                {"map_sum", c.mapSum}, {"map", mapJson(c.map)}});
        images.push_back({{"image", image.image}, {"target", image.target},
            {"target_description", image.targetDescription}, {"score", image.score}, {"layer_sum", image.layerSum},
            {"input_sum", image.inputSum}, {"relevance", image.relevance}, {"shares", image.shares},
            {"channels", channels}, {"lrp", mapJson(image.map)}});
    }
    nlohmann::json references = nlohmann::json::array();
    for (const auto& entry : result.references) {
        nlohmann::json list = nlohmann::json::array();
        for (const auto& r : entry.references)
            list.push_back({{"image", r.image}, {"sample", r.sample}, {"target", r.target}, {"value", r.value},
                {"position", r.position}, {"box", r.box}});
        references.push_back({{"channel", entry.channel}, {"references", list}});
    }
    nlohmann::json failures = nlohmann::json::array();
    for (const auto& [path, why] : result.failures)
        failures.push_back({{"image", path}, {"why", why}});
    return {{"layer", result.layer}, {"layer_shape", result.layerShape}, {"tokens", result.tokens},
        {"channel_count", result.channelCount}, {"images", images},
        {"coverage", {{"layers", result.coverage.layers}, {"uncovered", result.coverage.uncovered}}},
        {"reference_folder", result.referenceFolder}, {"reference_by", result.referenceBy},
        {"reference_images", result.referenceImages}, {"references", references}, {"warnings", result.warnings},
        {"failures", failures}, {"cancelled", result.cancelled}};
}

} // namespace

std::vector<std::string> writeConceptRelevance(
    const std::string& path, const ConceptRelevanceResult& result, const ExportManifest* manifest)
{
    if (result.images.empty())
        throw Error("no image was explained; nothing written to " + path);
    ExportManifest described = manifest ? *manifest : ExportManifest{};
    described.settings.emplace_back("layer", result.layer);
    if (!result.referenceFolder.empty()) {
        described.settings.emplace_back("reference_folder", result.referenceFolder);
        described.settings.emplace_back("reference_by", result.referenceBy);
    }
    std::string lower = path;
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
    if (endsWith(lower, ".json")) {
        writeFileAtomically(path, resultJson(result).dump(1) + "\n");
        described.keys.push_back({"images", result.layer,
            "per image: every channel's relevance and share, the "
            "chosen channels' conditional maps, the LRP map"});
        described.keys.push_back({"references", result.layer, "per chosen channel: the folder's top images"});
        writeManifest(path, described);
        return {};
    }
    NamedValues values;
    const auto add = [&](const std::string& key, const at::Tensor& value, const std::string& what) {
        values.emplace_back(key, value.contiguous());
        described.keys.push_back({key, result.layer, what});
    };
    std::vector<at::Tensor> relevance, shares, channels, maps, mapSums, lrp;
    std::vector<int64_t> targets;
    std::vector<double> scores, layerSums, inputSums;
    for (const auto& image : result.images) {
        relevance.push_back(at::tensor(image.relevance, at::kDouble));
        shares.push_back(at::tensor(image.shares, at::kDouble));
        std::vector<int64_t> chosen;
        std::vector<at::Tensor> imageMaps;
        std::vector<double> sums;
        for (const auto& c : image.channels) {
            chosen.push_back(c.channel);
            imageMaps.push_back(toTensor(c.map));
            sums.push_back(c.mapSum);
        }
        channels.push_back(at::tensor(chosen, at::kLong));
        maps.push_back(at::stack(imageMaps));
        mapSums.push_back(at::tensor(sums, at::kDouble));
        lrp.push_back(toTensor(image.map));
        targets.push_back(image.target);
        scores.push_back(image.score);
        layerSums.push_back(image.layerSum);
        inputSums.push_back(image.inputSum);
    }
    add("relevance", at::stack(relevance), "each channel's relevance at the layer [N, C], summed over positions");
    add("shares", at::stack(shares), "each channel's share: relevance / Σ|relevance| over the channels [N, C]");
    add("channels", at::stack(channels), "the conditioned channels [N, K]");
    add("maps", at::stack(maps), "each conditioned channel's relevance at the input [N, K, H, W]");
    add("map_sums", at::stack(mapSums), "what of each channel's relevance reaches the input [N, K]");
    add("lrp", at::stack(lrp), "the whole LRP map [N, H, W]");
    add("targets", at::tensor(targets, at::kLong), "the class explained");
    add("scores", at::tensor(scores, at::kDouble), "the explained logit");
    add("layer_sums", at::tensor(layerSums, at::kDouble), "relevance at the layer, summed");
    add("input_sums", at::tensor(inputSums, at::kDouble), "relevance at the input, summed");
    std::set<int64_t> named; // each reference image once in the manifest
    for (const auto& entry : result.references) {
        std::vector<int64_t> samples, positions, boxes;
        std::vector<double> referenceValues;
        for (const auto& r : entry.references) {
            samples.push_back(r.sample);
            referenceValues.push_back(r.value);
            positions.push_back(r.position);
            boxes.insert(boxes.end(), r.box.begin(), r.box.end());
            if (named.insert(r.sample).second)
                described.settings.emplace_back("reference_image:" + std::to_string(r.sample), r.image);
        }
        const std::string c = std::to_string(entry.channel);
        add("references:" + c, at::tensor(samples, at::kLong),
            "channel " + c + "'s top images: positions in the folder's list (reference_image:N)");
        add("reference_values:" + c, at::tensor(referenceValues, at::kDouble), "their share of the channel");
        add("reference_positions:" + c, at::tensor(positions, at::kLong), "where at the layer it peaks");
        add("reference_boxes:" + c, at::tensor(boxes, at::kLong).reshape({-1, 4}),
            "that position's cell: x0, y0, x1, y1 input pixels (-1: tokens)");
    }
    return writeTensors(path, values, &described);
}

} // namespace torchscope
