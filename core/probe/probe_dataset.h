#pragma once

#include "common/batch_stream.h"
#include "common/progress.h"
#include "probe/probe_training.h"

#include <ATen/core/Tensor.h>

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace torchscope {

class ActivationCache;
class Engine;

struct SampleBatch {
    at::Tensor inputs; // [B, ...]: the model's first argument
    std::vector<int64_t> sampleIds; // positions in the dataset
    std::vector<std::pair<std::string, std::string>> failures; // skipped samples: name, why
};

// Labelled samples for probe training, streamed in batches (an image folder, a tensor file).
struct ProbeSamples {
    std::vector<int64_t> labels; // per sample: an index into classNames
    std::vector<std::string> classNames;
    std::string preprocessing; // how inputs were made from the files ("" for tensors)
    std::string fingerprint; // identifies the samples: file names, sizes and times, or a hash
    std::function<std::optional<SampleBatch>()> next; // batches in dataset order, then nothing
    std::function<void()> cancel;
    bool shareOfJob = false; // one rank's share of a distributed run's samples: it may have none
};

struct ProbeDataset {
    std::vector<std::string> classNames;
    at::Tensor labels; // [N] class indices
    at::Tensor sampleIds; // [N] the samples' positions in the dataset
    std::map<std::string, at::Tensor> features; // layer -> [N, F], the same rows for every layer
    std::vector<std::string> cachedLayers; // layers whose features came from the cache
    int64_t samplesRun = 0; // samples that went through the model in this call
    bool cancelled = false; // then features is empty
    std::vector<std::pair<std::string, std::string>> failures;
    std::vector<std::string> warnings;
};

// Rows of a tensor ([N, ...]) with their labels ([N] integers, any values: class k is the k-th
// smallest). `fingerprint` names the data for the cache (a file hash, say).
// `shard`: only its batches of the rows (a rank's share of a distributed run).
ProbeSamples tensorSamples(const at::Tensor& samples, const at::Tensor& labels, int batchSize,
    const std::string& fingerprint, std::vector<std::string> classNames = {}, const Shard& shard = {});

// Grabs every layer's output once for all samples (one forward pass per batch, cut after the
// last layer), pools it into probe features and caches them. Layers found in `cache` are not run
// again; when all are cached the model does not run at all. progress (samples done of
// all) returning false cancels (nothing is cached then). Throws torchscope::Error.
ProbeDataset collectProbeDataset(Engine& engine, const std::vector<std::string>& layers, ProbePooling pooling,
    ProbeSamples& samples, ActivationCache* cache = nullptr, const ProgressCallback& progress = {});

} // namespace torchscope
