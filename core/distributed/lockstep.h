#pragma once

// Ranks going through their shares of a distributed run's batches together: one exchange per step, in which
// every rank says what it did, whether it was asked to stop, and whether it failed. So a failure
// on one rank stops every rank at the next step with that rank's message, a stop (Ctrl+C) ends
// every rank at the same batch boundary, and rank 0 can show the progress of all.

#include "common/error.h"

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace torchscope {

class Cluster;

// A failure every rank of the run already knows of (thrown by an exchange): pass it on, do not
// report it again.
class JobError : public Error {
public:
    using Error::Error;
};

// One rank's step.
struct StepResult {
    bool hadBatch = false; // it had a batch of its share in this step
    int64_t images = 0; // images it went through (run or skipped)
    int64_t samples = 0; // samples it ran through the model
    int64_t selected = 0; // of those, the ones the condition kept
    bool stop = false; // it was asked to stop
    std::string error; // it failed: why
    std::vector<std::pair<std::string, std::string>> failures; // images it skipped: path, why
    std::string agreement; // what this step's work needs the ranks to agree on (JSON)
};

class Lockstep {
public:
    explicit Lockstep(Cluster& cluster);

    // Every rank's report for this step, in rank order. Throws JobError with the message of the
    // first rank that failed, or when a rank is gone.
    std::vector<StepResult> exchange(const StepResult& mine);
    // Says that this rank failed (the others' exchange of this step throws with `message`), then
    // throws it here as a JobError too.
    [[noreturn]] void fail(const std::string& message);
    // An exchange where the only news is success or failure: `error` empty when this rank is fine.
    void agree(const std::string& error);
    // Runs this rank's own work. When it throws (torchscope::Error, c10::Error, any std::exception),
    // `cleanup` runs and fail() tells every rank; a JobError passes on as it is (all know already).
    void orFail(const std::function<void()>& work, const std::function<void()>& cleanup = {});

    Cluster& cluster() { return cluster_; }
    int64_t steps() const { return steps_; }

private:
    Cluster& cluster_;
    int64_t steps_ = 0;
};

} // namespace torchscope
