#pragma once

#include "preprocess/preprocessing.h"

#include <optional>
#include <string>
#include <vector>

namespace torchscope {

class Model;

// Everything a model needs from outside to be run on pictures and read: its input (size, values,
// channels), its labels, and which element of its output holds the scores. Stored in a model
// archive as torchscope.json, in the window's sessions, and given to the CLI with --preprocess.
struct ModelSetup {
    Preprocessing preprocessing = Preprocessing::imagenet();
    std::vector<std::string> labels;
    std::string scores; // tuple element (index or namedtuple field) or dict key; "" finds it
    // Other fields of a torchscope.json ("name", "test_accuracy" ...) as a JSON object, kept so
    // that a setup saved back into a model keeps them.
    std::string otherFields;

    // {"preprocess": {...}, "labels": [...], "scores": "logits"}; a bare preprocessing object is
    // read as its "preprocess". Fields it does not have keep their values from `base`.
    // Throws torchscope::Error naming the bad field.
    static ModelSetup fromJson(const std::string& text, const ModelSetup& base);
    static ModelSetup fromJson(const std::string& text); // on ImageNet's defaults
    std::string toJson() const; // indented, with every field
    // "224×224 (shorter side 256, centre crop) · RGB · 0..1, ImageNet mean/std · 1000 labels"
    std::string describe() const;

    bool operator==(const ModelSetup& other) const;
    bool operator!=(const ModelSetup& other) const { return !(*this == other); }
};

// The setup stored in the model archive (torchscope.json); nothing when it has none.
std::optional<ModelSetup> storedSetup(const Model& model);
// The stored setup, else ImageNet's preprocessing with no labels.
ModelSetup defaultSetup(const Model& model);

// Labels from a file: a text file with one label per line, or JSON (a list, or an object with a
// "labels" list). Throws torchscope::Error saying what the file holds instead.
std::vector<std::string> readLabelsFile(const std::string& path);

// --preprocess: "none", "imagenet", or a JSON file (a setup, or a bare preprocessing object);
// what the file leaves out comes from `base`.
ModelSetup readSetupSpec(const std::string& spec, const ModelSetup& base);

// Writes a copy of the TorchScript archive `modelPath` to `outPath` with `setup` as its
// torchscope.json; every other record is copied byte for byte. The write is atomic (a temporary
// file renamed into place), so outPath may be modelPath. Throws torchscope::Error.
void writeModelWithSetup(const std::string& modelPath, const std::string& outPath, const ModelSetup& setup);

} // namespace torchscope
