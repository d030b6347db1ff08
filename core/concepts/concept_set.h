#pragma once

// Concept sets a researcher brings (docs/concepts.md): which images show which concepts, and for
// pixel-level sets where. Three layouts, told apart by what the folder holds:
//
//   masks     DIR/images/NAME.EXT and DIR/masks/CONCEPT/NAME.png: one mask per image and concept
//             (non-zero pixels are the concept; the mask has its image's size; no mask: the
//             concept is not in the image). `torchscope-cli concepts make` writes this layout.
//   folders   DIR/CONCEPT/NAME.EXT: image-level only; an image may sit in several concept folders
//             (the same file name is the same image).
//   broden    DIR/index.csv and DIR/label.csv (NetDissect's Broden): pixel categories (color,
//             object, part, material) as segmentation PNGs whose label is R + 256 G at the size
//             index.csv gives (sh, sw), image categories (scene, texture) as label numbers.
//
// DIR/concepts.csv (concept,category), where present, puts concepts of the first two layouts in
// categories ("concept" otherwise); Broden's come from its category columns. A concept's images are
// the images whose mask has a pixel of it (pixel-level) or that sit in its folder. No Torch here:
// masks are decoded by readConceptMasks (concept_masks.h).

#include <cstdint>
#include <string>
#include <vector>

namespace torchscope {

struct Concept {
    std::string name;
    std::string category;
};

struct ConceptMaskFile {
    int32_t conceptId = 0;
    std::string path;
};

struct ConceptImage {
    std::string path; // the image file
    std::string name; // its name in the set (the file name without folders)
    std::vector<int32_t> concepts; // the concepts it shows, rising (masks: those with a mask file, which may
                                   // be empty; broden: its image-level labels; pixel labels when read)
    std::vector<ConceptMaskFile> masks; // masks: its mask files, one per concept it shows
    std::vector<std::string> segmentations; // broden: its segmentation PNGs (label R + 256 G per pixel)
    std::vector<int32_t> wholeImage; // broden: concepts of the whole image (scene, texture): every pixel
    std::vector<int32_t> categories; // the categories annotated in it (broden; others: every category)
    int64_t maskHeight = 0, maskWidth = 0; // broden: the segmentation's size; 0: the image's
};

struct ConceptSet {
    std::string root;
    std::string layout; // "masks", "folders", "broden"
    bool pixelLevel = false;
    std::vector<Concept> concepts;
    std::vector<std::string> categories; // in first-seen order
    std::vector<ConceptImage> images; // sorted by name
    std::vector<int32_t> conceptOfLabel; // broden: label number -> concept (-1: none)
    std::vector<std::string> warnings;
    int32_t categoryOf(int32_t conceptId) const;
};

// Reads a concept set's layout, names and files (no pixel is decoded: masks are read as the
// dissection goes). Throws torchscope::Error saying what is wrong and what the folder holds: no
// layout found, a set with fewer than two concepts, a mask without its image, a label.csv that does
// not parse. `maxImages` > 0 keeps the first that many images.
ConceptSet readConceptSet(const std::string& root, int64_t maxImages = 0);

} // namespace torchscope
