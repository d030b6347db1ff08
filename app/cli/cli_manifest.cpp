#include "cli_manifest.h"

#include "common/strings.h"
#include "model/model.h"
#include "model/model_setup.h"

#include <filesystem>

namespace torchscope::cli {

ExportManifest cliManifest(
    const CliOptions& options, const Model& model, const ModelSetup& setup, const std::vector<std::string>& images)
{
    ExportManifest m;
    m.command = "torchscope-cli " + options.command + (options.subcommand.empty() ? "" : " " + options.subcommand);
    m.model = model.path();
    m.device = model.device();
    m.preprocessing = setup.preprocessing;
    m.labels = setup.labels;
    m.edits = options.edits;
    m.truncation = options.truncate.value_or("");
    std::error_code error;
    for (const auto& image : images)
        if (std::filesystem::is_regular_file(image, error))
            m.images.push_back({image});
    m.settings.emplace_back("inputs", join(options.inputs, " "));
    if (!options.grabs.empty())
        m.settings.emplace_back("grab", join(options.grabs, " "));
    if (!options.layers.empty())
        m.settings.emplace_back("layer", join(options.layers, " "));
    if (!options.layer.empty())
        m.settings.emplace_back("layer", options.layer);
    if (options.target)
        m.settings.emplace_back("target", std::to_string(*options.target));
    if (options.scores)
        m.settings.emplace_back("scores", *options.scores);
    return m;
}

} // namespace torchscope::cli
