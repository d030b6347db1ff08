#pragma once

// What a model's output means, as plain values (no Torch): for the CLI, the window and its worker.

#include "common/float_tensor.h"

#include <cstdint>
#include <string>
#include <vector>

namespace torchscope {

enum class OutputKind {
    Classes, // [N, classes] scores
    Segmentation, // [N, classes, H, W] scores per pixel (segmentation models return {"out": ...})
    Detection, // List[Dict[str, Tensor]] with boxes, labels and scores (torchvision's detectors)
    Other
};
std::string outputKindName(OutputKind kind);

struct Prediction {
    int64_t index = 0; // the class
    std::string label;
    double probability = 0.0; // classes: softmax; segmentation: share of the pixels; detection: score
};

struct DetectionBox {
    float x0 = 0, y0 = 0, x1 = 0, y1 = 0; // in the model input's pixels
    int64_t label = 0;
    std::string labelText;
    double score = 0.0;
};

// Another element of a tuple or dict output, read for one image: an age beside a gender's scores.
struct OutputReading {
    std::string element; // "[1]", a namedtuple field or a dict key
    std::vector<double> values; // the image's values, in order (at most 16)
};

// One image's reading of the output: the top classes, a class map, or detections.
struct ImagePrediction {
    OutputKind kind = OutputKind::Other;
    std::string element; // where the scores were found: "" (the output itself), "logits", "out", "[1]"
    std::vector<Prediction> top; // classes: top-k by probability; segmentation: classes by pixel share
    FloatTensor classMap; // segmentation: [H, W], the highest-scoring class of each pixel
    std::vector<DetectionBox> detections; // detection: as the model ranks them (by score)
    std::vector<OutputReading> others; // the output's other small elements (outputReadings)
};

// The label of class `index`, or "class N" when the labels do not reach it.
std::string labelOf(const std::vector<std::string>& labels, int64_t index);

} // namespace torchscope
