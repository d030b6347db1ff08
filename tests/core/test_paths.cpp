// The folders the core tests read, in a file of their own: the one file compiled with the clone's
// paths, so that every other file compiles to the same object in any clone (cmake/compiler_cache.cmake).
#include "test_support.h"

namespace torchscope::test {

std::string fixture(const std::string& name)
{
    return std::string(TORCHSCOPE_FIXTURES_DIR) + "/" + name;
}

std::string sourceDir()
{
    return TORCHSCOPE_SOURCE_DIR;
}

} // namespace torchscope::test
