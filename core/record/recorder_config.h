#pragma once

#include "graph/request.h"

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace torchscope {

// How the values of many samples are folded (torchfunc's reductions, baukit's running stats).
enum class Reduction {
    None, // keep every sample (with a memory cap)
    Sum, // elementwise over samples
    Mean,
    Max,
    Min,
    Stats // per channel: mean, variance, min, max, zeros, histogram, top-k samples
};
Reduction parseReduction(const std::string& text); // throws torchscope::Error
std::string toString(Reduction reduction);

// Which samples count (torchfunc's condition), from the true label (ImageFolder) and the
// model's prediction (argmax of a [batch, classes] output).
struct Condition {
    enum class Kind { All, TrueLabelIn, PredictedIn, Correct, Wrong };
    Kind kind = Kind::All;
    std::set<int64_t> labels;

    // "all", "true:1,2", "predicted:3", "correct", "wrong". Throws torchscope::Error.
    static Condition parse(const std::string& text);
    bool needsTrueLabels() const { return kind == Kind::TrueLabelIn || kind == Kind::Correct || kind == Kind::Wrong; }
    bool needsPredictions() const { return kind == Kind::PredictedIn || kind == Kind::Correct || kind == Kind::Wrong; }
};

struct RecorderConfig {
    std::vector<GrabSpec> grabs;
    Reduction reduction = Reduction::Stats;
    Condition condition;
    int64_t memoryCapBytes = int64_t{2} << 30; // for Reduction::None
    int histogramBins = 64;
    std::optional<std::pair<double, double>> histogramRange; // none: from the first batch
    int topK = 9;
    std::optional<int64_t> targetClass; // for :grad grabs
    std::string scores; // the output element with the class scores ("" finds it)
    // Applied to every batch (a recording of an ablated model): zero and scale only, since add
    // and replace carry one tensor for one input.
    std::vector<EditSpec> edits;
};

} // namespace torchscope
