#include "run_request.h"

#include "common/error.h"
#include "export/pt_export.h"
#include "model/model_setup.h"
#include "sae/sae_splice.h"

namespace torchscope::cli {

Request runRequest(const CliOptions& options, const ModelSetup& setup, std::vector<at::Tensor>& editTensors)
{
    Request request;
    for (const auto& grab : options.grabs)
        request.grabs.push_back(GrabSpec::parse(grab));
    std::vector<at::Tensor> files; // the add / replace edits' tensors, in order
    for (const auto& text : options.edits) {
        // PATH:add:FILE.pt / PATH:replace:FILE.pt carry a tensor file after the operation.
        std::string spec = text;
        bool withFile = false;
        for (const char* op : {":add:", ":replace:"}) {
            const auto at = text.find(op);
            if (at == std::string::npos || text.find(":sae:") != std::string::npos)
                continue;
            spec = text.substr(0, at + std::string(op).size() - 1);
            const auto tensor = readTorchSaveFile(text.substr(at + std::string(op).size()));
            if (!tensor.isTensor())
                throw Error("edit '" + text + "': the file holds no single tensor");
            files.push_back(tensor.toTensor());
            withFile = true;
        }
        request.edits.push_back(EditSpec::parse(spec));
        const EditSpec& edit = request.edits.back();
        if ((edit.kind == EditKind::Add || edit.kind == EditKind::Replace) && !withFile)
            throw Error("edit '" + text + "' needs a tensor file: PATH:add:FILE.pt or PATH:replace:FILE.pt");
    }
    // A sparse autoencoder's edit reads its SAE now: its four tensors go with the run.
    editTensors = prepareSaeEdits(request, files);
    request.truncateAt = options.truncate;
    request.targetClass = options.target;
    request.targetRegion = options.targetBox;
    request.scores = setup.scores;
    request.labels = setup.labels;
    return request;
}

std::string explainSetupProblem(const std::string& message, const std::string& advice)
{
    return message + "\n" + advice
        + ": give the model's input with --preprocess SETUP.json (torchscope-cli setup MODEL.pt lists the input sizes "
          "that run)";
}

} // namespace torchscope::cli
