#include "commands.h"

#include "analysis/analysis_table.h"
#include "each_image_command.h"

#include "cli_manifest.h"
#include "common/error.h"
#include "common/strings.h"
#include "export/write_tensors.h"
#include "graph/engine.h"
#include "graph/model_output.h"
#include "graph/setup_advice.h"
#include "inputs.h"
#include "model/model.h"
#include "open_model.h"
#include "prediction_text.h"
#include "probe/linear_probe.h"
#include "probe/model_extender.h"
#include "run_request.h"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <iomanip>
#include <iostream>
#include <sstream>

namespace torchscope::cli {
namespace {

std::string describe(const c10::IValue& value)
{
    if (value.isTensor())
        return shapeToString(value.toTensor().sizes().vec()) + " "
            + std::string(c10::toString(value.toTensor().scalar_type()));
    return value.type()->annotation_str();
}

std::string callText(const ModuleInfo& m)
{
    if (m.path.empty())
        return "";
    if (!m.called)
        return "never";
    std::string text = std::to_string(m.callSites.size()) + "x";
    for (const auto& site : m.callSites)
        if (!site.context.empty()) {
            text += " (" + site.context + ")";
            break;
        }
    return text;
}

// Per sample: the top-3 classes, the classes covering most pixels, or the detections. Throws for a
// --scores element the output does not have (before anything is written).
std::string describePredictions(
    const c10::IValue& output, const ModelSetup& setup, const std::vector<std::string>& names)
{
    const ScoreOutput scores = findScores(output, setup.scores);
    int64_t samples = 0;
    if (scores.kind == OutputKind::Detection)
        samples = static_cast<int64_t>(scores.detections.toList().size());
    else if (scores.kind != OutputKind::Other)
        samples = scores.scores.size(0);
    if (samples == 0)
        return {};
    std::ostringstream out;
    const std::string from = scores.element.empty() ? "" : " (output element '" + scores.element + "')";
    out << "\n" << predictionHeading(scores.kind) << from << ":\n";
    for (int64_t i = 0; i < samples; ++i) {
        ImagePrediction prediction = predictImage(scores, i, setup.labels, 3);
        for (auto& reading : outputReadings(output, scores.element, i))
            prediction.others.push_back(std::move(reading));
        out << predictionText(
            static_cast<size_t>(i) < names.size() ? names[static_cast<size_t>(i)] : "sample " + std::to_string(i),
            prediction);
    }
    return out.str();
}

// A run that failed on what looks like a wrong input gets the input setup named as the cause.
ExtendedOutput forwardOrExplain(ModelExtender& extender, const ForwardInputs& inputs, bool returnOriginal,
    const Request& request, const std::vector<at::Tensor>& editTensors, const ModelSetup& setup)
{
    try {
        return extender.forward(inputs.arguments, returnOriginal, request, editTensors);
    } catch (const Error& e) {
        const auto& first = inputs.arguments.empty() ? c10::IValue() : inputs.arguments.front();
        const std::vector<int64_t> shape = first.isTensor() ? first.toTensor().sizes().vec() : std::vector<int64_t>{};
        // Tensor inputs are used as they are: only images went through the setup.
        const std::string advice = inputs.sampleNames.empty() ? "" : inputMismatchAdvice(e.what(), shape, setup);
        if (advice.empty())
            throw;
        throw Error(explainSetupProblem(e.what(), advice));
    }
}

// --probe NAME=FILE.pt or NAME=FILE.pt@LAYER (a probe file says its layer; another module does not).
void registerProbes(ModelExtender& extender, const std::vector<std::string>& specs)
{
    for (const auto& spec : specs) {
        const auto equals = spec.find('=');
        if (equals == std::string::npos || equals == 0)
            throw Error("--probe expects NAME=FILE.pt or NAME=FILE.pt@LAYER, got '" + spec + "'");
        const std::string name = spec.substr(0, equals);
        std::string file = spec.substr(equals + 1), layer;
        if (const auto at = file.rfind('@'); at != std::string::npos) {
            layer = file.substr(at + 1);
            file = file.substr(0, at);
        }
        const ProbeExtension probe = loadProbeExtension(file);
        if (layer.empty() && probe.layer.empty())
            throw Error(
                "'" + file + "' does not say which layer it reads: give --probe " + name + "=" + file + "@LAYER");
        extender.registerProbe(name, probe, layer);
    }
}

} // namespace

static int runInspect(const CliOptions& options)
{
    auto model = openModel(options);
    if (!options.inputs.empty())
        dryRun(*model, loadForwardInputs(*model, options.inputs, chooseSetup(*model, options).preprocessing).arguments);

    if (options.json) {
        nlohmann::json modules = nlohmann::json::array();
        for (const auto& m : model->modules()) {
            nlohmann::json sites = nlohmann::json::array();
            for (const auto& s : m.callSites)
                sites.push_back({{"method", s.method}, {"line", s.line}, {"context", s.context}});
            modules.push_back({{"path", m.path}, {"type", m.shortType}, {"qualified_type", m.qualifiedType},
                {"parameters", m.ownParameters}, {"total_parameters", m.totalParameters}, {"calls", sites},
                {"called", m.called}, {"not_called_reason", m.notCalledReason}, {"output_shapes", m.outputShapes}});
        }
        nlohmann::json arguments = nlohmann::json::array();
        for (const auto& a : model->forwardArguments())
            arguments.push_back({{"name", a.name}, {"type", a.type}, {"has_default", a.hasDefault}});
        nlohmann::json root{{"model", model->path()}, {"format", model->format()}, {"device", model->device()},
            {"forward", arguments}, {"frozen", !model->frozenNote().empty()}, {"modules", modules}};
        if (const auto& exported = model->exportedProgram())
            root["exported"] = {{"torch_version", exported->torchVersion}, {"schema_version", exported->schemaVersion},
                {"nodes", exported->nodeCount}, {"inputs", exported->inputs},
                {"dynamic_dimensions", exported->dynamicDimensions}};
        std::cout << root.dump(2) << '\n';
        return 0;
    }

    std::cout << model->path() << ": " << model->forwardSignature() << "\n\n";
    if (!model->frozenNote().empty())
        std::cout << "note: " << model->frozenNote() << "\n\n";
    if (const auto& exported = model->exportedProgram())
        std::cout << describeExportedProgram(*exported) << "\n\n";
    std::cout << std::left << std::setw(44) << "path" << std::setw(28) << "type" << std::right << std::setw(12)
              << "params"
              << "  " << std::left << std::setw(14) << "calls"
              << "output\n";
    for (const auto& m : model->modules()) {
        std::string shapes;
        for (const auto& s : m.outputShapes)
            shapes += (shapes.empty() ? "" : " ") + shapeToString(s);
        const std::string shown = m.path.empty() ? "(root)" : m.path;
        std::cout << std::left << std::setw(44) << shown << std::setw(28) << m.shortType << std::right << std::setw(12)
                  << m.totalParameters << "  " << std::left << std::setw(14) << callText(m) << shapes << '\n';
    }
    std::vector<std::string> never;
    for (const auto& m : model->modules())
        if (!m.called)
            never.push_back(m.path + ": " + m.notCalledReason);
    if (!never.empty())
        std::cout << "\nnever called (skipped by globs, type: selections and dry runs):\n  " << join(never, "\n  ")
                  << '\n';
    return 0;
}

static int runModel(const CliOptions& options)
{
    auto model = openModel(options);
    const ModelSetup setup = chooseSetup(*model, options);
    std::vector<at::Tensor> editTensors;
    const Request request = runRequest(options, setup, editTensors);
    ModelExtender extender(model);
    registerProbes(extender, options.probes);
    if (options.probeOnly && options.probes.empty())
        throw Error("--probe-only needs at least one --probe");

    const auto inputs = loadForwardInputs(*model, options.inputs, setup.preprocessing);
    // Without the model's output the forward stops after the last probed layer (the stump).
    ExtendedOutput extended = forwardOrExplain(extender, inputs, !options.probeOnly, request, editTensors, setup);
    RunResult& result = extended.run;
    for (const auto& [name, scores] : extended.extensions)
        result.values.emplace_back("probe:" + name, scores);
    if (options.probeOnly)
        result.values.erase(result.values.begin());
    for (const auto& warning : result.warnings)
        std::cerr << "torchscope-cli: warning: " << warning << '\n';
    const std::string predictions = request.truncateAt || options.probeOnly
        ? std::string()
        : describePredictions(result.values.front().second, setup, inputs.sampleNames);
    ExportManifest manifest = cliManifest(options, *model, setup, inputs.sampleNames);
    if (!result.target.empty())
        manifest.targets.push_back(result.target);
    for (const auto& key : writeTensors(options.out, result.values, &manifest))
        std::cerr << "torchscope-cli: warning: '" << key << "' is not a tensor and was left out of " << options.out
                  << " (the .pt format keeps it)\n";
    for (const auto& [key, value] : result.values)
        std::cout << key << '\t' << describe(value) << '\n';
    std::cout << "wrote " << result.values.size() << " entries to " << options.out << '\n';
    if (!result.target.empty())
        std::cout << "gradients are of " << result.target << '\n';
    std::cout << predictions;
    return 0;
}

static int runAnalyses(const CliOptions& options)
{
    std::cout << (options.json ? analysisTableJson() : analysisTableMarkdown());
    return 0;
}

// torchscope-cli inspect: the module tree, and output shapes from a dry run.
Command inspectCommand()
{
    return {"inspect",
        [](CLI::App& app, CliOptions& o) {
            CLI::App* inspect = app.add_subcommand("inspect", "print the module tree (and output shapes with --input)");
            addModelOptions(inspect, o);
            repeatable(
                inspect, "--input", o.inputs, "image, folder or tensor .pt for a dry run that adds output shapes");
            inspect->add_flag("--json", o.json, "print JSON");
            return inspect;
        },
        runInspect};
}

// torchscope-cli analyses: the table of analyses.
Command analysesCommand()
{
    return {"analyses",
        [](CLI::App& app, CliOptions& o) {
            CLI::App* analyses = app.add_subcommand("analyses",
                "list the analyses: the table the window, the commands and the tests read (no model needed)");
            analyses->add_flag("--json", o.json, "print JSON (else a Markdown table)");
            return analyses;
        },
        runAnalyses};
}

// torchscope-cli run: grabs, edits, truncation and probes over inputs, written for torch.load.
Command runCommand()
{
    return {"run",
        [](CLI::App& app, CliOptions& o) {
            CLI::App* run = app.add_subcommand("run", "run the model on inputs and write what it grabbed");
            addModelOptions(
                run, o, "Writes FILE.pt (one dictionary for torch.load), FILE.npz (numpy.load) or FILE.safetensors.\n");
            repeatable(run, "--input", o.inputs,
                "an image, a folder of images, or a tensor .pt saved by torch.save (the batch as it is; one .pt "
                "per argument for several-input models)")
                ->required();
            run->add_option("--out,-o", o.out, "FILE.pt, FILE.npz or FILE.safetensors")->required();
            repeatable(run, "--grab", o.grabs, "what to record (repeatable; see below)");
            repeatable(run, "--edit", o.edits, "change an activation during the run (repeatable; see below)");
            run->add_option(
                "--truncate", o.truncate, "stop after PATH's first call and return its output as \"output\"");
            addTarget(run, o);
            repeatable(run, "--probe", o.probes, "NAME=PROBE.pt[@LAYER]: add the probe's scores as \"probe:NAME\"");
            run->add_flag(
                "--probe-only", o.probeOnly, "stop after the last probed layer; leave out the model's output");
            run->add_flag("--each-image", o.eachImage,
                "run the images one at a time, as the window does: any sizes mix, an unreadable image is skipped with "
                "a "
                "warning, and each grab's values are concatenated along dim 0");
            return run;
        },
        [](const CliOptions& options) { return options.eachImage ? runEachImage(options) : runModel(options); }};
}

} // namespace torchscope::cli
