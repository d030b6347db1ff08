// The look at a would-be model file before LibTorch's: any bytes get a description or pass as
// an archive, never a crash. (LibTorch's own loader is fuzzed by fuzz_model_load.)
#include "fuzz_temp_file.h"
#include "model/file_diagnosis.h"

#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    static torchscope::fuzz::TempFile file(".pt");
    (void)torchscope::diagnoseModelFile(file.write(data, size));
    (void)torchscope::describeFileStart(std::string(reinterpret_cast<const char*>(data), size < 64 ? size : 64));
    return 0;
}
