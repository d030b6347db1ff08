#pragma once

#include <stdexcept>
#include <string>

namespace torchscope {

// The one exception type the core lets out. Its message is written for the person at the
// keyboard: what is wrong, with the actual values, and what to do about it.
class Error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

} // namespace torchscope
