#pragma once

#include <memory>
#include <string>
#include <vector>

namespace torchscope {

// While alive, collects the warnings LibTorch and TorchScript code raise in this thread
// (warnings.warn in a model) instead of letting them go to stderr through glog. The handler
// API differs between LibTorch 1.x and 2.x; this hides it.
class WarningCapture {
public:
    WarningCapture();
    ~WarningCapture();
    WarningCapture(const WarningCapture&) = delete;
    WarningCapture& operator=(const WarningCapture&) = delete;

    std::vector<std::string> messages() const; // without repeats, in order

private:
    struct Handler;
    std::unique_ptr<Handler> handler_;
};

} // namespace torchscope
