#pragma once

// What attribute, evaluate and sanity share: the model opened with its setup, the input batch,
// and core's attribution request filled from the command line.

#include "attribution/attribution_measures.h"
#include "attribution/attribution_workbench.h"
#include "attribution/input_attributions.h"
#include "cli_options.h"
#include "inputs.h"
#include "model/model_setup.h"
#include "stop_requests.h"

#include <ATen/core/Tensor.h>

#include <atomic>
#include <memory>

namespace torchscope {
class Model;
}

namespace torchscope::cli {

struct AttributionSetup {
    std::shared_ptr<Model> model;
    ModelSetup setup;
    ForwardInputs inputs;
    at::Tensor images; // [N, C, H, W]
    AttributionWorkbenchRequest settings; // the options as the window's settings are
    InputAttributionRequest request; // made from them by core's builder
};

// The attribution options as the window's workbench settings (the one request builder takes them).
AttributionWorkbenchRequest settingsOf(const CliOptions& options, const ModelSetup& setup);

// Throws torchscope::Error for a model with other than one tensor input or a baseline file that
// does not fit.
AttributionSetup prepareAttribution(const CliOptions& options);

// The measures' model and images: each input's name with the class explained (and its words where known).
AttributionMeasures explainedImages(const CliOptions& options, const AttributionSetup& job,
    const std::vector<int64_t>& targets, const std::vector<std::string>& descriptions);

// Whether `options.out` is a .csv (else a .json); throws torchscope::Error naming `command` for another.
bool writesCsv(const CliOptions& options, const std::string& command);

// A progress callback that prints "done / total UNIT" on stderr and stops after Ctrl+C (the one
// handler, stop_requests.h, is installed while this lives; what finished is kept).
class InterruptibleProgress {
public:
    explicit InterruptibleProgress(std::string unit);
    ~InterruptibleProgress();
    InterruptibleProgress(const InterruptibleProgress&) = delete;
    InterruptibleProgress& operator=(const InterruptibleProgress&) = delete;
    ProgressCallback callback() const;
    static bool interrupted();

private:
    std::string unit_;
    StopRequests stops_;
};

} // namespace torchscope::cli
