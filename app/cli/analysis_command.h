#pragma once

// One generic command around one analysis type (graph/analysis_context.h): its options are the
// request's own parameters (request_options.h) beside what every image analysis takes (MODEL and
// the model options, --input, --out); it opens the model, fills the request's images and setup,
// calls Analysis::run with the one Ctrl+C-aware progress, writes the result with the analysis's
// writer beside the one manifest (cliManifest and the request's settings), and prints its summary.
// A command is a row: what differs between analyses is named in it, nothing else is written again.

#include "attribution_setup.h"
#include "cli_manifest.h"
#include "cli_options.h"
#include "common/error.h"
#include "common/parameters.h"
#include "graph/analysis_context.h"
#include "image_inputs.h"
#include "model/model.h"
#include "open_model.h"
#include "request_options.h"

#include <CLI/CLI.hpp>

#include <functional>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

namespace torchscope::cli {

template <typename Analysis> struct AnalysisCommand {
    using Request = typename Analysis::Request;
    using Result = typename Analysis::Result;

    std::string name; // the command: "crp"
    std::string description; // its line in torchscope-cli --help
    std::string about; // its help's footer
    std::string inputHelp; // --input; "": the command takes none (its request names what it reads)
    std::string outHelp; // --out
    std::vector<std::string> outFormats; // ".json", ...: refused before the run when --out has another
    std::string progressUnit = "images"; // "": each report's stage ("ranking: 4 / 96")
    int cancelledExit = 0; // the exit code of a run stopped by Ctrl+C (what finished is written)
    // What the result explains, in order (the manifest's images), and each one's target; may be empty.
    std::function<std::vector<std::string>(const Result&)> explained;
    std::function<std::vector<std::string>(const Result&)> targets;
    std::function<bool(const Result&)> cancelled;
    // Whether there is nothing to write (stopped before the first image); may be empty: never.
    std::function<bool(const Result&)> nothingDone;
    std::function<void(const Result&)> printSummary;
    // Writes the result; returns the keys the format left out.
    std::function<std::vector<std::string>(const std::string& path, const Result&, const ExportManifest*)> write;
};

// Runs `row`'s analysis on the command line's model and images with `request`'s parameters as parsed.
template <typename Analysis>
int runAnalysisCommand(
    const AnalysisCommand<Analysis>& row, typename Analysis::Request request, const CliOptions& options)
{
    checkOut(options.out, row.name, row.outFormats);
    const auto model = openModel(options);
    request.setup = chooseSetup(*model, options);
    if constexpr (requires { request.images = std::vector<std::string>{}; })
        if (!row.inputHelp.empty())
            request.images = listImageInputs(options.inputs);
    LoadedModels models;
    const ModelKey key{model->path(), model->device(), "", options.operatorLibraries};
    models.add(key, model);
    typename Analysis::Result result;
    {
        const InterruptibleProgress progress(row.progressUnit);
        AnalysisContext context{
            models, key, progress.callback(), [] { return InterruptibleProgress::interrupted(); }, {}};
        result = Analysis::run(context, request);
    }
    if (row.nothingDone && row.nothingDone(result))
        throw Error("interrupted before the first image was done; nothing written");
    row.printSummary(result);
    ExportManifest manifest = cliManifest(
        options, *model, request.setup, row.explained ? row.explained(result) : std::vector<std::string>{});
    if (row.targets)
        manifest.targets = row.targets(result);
    for (auto& setting : requestSettings(request))
        manifest.settings.push_back(std::move(setting));
    for (const auto& key : row.write(options.out, result, &manifest))
        std::cerr << "torchscope-cli: warning: " << options.out << " cannot hold '" << key << "'; left out\n";
    const bool cancelled = row.cancelled(result);
    if (cancelled)
        std::cerr << "torchscope-cli: interrupted; the file holds what was done\n";
    std::cout << "wrote " << options.out << '\n';
    return cancelled ? row.cancelledExit : 0;
}

// The command of `row`: the model options, --input, the request's parameters, --out.
template <typename Analysis> Command analysisCommand(AnalysisCommand<Analysis> row)
{
    const auto request = std::make_shared<typename Analysis::Request>();
    const auto shared = std::make_shared<AnalysisCommand<Analysis>>(std::move(row));
    return {shared->name,
        [request, shared](CLI::App& app, CliOptions& o) {
            CLI::App* command = app.add_subcommand(shared->name, shared->description);
            addModelOptions(command, o, shared->about);
            if (!shared->inputHelp.empty())
                repeatable(command, "--input", o.inputs, shared->inputHelp)->required();
            bindRequest(command, *request);
            command->add_option("--out,-o", o.out, shared->outHelp)->required();
            return command;
        },
        [request, shared](const CliOptions& options) { return runAnalysisCommand(*shared, *request, options); }};
}

} // namespace torchscope::cli
