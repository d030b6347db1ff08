#pragma once

#include "exported/exported_model.h"
#include "model/module_info.h"

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace torch::jit {
struct Module;
}

namespace torchscope {

struct LoadOptions {
    std::string device = "cpu"; // "cpu", "cuda", "cuda:1"; see resolveDevice()
    // "" keeps the saved dtypes; "float64", "float32", "bfloat16" or "float16" converts every
    // floating-point parameter, buffer and tensor attribute (integer ones such as
    // num_batches_tracked stay; a frozen model's weights are graph constants and stay too).
    std::string dtype;
    std::vector<std::string> operatorLibraries; // custom-op libraries to load first
    bool loadDefaultOperatorLibraries = true; // Debian's torchvision ops when present
};

// A loaded model (TorchScript, or a torch.export .pt2 rebuilt as TorchScript modules by
// exported/exported_model.h) and its module tree. The torch::jit::Module inside is never modified;
// instrumented graphs are built beside it (see graph/engine.h).
class Model {
public:
    // Throws torchscope::Error with a message saying what the file is when it is no model.
    static std::shared_ptr<Model> load(const std::string& path, const LoadOptions& options = {});
    ~Model();

    const std::string& path() const { return path_; }
    const std::string& device() const { return device_; }
    const std::vector<ModuleInfo>& modules() const { return modules_; }
    const ModuleInfo* find(const std::string& path) const;
    std::vector<std::string> paths() const;
    const std::vector<ForwardArgument>& forwardArguments() const { return arguments_; }
    std::string forwardSignature() const;

    // Not empty when torch.jit.freeze folded the modules away: what that means and what to do.
    const std::string& frozenNote() const { return frozenNote_; }

    // Set when the file is a torch.export program (.pt2) rather than TorchScript.
    const std::optional<ExportedProgramInfo>& exportedProgram() const { return exported_; }
    // "TorchScript" or "torch.export program (.pt2)".
    std::string format() const;

    // Extra files stored in the archive (torch.jit.save(..., _extra_files=...)); empty if absent.
    std::string extraFile(const std::string& name) const;

    void setOutputShapes(const std::string& path, std::vector<std::vector<int64_t>> shapes);

    torch::jit::Module& module() const { return *module_; }

private:
    Model() = default;

    std::string path_;
    std::string device_;
    std::unique_ptr<torch::jit::Module> module_;
    std::vector<ModuleInfo> modules_;
    std::map<std::string, int> index_;
    std::vector<ForwardArgument> arguments_;
    std::map<std::string, std::string> extraFiles_;
    std::string frozenNote_;
    std::optional<ExportedProgramInfo> exported_;
};

// "auto" -> "cuda" when LibTorch sees a GPU, else "cpu"; checks that "cuda" is available.
std::string resolveDevice(const std::string& requested);

} // namespace torchscope
