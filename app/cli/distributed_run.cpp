#include "distributed_run.h"

#include "distributed/cluster.h"
#include "distributed/cluster_environment.h"
#include "distributed/lockstep.h"

#include <torch/cuda.h>

#include <algorithm>
#include <cstdlib>
#include <thread>

namespace torchscope::cli {

std::unique_ptr<DistributedRun> DistributedRun::join(const CliOptions& options)
{
    const std::optional<ClusterEnvironment> environment = clusterEnvironment();
    if (!environment || environment->worldSize == 1)
        return nullptr;
    std::unique_ptr<DistributedRun> run(new DistributedRun);
    run->localRank_ = environment->localRank;
    run->cluster_ = std::make_unique<Cluster>(*environment, std::chrono::seconds(options.jobTimeout));
    run->lockstep_ = std::make_unique<Lockstep>(*run->cluster_);
    return run;
}

DistributedRun::~DistributedRun() = default;

int DistributedRun::rank() const
{
    return cluster_->rank();
}

int DistributedRun::size() const
{
    return cluster_->size();
}

void DistributedRun::prepareTogether(const std::function<int64_t()>& prepare, const std::string& inputs)
{
    int64_t samples = 0;
    lockstep_->orFail([&] { samples = prepare(); });
    lockstep_->agree({});
    StepResult count;
    count.images = samples;
    const auto all = lockstep_->exchange(count);
    for (size_t r = 1; r < all.size(); ++r)
        if (all[r].images != all[0].images)
            lockstep_->fail("rank " + std::to_string(r) + " sees " + std::to_string(all[r].images)
                + " samples and rank 0 sees " + std::to_string(all[0].images) + ": every rank needs the same " + inputs
                + " (the same folder on every node)");
}

CliOptions DistributedRun::rankOptions(const CliOptions& options) const
{
    CliOptions mine = options;
    if (mine.device.empty() || mine.device == "auto")
        mine.device = torch::cuda::is_available() ? "cuda:" + std::to_string(localRank_) : "cpu";
    // torchrun says how many ranks share this node; the cores are theirs together.
    int ranksHere = 1;
    if (const char* local = std::getenv("LOCAL_WORLD_SIZE"); local && std::atoi(local) > 0)
        ranksHere = std::atoi(local);
    const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    if (mine.threads <= 0)
        mine.threads = std::max(1, cores / ranksHere);
    if (mine.decodeThreads <= 0)
        mine.decodeThreads = std::max(1, cores / ranksHere);
    return mine;
}

} // namespace torchscope::cli
