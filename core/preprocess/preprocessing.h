#pragma once

#include <string>
#include <vector>

namespace torchscope {

// torchvision-style preprocessing: Resize -> CenterCrop -> values in [0, scale] -> channel order
// -> Normalize. What a model expects at its input (see model/model_setup.h for the whole setup).
struct Preprocessing {
    int resize = 0; // shorter side after resizing; 0 keeps the size
    int resizeHeight = 0; // an exact size (stretching the image), used instead of `resize` when set
    int resizeWidth = 0;
    int cropHeight = 0; // centre crop; 0 keeps the size
    int cropWidth = 0;
    bool grayscale = false; // convert to one channel (torchvision's rgb_to_grayscale weights)
    double scale = 1.0; // pixel values go from [0, 1] to [0, scale]: 255 for models that take 0..255
    bool bgr = false; // channels in BGR order (OpenCV- and Caffe-trained models)
    std::vector<double> mean; // per model-input channel, after scale and channel order; empty: none
    std::vector<double> std;

    static Preprocessing none() { return {}; }
    static Preprocessing imagenet();
    // {"resize": 256 | [h, w], "crop": 224 | [h, w], "grayscale": false, "scale": 1,
    //  "channel_order": "RGB" | "BGR", "mean": [...], "std": [...]}
    // Throws torchscope::Error naming the bad field.
    static Preprocessing fromJson(const std::string& text);
    // "none", "imagenet", or a JSON file (either the object above or one with a "preprocess" key).
    static Preprocessing fromSpec(const std::string& spec);
    std::string toJson() const;
    // One line for people: "224×224 crop of the shorter side resized to 256 · RGB · 0..1 · ImageNet mean/std".
    std::string describe() const;
    // The height and width images come out at (0 where the image's own size decides).
    int outputHeight() const;
    int outputWidth() const;

    bool operator==(const Preprocessing& other) const;
    bool operator!=(const Preprocessing& other) const { return !(*this == other); }
};

// How pixel values are scaled and normalised, as the setup dialog offers it.
enum class ValuePreset { ImageNet, ZeroToOne, ZeroTo255, MinusOneToOne, Custom };
ValuePreset valuePresetOf(const Preprocessing& preprocessing);
// Sets scale, mean and std for a preset (Custom leaves them as they are).
void applyValuePreset(Preprocessing& preprocessing, ValuePreset preset);

} // namespace torchscope
