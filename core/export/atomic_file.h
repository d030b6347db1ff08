#pragma once

#include <string>
#include <string_view>

namespace torchscope {

// Writes the bytes to a temporary file beside `path` and renames it into place, so that a reader
// sees the old file or the whole new one, never half of it. Throws torchscope::Error.
void writeFileAtomically(const std::string& path, std::string_view bytes);

} // namespace torchscope
