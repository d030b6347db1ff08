#pragma once

// What an exported file holds and where it came from, written beside it as NAME.manifest.json
// (and into a .safetensors file's metadata): TorchScope's and LibTorch's versions, the model file
// and its SHA-256, device and dtype, the preprocessing and labels, each key's module, kind and call,
// the edits and truncation in force, the images in order with their SHA-256, the targets, the
// date. A researcher (or a script) months later can tell exactly what a tensor is.

#include "preprocess/preprocessing.h"

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace torchscope {

struct ManifestImage {
    std::string path;
    int width = 0; // pixels, where the exporter knows them (0: not given)
    int height = 0;
};

// One key of the export: the module it comes from, what it is of that module ("output", "input",
// "gradient", or a derived kind such as "grad-cam", "saliency", "cka") and which call of it.
struct ManifestKey {
    ManifestKey() = default;
    ManifestKey(std::string key, std::string module, std::string kind, int call = 0)
        : key(std::move(key))
        , module(std::move(module))
        , kind(std::move(kind))
        , call(call)
    { }

    std::string key;
    std::string module;
    std::string kind;
    int call = 0;
    int inputIndex = -1; // for "input"
    std::string statistic; // a recording's reduction of the capture: "mean", "std", "top_samples" ...

    // A captured key as run and record write it: "layer1", "layer1:in0#2", "fc:grad".
    static ManifestKey capture(const std::string& key);
};

struct ExportManifest {
    std::string command; // "run", "record", "gradcam", "patch", "compare", "window: recorded tensors" ...
    std::string model; // the model file (its absolute path and SHA-256 are added)
    std::string modelB; // compare: the second model, if any
    std::string device; // "cpu", "cuda:0"
    std::string dtype; // "" : as saved
    std::optional<Preprocessing> preprocessing;
    std::vector<std::string> labels;
    std::vector<ManifestKey> keys; // as written
    std::vector<std::string> edits; // EditSpec::toString()
    std::string truncation;
    std::vector<ManifestImage> images; // in sample order
    std::vector<std::string> targets; // per image, or one for all ("class 3", "predicted")
    std::vector<std::pair<std::string, std::string>> settings; // the command's other options
};

// "out/acts.pt" -> "out/acts.manifest.json"; a folder "out/npy" -> "out/npy/manifest.json".
std::string manifestPathFor(const std::string& exportPath);
// The manifest as JSON text (the date is now, in UTC). Throws torchscope::Error when a file it must
// hash cannot be read.
std::string manifestJson(const ExportManifest& manifest);
// Writes manifestJson beside `exportPath` (atomically, the user's normal file mode); returns its path.
std::string writeManifest(const std::string& exportPath, const ExportManifest& manifest);

// The SHA-256 of a file's bytes as 64 hex digits. Throws torchscope::Error when it cannot be read.
std::string sha256OfFile(const std::string& path);

} // namespace torchscope
