#pragma once

// Where this process sits in a distributed run started by torchrun (or by anything that sets the same
// variables: Slurm's srun around torchrun, a test starting the ranks itself).

#include <cstdlib>
#include <functional>
#include <optional>
#include <string>

namespace torchscope {

struct ClusterEnvironment {
    int rank = 0; // RANK: 0 to worldSize - 1, over every node
    int worldSize = 1; // WORLD_SIZE
    int localRank = 0; // LOCAL_RANK: on this node; picks the GPU
    std::string masterAddress; // MASTER_ADDR: where rank 0 serves the rendezvous store
    int masterPort = 0; // MASTER_PORT
    // TORCHELASTIC_USE_AGENT_STORE=True: torchrun's agent already serves the store at the master
    // address, and every rank connects to it (rank 0 must not serve one of its own).
    bool agentStore = false;
    int restartCount = 0; // TORCHELASTIC_RESTART_COUNT: keys of each attempt apart

    std::string describe() const; // "rank 1 of 3 (local 1), rendezvous 127.0.0.1:29500"
};

using EnvironmentLookup = std::function<const char*(const char*)>;

// The distributed run this process belongs to, from RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT;
// nothing when WORLD_SIZE is unset (a run on its own: nothing changes). Throws torchscope::Error
// when the variables are there but do not make a run: one missing, not a number, RANK outside
// 0..WORLD_SIZE-1, a port outside 1..65535.
std::optional<ClusterEnvironment> clusterEnvironment(const EnvironmentLookup& lookup = std::getenv);

} // namespace torchscope
