#include "run_worker.h"
#include "run_worker_state.h"

#include "common/error.h"
#include "common/tensor_conversion.h"
#include "export/write_tensors.h"
#include "graph/engine.h"
#include "graph/model_output.h"
#include "graph/setup_advice.h"
#include "imaging/image_decoder.h"
#include "imaging/image_tensor.h"
#include "imaging/preprocess_tensor.h"
#include "model/model.h"
#include "model/model_setup.h"
#include "record/folder_run.h"
#include "record/recorder.h"
#include "record/recording_files.h"
#include "record/tensor_statistics.h"

#include <ATen/Parallel.h>
#include <torch/cuda.h>
#include <torch/script.h>

#include <QElapsedTimer>

#include <algorithm>
#include <thread>

namespace torchscope {

FloatTensor rgbPicture(const DecodedImage& image)
{
    FloatTensor picture;
    picture.shape = {image.height, image.width, 3};
    picture.values.reserve(static_cast<size_t>(image.height) * image.width * 3);
    for (size_t p = 0; p < static_cast<size_t>(image.height) * image.width; ++p)
        for (int c = 0; c < 3; ++c)
            picture.values.push_back(image.pixels[p * image.channels + (image.channels == 3 ? c : 0)]);
    return picture;
}

ImagePrediction predictionOf(const c10::IValue& output, const ModelSetup& setup, int k)
{
    return predictImage(findScores(output, setup.scores), 0, setup.labels, k);
}

std::string explainRunFailure(const std::string& message, const at::Tensor& input, const ModelSetup& setup)
{
    const std::string advice = inputMismatchAdvice(message, input.sizes().vec(), setup);
    return advice.empty() ? std::string() : message + "\n\n" + advice + ": set the input in Model > Input Setup…";
}

namespace {

void keepForExport(std::vector<std::pair<std::string, std::vector<at::Tensor>>>& recorded, const std::string& key,
    const at::Tensor& value)
{
    auto it = std::find_if(recorded.begin(), recorded.end(), [&](const auto& entry) { return entry.first == key; });
    if (it == recorded.end())
        it = recorded.insert(recorded.end(), {key, {}});
    it->second.push_back(value.detach().cpu());
}

} // namespace

RunWorker::RunWorker()
    : state_(std::make_unique<State>())
{ }

RunWorker::~RunWorker() = default;

QStringList RunWorker::availableDevices()
{
    QStringList devices{"cpu"};
    if (torch::cuda::is_available())
        devices.prepend("cuda");
    return devices;
}

void RunWorker::openModel(const QString& path, const QString& device, const QStringList& operatorLibraries)
{
    try {
        at::set_num_threads(static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
        LoadOptions options;
        options.device = device.toStdString();
        for (const auto& library : operatorLibraries)
            options.operatorLibraries.push_back(library.toStdString());
        auto model = Model::load(path.toStdString(), options);
        const auto stored = storedSetup(*model);
        ModelSummary summary;
        summary.path = model->path();
        summary.device = model->device();
        summary.signature = model->forwardSignature();
        summary.modules = model->modules();
        summary.setup = stored.value_or(ModelSetup());
        summary.hasStoredSetup = stored.has_value();
        summary.frozenNote = model->frozenNote();
        state_ = std::make_unique<State>();
        state_->model = model;
        state_->engine = std::make_unique<Engine>(model);
        state_->summary = summary;
        Q_EMIT modelOpened(summary);
    } catch (const std::exception& e) {
        Q_EMIT modelFailed(path, QString::fromStdString(e.what()));
    }
}

void RunWorker::run(const RunRequest& request)
{
    cancelled_ = false;
    if (!state_->engine) {
        Q_EMIT runFailed(request.generation, tr("No model is open."), false);
        return;
    }
    try {
        if (state_->model->forwardArguments().size() > 1 && !state_->model->forwardArguments()[1].hasDefault)
            throw Error("this model's " + state_->model->forwardSignature()
                + " takes several inputs; the window feeds images to models with one input (use the CLI "
                  "with one tensor file per argument)");
        state_->engine->prepare(request.request);
    } catch (const std::exception& e) {
        Q_EMIT runFailed(request.generation, QString::fromStdString(e.what()), false);
        return;
    }

    QElapsedTimer timer;
    timer.start();
    auto snapshot = std::make_shared<RunSnapshot>();
    snapshot->generation = request.generation;
    snapshot->requestedImages = static_cast<int>(request.images.size());
    state_->recorded.clear();
    std::vector<std::string> modelFailures;
    std::string setupProblem; // a model failure that points at the input setup
    const int total = static_cast<int>(request.images.size());
    for (int i = 0; i < total; ++i) {
        if (cancelled_) {
            snapshot->cancelled = true;
            break;
        }
        const std::string& path = request.images[static_cast<size_t>(i)];
        DecodedImage image;
        at::Tensor input;
        try {
            image = decodeImage(path);
            input = preprocessImage(imageToTensor(image), request.setup.preprocessing).unsqueeze(0);
        } catch (const std::exception& e) {
            snapshot->failures.emplace_back(path, e.what());
            Q_EMIT progress(request.generation, i + 1, total);
            continue;
        }
        try {
            const auto arguments = forwardInputsFromBatch(*state_->model, input);
            if (!state_->dryRunDone) {
                dryRun(*state_->model, arguments);
                state_->dryRunDone = true;
                snapshot->modules = state_->model->modules();
            }
            const std::string truncation = request.request.truncateAt.value_or("");
            if (truncation.empty())
                state_->cutAway.clear();
            else if (state_->cutAwayFor != truncation)
                state_->cutAway = modulesCutAway(*state_->model, arguments, truncation);
            state_->cutAwayFor = truncation;
            snapshot->cutAway = state_->cutAway;
            const RunResult result = state_->engine->run(request.request, arguments);
            ImageResult item;
            item.path = path;
            item.picture = rgbPicture(image);
            const Thumbnail thumbnail = makeThumbnail(image, 72);
            item.thumbnailWidth = thumbnail.width;
            item.thumbnailHeight = thumbnail.height;
            item.thumbnail = thumbnail.rgb;
            item.modelInput = toFloatTensor(input[0]);
            item.inputPicture = toFloatTensor(pictureOfInput(input, request.setup.preprocessing));
            if (!request.request.truncateAt)
                item.prediction = predictionOf(result.values.front().second, request.setup, request.topK);
            if (snapshot->gradientTarget.empty())
                snapshot->gradientTarget = result.target;
            for (const auto& [key, value] : result.values) {
                if (!value.isTensor())
                    continue;
                const at::Tensor tensor = value.toTensor();
                keepForExport(state_->recorded, key, tensor);
                const FloatTensor single = toFloatTensor(tensor.dim() > 0 && tensor.size(0) == 1 ? tensor[0] : tensor);
                if (key == "output")
                    item.output = single;
                else
                    item.values[key] = single;
            }
            for (const auto& warning : result.warnings)
                if (std::find(snapshot->warnings.begin(), snapshot->warnings.end(), warning)
                    == snapshot->warnings.end())
                    snapshot->warnings.push_back(warning);
            snapshot->images.push_back(std::move(item));
        } catch (const std::exception& e) {
            snapshot->failures.emplace_back(path, e.what());
            modelFailures.push_back(e.what());
            if (setupProblem.empty())
                setupProblem = explainRunFailure(e.what(), input, request.setup);
        }
        Q_EMIT progress(request.generation, i + 1, total);
    }
    for (const auto& [key, tensors] : state_->recorded) {
        try {
            snapshot->statistics[key] = computeLayerStatistics(at::cat(tensors, 0));
        } catch (const std::exception&) {
            // Calls of different shapes (a module used at two resolutions): no pooled statistics.
        }
    }
    snapshot->seconds = timer.elapsed() / 1000.0;
    if (snapshot->images.empty() && !modelFailures.empty() && modelFailures.size() == snapshot->failures.size()) {
        // The model failed on every image it got: that is the request's problem, not the images'.
        const bool setup = !setupProblem.empty();
        Q_EMIT runFailed(
            request.generation, QString::fromStdString(setup ? setupProblem : modelFailures.front()), setup);
        return;
    }
    Q_EMIT runFinished(snapshot);
}

void RunWorker::exportTensors(const QString& path)
{
    try {
        if (state_->recorded.empty())
            throw Error("nothing has been recorded yet: open images and run the model first");
        NamedValues values;
        QStringList leftOut;
        for (const auto& [key, tensors] : state_->recorded) {
            try {
                values.emplace_back(key, at::cat(tensors, 0));
            } catch (const c10::Error&) {
                leftOut << QString::fromStdString(key) + tr(" (its shape differs between images)");
            }
        }
        for (const auto& key : writeTensors(path.toStdString(), values))
            leftOut << QString::fromStdString(key);
        Q_EMIT exported(path, leftOut);
    } catch (const std::exception& e) {
        Q_EMIT exportFailed(path, QString::fromStdString(e.what()));
    }
}

void RunWorker::record(const RecordRequest& request)
{
    recordingCancelled_ = false;
    try {
        if (!state_->engine)
            throw Error("no model is open");
        RecorderConfig config;
        config.grabs = request.grabs;
        config.reduction = parseReduction(request.reduction);
        config.condition = Condition::parse(request.condition);
        config.targetClass = request.targetClass;
        config.scores = request.setup.scores;
        config.edits = request.edits;
        const ImageFolder folder = ImageFolder::scan(request.folder, request.setup.labels);
        auto recorder = std::make_unique<Recorder>(config);
        FolderRunOptions options;
        options.batchSize = request.batchSize;
        options.decodeThreads = 2;
        const FolderRunSummary summary = recordFolder(
            *state_->engine, *recorder, folder, request.setup.preprocessing, options, [this](const FolderRunProgress& p) {
                Q_EMIT recordProgress(p.imagesDone, p.imagesTotal);
                return !recordingCancelled_;
            });
        auto snapshot = std::make_shared<RecordSnapshot>();
        snapshot->cancelled = summary.cancelled;
        snapshot->images = summary.images;
        snapshot->selected = summary.selected;
        snapshot->seconds = summary.seconds;
        snapshot->imagesPerSecond = summary.imagesPerSecond;
        snapshot->labelSource = folder.labelSource;
        for (const auto& edit : request.edits)
            snapshot->edits.push_back(edit.toString());
        for (const auto& image : folder.images)
            snapshot->imagePaths.push_back(image.path);
        for (const auto& key : recorder->keys())
            snapshot->samples[key] = recorder->samples(key);
        snapshot->statistics = recorder->statistics();
        snapshot->topSamples = recorder->topSamples();
        snapshot->failures = summary.failures;
        RecordingSource source;
        source.model = state_->model->path();
        source.condition = request.condition;
        source.imageFiles = snapshot->imagePaths;
        source.classes = folder.classes;
        source.classLabels = folder.classLabels;
        source.labelSource = folder.labelSource;
        state_->recordingSummary = recordingSummary(*recorder, summary, source);
        state_->recording = std::move(recorder);
        Q_EMIT recordFinished(snapshot);
    } catch (const std::exception& e) {
        Q_EMIT recordFailed(QString::fromStdString(e.what()));
    }
}

void RunWorker::adviseSetup(const ModelSetup& current)
{
    if (!state_->model)
        return;
    try {
        Q_EMIT setupAdvised(torchscope::adviseSetup(*state_->model, current));
    } catch (const std::exception& e) {
        SetupAdvice failed;
        failed.notes.push_back(std::string("the model could not be examined: ") + e.what());
        Q_EMIT setupAdvised(failed);
    }
}

void RunWorker::saveSetupIntoModel(const QString& path, const ModelSetup& setup)
{
    try {
        if (!state_->model)
            throw Error("no model is open");
        writeModelWithSetup(state_->model->path(), path.toStdString(), setup);
        Q_EMIT setupSaved(path);
    } catch (const std::exception& e) {
        Q_EMIT setupSaveFailed(path, QString::fromStdString(e.what()));
    }
}

void RunWorker::exportRecording(const QString& path)
{
    try {
        if (!state_->recording)
            throw Error("nothing has been recorded yet: start a folder run in the Recorders panel");
        QStringList leftOut;
        for (const auto& key : writeRecording(path.toStdString(), *state_->recording, state_->recordingSummary))
            leftOut << QString::fromStdString(key);
        Q_EMIT exported(path, leftOut);
    } catch (const std::exception& e) {
        Q_EMIT exportFailed(path, QString::fromStdString(e.what()));
    }
}

} // namespace torchscope
