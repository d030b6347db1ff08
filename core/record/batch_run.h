#pragma once

#include "common/batch_stream.h"
#include "common/progress.h"

#include <ATen/core/Tensor.h>

#include <exception>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace c10 {
struct IValue;
}

namespace torchscope {

class Engine;
class Recorder;
struct Condition;
struct RecorderConfig;
struct Request;

struct FolderRunResult {
    int64_t images = 0; // run through the model
    int64_t selected = 0; // that satisfied the condition
    double seconds = 0.0;
    double imagesPerSecond = 0.0;
    bool cancelled = false;
    std::vector<std::pair<std::string, std::string>> failures; // unreadable images: path, why
    std::vector<std::string> warnings;
};

// The request a recording runs with (its grabs, target class, scores and edits), prepared.
// Throws torchscope::Error for an edit a recording cannot apply.
// `editTensors`: where a sparse autoencoder's edits put their SAE's tensors (sae/sae_splice.h), for
// Engine::run with every batch; without it such an edit is refused.
Request recordingRequest(Engine& engine, const RecorderConfig& config, std::vector<at::Tensor>* editTensors = nullptr);

// Which samples of a batch the condition keeps (bool [N]) from the run's output and true labels.
at::Tensor conditionMask(const Condition& condition, const c10::IValue& output, const std::string& scoresElement,
    const std::vector<int64_t>& labels);

// Runs every batch of the stream through the model and feeds the recorder.
FolderRunResult recordBatches(
    Engine& engine, Recorder& recorder, const BatchStream& stream, const ProgressCallback& progress = {});

// Streams the rows of a tensor through the model in batches and feeds the recorder; labels (one
// per row, or empty) serve the conditions.
FolderRunResult recordTensor(Engine& engine, Recorder& recorder, const at::Tensor& samples,
    const std::vector<int64_t>& labels, int batchSize, const ProgressCallback& progress = {});

} // namespace torchscope
