#pragma once

// Finds the class scores in whatever a model returns (a tensor, a tuple or namedtuple, a dict, a
// detector's (losses, detections)) and turns them into predictions and gradient targets.
// Includes ATen's IValue: for core/*.cpp, the CLI, the worker and tests.

#include "graph/output_kinds.h"

#include <ATen/core/ivalue.h>

#include <array>
#include <optional>
#include <string>
#include <vector>

namespace torchscope {

struct ScoreOutput {
    OutputKind kind = OutputKind::Other;
    std::string element; // "" (the output itself), a field name, a dict key, or "[i]"
    at::Tensor scores; // Classes: [N, C]; Segmentation: [N, C, H, W]
    c10::IValue detections; // Detection: List[Dict[str, Tensor]], one dict per image
    std::string described; // what the output is, for messages ("InceptionOutputs(logits, aux_logits)")
};

// `element` picks a tuple element (by index or namedtuple field) or a dict key; "" finds it: the
// first [N, C] tensor, else a list of detection dicts, else the first [N, C, H, W] tensor ("out"
// first in a dict). Throws torchscope::Error naming the elements there are.
ScoreOutput findScores(const c10::IValue& output, const std::string& element = "");

// What the gradient is taken of. `index`: the class (classes, segmentation) or the detection (its
// rank among the image's detections); negative: the predicted class / the top detection.
// `region` (segmentation): x0, y0, x1, y1 in output pixels (x1, y1 exclusive); without it, the
// pixels predicted as the class.
struct GradientTarget {
    int64_t index = -1;
    std::optional<std::array<int64_t, 4>> region;
};

struct TargetScore {
    at::Tensor score; // a scalar connected to the graph
    int64_t index = 0; // the class (or detection) chosen
    std::string description; // "class 3", "class 15 summed over its 2,304 pixels", "detection 0 ..."
};

// Classes: output[:, c] summed over the batch (the predicted class of the summed scores).
// Segmentation: output[:, c] summed over the class's pixels (or the region); the predicted class is
// the one covering most pixels other than class 0 (background in VOC and COCO label sets).
// Detection: the score of the first image's detection `index`.
TargetScore targetScore(
    const ScoreOutput& output, const GradientTarget& target, const std::vector<std::string>& labels = {});

// One image of the batch: top-k classes (softmax), the class map with the classes by pixel share,
// or the detections (at most `k` * 4, those the model returned).
ImagePrediction predictImage(
    const ScoreOutput& output, int64_t image, const std::vector<std::string>& labels, int k = 5);

// The elements of a tuple or dict output other than `scoresElement`, read for image `image`: each
// floating-point tensor with a batch dimension (its first) and at most 16 values per image, as the
// image's values in order; a face network's age ([N, 1]) beside its gender scores. Larger elements
// (features, maps) and integer ones are left out: they are no reading.
std::vector<OutputReading> outputReadings(const c10::IValue& output, const std::string& scoresElement, int64_t image);

// A copy with every tensor detached (tuples keep their namedtuple type).
c10::IValue detachedValue(const c10::IValue& value);

} // namespace torchscope
