#pragma once

#include "graph/output_kinds.h"

#include <QColor>
#include <QImage>

namespace torchscope {

// A distinct colour per class (the same class keeps its colour across images and views).
QColor classColour(int64_t classIndex);

// The segmentation's class map ([H, W] class indices) over the picture the model saw
// ([H, W, 3] in [0, 1]), each class in its colour; class 0 (background) left clear.
QImage classMapPicture(const FloatTensor& picture, const FloatTensor& classMap, float alpha = 0.5f);

// Detection boxes with label and score drawn over the picture the model saw, scaled by `scale`
// (boxes are in model-input pixels; the picture is drawn `scale` times as large).
QImage detectionPicture(const FloatTensor& picture, const std::vector<DetectionBox>& boxes, double scale = 1.0);

} // namespace torchscope
