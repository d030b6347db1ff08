#pragma once

// An image's concepts pixel by pixel, as the dissection counts them: every pixel's combination of
// concepts (the set of concepts whose masks cover it), at the resolution the unit maps are upsampled
// to: the model's input (the masks carried through the image's resize and crop, nearest neighbour)
// for TorchScope's layout, the segmentation's own size (sh × sw) for Broden.

#include "concepts/concept_set.h"
#include "preprocess/preprocessing.h"

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

namespace torchscope {

struct ConceptPixels {
    int64_t height = 0, width = 0;
    at::Tensor combination; // [height * width] int64: each pixel's index into `combinations`
    std::vector<std::vector<int32_t>> combinations; // each a set of concepts, rising (the empty set: none)
    std::vector<int32_t> concepts; // the concepts with at least one pixel, rising
};

// Image `index` of a pixel-level set. `imageHeight` × `imageWidth`: the image file's own size (a
// mask of another size is refused, naming both files). Throws torchscope::Error for a mask that does
// not decode, a Broden label label.csv lacks, or a segmentation of another size than index.csv says.
ConceptPixels readConceptPixels(
    const ConceptSet& set, size_t index, const Preprocessing& preprocessing, int64_t imageHeight, int64_t imageWidth);

} // namespace torchscope
