// Every way a file of the user's reaches LibTorch's readers, each behind our diagnosis: a model
// (Model::load: diagnoseModelFile, then torch::jit::load, the module tree and the stored setup),
// a tensor or samples file (readLabelledSamples: readTorchSaveFile, then torch::jit::pickle_load),
// a probe (loadProbeExtension: a torch.save'd state dict or a TorchScript module) and a copy of a
// model with a setup (writeModelWithSetup: PyTorchStreamReader record by record). Whatever the
// bytes, each gives a result or throws an exception with a message; never a crash, an abort or a
// sanitizer report.
//
// The one exception type the core means to let out is torchscope::Error. Another one (a c10::Error
// or torch::jit::ErrorReport that slipped past a catch) is accepted when it carries a message, and
// said on stderr once per entry and type; under TORCHSCOPE_FUZZ_STRICT=1 it stops the run.
#include "common/error.h"
#include "fuzz_temp_file.h"
#include "model/model.h"
#include "model/model_setup.h"
#include "probe/linear_probe.h"
#include "record/labelled_samples.h"

#include <cxxabi.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <typeinfo>

// LeakSanitizer's suppressions for this target alone (with those of .ci/lsan.supp): LibTorch 2.14's
// TorchScript importer leaks when an archive's code does not compile (torch::jit::load throws
// "invalid indent level" and leaves a cycle of CompilationUnit, ClassType and graph objects: 466
// allocations, 55 KB, for one mutated code/ file, in a program that only calls torch::jit::load).
// LibTorch has no frame pointers, so its leaks' stacks end in its own libraries: those are left to
// it. Leaks from our code keep their frames and are reported; the core tests check it under LSan.
extern "C" const char* __lsan_default_suppressions()
{
    return "leak:libtorch_cpu.so\nleak:libc10.so\n";
}

namespace {

const bool strict = [] {
    const char* value = std::getenv("TORCHSCOPE_FUZZ_STRICT");
    return value && std::strcmp(value, "1") == 0;
}();

void expect(bool condition, const char* what)
{
    if (!condition) {
        std::fprintf(stderr, "fuzz_model_load: %s\n", what);
        std::abort();
    }
}

void refusedOrDone(const char* entry, const std::function<void()>& body)
{
    try {
        body();
    } catch (const torchscope::Error& e) {
        expect(std::strlen(e.what()) > 0, "a torchscope::Error without a message");
    } catch (const std::exception& e) {
        // Said once per entry and type, with the first line of the message.
        static std::set<std::string> said;
        int status = 0;
        const std::unique_ptr<char, decltype(&std::free)> type(
            abi::__cxa_demangle(typeid(e).name(), nullptr, nullptr, &status), std::free);
        const std::string message = e.what();
        if (said.insert(std::string(entry) + (type ? type.get() : typeid(e).name())).second || strict)
            std::fprintf(stderr, "fuzz_model_load: %s let out a %s, not a torchscope::Error: %s\n", entry,
                type ? type.get() : typeid(e).name(), message.substr(0, message.find('\n')).c_str());
        expect(!strict, "TORCHSCOPE_FUZZ_STRICT=1: only torchscope::Error may leave the core");
        expect(!message.empty(), "an exception without a message");
    }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    static torchscope::fuzz::TempFile file(".pt");
    static torchscope::fuzz::TempFile copy(".pt");
    const std::string& path = file.write(data, size);

    refusedOrDone("Model::load", [&] {
        torchscope::LoadOptions options;
        options.device = "cpu";
        const auto model = torchscope::Model::load(path, options);
        // A model that loads is a whole tree: the root first, every other module under a parent before it.
        const auto& modules = model->modules();
        expect(!modules.empty() && modules[0].path.empty(), "a loaded model without its root module");
        for (size_t i = 1; i < modules.size(); ++i)
            expect(modules[i].parent >= 0 && static_cast<size_t>(modules[i].parent) < i
                    && model->find(modules[i].path) == &modules[i],
                "a module whose parent or index is wrong");
        expect(model->forwardSignature().rfind("forward(", 0) == 0, "no forward signature");
        (void)torchscope::defaultSetup(*model); // the torchscope.json card, when there is one
    });
    refusedOrDone("readLabelledSamples", [&] {
        const torchscope::LabelledSamples samples = torchscope::readLabelledSamples(path);
        expect(samples.samples.defined(), "samples read without a tensor");
    });
    refusedOrDone("loadProbeExtension", [&] {
        const torchscope::ProbeExtension probe = torchscope::loadProbeExtension(path);
        expect(probe.module != nullptr, "a probe without a module");
    });
    refusedOrDone("writeModelWithSetup",
        [&] { torchscope::writeModelWithSetup(path, copy.write(nullptr, 0), torchscope::ModelSetup()); });
    return 0;
}
