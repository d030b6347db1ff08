// A build without OpenCV (TORCHSCOPE_IMAGING=OFF, as on headless GPU machines): every image
// input is refused with what to give instead.

#include "analysis_commands.h"
#include "concepts_command.h"
#include "crp_command.h"
#include "each_image_command.h"
#include "image_inputs.h"
#include "visualize_command.h"

#include "common/error.h"
#include "probe/probe_dataset.h"

#include <CLI/CLI.hpp>

namespace torchscope::cli {
namespace {

[[noreturn]] void refuse(const std::string& what, const std::string& instead)
{
    throw Error(what + ": this TorchScope was built without OpenCV (TORCHSCOPE_IMAGING=OFF), so it reads no "
        + "image files; " + instead);
}

} // namespace

std::vector<std::string> listImageInputs(const std::vector<std::string>& inputs)
{
    refuse("--input " + (inputs.empty() ? std::string() : inputs.front()), "give a tensor saved with torch.save");
}

at::Tensor loadImageInputs(const std::vector<std::string>& inputs, const Preprocessing&, std::vector<std::string>&)
{
    refuse("--input " + (inputs.empty() ? std::string() : inputs.front()), "give a tensor saved with torch.save");
}

FolderRunResult recordImageInputs(Engine&, Recorder&, const std::vector<std::string>& inputs, const ModelSetup&, int,
    int, const ProgressCallback&, RecordingSource&)
{
    refuse("record " + (inputs.empty() ? std::string() : inputs.front()),
        "give one tensor file: --input FILE.pt with [N, ...] rows or {\"samples\": [N, ...], \"labels\": [N]}");
}

BatchStream imageRecordingBatches(
    const std::vector<std::string>& inputs, const ModelSetup&, int, int, const Shard&, RecordingSource&)
{
    refuse("record " + (inputs.empty() ? std::string() : inputs.front()),
        "give one tensor file: --input FILE.pt with [N, ...] rows or {\"samples\": [N, ...], \"labels\": [N]}");
}

BatchStream imageInputBatches(const std::vector<std::string>& inputs, const ModelSetup&, int, int)
{
    refuse("compare " + (inputs.empty() ? std::string() : inputs.front()),
        "give one tensor file: --input FILE.pt with [N, ...] rows");
}

ProbeSamples folderProbeSamples(const std::string& folder, const ModelSetup&, int, int, const Shard&)
{
    refuse("--data " + folder, "give a tensor file {\"samples\": [N, ...], \"labels\": [N]}");
}

int runSae(const CliOptions& options)
{
    refuse("sae " + options.subcommand, "sparse autoencoders are trained and evaluated on an image folder");
}

// An image analysis's command (analysis_command.h) in this build: its name, taking any options, refused.
Command unavailableCommand(const std::string& name, const std::string& why)
{
    return {name,
        [name, why](CLI::App& app, CliOptions&) {
            CLI::App* command = app.add_subcommand(name, "(not in this build: " + why + ")");
            command->allow_extras();
            return command;
        },
        [name, why](const CliOptions&) -> int { refuse(name, why); }};
}

Command crpCommand()
{
    return unavailableCommand("crp", "CRP reads the images it explains and its references from image files");
}

int runEachImage(const CliOptions& options)
{
    refuse("run --each-image", "give tensors saved with torch.save and leave out --each-image");
}

int runGradCam(const CliOptions&)
{
    refuse("gradcam", "its inputs are image files");
}

int runPatch(const CliOptions&)
{
    refuse("patch", "its inputs are image files");
}

int runCompareMaps(const CliOptions&, const CompareConfig&)
{
    refuse("compare --maps", "its input is an image file");
}

int runVisualize(const CliOptions&)
{
    refuse("visualize", "its images are written as PNG files and contact sheets");
}

Command dissectCommand()
{
    return unavailableCommand("dissect", "a dissection reads a concept set's images and masks");
}

int runConcepts(const CliOptions&)
{
    refuse("concepts make", "the synthetic concept set is drawn and written with OpenCV");
}

} // namespace torchscope::cli
