#include "model/operator_libraries.h"

#include "common/error.h"
#include "model/torchvision_autograd.h"

#include <ATen/ops/relu_ops.h>

#include <dlfcn.h>

#include <algorithm>
#include <filesystem>
#include <mutex>
#include <regex>
#include <set>

namespace torchscope {

void loadOperatorLibrary(const std::string& path)
{
    static std::mutex mutex;
    static std::set<std::string> loaded;
    std::lock_guard<std::mutex> lock(mutex);
    if (loaded.count(path))
        return;
    if (!std::filesystem::exists(path))
        throw Error("operator library '" + path + "' does not exist");
    // RTLD_GLOBAL: the library's static initialisers register its ops with LibTorch's registry.
    if (!dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL)) {
        const char* why = dlerror();
        throw Error("cannot load operator library '" + path + "': " + (why ? why : "unknown error"));
    }
    loaded.insert(path);
    registerTorchvisionAutograd();
}

std::filesystem::path linkedLibTorchDirectory()
{
    Dl_info info{};
    // A function defined in libtorch_cpu (at::relu itself is inline): where it was loaded from is
    // where this process's LibTorch is.
    at::Tensor (*inLibTorch)(const at::Tensor&) = &at::_ops::relu::call;
    if (!dladdr(reinterpret_cast<const void*>(inLibTorch), &info) || !info.dli_fname)
        return {};
    return std::filesystem::path(info.dli_fname).parent_path();
}

std::vector<std::string> defaultOperatorLibraries()
{
    // A PyPI wheel's LibTorch is site-packages/torch/lib; the torchvision installed beside it was
    // built for exactly that LibTorch, and its operator library (_C_stable.so since 0.29, _C.so
    // before) is a plain LibTorch extension that loads without Python.
    std::vector<std::string> found;
    const std::filesystem::path torchvision = linkedLibTorchDirectory().parent_path().parent_path() / "torchvision";
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(torchvision, ec)) {
        const std::string name = entry.path().filename().string();
        if (name.rfind("_C", 0) == 0 && entry.path().extension() == ".so")
            found.push_back(entry.path().string());
    }
    std::sort(found.begin(), found.end());
    return found;
}

std::string missingOperatorAdvice(const std::string& message)
{
    static const std::regex unknownOp(R"(Unknown builtin op: ([A-Za-z0-9_]+)::([A-Za-z0-9_]+))");
    std::smatch match;
    if (!std::regex_search(message, match, unknownOp))
        return {};
    const std::string ns = match[1];
    const std::string op = ns + "::" + match[2].str();
    if (ns == "torchvision")
        return "the model uses " + op
            + ", which lives in torchvision's C++ operator library: install torchvision beside the torch "
              "whose LibTorch TorchScope runs on (TorchScope loads its torchvision/_C*.so by itself; "
              "scripts/python_env.sh installs it) or pass the library built for your LibTorch with "
              "--ops-library PATH";
    return "the model uses the custom operator " + op + "; pass the shared library that registers the '" + ns
        + "' operators with --ops-library PATH";
}

} // namespace torchscope
