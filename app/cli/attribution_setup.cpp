#include "attribution_setup.h"

#include "attribution/attribution_workbench.h"
#include "common/error.h"
#include "common/memory_budget.h"
#include "common/strings.h"
#include "model/model.h"
#include "open_model.h"
#include "probe/linear_probe.h"

#include <ATen/ATen.h>
#include <torch/script.h>

#include <algorithm>
#include <iostream>
#include <unistd.h>

namespace torchscope::cli {
namespace {

Baseline baselineFromOptions(const CliOptions& options, const Model& model, const ModelSetup& setup)
{
    Baseline baseline;
    baseline.kind = parseBaselineKind(options.baseline);
    baseline.blurSigma = options.blurSigma;
    baseline.seed = static_cast<uint64_t>(options.seed);
    if (baseline.kind != BaselineKind::Image)
        return baseline;
    const ForwardInputs file = loadForwardInputs(model, {options.baseline}, setup.preprocessing);
    if (file.arguments.size() != 1 || !file.arguments[0].isTensor())
        throw Error("--baseline " + options.baseline + " is not one image or tensor");
    baseline.images = file.arguments[0].toTensor().to(at::kFloat);
    return baseline;
}

// FILE.pt or FILE.pt@LAYER, on the model's device.
std::shared_ptr<const ProbeExtension> loadTargetProbe(const std::string& spec, const Model& model)
{
    const auto separator = spec.rfind('@');
    const std::string path = separator == std::string::npos ? spec : spec.substr(0, separator);
    auto probe = std::make_shared<ProbeExtension>(loadProbeExtension(path));
    if (separator != std::string::npos)
        probe->layer = spec.substr(separator + 1);
    if (probe->layer.empty())
        throw Error(path + " does not say which layer it reads: give --probe " + path + "@LAYER");
    if (!model.find(probe->layer))
        throw Error("the probe reads '" + probe->layer + "', which the model does not have");
    probe->module->to(at::Device(model.device()));
    probe->module->eval();
    return probe;
}

} // namespace

AttributionWorkbenchRequest settingsOf(const CliOptions& options, const ModelSetup& setup)
{
    AttributionWorkbenchRequest settings;
    settings.setup = setup;
    settings.methods = options.methods;
    settings.layer = options.camLayer;
    settings.targetClass = options.target.value_or(-1);
    settings.steps = options.attributionSteps;
    for (const auto& rule : options.rules) // an lrp rule names its layers: PATH=RULE
        if (rule.find('=') == std::string::npos)
            settings.rule = rule;
        else
            settings.relevanceRules.push_back(rule);
    settings.composite = options.composite;
    settings.attentionRule = options.attentionRule;
    // A file is a baseline image: its kind is Image, the image is loaded by prepareAttribution.
    settings.baseline = options.baseline;
    settings.blurSigma = options.blurSigma;
    settings.samples = options.samples;
    settings.noise = options.noise;
    settings.seed = static_cast<uint64_t>(options.seed);
    settings.window = options.window;
    settings.stride = options.stride;
    settings.metrics = options.metrics;
    settings.pixelsPerStep = options.pixelsPerStep;
    settings.fill = options.fill;
    settings.sanityMode = options.mode;
    settings.memoryBytes = options.memoryMb > 0 ? options.memoryMb << 20 : defaultMemoryBudget();
    return settings;
}

AttributionSetup prepareAttribution(const CliOptions& options)
{
    AttributionSetup out;
    out.model = openModel(options);
    out.setup = chooseSetup(*out.model, options);
    out.inputs = loadForwardInputs(*out.model, options.inputs, out.setup.preprocessing);
    const auto& arguments = out.inputs.arguments;
    if (arguments.size() == 1 && arguments[0].isTensor()) {
        out.images = arguments[0].toTensor();
    } else if (arguments.size() == 1 && arguments[0].isTensorList()) { // detection models take List[Tensor]
        const auto list = arguments[0].toTensorVector();
        try {
            out.images = list.empty() ? at::Tensor() : at::stack(list);
        } catch (const c10::Error&) {
            throw Error("attributions explain images of one size; these differ");
        }
    }
    if (!out.images.defined())
        throw Error(
            "attributions explain a model with one tensor input; this one takes " + out.model->forwardSignature());

    out.settings = settingsOf(options, out.setup);
    InputAttributionRequest& request = out.request;
    request = inputAttributionRequest(out.settings); // the builder the window's workbench uses
    request.target.region = options.targetBox;
    if (request.baseline.kind == BaselineKind::Image)
        request.baseline = baselineFromOptions(options, *out.model, out.setup);
    if (request.baseline.kind == BaselineKind::Image && out.images.dim() == 4) {
        const at::Tensor& b = request.baseline.images;
        if (b.dim() != 4 || !b.sizes().slice(1).equals(out.images.sizes().slice(1))
            || (b.size(0) != 1 && b.size(0) != out.images.size(0)))
            throw Error("--baseline " + options.baseline + " gives " + shapeToString(b.sizes().vec())
                + "; the inputs are " + shapeToString(out.images.sizes().vec())
                + ": give one image of their size, or one per input");
    }
    if (!options.probeTarget.empty())
        request.probe = loadTargetProbe(options.probeTarget, *out.model);
    if (out.images.dim() == 4)
        request.bytesPerSample = evaluationBytesPerSample(*out.model, out.images.narrow(0, 0, 1));
    return out;
}

AttributionMeasures explainedImages(const CliOptions& options, const AttributionSetup& job,
    const std::vector<int64_t>& targets, const std::vector<std::string>& descriptions)
{
    AttributionMeasures measures;
    measures.model = options.model;
    measures.seed = static_cast<uint64_t>(options.seed);
    for (size_t i = 0; i < targets.size(); ++i)
        measures.images.push_back(
            {i < job.inputs.sampleNames.size() ? job.inputs.sampleNames[i] : "sample " + std::to_string(i), targets[i],
                i < descriptions.size() ? descriptions[i] : std::string()});
    return measures;
}

bool writesCsv(const CliOptions& options, const std::string& command)
{
    if (!endsWith(options.out, ".csv") && !endsWith(options.out, ".json"))
        throw Error(command + " writes FILE.json or FILE.csv; got " + options.out);
    return endsWith(options.out, ".csv");
}

InterruptibleProgress::InterruptibleProgress(std::string unit)
    : unit_(std::move(unit))
    , stops_(false)
{ }

InterruptibleProgress::~InterruptibleProgress() = default;

ProgressCallback InterruptibleProgress::callback() const
{
    return [unit = unit_](const Progress& p) {
        if (unit.empty()) // each report's own stage: "ranking: 4 / 96"
            std::cerr << "\r" << p.stage << ": " << p.done << " / " << p.total << "   " << std::flush;
        else
            std::cerr << "\r" << p.done << " / " << p.total << " " << unit << std::flush;
        if (p.done == p.total)
            std::cerr << '\n';
        return !StopRequests::asked();
    };
}

bool InterruptibleProgress::interrupted()
{
    return StopRequests::asked();
}

} // namespace torchscope::cli
