#pragma once

// A concept set TorchScope draws itself (OpenCV), with exact masks: the demo's, the docs' and the
// tests'. Each image holds 1 to 3 objects over grey value noise (or a crop of one of the user's
// background photos); each object is a shape (circle, square, triangle, star) in a colour (red,
// green, blue, yellow, purple), solid or patterned with a texture (stripes, checker, dots) whose
// other pixels are dark grey. Later objects cover earlier ones. Masks: a shape's and a texture's are
// their objects' visible pixels, a colour's the pixels painted in it. Written in the masks layout
// (concept_set.h): images/NNNNN.png, masks/CONCEPT/NNNNN.png where the concept is in the image,
// concepts.csv (color, shape, texture).

#include "common/progress.h"

#include <cstdint>
#include <string>
#include <vector>

namespace torchscope {

struct SyntheticConceptsRequest {
    std::string out; // a folder that does not exist yet (or is empty)
    int64_t images = 200;
    uint64_t seed = 0;
    int height = 224, width = 224;
    std::string backgrounds; // a folder of photos; "": noise
};

struct SyntheticConceptsResult {
    int64_t images = 0;
    std::vector<std::string> concepts, categories; // per concept
    std::vector<int64_t> imagesWith; // per concept: the images that show it
    bool cancelled = false; // what was drawn is written
};

// The concept names of the set, in its order (colours, shapes, textures).
std::vector<std::string> syntheticConceptNames();

// Throws torchscope::Error for an out folder that holds files, sizes below 32 or above 4096, or a
// background folder without images. Writes into a temporary folder beside `out`, renamed at the end
// (a cancelled run keeps the images finished). `progress`: images drawn; false cancels.
SyntheticConceptsResult makeSyntheticConcepts(
    const SyntheticConceptsRequest& request, const ProgressCallback& progress = {});

} // namespace torchscope
