// Model setups (torchscope.json, --preprocess FILE.json): parsed or refused with a
// torchscope::Error; a parsed setup survives a round trip through its JSON.
#include "common/error.h"
#include "model/model_setup.h"

#include <cstdint>
#include <cstdlib>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    using torchscope::ModelSetup;
    const std::string text(reinterpret_cast<const char*>(data), size);
    try {
        const ModelSetup setup = ModelSetup::fromJson(text);
        if (ModelSetup::fromJson(setup.toJson()) != setup)
            std::abort();
        (void)setup.describe();
    } catch (const torchscope::Error&) { }
    return 0;
}
