#include "run/image_run.h"

#include "common/error.h"
#include "common/tensor_conversion.h"
#include "export/pt_export.h"
#include "export/write_tensors.h"
#include "graph/engine.h"
#include "graph/model_output.h"
#include "graph/setup_advice.h"
#include "imaging/image_decoder.h"
#include "imaging/image_tensor.h"
#include "model/model.h"
#include "preprocess/preprocess_tensor.h"
#include "record/tensor_statistics.h"
#include "sae/sae_splice.h"

#include <torch/script.h>

#include <algorithm>
#include <chrono>

namespace torchscope {

struct ImageRunner::Cache {
    bool dryRunDone = false;
    std::string cutAwayFor; // the truncation point cutAway was found for
    std::vector<std::string> cutAway;
    // The last run, per key, per image, on the CPU: tensors, or whole outputs (dicts, tuples).
    std::vector<std::pair<std::string, std::vector<c10::IValue>>> recorded;
};

namespace {

// The decoded image as [H, W, 3] in [0, 1] (grey repeated).
FloatTensor rgbPicture(const DecodedImage& image)
{
    FloatTensor picture;
    picture.shape = {image.height, image.width, 3};
    const size_t pixels = static_cast<size_t>(image.height) * image.width;
    picture.values.reserve(pixels * 3);
    for (size_t p = 0; p < pixels; ++p)
        for (int c = 0; c < 3; ++c)
            picture.values.push_back(image.pixels[p * image.channels + (image.channels == 3 ? c : 0)]);
    return picture;
}

void keep(std::vector<std::pair<std::string, std::vector<c10::IValue>>>& recorded, const std::string& key,
    const c10::IValue& value)
{
    auto it = std::find_if(recorded.begin(), recorded.end(), [&](const auto& entry) { return entry.first == key; });
    if (it == recorded.end())
        it = recorded.insert(recorded.end(), {key, {}});
    it->second.push_back(toCpu(value));
}

// The images' values of one key along dim 0, or (shapes that differ, or not tensors) a list of
// them, one per image.
c10::IValue concatenated(const std::vector<c10::IValue>& values)
{
    std::vector<at::Tensor> tensors;
    for (const auto& value : values)
        if (value.isTensor())
            tensors.push_back(value.toTensor());
    if (tensors.size() == values.size()) {
        try {
            return at::cat(tensors, 0);
        } catch (const c10::Error&) {
            return c10::List<at::Tensor>(tensors);
        }
    }
    c10::impl::GenericList list(c10::AnyType::get());
    for (const auto& value : values)
        list.push_back(value);
    return list;
}

void addOnce(std::vector<std::string>& list, const std::string& text)
{
    if (std::find(list.begin(), list.end(), text) == list.end())
        list.push_back(text);
}

} // namespace

ImageRunner::ImageRunner(std::shared_ptr<Model> model, Engine& engine)
    : model_(std::move(model))
    , engine_(engine)
    , cache_(std::make_unique<Cache>())
{ }

ImageRunner::~ImageRunner() = default;

ImageRunResult ImageRunner::run(
    const ImageRunConfig& config, const ProgressCallback& progress, const ImageResultCallback& onImage)
{
    const auto& arguments = model_->forwardArguments();
    if (arguments.size() > 1 && !arguments[1].hasDefault)
        throw Error("this model's " + model_->forwardSignature()
            + " takes several inputs; images feed models with one input (give one tensor file per argument "
              "to torchscope-cli run)");
    // A sparse autoencoder's edit (sae/sae_splice.h) reads its SAE once per run: its tensors go with each image.
    Request request = config.request;
    const std::vector<at::Tensor> editTensors = prepareSaeEdits(request, {});
    engine_.prepare(request);

    const auto start = std::chrono::steady_clock::now();
    ImageRunResult result;
    cache_->recorded.clear();
    std::vector<std::string> modelFailures;
    const std::string truncation = config.request.truncateAt.value_or("");
    const int total = static_cast<int>(config.images.size());
    const int first = config.firstImage >= 0 && config.firstImage < total ? config.firstImage : 0;
    bool firstRan = false;
    int ranBeforeFirst = 0; // images before `first` in the list that ran: where its result belongs
    for (int step = 0; step < total; ++step) {
        // first, then the others in order
        const int i = step == 0 ? first : (step <= first ? step - 1 : step);
        if (progress && !progress(Progress{step, total, "images", {}})) {
            result.cancelled = true;
            break;
        }
        const std::string& path = config.images[static_cast<size_t>(i)];
        DecodedImage image;
        at::Tensor input;
        try {
            image = decodeImage(path);
            input = preprocessImage(imageToTensor(image), config.setup.preprocessing).unsqueeze(0);
        } catch (const std::exception& e) {
            result.failures.emplace_back(path, e.what());
            continue;
        }
        try {
            const auto inputs = forwardInputsFromBatch(*model_, input);
            if (!cache_->dryRunDone) {
                dryRun(*model_, inputs);
                cache_->dryRunDone = true;
                result.modules = model_->modules();
            }
            if (truncation.empty())
                cache_->cutAway.clear();
            else if (cache_->cutAwayFor != truncation)
                cache_->cutAway = modulesCutAway(*model_, inputs, truncation);
            cache_->cutAwayFor = truncation;
            const RunResult run = engine_.run(request, inputs, editTensors);
            ImageRunItem item;
            item.path = path;
            if (config.keepPictures) {
                item.picture = rgbPicture(image);
                item.modelInput = toFloatTensor(input[0]);
                item.inputPicture = toFloatTensor(pictureOfInput(input, config.setup.preprocessing));
            }
            if (config.thumbnailSize > 0) {
                const Thumbnail thumbnail = makeThumbnail(image, config.thumbnailSize);
                item.thumbnailWidth = thumbnail.width;
                item.thumbnailHeight = thumbnail.height;
                item.thumbnail = thumbnail.rgb;
            }
            if (truncation.empty()) {
                const c10::IValue& output = run.values.front().second;
                item.prediction
                    = predictImage(findScores(output, config.setup.scores), 0, config.setup.labels, config.topK);
                for (auto& reading : outputReadings(output, item.prediction.element, 0))
                    item.prediction.others.push_back(std::move(reading));
            }
            item.gradientTarget = run.target;
            item.width = image.width;
            item.height = image.height;
            if (result.gradientTarget.empty())
                result.gradientTarget = run.target;
            for (const auto& [key, value] : run.values) {
                keep(cache_->recorded, key, value);
                if (!value.isTensor())
                    continue; // kept for export; the views and statistics show tensors
                const at::Tensor tensor = value.toTensor();
                const FloatTensor single = toFloatTensor(tensor.dim() > 0 && tensor.size(0) == 1 ? tensor[0] : tensor);
                if (key == "output")
                    item.output = single;
                else
                    item.values[key] = single;
            }
            for (const auto& warning : run.warnings)
                addOnce(result.warnings, warning);
            if (onImage)
                onImage(item);
            firstRan = firstRan || i == first;
            if (i < first)
                ++ranBeforeFirst;
            result.images.push_back(std::move(item));
        } catch (const std::exception& e) {
            result.failures.emplace_back(path, e.what());
            modelFailures.push_back(e.what());
            if (result.setupAdvice.empty())
                result.setupAdvice = inputMismatchAdvice(e.what(), input.sizes().vec(), config.setup);
        }
    }
    if (firstRan && ranBeforeFirst > 0) { // the first image's result back to its place in the list
        const auto rotate = [&](auto& list) {
            if (list.size() == result.images.size())
                std::rotate(list.begin(), list.begin() + 1, list.begin() + 1 + ranBeforeFirst);
        };
        for (auto& [key, values] : cache_->recorded)
            rotate(values);
        rotate(result.images);
    }
    if (progress && !result.cancelled)
        progress(Progress{total, total, "images", {}});
    result.cutAway = cache_->cutAway;
    for (const auto& [key, values] : cache_->recorded)
        if (const c10::IValue all = concatenated(values); all.isTensor())
            result.statistics[key] = computeLayerStatistics(all.toTensor());
    // else: shapes differ between images, or not tensors: no pooled statistics
    if (result.images.empty() && !modelFailures.empty() && modelFailures.size() == result.failures.size())
        result.error = modelFailures.front();
    else
        result.setupAdvice.clear();
    result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return result;
}

bool ImageRunner::hasRecorded() const
{
    return !cache_->recorded.empty();
}

std::vector<std::string> ImageRunner::writeRecorded(const std::string& path, const ExportManifest* manifest) const
{
    if (cache_->recorded.empty())
        throw Error("nothing has been recorded yet: run the model on images first");
    NamedValues values;
    for (const auto& [key, perImage] : cache_->recorded)
        values.emplace_back(key, concatenated(perImage));
    std::vector<std::string> leftOut;
    for (const auto& key : writeTensors(path, values, manifest))
        leftOut.push_back(key + " (not one tensor: its shape differs between images, or it is not a tensor; a .pt "
            + "file keeps it as a list, one per image)");
    return leftOut;
}

} // namespace torchscope
