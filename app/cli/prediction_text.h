#pragma once

#include "graph/output_kinds.h"

#include <string>

namespace torchscope::cli {

// "what the predictions are" for a heading: "top-3 predictions", "detections (label, score, box ...)".
std::string predictionHeading(OutputKind kind);

// One sample's line (detections: one line each after it): "  NAME:  cat 91.0%  dog 3.2%".
std::string predictionText(const std::string& name, const ImagePrediction& prediction);

// VALUE with DIGITS decimals ("0.912"); "n/a" for NaN.
std::string fixed(double value, int digits);

} // namespace torchscope::cli
