// A build without c10d's Gloo headers (libgloo-dev): a distributed run of several ranks is refused with the reason.
#include "distributed/cluster.h"

#include "common/error.h"

namespace torchscope {

struct Cluster::State { };

Cluster::Cluster(const ClusterEnvironment& environment, std::chrono::milliseconds)
{
    throw Error(environment.describe()
        + ": this build of TorchScope has no c10d Gloo (the gloo headers, Debian's "
          "libgloo-dev, were missing when it was built), so it cannot run as one of several ranks; rebuild with "
          "them, or run without WORLD_SIZE");
}

Cluster::~Cluster() = default;

const ClusterEnvironment& Cluster::environment() const
{
    static const ClusterEnvironment none;
    return none;
}

bool Cluster::available()
{
    return false;
}

std::vector<std::string> Cluster::allGather(const std::string& mine)
{
    return {mine};
}

std::vector<std::string> Cluster::gatherToRoot(const std::string& mine)
{
    return {mine};
}

void Cluster::allReduceSum(float*, int64_t)
{ }

void Cluster::allReduceSum(double*, int64_t)
{ }

} // namespace torchscope
