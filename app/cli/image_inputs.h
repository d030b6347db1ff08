#pragma once

// What the CLI reads from image files. image_inputs.cpp is built with the torchscope_imaging
// target (OpenCV); a build without it gets image_inputs_unavailable.cpp, which says so.

#include "record/batch_run.h"
#include "record/recording_files.h"

#include <ATen/core/Tensor.h>

#include <functional>
#include <string>
#include <vector>

namespace torchscope {
class Engine;
class Recorder;
struct ModelSetup;
struct Preprocessing;
struct ProbeSamples;
} // namespace torchscope

namespace torchscope::cli {

// The images of --input paths (folders listed in name order), as one preprocessed batch; their
// paths in batch order go to `names`.
at::Tensor loadImageInputs(
    const std::vector<std::string>& inputs, const Preprocessing& preprocessing, std::vector<std::string>& names);

// The image files of --input paths: folders listed in name order, files as given.
std::vector<std::string> listImageInputs(const std::vector<std::string>& inputs);

// Records images and image folders (a folder's subfolders are its classes); `source` gets what
// the recording's summary says of its samples.
FolderRunResult recordImageInputs(Engine& engine, Recorder& recorder, const std::vector<std::string>& inputs,
    const ModelSetup& setup, int batchSize, int decodeThreads, const ProgressCallback& progress,
    RecordingSource& source);

// Images and image folders as batches to record (`shard`: a torchrun rank's share); `source`
// gets what the recording's summary says of its samples.
BatchStream imageRecordingBatches(const std::vector<std::string>& inputs, const ModelSetup& setup, int batchSize,
    int decodeThreads, const Shard& shard, RecordingSource& source);

// Images and image folders as batches for compare, decoded ahead on `decodeThreads` threads.
BatchStream imageInputBatches(
    const std::vector<std::string>& inputs, const ModelSetup& setup, int batchSize, int decodeThreads);

// --data FOLDER for probe: one subfolder per class (`shard`: a torchrun rank's share).
ProbeSamples folderProbeSamples(
    const std::string& folder, const ModelSetup& setup, int batchSize, int threads, const Shard& shard = {});

} // namespace torchscope::cli
