#include "concepts/dissection.h"

#include "common/error.h"
#include "common/strings.h"
#include "common/tensor_spill.h"
#include "concepts/concept_masks.h"
#include "concepts/concept_scores.h"
#include "concepts/concept_set.h"
#include "concepts/concept_units.h"
#include "concepts/threshold_counts.h"
#include "graph/engine.h"
#include "graph/request.h"
#include "imaging/image_decoder.h"
#include "imaging/image_tensor.h"
#include "model/model.h"
#include "preprocess/preprocess_tensor.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <optional>

namespace torchscope {

namespace {

// An image's label tables (threshold_counts.h) up to 256 MiB: 1,000 combinations of concepts at
// 256 × 256 pixels, or 8 at 2,900 × 2,900; larger ones count from the upsampled maps.
constexpr int64_t MaxLabelTableBytes = int64_t{256} << 20;

// The running state of one layer over the passes.
struct DissectionPass {
    std::string layer;
    int64_t units = 0, gridHeight = 0, gridWidth = 0;
    at::Tensor pooled; // [images, U] float: invert's per-image value (NaN: not read)
    int64_t keep = 0; // iou: values kept per unit for its threshold
    at::Tensor largest; // [U, <= keep] float, largest first
    at::Tensor topValues, topImages, topMaps; // [U, T], [U, T], [U, T, P]
    at::Tensor thresholds; // [U] float
    at::Tensor counts; // [U, capacity] float64: the unit's pixels on each combination of concepts
    at::Tensor unitArea; // [U, categories] float64: its pixels in images annotating each category
    at::Tensor unitAreaAll; // [U] float64
};

// The combinations of concepts pixels show, numbered as they are first seen, with their pixels.
struct Combinations {
    std::map<std::vector<int32_t>, int64_t> ids;
    std::vector<std::vector<int32_t>> sets;
    std::vector<double> pixels;
    int64_t id(const std::vector<int32_t>& set)
    {
        const auto [it, added] = ids.emplace(set, static_cast<int64_t>(sets.size()));
        if (added) {
            sets.push_back(set);
            pixels.push_back(0.0);
        }
        return it->second;
    }
};

struct ImageBatchRead {
    at::Tensor images; // [n, C, H, W] preprocessed
    std::vector<int64_t> indices; // into the set's images
    std::vector<std::pair<int64_t, int64_t>> sizes; // each file's own height, width
};

// The set's images in batches (skipping those excluded or unreadable, which go to `failures`);
// returns false when cancelled. Progress: `report.done` + the images of this pass, of `report.total`.
bool forEachImageBatch(const ConceptSet& set, const DissectionRequest& request, const Progress& report,
    const std::vector<bool>& include, const ProgressCallback& progress,
    std::vector<std::pair<std::string, std::string>>* failures,
    const std::function<void(const ImageBatchRead&)>& handle)
{
    const auto total = static_cast<int64_t>(set.images.size());
    const int64_t batch = std::max(1, request.imageBatch);
    for (int64_t start = 0; start < total; start += batch) {
        ImageBatchRead read;
        std::vector<at::Tensor> tensors;
        for (int64_t i = start; i < std::min(total, start + batch); ++i) {
            if (!include[static_cast<size_t>(i)])
                continue;
            const std::string& path = set.images[static_cast<size_t>(i)].path;
            try {
                const DecodedImage decoded = decodeImage(path);
                tensors.push_back(preprocessImage(imageToTensor(decoded), request.setup.preprocessing));
                read.indices.push_back(i);
                read.sizes.emplace_back(decoded.height, decoded.width);
            } catch (const Error& e) {
                if (failures)
                    failures->emplace_back(path, e.what());
            }
        }
        for (const auto& t : tensors)
            if (t.sizes() != tensors.front().sizes())
                throw Error("the images of '" + set.root + "' come out at different sizes ("
                    + shapeToString(tensors.front().sizes().vec()) + ", " + shapeToString(t.sizes().vec())
                    + "): give a preprocessing that resizes them to one size");
        if (!tensors.empty()) {
            read.images = at::stack(tensors);
            handle(read);
        }
        if (progress
            && !progress(Progress{report.done + std::min(total, start + batch), report.total, report.stage, {}}))
            return false;
    }
    return true;
}

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start)
{
    return std::chrono::duration<double>(Clock::now() - start).count();
}

// The model's forward pass over a batch, its time added to `seconds`.
RunResult timedRun(Engine& engine, const Request& grab, const at::Tensor& images, double& seconds)
{
    const auto start = Clock::now();
    RunResult out = engine.run(grab, forwardInputsFromBatch(engine.model(), images));
    seconds += secondsSince(start);
    return out;
}

// The units' maps of a batch on the CPU. Throws torchscope::Error naming the images where they are
// not finite (a NaN would take the top of every ranking and make the thresholds NaN).
at::Tensor unitMaps(const ConceptUnits& units, const Engine& engine, const RunResult& out, const std::string& layer,
    const at::Tensor& images, const ConceptSet& set, const std::vector<int64_t>& indices)
{
    const at::Tensor maps
        = units.maps(engine.model(), out.tensor(layer), images.size(2), images.size(3)).to(at::kCPU).contiguous();
    const at::Tensor finite = at::isfinite(maps).flatten(1).all(1);
    if (!finite.all().item<bool>()) {
        std::vector<std::string> names;
        for (int64_t j = 0; j < finite.size(0); ++j)
            if (!finite[j].item<bool>())
                names.push_back(set.images[static_cast<size_t>(indices[static_cast<size_t>(j)])].path);
        throw Error("the units of '" + layer + "' are NaN or infinite on " + join(names, ", ")
            + ": a dissection ranks finite values only (look at the model's input setup)");
    }
    return maps;
}

// The first pass: the layer's pooled values, its largest values, its top images.
void firstPassBatch(DissectionPass& pass, const DissectionRequest& request, const at::Tensor& maps,
    const std::vector<int64_t>& indices, int64_t imageCount)
{
    const int64_t n = maps.size(0);
    if (pass.units == 0) {
        pass.units = maps.size(1);
        pass.gridHeight = maps.size(2);
        pass.gridWidth = maps.size(3);
        const int64_t positions = pass.gridHeight * pass.gridWidth;
        pass.pooled = at::full({imageCount, pass.units}, std::numeric_limits<float>::quiet_NaN());
        pass.keep = std::min(imageCount * positions,
            static_cast<int64_t>(std::floor(request.quantile * static_cast<double>(imageCount * positions))) + 2);
        pass.largest = at::empty({pass.units, 0});
        const int64_t top = std::max<int64_t>(1, request.topImages);
        pass.topValues = at::full({pass.units, top}, -std::numeric_limits<float>::infinity());
        pass.topImages = at::full({pass.units, top}, -1, at::kLong);
        pass.topMaps = at::zeros({pass.units, top, positions});
    } else if (maps.size(1) != pass.units || maps.size(2) != pass.gridHeight || maps.size(3) != pass.gridWidth) {
        throw Error("'" + pass.layer + "' gives " + shapeToString(maps.sizes().vec()) + " maps on some images and "
            + shapeToString({n, pass.units, pass.gridHeight, pass.gridWidth})
            + " on others: give a preprocessing that brings the images to one size");
    }
    const at::Tensor flat = maps.flatten(2); // [n, U, P]
    const at::Tensor index = at::tensor(indices, at::kLong);
    pass.pooled.index_copy_(0, index, request.pooling == "max" ? flat.amax(2) : flat.mean(2));
    if (request.method != DissectionMethod::Invert) {
        const at::Tensor values = at::cat({pass.largest, flat.permute({1, 0, 2}).reshape({pass.units, -1})}, 1);
        pass.largest = std::get<0>(values.topk(std::min(pass.keep, values.size(1)), 1, true, true)).contiguous();
    }
    const at::Tensor best = flat.amax(2).t(); // [U, n]
    const int64_t top = pass.topValues.size(1);
    const at::Tensor candidates = at::cat({pass.topValues, best}, 1);
    const at::Tensor chosen = std::get<1>(candidates.topk(top, 1));
    pass.topValues = candidates.gather(1, chosen);
    pass.topImages = at::cat({pass.topImages, index.unsqueeze(0).expand({pass.units, n})}, 1).gather(1, chosen);
    pass.topMaps = at::cat({pass.topMaps, flat.permute({1, 0, 2})}, 1)
                       .gather(1, chosen.unsqueeze(2).expand({pass.units, top, flat.size(2)}))
                       .contiguous();
}

// The threshold: NumPy's quantile(values, 1 − q) (linear interpolation) from the largest values kept.
at::Tensor thresholdsOf(const DissectionPass& pass, double quantile, int64_t values)
{
    const double position = (1.0 - quantile) * static_cast<double>(values - 1);
    const auto below = static_cast<int64_t>(std::floor(position));
    const double fraction = position - static_cast<double>(below);
    const int64_t upper = values - 1 - below; // the lower order statistic, counted from the top
    const at::Tensor largest = pass.largest.to(at::kDouble);
    const at::Tensor low = largest.select(1, std::min(upper, largest.size(1) - 1));
    const at::Tensor high = upper >= 1 ? largest.select(1, upper - 1) : low;
    return (low + fraction * (high - low)).to(at::kFloat);
}

// The second pass over one image of one layer: which of the unit's upsampled pixels pass its threshold,
// counted per combination of concepts (threshold_counts.h: from the image's label tables, or from the
// upsampled maps when the tables would be larger than MaxLabelTableBytes).
void countImage(DissectionPass& pass, const at::Tensor& maps, const ConceptPixels& pixels, const LabelTables* tables,
    const at::Tensor& combinationIds, const std::vector<int32_t>& categories, int64_t capacity)
{
    if (pass.counts.size(1) < capacity) {
        at::Tensor grown = at::zeros({pass.units, std::max(capacity, 2 * pass.counts.size(1))}, at::kDouble);
        grown.narrow(1, 0, pass.counts.size(1)).copy_(pass.counts);
        pass.counts = grown;
    }
    const at::Tensor units = maps.flatten(1).amax(1).gt(pass.thresholds).nonzero().squeeze(1).contiguous();
    const std::vector<int64_t> selected(units.data_ptr<int64_t>(), units.data_ptr<int64_t>() + units.numel());
    const at::Tensor counted = tables != nullptr
        ? countAboveThresholds(maps, pass.thresholds, selected, *tables)
        : countAboveThresholdsUpsampled(
            maps, pass.thresholds, selected, pixels.combination, pixels.height, pixels.width, combinationIds.numel());
    const at::Tensor perCombination = counted.to(at::kDouble); // [s, m]
    pass.counts.index_put_({units.unsqueeze(1), combinationIds.unsqueeze(0)}, perCombination, true);
    const at::Tensor unitPixels = perCombination.sum(1);
    pass.unitAreaAll.index_add_(0, units, unitPixels);
    for (const int32_t category : categories)
        pass.unitArea.select(1, category).index_add_(0, units, unitPixels);
}

CategoryCount& categoryCount(DissectedLayer& layer, const std::string& category)
{
    for (auto& count : layer.categories)
        if (count.category == category)
            return count;
    layer.categories.push_back({category, 0, 0});
    return layer.categories.back();
}

FloatTensor floatTensor(const at::Tensor& t)
{
    const at::Tensor c = t.to(at::kCPU, at::kFloat).contiguous();
    return FloatTensor{c.sizes().vec(), std::vector<float>(c.data_ptr<float>(), c.data_ptr<float>() + c.numel())};
}

} // namespace

DissectionMethod parseDissectionMethod(const std::string& text)
{
    if (text == "iou")
        return DissectionMethod::Iou;
    if (text == "invert")
        return DissectionMethod::Invert;
    if (text == "both")
        return DissectionMethod::Both;
    throw Error("the dissection method '" + text + "' is not one of iou, invert, both");
}

std::string toString(DissectionMethod method)
{
    return method == DissectionMethod::Iou ? "iou" : method == DissectionMethod::Invert ? "invert" : "both";
}

DissectionResult dissect(Engine& engine, const DissectionRequest& request, const ProgressCallback& progress)
{
    if (!(request.quantile > 0.0 && request.quantile < 1.0))
        throw Error("the quantile must lie between 0 and 1, got " + std::to_string(request.quantile));
    if (request.formulaLength < 1 || request.formulaLength > 3)
        throw Error("formulas are 1 to 3 concepts long, got " + std::to_string(request.formulaLength));
    if (request.beam < 1 || request.top < 1)
        throw Error("the beam and the concepts kept per unit must be at least 1");
    if (request.pooling != "mean" && request.pooling != "max")
        throw Error("invert pools a unit's map by mean or max, not '" + request.pooling + "'");
    const auto started = Clock::now();
    const ConceptUnits units = ConceptUnits::parse(request.units, engine.model().device());
    const ConceptSet set = readConceptSet(request.concepts, request.maxImages);
    DissectionResult result;
    result.concepts = request.concepts;
    result.layout = set.layout;
    result.categories = set.categories;
    result.method = request.method;
    result.quantile = request.quantile;
    result.iouThreshold = request.iouThreshold;
    result.aucThreshold = request.aucThreshold;
    result.alpha = request.alpha;
    result.pooling = request.pooling;
    result.warnings = set.warnings;
    for (const auto& each : set.concepts) {
        result.conceptNames.push_back(each.name);
        result.conceptCategories.push_back(each.category);
    }
    for (const auto& image : set.images)
        result.images.push_back(image.path);
    bool iou = request.method != DissectionMethod::Invert;
    const bool invert = request.method != DissectionMethod::Iou;
    if (iou && !set.pixelLevel) {
        if (request.method == DissectionMethod::Iou)
            throw Error("the concept set '" + request.concepts + "' is image-level (a folder per concept): IoU needs "
                + "masks (images/ and masks/CONCEPT/, or Broden's index.csv); use --method invert");
        result.warnings.push_back(
            "the concept set is image-level (a folder per concept): only invert is measured, IoU needs masks");
        iou = false;
    }
    if (iou && set.layout == "broden"
        && (request.setup.preprocessing.cropHeight > 0 || request.setup.preprocessing.cropWidth > 0))
        throw Error("Broden's segmentations cover the whole image, so the model must see it whole: use a preprocessing "
            + std::string("without a crop (") + request.setup.preprocessing.describe() + ")");
    std::vector<std::string> layers = request.layers;
    if (layers.empty() && !units.layer().empty())
        layers.push_back(units.layer());
    if (layers.empty())
        throw Error("give a layer to dissect (--layer)");
    if (units.kind() != "channels" && layers.size() != 1)
        throw Error("the " + units.kind() + " of '" + request.units.substr(request.units.find(':') + 1)
            + "' read one layer; give one --layer");
    if (!units.layer().empty() && layers.front() != units.layer())
        result.warnings.push_back(
            "the " + units.kind() + " were made on '" + units.layer() + "', dissected on '" + layers.front() + "'");

    Request grab;
    for (const auto& layer : layers)
        grab.grabOutput(layer);
    engine.prepare(grab);
    const auto imageCount = static_cast<int64_t>(set.images.size());
    std::vector<DissectionPass> passes(layers.size());
    for (size_t l = 0; l < layers.size(); ++l)
        passes[l].layer = layers[l];
    std::vector<bool> read(set.images.size(), false);
    std::vector<std::vector<int32_t>> concepts(set.images.size());
    std::vector<bool> everyImage(set.images.size(), true);

    // The first pass: per-image values (invert), thresholds (iou), top images.
    const bool labelsFromMasks = set.pixelLevel && invert;
    // Progress over both passes: the first's images, then the second's.
    const Progress ranking{0, (iou ? 2 : 1) * imageCount, "ranking", {}};
    // IoU needs each map twice: for the thresholds, then against the masks. The second time it reads
    // them from a spill on disk when they fit its budget (the model then runs once), else from the model.
    std::unique_ptr<TensorSpill> spill;
    std::vector<ImageBatchRead> spilled; // the batches whose maps it holds, without their images
    bool spillDecided = !iou || request.spillMb == 0;
    const bool firstDone = forEachImageBatch(
        set, request, ranking, everyImage, progress, &result.failures, [&](const ImageBatchRead& batch) {
            const RunResult out = timedRun(engine, grab, batch.images, result.modelSeconds);
            std::vector<at::Tensor> maps;
            for (auto& pass : passes) {
                maps.push_back(unitMaps(units, engine, out, pass.layer, batch.images, set, batch.indices));
                firstPassBatch(pass, request, maps.back(), batch.indices, imageCount);
            }
            if (!spillDecided) {
                spillDecided = true;
                int64_t perImage = 0;
                for (const auto& m : maps)
                    perImage += m[0].numel() * static_cast<int64_t>(sizeof(float));
                const int64_t budget = request.spillMb < 0 ? defaultSpillBudget() : request.spillMb << 20;
                if (perImage * imageCount <= budget)
                    spill = std::make_unique<TensorSpill>();
            }
            if (spill) {
                bool kept = true;
                for (const auto& m : maps)
                    kept = kept && spill->write(m);
                if (kept) {
                    spilled.push_back({at::Tensor(), batch.indices, batch.sizes});
                } else {
                    result.warnings.push_back("the layers' maps did not fit in the temporary folder '" + spill->folder()
                        + "': the second pass ran the model again");
                    spill.reset();
                    spilled.clear();
                }
            }
            for (size_t j = 0; j < batch.indices.size(); ++j) {
                const auto i = static_cast<size_t>(batch.indices[j]);
                read[i] = true;
                if (labelsFromMasks) {
                    const ConceptPixels pixels = readConceptPixels(
                        set, i, request.setup.preprocessing, batch.sizes[j].first, batch.sizes[j].second);
                    concepts[i] = pixels.concepts;
                } else if (!set.pixelLevel) {
                    concepts[i] = set.images[i].concepts;
                }
            }
        });
    result.cancelled = !firstDone;
    result.imagesRead = std::count(read.begin(), read.end(), true);
    if (result.imagesRead == 0)
        throw Error(result.cancelled ? "cancelled before the first image was read"
                                     : "no image of the concept set '" + request.concepts + "' could be read");
    if (result.cancelled) {
        iou = false;
        result.warnings.push_back("cancelled in the first pass after " + std::to_string(result.imagesRead)
            + " images: invert over those, no IoU");
    }

    // The second pass: each unit's pixels above its threshold, per combination of concepts.
    Combinations combinations;
    int64_t counted = 0;
    if (iou) {
        for (auto& pass : passes) {
            pass.thresholds
                = thresholdsOf(pass, request.quantile, result.imagesRead * pass.gridHeight * pass.gridWidth);
            pass.counts = at::zeros({pass.units, 16}, at::kDouble);
            pass.unitArea = at::zeros({pass.units, static_cast<int64_t>(set.categories.size())}, at::kDouble);
            pass.unitAreaAll = at::zeros({pass.units}, at::kDouble);
        }
        const Progress counting{imageCount, 2 * imageCount, "counting", {}};
        const auto countBatch = [&](const ImageBatchRead& batch, const std::vector<at::Tensor>& maps) {
            for (size_t j = 0; j < batch.indices.size(); ++j) {
                const auto i = static_cast<size_t>(batch.indices[j]);
                const ConceptPixels pixels = readConceptPixels(
                    set, i, request.setup.preprocessing, batch.sizes[j].first, batch.sizes[j].second);
                if (!labelsFromMasks)
                    concepts[i] = pixels.concepts;
                std::vector<int64_t> ids;
                for (const auto& combination : pixels.combinations)
                    ids.push_back(combinations.id(combination));
                const auto m = static_cast<int64_t>(ids.size());
                const at::Tensor perCombination = at::bincount(pixels.combination, {}, m);
                const auto* perData = perCombination.data_ptr<int64_t>();
                for (int64_t c = 0; c < m; ++c)
                    combinations.pixels[static_cast<size_t>(ids[static_cast<size_t>(c)])]
                        += static_cast<double>(perData[c]);
                std::optional<LabelTables> tables;
                if (LabelTables::tableBytes(pixels.height, pixels.width, m) <= MaxLabelTableBytes)
                    tables.emplace(pixels.combination, pixels.height, pixels.width, m);
                const at::Tensor idTensor = at::tensor(ids, at::kLong);
                // The categories it annotates: its own (Broden's columns), and those of every concept
                // it shows (a label whose category is another column's counts there too).
                std::vector<int32_t> annotated = set.images[i].categories;
                for (const int32_t c : pixels.concepts)
                    annotated.push_back(set.categoryOf(c));
                std::sort(annotated.begin(), annotated.end());
                annotated.erase(std::unique(annotated.begin(), annotated.end()), annotated.end());
                for (size_t l = 0; l < passes.size(); ++l)
                    countImage(passes[l], maps[l][static_cast<int64_t>(j)], pixels, tables ? &*tables : nullptr,
                        idTensor, annotated, static_cast<int64_t>(combinations.sets.size()));
                ++counted;
            }
        };
        bool secondDone = true;
        if (spill) {
            for (const auto& batch : spilled) {
                std::vector<at::Tensor> maps;
                for (size_t l = 0; l < passes.size(); ++l)
                    maps.push_back(spill->read());
                countBatch(batch, maps);
                if (progress
                    && !progress(
                        Progress{counting.done + batch.indices.back() + 1, counting.total, counting.stage, {}})) {
                    secondDone = false;
                    break;
                }
            }
            result.spilledBytes = spill->bytes();
        } else {
            secondDone = forEachImageBatch(
                set, request, counting, read, progress, &result.failures, [&](const ImageBatchRead& batch) {
                    const RunResult out = timedRun(engine, grab, batch.images, result.modelSeconds);
                    std::vector<at::Tensor> maps;
                    for (auto& pass : passes)
                        maps.push_back(unitMaps(units, engine, out, pass.layer, batch.images, set, batch.indices));
                    countBatch(batch, maps);
                });
        }
        spill.reset(); // its disk space back before the scores
        if (!secondDone) {
            result.cancelled = true;
            result.warnings.push_back("cancelled in the second pass: IoU over the first " + std::to_string(counted)
                + " of " + std::to_string(result.imagesRead) + " images");
        }
    }

    // Concepts' images and pixels.
    const auto conceptCount = static_cast<int64_t>(set.concepts.size());
    result.conceptImages.assign(static_cast<size_t>(conceptCount), 0);
    for (size_t i = 0; i < concepts.size(); ++i)
        if (read[i])
            for (const int32_t c : concepts[i])
                ++result.conceptImages[static_cast<size_t>(c)];
    at::Tensor incidence; // [combinations, concepts]
    if (iou) {
        const auto g = static_cast<int64_t>(combinations.sets.size());
        incidence = at::zeros({g, conceptCount}, at::kDouble);
        for (int64_t k = 0; k < g; ++k)
            for (const int32_t c : combinations.sets[static_cast<size_t>(k)])
                incidence[k][c] = 1.0;
        const at::Tensor pixels = at::tensor(combinations.pixels, at::kDouble);
        const at::Tensor areas = pixels.matmul(incidence).round().to(at::kLong).contiguous();
        result.conceptPixels.assign(areas.data_ptr<int64_t>(), areas.data_ptr<int64_t>() + conceptCount);
    }
    for (int64_t c = 0; c < conceptCount; ++c)
        if (result.conceptImages[static_cast<size_t>(c)] == 0)
            result.warnings.push_back("the concept '" + set.concepts[static_cast<size_t>(c)].name
                + "' is in none of the images read: it is not scored");

    std::vector<int64_t> categoryOf;
    for (int64_t c = 0; c < conceptCount; ++c)
        categoryOf.push_back(set.categoryOf(static_cast<int32_t>(c)));
    for (auto& pass : passes) {
        DissectedLayer layer;
        layer.layer = pass.layer;
        layer.units = units.kind();
        layer.gridHeight = pass.gridHeight;
        layer.gridWidth = pass.gridWidth;
        layer.unitNames = units.unitNames();
        layer.unitResults.resize(static_cast<size_t>(pass.units));
        for (int64_t u = 0; u < pass.units; ++u)
            layer.unitResults[static_cast<size_t>(u)].unit = u;
        for (const auto& category : set.categories)
            layer.categories.push_back({category, 0, 0});
        if (invert) {
            std::vector<int64_t> rows;
            for (size_t i = 0; i < read.size(); ++i)
                if (read[i])
                    rows.push_back(static_cast<int64_t>(i));
            at::Tensor labels = at::zeros({conceptCount, static_cast<int64_t>(rows.size())}, at::kDouble);
            for (size_t r = 0; r < rows.size(); ++r)
                for (const int32_t c : concepts[static_cast<size_t>(rows[r])])
                    labels[c][static_cast<int64_t>(r)] = 1.0;
            const at::Tensor values = pass.pooled.index_select(0, at::tensor(rows, at::kLong));
            const InvertScores scores = invertScores(values, labels);
            labelInvert(layer, scores, request, result.conceptNames);
        }
        if (iou) {
            const at::Tensor counts = pass.counts.narrow(1, 0, incidence.size(0));
            const at::Tensor pixels = at::tensor(combinations.pixels, at::kDouble);
            const IouScores scores = iouScores(
                counts, pixels, incidence, pass.unitArea, pass.unitAreaAll, at::tensor(categoryOf, at::kLong));
            labelIou(layer, scores, request, result.conceptNames);
            const auto* thresholds = pass.thresholds.data_ptr<float>();
            for (auto& unit : layer.unitResults)
                unit.threshold = thresholds[unit.unit];
            if (request.formulaLength > 1)
                searchFormulas(layer, counts, pixels, incidence, pass.unitAreaAll, request, result.conceptNames);
        }
        for (auto& unit : layer.unitResults) {
            if (unit.interpretableIou)
                ++categoryCount(layer,
                    unit.iou.front().conceptId >= 0
                        ? result.conceptCategories[static_cast<size_t>(unit.iou.front().conceptId)]
                        : "formula")
                      .iou;
            if (unit.interpretableInvert)
                ++categoryCount(layer, result.conceptCategories[static_cast<size_t>(unit.invert.front().conceptId)])
                      .invert;
            layer.interpretableIou += unit.interpretableIou ? 1 : 0;
            layer.interpretableInvert += unit.interpretableInvert ? 1 : 0;
            const auto values = pass.topValues[unit.unit];
            for (int64_t t = 0; t < values.size(0); ++t) {
                const int64_t image = pass.topImages[unit.unit][t].item<int64_t>();
                if (image < 0)
                    break;
                unit.topImages.push_back({image, values[t].item<float>(),
                    floatTensor(pass.topMaps[unit.unit][t].reshape({pass.gridHeight, pass.gridWidth}))});
            }
        }
        result.layers.push_back(std::move(layer));
    }
    result.seconds = secondsSince(started);
    return result;
}

void DissectionRequest::visit(ParameterVisitor& v)
{
    v.visit(Parameter("layer", "a module to dissect (several: from one pass)"), layers);
    v.visit(Parameter("concepts", "a concept set's folder").needed().folder(), concepts);
    v.visit(Parameter("units", "channels, sae:FOLDER (a saved SAE) or probe:FILE (a linear probe)"), units);
    v.visit(Parameter("method", "iou, invert or both").oneOf({"iou", "invert", "both"}),
        TextField{[this] { return toString(method); },
            [this](const std::string& text) { method = parseDissectionMethod(text); }});
    v.visit(
        Parameter("quantile", "iou: the top share of a unit's values that is its region").openRange(0, 1), quantile);
    v.visit(Parameter("iou_threshold", "iou: interpretable above this IoU").range(0, 1), iouThreshold);
    v.visit(Parameter("auc_threshold", "invert: interpretable from this AUC").range(0, 1), aucThreshold);
    v.visit(Parameter("alpha", "invert: interpretable below this corrected p").openRange(0, 1), alpha);
    v.visit(Parameter("pooling", "invert: a unit's value per image, mean or max of its map").oneOf({"mean", "max"}),
        pooling);
    v.visit(
        Parameter("formula_length", "iou: formulas of up to this many concepts (1: none)").range(1, 3), formulaLength);
    v.visit(Parameter("beam", "formulas: the beam search's width").range(1, 100), beam);
    v.visit(Parameter("top", "concepts kept per unit and method").range(1, 1000), top);
    v.visit(Parameter("top_images", "images kept per unit (largest value), with maps").range(1, 1000), topImages);
    v.visit(Parameter("max_images", "at most this many of the set's images (0: all)")
                .range(0, double(int64_t{1} << 40))
                .defaultNotShown(),
        maxImages);
    v.visit(Parameter("batch_images", "images per forward pass").range(1, 4096), imageBatch);
    v.visit(Parameter("spill_mb",
                "iou: the most MiB of maps kept on disk for the second pass, which otherwise runs the model again "
                "(default: half the temporary folder's free space; 0: never)")
                .range(-1, double(int64_t{1} << 40))
                .defaultNotShown(),
        spillMb);
}

DissectionResult DissectionAnalysis::run(AnalysisContext& context, const Request& request)
{
    auto engine = context.models.engine(context.model);
    return dissect(*engine, request, context.progress);
}

std::pair<double, double> aucAndPValue(const std::vector<float>& values, const std::vector<bool>& positive)
{
    if (values.size() != positive.size())
        throw Error("aucAndPValue: " + std::to_string(values.size()) + " values, " + std::to_string(positive.size())
            + " labels");
    const auto n = static_cast<int64_t>(values.size());
    const at::Tensor x = at::tensor(values, at::kFloat).view({n, 1});
    at::Tensor labels = at::zeros({1, n}, at::kDouble);
    for (int64_t i = 0; i < n; ++i)
        labels[0][i] = positive[static_cast<size_t>(i)] ? 1.0 : 0.0;
    const InvertScores scores = invertScores(x, labels);
    return {scores.auc[0][0].item<double>(), scores.p[0][0].item<double>()};
}

} // namespace torchscope
