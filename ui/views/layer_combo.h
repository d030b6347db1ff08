#pragma once

#include <cstddef>
#include <vector>

class QComboBox;

namespace torchscope {

struct ModuleInfo;

// An editable combo of module paths (the CAMs' layer, Grad-CAM's, patching's): typing shows a popup
// of the paths that contain the text, case-insensitive, and fills in nothing by itself. Qt's inline
// completion picked the first path after the typed prefix, so "encoder.layers.encoder_layer_3"
// became its `self_attention.out_proj`. The lists hold only modules the forward runs: a module
// marked as never running has no value to explain.
void makeLayerCombo(QComboBox* combo);

// Fills the combo with the modules that run and whose output has at least 2 and at most `mostDims`
// dimensions (every module before a dry run tells the shapes). The choice kept: the current text
// when `keepCurrent` (the user picked it) and it is still there; else the last module near the top
// of the tree with several positions (a map [N, C, H, W] with H × W > 1, or tokens [N, T, D]).
void fillLayerCombo(QComboBox* combo, const std::vector<ModuleInfo>& modules, bool keepCurrent, size_t mostDims = 64);

} // namespace torchscope
