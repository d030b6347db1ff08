#pragma once

// How many inputs one forward pass of a model may take: its own bound and the memory cap's. Torch-free.

#include <cstdint>

namespace torchscope {

class Model;

// A torch.export program's bound on its first input's batch dimension ("x: float32[s77, 3, 224, 224]"
// with "s77 in [1, 64]": 64; a static first dimension: its size); INT64_MAX for anything else (a
// TorchScript model, an unbounded Dim). Methods that evaluate many inputs batch them under both this
// and their memory cap: a program exported with Dim("batch", max=64) refuses a 65th input.
int64_t largestBatch(const Model& model);

// How many inputs one batch may hold: under the memory cap (bytesPerSample each), no more than the
// model takes (largestBatch), at least 1 and at most `useful`.
int64_t batchUnderCap(const Model& model, int64_t memoryBytes, int64_t bytesPerSample, int64_t useful);

// What one evaluated input costs, from the output shapes a dry run recorded in the model's tree: twice
// every module's output (forward and backward) plus the input, float32; 0 when no shapes are recorded.
// `inputValues`: one input's number of values.
int64_t recordedBytesPerSample(const Model& model, int64_t inputValues);

} // namespace torchscope
