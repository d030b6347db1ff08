#include "sanity_command.h"

#include "attribution/attribution_measures.h"
#include "attribution/sanity_checks.h"
#include "attribution_setup.h"
#include "cli_manifest.h"
#include "common/atomic_file.h"
#include "common/error.h"
#include "common/finite_summary.h"
#include "common/strings.h"
#include "export/write_tensors.h"
#include "graph/engine.h"
#include "model/model.h"
#include "open_model.h"

#include <ATen/ATen.h>
#include <CLI/CLI.hpp>

#include <iomanip>
#include <iostream>

namespace torchscope::cli {

static int runSanity(const CliOptions& options)
{
    const bool csv = writesCsv(options, "sanity");
    AttributionSetup job = prepareAttribution(options);
    Engine engine(job.model);
    SanityRequest request;
    request.attribution = job.request;
    request.mode = parseRandomisationMode(options.mode.empty() ? "cascading" : options.mode);
    request.seed = static_cast<uint64_t>(options.seed);
    request.keepMaps = !options.mapsOut.empty();
    const std::shared_ptr<Model> scratch = openModel(options); // the copy whose layers are randomised

    SanityResult report;
    {
        const InterruptibleProgress progress("layers randomised");
        report = checkSanity(engine, scratch, job.images, request, progress.callback());
    }
    if (report.methods.empty() || report.methods[0].layers.empty())
        throw Error("interrupted before the first layer was randomised; nothing written");
    const std::string mode = randomisationModeName(request.mode);
    AttributionMeasures written = explainedImages(options, job, report.targets, report.targetDescriptions);
    written.seed = request.seed;
    addSanity(written, report, mode);
    writeFileAtomically(options.out, csv ? sanityCsv(written) : attributionMeasuresJson(written));

    if (request.keepMaps) {
        NamedValues values;
        ExportManifest manifest = cliManifest(options, *job.model, job.setup, job.inputs.sampleNames);
        for (const auto& method : report.methods) {
            values.emplace_back(method.method + "/original", method.original.contiguous());
            manifest.keys.push_back({method.method + "/original", "", method.method + " of the loaded model"});
            for (const auto& layer : method.layers) {
                values.emplace_back(method.method + "/" + layer.layer, layer.maps.contiguous());
                manifest.keys.push_back({method.method + "/" + layer.layer, layer.layer,
                    method.method + " with " + mode + " randomisation up to this layer"});
            }
        }
        values.emplace_back("targets", at::tensor(report.targets, at::kLong));
        manifest.settings.emplace_back("mode", mode);
        manifest.settings.emplace_back("seed", std::to_string(options.seed));
        writeTensors(options.mapsOut, values, &manifest);
        std::cout << "wrote " << options.mapsOut << '\n';
    }

    std::cout << std::fixed << std::setprecision(3);
    for (const auto& method : report.methods) {
        std::cout << method.method << ", " << mode << " randomisation (Spearman |map|, Spearman, SSIM):\n";
        for (const auto& layer : method.layers)
            std::cout << "  " << layer.layer << " (" << layer.type << ")  " << summariseFinite(layer.spearmanAbs).mean
                      << "  " << summariseFinite(layer.spearman).mean << "  " << summariseFinite(layer.ssim).mean
                      << '\n';
    }
    if (!report.afterProbe.empty())
        std::cerr << "torchscope-cli: not randomised (they run after the layer the probe reads, so they cannot change "
                     "its score): "
                  << join(report.afterProbe, ", ") << '\n';
    for (const auto& skipped : report.skipped)
        std::cerr << "torchscope-cli: not randomised (its initialiser is not known): " << skipped << '\n';
    if (report.cancelled)
        std::cerr << "torchscope-cli: interrupted; the file holds the layers randomised so far\n";
    std::cout << "wrote " << options.out << '\n';
    return 0;
}

// torchscope-cli sanity.
Command sanityCommand()
{
    return {"sanity",
        [](CLI::App& app, CliOptions& o) {
            CLI::App* sanity
                = app.add_subcommand("sanity", "sanity checks: do the maps change when the weights are randomised?");
            addModelOptions(sanity, o,
                "The model-parameter randomisation test (Adebayo et al. 2018) on a copy of the model: cascading (the\n"
                "layers re-initialised from the output down, each added to those before) or independent (one layer\n"
                "at a time). Layers: Linear, convolutions and normalisation, re-initialised as PyTorch's\n"
                "reset_parameters() does, each from a generator seeded --seed + 1 (as Quantus's MPRT). Each "
                "randomised\n"
                "map is compared with the original, for the class the original model explained: Spearman's rank\n"
                "correlation of the absolute and the signed maps, and SSIM of the maps summed over their channels.\n"
                "Writes FILE.json ({\"model\", \"images\", \"seed\", \"sanity\": {\"mode\", \"methods\": {M: "
                "{\"layers\":\n"
                "[{\"layer\", \"spearman_abs\", \"spearman\", \"ssim\", \"per_image\"}]}}}}, the format the window "
                "exports) or\n"
                "FILE.csv; --maps FILE.npz keeps every map (\"M/original\", \"M/LAYER\").\n");
            addAttributionOptions(sanity, o);
            sanity->add_option("--mode", o.mode, "cascading or independent")
                ->check(CLI::IsMember({"cascading", "independent"}))
                ->default_str("cascading");
            sanity->add_option(
                "--maps", o.mapsOut, "FILE.npz, .pt or .safetensors: the original and every randomised map");
            sanity->add_option("--out,-o", o.out, "FILE.json or FILE.csv")->required();
            return sanity;
        },
        runSanity};
}

} // namespace torchscope::cli
