// Grab, edit, condition, reduction and precision specs from the command line and sessions: parsed or
// refused with a torchscope::Error. An edit spec that parses prints back to the same spec.
#include "common/error.h"
#include "compare/comparison.h"
#include "graph/request.h"
#include "record/recorder_config.h"

#include <cstdint>
#include <cstdlib>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    using namespace torchscope;
    const std::string text(reinterpret_cast<const char*>(data), size);
    try {
        const GrabSpec grab = GrabSpec::parse(text);
        if (GrabSpec::parse(grab.selector + grab.suffix()).suffix() != grab.suffix())
            std::abort();
    } catch (const Error&) { }
    try {
        const EditSpec edit = EditSpec::parse(text);
        const EditSpec again = EditSpec::parse(edit.toString());
        if (again.channels != edit.channels || again.factor != edit.factor || again.path != edit.path
            || again.kind != edit.kind)
            std::abort();
    } catch (const Error&) { }
    try {
        (void)Condition::parse(text);
    } catch (const Error&) { }
    try {
        (void)parseReduction(text);
    } catch (const Error&) { }
    try {
        // A precision that parses names itself again: "cuda:1:float16" -> "cuda:1 float16".
        const Precision precision = Precision::parse(text);
        const Precision again = Precision::parse(precision.device + ":" + precision.dtype);
        if (again.name() != precision.name())
            std::abort();
    } catch (const Error&) { }
    try {
        (void)parseCompareMode(text);
    } catch (const Error&) { }
    return 0;
}
