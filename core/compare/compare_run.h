#pragma once

// Compares two runs layer by layer while streaming batches: linear CKA between two models, the
// per-layer differences of two checkpoints on the same inputs, and a model's drift from float64
// on the CPU to lower precisions and other devices. Only one batch of activations per layer is
// ever held; a cancelled run returns what the batches so far give.

#include "compare/comparison.h"
#include "record/batch_run.h"

#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace torchscope {

class Model;
struct LoadOptions;

// Samples come as a BatchStream (record/batch_run.h): tensorBatches() for a tensor,
// folderBatches() (record/folder_run.h) for images.

// Cka and Checkpoints modes: A against B on the same inputs. Throws torchscope::Error for specs
// that select nothing, layers whose output is no tensor, and (Checkpoints) layers B lacks.
CompareResult compareModels(const std::shared_ptr<Model>& a, const std::shared_ptr<Model>& b,
    const CompareConfig& config, const BatchStream& stream, const ProgressCallback& progress = {});

// Precision mode: the model at `path` in float64 on the CPU is the reference; each of the
// config's precisions loads it again (on its device, in its dtype) and is compared with it. A
// precision the machine cannot run (no GPU, an operator without bfloat16 kernels) is reported in
// its Comparison's `unavailable`, not thrown.
CompareResult comparePrecisions(const std::string& path, const LoadOptions& options, const CompareConfig& config,
    const BatchStream& stream, const ProgressCallback& progress = {});

} // namespace torchscope
