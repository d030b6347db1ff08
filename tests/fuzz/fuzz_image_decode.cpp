// Image decoding: whatever the bytes, a decoded image or a torchscope::Error, never a crash.
#include "common/error.h"
#include "imaging/image_decoder.h"

#include <cstdint>
#include <cstdlib>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    const std::string bytes(reinterpret_cast<const char*>(data), size);
    try {
        const torchscope::DecodedImage image = torchscope::decodeImageBytes(bytes, "fuzz input");
        const size_t expected = static_cast<size_t>(image.width) * image.height * image.channels;
        if (image.width <= 0 || image.height <= 0 || (image.channels != 1 && image.channels != 3)
            || image.pixels.size() != expected)
            std::abort(); // a decoded image must be what it says it is
    } catch (const torchscope::Error&) { }
    return 0;
}
