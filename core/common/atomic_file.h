#pragma once

#include <functional>
#include <string>
#include <string_view>

namespace torchscope {

// Writes the bytes to a temporary file beside `path` and renames it into place, so that a reader
// sees the old file or the whole new one, never half of it. Throws torchscope::Error.
void writeFileAtomically(const std::string& path, std::string_view bytes);

// The same for writers that want a path of their own (libzip): `write` fills the temporary path
// it is given, which is then renamed to `path`; if it throws, the temporary file is removed.
void replaceFileAtomically(const std::string& path, const std::function<void(const std::string& tempPath)>& write);

} // namespace torchscope
