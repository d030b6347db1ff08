// The folders and the python the window tests use, in a file of their own: the one file compiled with
// the clone's paths, so that every other file compiles to the same object in any clone
// (cmake/compiler_cache.cmake).
#include "gui_test_support.h"

#include <QDir>

namespace torchscope::test {

QString fixture(const QString& name)
{
    return QDir(TORCHSCOPE_FIXTURES_DIR).filePath(name);
}

QString sourceDir()
{
    return TORCHSCOPE_SOURCE_DIR;
}

QString pythonProgram()
{
    return TORCHSCOPE_PYTHON;
}

} // namespace torchscope::test
