#include "sanity_command.h"

#include "attribution/attribution_report.h"
#include "attribution/sanity_checks.h"
#include "attribution_setup.h"
#include "cli_manifest.h"
#include "common/atomic_file.h"
#include "common/error.h"
#include "common/finite_summary.h"
#include "export/write_tensors.h"
#include "graph/engine.h"
#include "model/model.h"
#include "open_model.h"

#include <ATen/ATen.h>

#include <iomanip>
#include <iostream>

namespace torchscope::cli {

int runSanity(const CliOptions& options)
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
    AttributionReport written = explainedImages(options, job, report.targets, report.targetDescriptions);
    written.seed = request.seed;
    addSanity(written, report, mode);
    writeFileAtomically(options.out, csv ? sanityCsv(written) : attributionReportJson(written));

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
    for (const auto& skipped : report.skipped)
        std::cerr << "torchscope-cli: not randomised (its initialiser is not known): " << skipped << '\n';
    if (report.cancelled)
        std::cerr << "torchscope-cli: interrupted; the file holds the layers randomised so far\n";
    std::cout << "wrote " << options.out << '\n';
    return 0;
}

} // namespace torchscope::cli
