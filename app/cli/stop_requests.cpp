#include "stop_requests.h"

#include <atomic>
#include <csignal>

namespace torchscope::cli {
namespace {

std::atomic_bool stopAsked{false};

void askStop(int)
{
    stopAsked = true;
}

} // namespace

StopRequests::StopRequests(bool inDistributedRun)
{
    std::signal(SIGINT, askStop);
    if (inDistributedRun)
        std::signal(SIGTERM, askStop);
}

StopRequests::~StopRequests()
{
    std::signal(SIGINT, SIG_DFL);
    std::signal(SIGTERM, SIG_DFL);
}

bool StopRequests::asked()
{
    return stopAsked;
}

} // namespace torchscope::cli
