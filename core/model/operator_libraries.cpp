#include "model/operator_libraries.h"

#include "common/error.h"

#include <torch/version.h>

#include <dlfcn.h>

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
}

std::vector<std::string> defaultOperatorLibraries()
{
    std::vector<std::string> found;
    // Debian's python3-torchvision is built against Debian's LibTorch 1.13; loading it into any
    // other LibTorch would pull a second copy of libtorch into the process.
#if TORCH_VERSION_MAJOR == 1 && TORCH_VERSION_MINOR == 13
    const std::filesystem::path dir = "/usr/lib/python3/dist-packages/torchvision";
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
        const std::string name = entry.path().filename().string();
        if (name.rfind("_C.", 0) == 0 && entry.path().extension() == ".so")
            found.push_back(entry.path().string());
    }
#endif
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
            + ", which lives in torchvision's C++ operator library: install Debian's python3-torchvision "
              "(TorchScope loads its torchvision/_C*.so by itself) or pass the library built for your "
              "LibTorch with --ops-library PATH";
    return "the model uses the custom operator " + op + "; pass the shared library that registers the '" + ns
        + "' operators with --ops-library PATH";
}

} // namespace torchscope
