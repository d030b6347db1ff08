#include "image_inputs.h"

#include "common/error.h"
#include "imaging/image_decoder.h"
#include "imaging/image_folder.h"
#include "imaging/image_tensor.h"
#include "model/model_setup.h"
#include "probe/probe_dataset.h"
#include "probe/probe_folder.h"
#include "record/folder_run.h"

#include <filesystem>

namespace torchscope::cli {

std::vector<std::string> listImageInputs(const std::vector<std::string>& inputs)
{
    std::vector<std::string> images;
    for (const auto& input : inputs) {
        if (std::filesystem::is_directory(input)) {
            const auto found = listImages(input);
            if (found.empty())
                throw Error("the folder '" + input + "' holds no images (.png, .jpg, .bmp, .tif, .webp)");
            images.insert(images.end(), found.begin(), found.end());
        } else {
            images.push_back(input);
        }
    }
    return images;
}

at::Tensor loadImageInputs(
    const std::vector<std::string>& inputs, const Preprocessing& preprocessing, std::vector<std::string>& names)
{
    names = listImageInputs(inputs);
    return loadImageBatch(names, preprocessing);
}

namespace {

// Image folders (a folder's subfolders are its classes) and single images, in the order given.
ImageFolder folderOfInputs(const std::vector<std::string>& inputs, const ModelSetup& setup, const std::string& what)
{
    ImageFolder folder;
    for (const auto& input : inputs) {
        if (!std::filesystem::exists(input))
            throw Error("--input '" + input + "' does not exist (no such file or folder)");
        const ImageFolder part = std::filesystem::is_directory(input) ? ImageFolder::scan(input, setup.labels)
                                                                      : ImageFolder::fromFiles({input});
        if (folder.classes.empty()) {
            folder.classes = part.classes;
            folder.classLabels = part.classLabels;
            folder.labelSource = part.labelSource;
        }
        folder.images.insert(folder.images.end(), part.images.begin(), part.images.end());
    }
    if (folder.images.empty())
        throw Error("nothing to " + what + ": the inputs hold no images");
    return folder;
}

} // namespace

FolderRunResult recordImageInputs(Engine& engine, Recorder& recorder, const std::vector<std::string>& inputs,
    const ModelSetup& setup, int batchSize, int decodeThreads, const ProgressCallback& progress,
    RecordingSource& source)
{
    const ImageFolder folder = folderOfInputs(inputs, setup, "record");
    FolderRunOptions options;
    options.batchSize = batchSize;
    options.decodeThreads = decodeThreads;
    const FolderRunResult summary = recordFolder(engine, recorder, folder, setup.preprocessing, options, progress);
    const RecordingSource found = recordingSource(folder);
    source.imageFiles = found.imageFiles;
    source.classes = found.classes;
    source.classLabels = found.classLabels;
    source.labelSource = found.labelSource;
    return summary;
}

BatchStream imageRecordingBatches(const std::vector<std::string>& inputs, const ModelSetup& setup, int batchSize,
    int decodeThreads, const Shard& shard, RecordingSource& source)
{
    const ImageFolder folder = folderOfInputs(inputs, setup, "record");
    FolderRunOptions options;
    options.batchSize = batchSize;
    options.decodeThreads = decodeThreads;
    options.shard = shard;
    const RecordingSource found = recordingSource(folder);
    source.imageFiles = found.imageFiles;
    source.classes = found.classes;
    source.classLabels = found.classLabels;
    source.labelSource = found.labelSource;
    return folderBatches(folder, setup.preprocessing, options);
}

BatchStream imageInputBatches(
    const std::vector<std::string>& inputs, const ModelSetup& setup, int batchSize, int decodeThreads)
{
    FolderRunOptions options;
    options.batchSize = batchSize;
    options.decodeThreads = decodeThreads;
    return folderBatches(folderOfInputs(inputs, setup, "compare"), setup.preprocessing, options);
}

ProbeSamples folderProbeSamples(
    const std::string& folder, const ModelSetup& setup, int batchSize, int threads, const Shard& shard)
{
    return folderSamples(ImageFolder::scan(folder, setup.labels), setup.preprocessing, batchSize, threads, shard);
}

} // namespace torchscope::cli
