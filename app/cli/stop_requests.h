#pragma once

// Ctrl+C asks a long command (record, probe) to stop after its current batch and keep what it has;
// in a torchrun job SIGTERM does too, as torchrun may pass a Ctrl+C on as either. While one of
// these lives the handlers are installed; after it, a signal ends the process as usual again.

namespace torchscope::cli {

class StopRequests {
public:
    explicit StopRequests(bool inJob);
    ~StopRequests();
    StopRequests(const StopRequests&) = delete;
    StopRequests& operator=(const StopRequests&) = delete;

    static bool asked(); // a stop was asked since the process started
};

} // namespace torchscope::cli
