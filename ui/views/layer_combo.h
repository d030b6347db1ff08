#pragma once

class QComboBox;

namespace torchscope {

// An editable combo of module paths (the CAMs' layer, Grad-CAM's, patching's): typing shows a popup
// of the paths that contain the text, case-insensitive, and fills in nothing by itself. Qt's inline
// completion picked the first path after the typed prefix, so "encoder.layers.encoder_layer_3"
// became its `self_attention.out_proj`. The lists hold only modules the forward runs: a module
// marked as never running has no value to explain.
void makeLayerCombo(QComboBox* combo);

} // namespace torchscope
