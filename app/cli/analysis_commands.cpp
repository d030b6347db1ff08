#include "analysis_commands.h"

#include "common/error.h"
#include "graph/engine.h"
#include "image_inputs.h"
#include "imaging/grad_cam_images.h"
#include "imaging/patch_images.h"
#include "model/model.h"
#include "open_model.h"

#include <iomanip>
#include <iostream>
#include <sstream>

namespace torchscope::cli {
namespace {

std::vector<int64_t> channelList(const std::string& text)
{
    std::vector<int64_t> channels;
    std::stringstream parts(text);
    for (std::string part; std::getline(parts, part, ',');) {
        try {
            size_t used = 0;
            channels.push_back(std::stoll(part, &used));
            if (used != part.size())
                throw std::invalid_argument(part);
        } catch (const std::exception&) {
            throw UsageError("patch: --channels: expected C1,C2,... (integers), got '" + text + "'");
        }
    }
    return channels;
}

void reportWritten(const std::string& path, const std::vector<std::string>& leftOut)
{
    for (const auto& key : leftOut)
        std::cerr << "torchscope-cli: warning: " << path << " cannot hold '" << key << "'; left out\n";
    std::cout << "wrote " << path << '\n';
}

} // namespace

int runGradCam(const CliOptions& options)
{
    const auto model = openModel(options);
    GradCamRequest request;
    request.setup = chooseSetup(*model, options);
    request.images = listImageInputs(options.inputs);
    request.layer = options.layer;
    request.targetClass = options.target.value_or(-1);
    request.region = options.targetBox;
    Engine engine(model);
    const GradCamResult result = computeGradCam(engine, request, [](const Progress& p) {
        std::cerr << "\r" << p.done << " / " << p.total << " images" << std::flush;
        return true;
    });
    std::cerr << '\n';
    for (const auto& [path, why] : result.failures)
        std::cerr << "torchscope-cli: warning: skipped " << path << ": " << why << '\n';
    std::cout << "Grad-CAM at " << result.layer << " (" << outputKindName(result.outputKind) << " output):\n";
    for (const auto& image : result.images) {
        std::cout << "  " << image.image << ": " << image.targetDescription << "; Grad-CAM up to "
                  << image.gradCamRange.second << '\n';
        if (!image.note.empty())
            std::cout << "    note: " << image.note << '\n';
    }
    reportWritten(options.out, writeGradCam(options.out, result));
    return 0;
}

int runPatch(const CliOptions& options)
{
    const auto model = openModel(options);
    PatchRequest request;
    request.mode = parsePatchMode(options.mode.empty() ? "patch" : options.mode);
    request.setup = chooseSetup(*model, options);
    request.imageA = options.imageA;
    request.imageB = options.imageB;
    request.layer = options.layer;
    request.compareLayer = options.compareLayer;
    if (request.mode == PatchMode::Ablate) {
        if (options.ablateChannels.empty())
            throw UsageError("patch: --mode ablate needs --channels C1,C2,...");
        request.channels = channelList(options.ablateChannels);
    } else if (options.imageB.empty()) {
        throw UsageError("patch: --mode " + patchModeName(request.mode) + " needs --b IMAGE");
    }
    for (const auto& edit : options.edits)
        request.edits.push_back(EditSpec::parse(edit));
    Engine engine(model);
    const PatchResult result = patchImages(engine, request);
    for (const auto& column : result.columns) {
        std::cout << column.title << ":";
        for (const auto& p : column.predictions)
            std::cout << "  " << p.label << ' ' << std::fixed << std::setprecision(1) << 100.0 * p.probability << '%';
        std::cout << '\n';
    }
    if (result.difference) {
        std::cout << "channels of " << result.layer << " by mean |A - B|:";
        const auto& d = *result.difference;
        for (size_t i = 0; i < std::min<size_t>(d.ranked.size(), 10); ++i)
            std::cout << "  " << d.ranked[i] << " (" << std::setprecision(4) << std::defaultfloat
                      << d.channelDifference[static_cast<size_t>(d.ranked[i])] << ')';
        std::cout << '\n';
    }
    if (!options.out.empty())
        reportWritten(options.out, writePatch(options.out, result));
    return 0;
}

} // namespace torchscope::cli
