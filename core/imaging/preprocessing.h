#pragma once

#include <string>
#include <vector>

namespace torchscope {

// torchvision-style preprocessing: Resize(shorter side) -> CenterCrop -> [0,1] -> Normalize.
struct Preprocessing {
    int resize = 0; // shorter side after resizing; 0 keeps the size
    int cropHeight = 0; // 0 keeps the size
    int cropWidth = 0;
    bool grayscale = false; // convert to one channel (torchvision's rgb_to_grayscale weights)
    std::vector<double> mean; // per channel; empty: no normalisation
    std::vector<double> std;

    static Preprocessing none() { return {}; }
    static Preprocessing imagenet();
    // {"resize": 256, "crop": 224 | [h, w], "grayscale": false, "mean": [...], "std": [...]}
    // Throws torchscope::Error naming the bad field.
    static Preprocessing fromJson(const std::string& text);
    // "none", "imagenet", or a JSON file (either the object above or one with a "preprocess" key).
    static Preprocessing fromSpec(const std::string& spec);
    std::string toJson() const;
};

// What a model archive says about itself in its torchscope.json extra file.
struct ModelCard {
    bool present = false;
    Preprocessing preprocessing;
    std::vector<std::string> labels;

    static ModelCard fromJson(const std::string& text); // empty text: not present
};

} // namespace torchscope
