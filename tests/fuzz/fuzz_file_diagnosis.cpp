// The look at a would-be model file before LibTorch's: any bytes get a description or pass as
// an archive, never a crash. (LibTorch's own loader is not fuzzed here.)
#include "model/file_diagnosis.h"

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    static const std::string path = "/tmp/torchscope-fuzz-diagnosis-" + std::to_string(getpid()) + ".pt";
    {
        std::ofstream out(path, std::ios::binary | std::ios::trunc);
        out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
    }
    (void)torchscope::diagnoseModelFile(path);
    (void)torchscope::describeFileStart(std::string(reinterpret_cast<const char*>(data), size < 64 ? size : 64));
    std::remove(path.c_str());
    return 0;
}
