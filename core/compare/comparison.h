#pragma once

// What a comparison is asked for and what it finds, as plain values (no Torch), so that the
// window's headers can hold results.

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace torchscope {

enum class CompareMode {
    Cka, // two models (any architectures): linear CKA for every pair of layers
    Checkpoints, // two checkpoints of one architecture: CKA, cosine and relative L2 per layer
    Precision // one model in float64 on the CPU against lower precisions and other devices
};

enum class CkaFeatures {
    Flattened, // each sample's C*H*W values (Kornblith et al. 2019)
    Pooled // each channel's spatial mean: C features
};

// A device and a dtype to run a model in: "float32", "bfloat16", "cuda:float16", "cuda:1:float32".
struct Precision {
    std::string device = "cpu";
    std::string dtype = "float32"; // float64, float32, bfloat16, float16

    static Precision parse(const std::string& text); // throws torchscope::Error
    std::string name() const; // "cpu float32", "cuda float16"
};

struct CompareConfig {
    CompareMode mode = CompareMode::Cka;
    std::vector<std::string> layers; // selector specs (paths, globs, type:X) in model A
    std::vector<std::string> layersB; // Cka: specs in model B; empty: the same as `layers`
    CkaFeatures features = CkaFeatures::Flattened;
    // Where two runs part: checkpoints, the first layer whose CKA falls below it (default 0.99);
    // precision, the first layer whose relative L2 error rises above it (default 1e-3).
    std::optional<double> threshold;
    std::vector<Precision> precisions; // Precision mode; empty: defaultPrecisions()

    double effectiveThreshold() const;
};

// One layer of two runs on the same inputs (B against A, or a precision against float64).
struct LayerDifference {
    std::string layer;
    std::vector<int64_t> shape; // one sample's
    double cka = std::numeric_limits<double>::quiet_NaN(); // minibatch linear CKA (checkpoints)
    double cosine = 0.0; // mean over samples of cos(a_i, b_i)
    double relativeL2 = 0.0; // ||B - A|| / ||A|| over every value
    double maxAbsError = 0.0; // max |B - A|
    double maxRelativeError = 0.0; // max |B - A| / max |A|
};

// B against A, or one precision against the reference, layer by layer.
struct Comparison {
    std::string name; // "B", "cpu bfloat16"
    std::vector<LayerDifference> layers;
    std::optional<size_t> firstOver; // the first layer beyond the threshold
    std::string unavailable; // not empty: why this precision could not run (its layers are empty)
};

struct CompareResult {
    CompareMode mode = CompareMode::Cka;
    CkaFeatures features = CkaFeatures::Flattened;
    std::string modelA, modelB; // paths
    std::vector<std::string> layersA, layersB; // the CKA matrix's rows and columns
    std::vector<double> cka; // rows x columns, row-major; NaN where a layer is constant
    std::vector<Comparison> comparisons; // Checkpoints: one ("B"); Precision: one per precision
    double threshold = 0.0;
    int64_t samples = 0; // run through both sides
    int64_t ckaBatches = 0; // batches the CKA estimate averages over
    int64_t ckaSamples = 0;
    bool cancelled = false;
    double seconds = 0.0;
    std::vector<std::string> warnings;
    std::vector<std::pair<std::string, std::string>> failures; // unreadable images: path, why

    double ckaAt(size_t row, size_t column) const { return cka[row * layersB.size() + column]; }
};

// float32 and bfloat16 on the CPU; with a GPU also CUDA float32, float16 and bfloat16.
std::vector<Precision> defaultPrecisions(bool cudaAvailable);

std::string modeName(CompareMode mode); // "cka", "checkpoints", "precision"
CompareMode parseCompareMode(const std::string& name); // throws torchscope::Error

} // namespace torchscope
