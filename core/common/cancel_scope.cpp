#include "common/cancel_scope.h"

#include <utility>

namespace torchscope {
namespace {

thread_local CancelScope* innermost = nullptr;

} // namespace

CancelScope::CancelScope(std::function<bool()> cancelled)
    : cancelled_(std::move(cancelled))
    , outer_(innermost)
{
    innermost = this;
}

CancelScope::~CancelScope()
{
    innermost = outer_;
}

void CancelScope::check()
{
    if (innermost && innermost->cancelled_ && innermost->cancelled_())
        throw Cancelled();
}

} // namespace torchscope
