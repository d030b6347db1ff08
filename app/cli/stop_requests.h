#pragma once

// The CLI's one Ctrl+C handler: Ctrl+C asks a long command (record, probe, compare, attribute,
// evaluate, sanity, attention, run --each-image) to stop after its current unit and keep what it
// has; in a distributed run SIGTERM does too, as torchrun may pass a Ctrl+C on as either. While one
// of these lives the handlers are installed; after it, a signal ends the process as usual again.

namespace torchscope::cli {

class StopRequests {
public:
    explicit StopRequests(bool inDistributedRun);
    ~StopRequests();
    StopRequests(const StopRequests&) = delete;
    StopRequests& operator=(const StopRequests&) = delete;

    static bool asked(); // a stop was asked since the process started
};

} // namespace torchscope::cli
