#pragma once

#include "graph/request.h"
#include "model/model_setup.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace torchscope {

// How the activation view draws: what a session keeps of it. Empty, 0 and -1 leave the window's own.
struct SessionView {
    std::string colorMap; // a name of colorMapNames(): "viridis", "magma", ...
    std::string contrast; // "per-channel", "shared" or "symmetric"
    int zoom = 0; // screen pixels per activation value, 1 to 32
    int overlayOpacity = -1; // percent, 0 to 100

    static const std::vector<std::string>& contrastNames(); // in the order of enum Contrast
};

// A saved workbench session (*.torchscope.json): the model and everything the researcher set on
// it. Parsed here, without Qt, so that the command line, the window and the fuzzer read it alike.
struct SessionFile {
    static constexpr int Version = 2;

    std::string model; // path of the .pt
    std::string device; // "" : the window's choice
    std::vector<std::string> grabs; // grab specs, as the tree ticks them
    std::string truncate; // "" : none
    std::vector<EditSpec> edits;
    std::optional<ModelSetup> setup; // none: the model's own (a version-1 "preprocess" spec is resolved)
    int64_t target = -1; // gradient target class; -1: the predicted class
    std::string selectedLayer;
    std::vector<std::string> images;
    int64_t selectedImage = 0;
    SessionView view;

    // Throws torchscope::Error naming the field that is wrong and what it holds. `base` is the
    // setup that fields the session's setup leaves out come from.
    static SessionFile parse(const std::string& text, const ModelSetup& base);
    std::string toJson() const; // indented
};

} // namespace torchscope
