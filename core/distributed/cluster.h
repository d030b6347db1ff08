#pragma once

// A distributed run's processes talking through PyTorch's own c10d: rank 0 serves a TCPStore for the
// rendezvous, and every exchange is a Gloo collective over CPU tensors. Plain values in, plain
// values out: no Torch in this header.

#include "distributed/cluster_environment.h"

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace torchscope {

class Cluster {
public:
    // Joins the run: waits up to `timeout` for every rank to arrive; each exchange then waits up
    // to `timeout` for the slowest rank. Throws torchscope::Error (a port in use, a rank that never
    // came, a build without c10d's Gloo).
    Cluster(const ClusterEnvironment& environment, std::chrono::milliseconds timeout);
    ~Cluster();
    Cluster(const Cluster&) = delete;
    Cluster& operator=(const Cluster&) = delete;

    const ClusterEnvironment& environment() const;
    int rank() const { return environment().rank; }
    int size() const { return environment().worldSize; }

    // Every rank's bytes, in rank order. Every rank makes the same exchanges in the same order.
    // Throws torchscope::Error when a rank is gone (killed, out of memory) or the timeout passes.
    std::vector<std::string> allGather(const std::string& mine);
    // Rank 0 gets every rank's bytes in rank order, the others nothing; for large results.
    std::vector<std::string> gatherToRoot(const std::string& mine);

    // Every rank's values summed element by element, in place; every rank gets the same sums.
    // Throws torchscope::Error as the exchanges above.
    void allReduceSum(float* values, int64_t count);
    void allReduceSum(double* values, int64_t count);

    static bool available(); // false in a build without c10d's Gloo (see CMakeLists.txt)

private:
    struct State;
    std::unique_ptr<State> state_;
};

} // namespace torchscope
