#pragma once

// What a model says about the input it wants, read from its layers and found by trying it, and
// messages that point at the input setup when a run fails on a wrong input.

#include "graph/analysis_context.h"
#include "model/model_setup.h"

#include <cstdint>
#include <string>
#include <vector>

namespace torchscope {

class Model;

struct SetupAdvice {
    int64_t inputChannels = 0; // of the first convolution; 0 when unknown
    std::string firstLayer; // its path
    int64_t outputs = 0; // of the last linear layer (or 1x1 convolution): the number of classes
    std::string lastLayer;
    std::vector<int> sizes; // square input sizes that ran, in the order tried
    std::vector<int> failedSizes;
    std::string failure; // what the first size that failed said
    bool triedAll = true; // false when the time budget ran out first
    std::vector<std::string> notes; // one line each, for people

    bool anySize() const { return failedSizes.empty() && sizes.size() > 2; }
};

// Reads the first convolution's input channels and the last layer's outputs, then runs the model
// on zero images of common sizes (the setup's own size first). Every size is tried unless
// `budgetSeconds` run out first (a very slow model), which the notes then say, with the sizes left
// out: the window's Input Setup and `torchscope-cli setup` list the same sizes, smallest first.
// Runs the model: call it on the thread that runs the model.
SetupAdvice adviseSetup(const Model& model, const ModelSetup& current, double budgetSeconds = 60.0);

// The analysis "setup": adviseSetup on the context's model, from the setup in use. A model that
// cannot be examined gives advice that says so.
struct SetupAdviceAnalysis {
    using Request = ModelSetup;
    using Result = SetupAdvice;
    static constexpr const char* name = "setup";
    static Result run(AnalysisContext& context, const Request& current);
};

// For a run that failed: when the message looks like a wrong input size or channel count, what
// the model got and that the input setup is the likely cause; empty otherwise.
std::string inputMismatchAdvice(
    const std::string& message, const std::vector<int64_t>& inputShape, const ModelSetup& setup);

} // namespace torchscope
