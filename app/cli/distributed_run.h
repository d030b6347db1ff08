#pragma once

// This process as one rank of a distributed run (torchrun) (RANK, WORLD_SIZE, ... in its environment), for the
// commands that split their images between ranks: record, probe train and probe sweep.

#include "cli_options.h"
#include "record/batch_run.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>

namespace torchscope {
class Cluster;
class Lockstep;
} // namespace torchscope

namespace torchscope::cli {

class DistributedRun {
public:
    // Joins the run that torchrun's variables describe; nothing when there are none (or
    // WORLD_SIZE is 1). Throws torchscope::Error when they are wrong or the others never come.
    static std::unique_ptr<DistributedRun> join(const CliOptions& options);
    ~DistributedRun();

    int rank() const;
    int size() const;
    bool root() const { return rank() == 0; }
    Shard shard() const { return {rank(), size()}; }
    Lockstep& lockstep() { return *lockstep_; }
    // The options as this rank runs them: --device auto becomes cuda:LOCAL_RANK when CUDA is
    // there (else cpu); threads and decoding threads are the node's cores shared among its ranks.
    CliOptions rankOptions(const CliOptions& options) const;
    // Every rank prepares (opens the model, lists its inputs); a rank that cannot fails the whole
    // run with its message, and all must count the same samples, as `prepare` returns them.
    // `inputs` names what they come from, for that message.
    void prepareTogether(const std::function<int64_t()>& prepare, const std::string& inputs);

private:
    DistributedRun() = default;
    std::unique_ptr<Cluster> cluster_;
    std::unique_ptr<Lockstep> lockstep_;
    int localRank_ = 0;
};

} // namespace torchscope::cli
