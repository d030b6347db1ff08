// Session files (*.torchscope.json): parsed, or refused with a torchscope::Error; what parses
// writes back to JSON that parses to the same session.
#include "common/error.h"
#include "session/session_file.h"

#include <cstdint>
#include <cstdlib>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    using torchscope::SessionFile;
    const std::string text(reinterpret_cast<const char*>(data), size);
    try {
        const SessionFile session = SessionFile::parse(text, torchscope::ModelSetup());
        const std::string written = session.toJson();
        if (SessionFile::parse(written, torchscope::ModelSetup()).toJson() != written)
            std::abort(); // a round trip must not change the session
    } catch (const torchscope::Error&) { }
    return 0;
}
