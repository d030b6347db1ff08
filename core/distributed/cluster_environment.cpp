#include "distributed/cluster_environment.h"

#include "common/error.h"

#include <cerrno>
#include <cstdlib>

namespace torchscope {
namespace {

long wholeNumber(const EnvironmentLookup& lookup, const char* name, long low, long high)
{
    const char* text = lookup(name);
    if (!text || !*text)
        throw Error(std::string(name)
            + " is not set, but WORLD_SIZE is: start the ranks with torchrun (or set RANK, "
              "WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT for every rank)");
    char* end = nullptr;
    errno = 0;
    const long value = std::strtol(text, &end, 10);
    if (errno != 0 || *end != '\0' || value < low || value > high)
        throw Error(std::string(name) + "='" + text + "' is not a whole number from " + std::to_string(low) + " to "
            + std::to_string(high));
    return value;
}

} // namespace

std::string ClusterEnvironment::describe() const
{
    return "rank " + std::to_string(rank) + " of " + std::to_string(worldSize) + " (local " + std::to_string(localRank)
        + "), rendezvous " + masterAddress + ":" + std::to_string(masterPort);
}

std::optional<ClusterEnvironment> clusterEnvironment(const EnvironmentLookup& lookup)
{
    const char* world = lookup("WORLD_SIZE");
    if (!world || !*world)
        return std::nullopt;
    ClusterEnvironment environment;
    environment.worldSize = static_cast<int>(wholeNumber(lookup, "WORLD_SIZE", 1, 65536));
    environment.rank = static_cast<int>(wholeNumber(lookup, "RANK", 0, environment.worldSize - 1));
    const char* local = lookup("LOCAL_RANK");
    environment.localRank = local && *local ? static_cast<int>(wholeNumber(lookup, "LOCAL_RANK", 0, 65535)) : 0;
    if (environment.worldSize > 1) {
        const char* address = lookup("MASTER_ADDR");
        if (!address || !*address)
            throw Error("MASTER_ADDR is not set, but WORLD_SIZE is " + std::to_string(environment.worldSize)
                + ": every rank needs the address of rank 0's machine (torchrun sets it)");
        environment.masterAddress = address;
        environment.masterPort = static_cast<int>(wholeNumber(lookup, "MASTER_PORT", 1, 65535));
    }
    const char* agent = lookup("TORCHELASTIC_USE_AGENT_STORE");
    environment.agentStore = agent && std::string(agent) == "True";
    const char* restarts = lookup("TORCHELASTIC_RESTART_COUNT");
    if (restarts && *restarts)
        environment.restartCount = static_cast<int>(wholeNumber(lookup, "TORCHELASTIC_RESTART_COUNT", 0, 1 << 30));
    return environment;
}

} // namespace torchscope
