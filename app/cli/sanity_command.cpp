#include "sanity_command.h"

#include "attribution/sanity_checks.h"
#include "attribution_setup.h"
#include "cli_manifest.h"
#include "common/atomic_file.h"
#include "common/error.h"
#include "common/finite_summary.h"
#include "common/json_number.h"
#include "export/write_tensors.h"
#include "graph/engine.h"
#include "model/model.h"
#include "open_model.h"

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <iomanip>
#include <iostream>
#include <numeric>
#include <sstream>

namespace torchscope::cli {
namespace {

nlohmann::json numbers(const std::vector<double>& values)
{
    nlohmann::json list = nlohmann::json::array();
    for (double v : values)
        list.push_back(jsonNumber(v));
    return list;
}

std::string asJson(const SanityResult& report, const std::string& mode, const CliOptions& options,
    const std::vector<std::string>& images)
{
    nlohmann::json all = nlohmann::json::array();
    for (const auto& method : report.methods) {
        nlohmann::json entry{{"method", method.method}, {"mode", mode}, {"model", options.model}, {"images", images},
            {"targets", report.targets}, {"seed", options.seed}, {"not_randomised", report.skipped}};
        entry["layers"] = nlohmann::json::array();
        for (const auto& layer : method.layers)
            entry["layers"].push_back({{"layer", layer.layer}, {"type", layer.type},
                {"spearman_abs", jsonNumber(summariseFinite(layer.spearmanAbs).mean)},
                {"spearman", jsonNumber(summariseFinite(layer.spearman).mean)},
                {"ssim", jsonNumber(summariseFinite(layer.ssim).mean)},
                {"per_image",
                    {{"spearman_abs", numbers(layer.spearmanAbs)}, {"spearman", numbers(layer.spearman)},
                        {"ssim", numbers(layer.ssim)}}}});
        all.push_back(entry);
    }
    return (all.size() == 1 ? all[0] : all).dump(2) + "\n";
}

std::string asCsv(const SanityResult& report, const std::string& mode)
{
    std::ostringstream csv;
    csv << std::setprecision(9) << "method,mode,order,layer,type,spearman_abs,spearman,ssim\n";
    for (const auto& method : report.methods)
        for (size_t k = 0; k < method.layers.size(); ++k) {
            const LayerSimilarity& layer = method.layers[k];
            csv << method.method << ',' << mode << ',' << k + 1 << ',' << layer.layer << ',' << layer.type << ','
                << summariseFinite(layer.spearmanAbs).mean << ',' << summariseFinite(layer.spearman).mean << ','
                << summariseFinite(layer.ssim).mean << '\n';
        }
    return csv.str();
}

} // namespace

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
    writeFileAtomically(options.out, csv ? asCsv(report, mode) : asJson(report, mode, options, job.inputs.sampleNames));

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
