#include "graph/warning_capture.h"

#include <c10/util/Exception.h>
#include <torch/version.h>

#include <algorithm>

namespace torchscope {

struct WarningCapture::Handler : c10::WarningHandler {
#if TORCH_VERSION_MAJOR >= 2
    void process(const c10::Warning& warning) override
    {
        add(warning.msg());
    }
#else
    void process(const c10::SourceLocation&, const std::string& message, const bool) override
    {
        add(message);
    }
#endif
    void add(const std::string& message)
    {
        if (std::find(messages.begin(), messages.end(), message) == messages.end())
            messages.push_back(message);
    }

    std::vector<std::string> messages;
    c10::WarningHandler* previous = nullptr;
};

#if TORCH_VERSION_MAJOR >= 2
namespace warnings = c10::WarningUtils;
#else
namespace warnings = c10::Warning;
#endif

WarningCapture::WarningCapture()
    : handler_(std::make_unique<Handler>())
{
    handler_->previous = warnings::get_warning_handler();
    warnings::set_warning_handler(handler_.get());
}

WarningCapture::~WarningCapture()
{
    warnings::set_warning_handler(handler_->previous);
}

std::vector<std::string> WarningCapture::messages() const
{
    return handler_->messages;
}

} // namespace torchscope
