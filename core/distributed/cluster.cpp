#include "distributed/cluster.h"

#include "common/error.h"
#include "graph/engine.h"

#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace torchscope {
namespace {

bool isLoopback(const std::string& address)
{
    return address == "localhost" || address.rfind("127.", 0) == 0 || address == "::1";
}

// The network Gloo talks over: GLOO_SOCKET_IFNAME's interface when set (as in PyTorch), the
// loopback for a distributed run on one machine, else the interface of this machine's hostname.
std::shared_ptr<::gloo::transport::Device> glooDevice(const ClusterEnvironment& environment)
{
    if (const char* interface = std::getenv("GLOO_SOCKET_IFNAME"); interface && *interface)
        return c10d::ProcessGroupGloo::createDeviceForInterface(interface);
    if (isLoopback(environment.masterAddress))
        return c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1");
    return c10d::ProcessGroupGloo::createDefaultDevice();
}

std::string lostContact(const ClusterEnvironment& environment, const std::string& why)
{
    return "rank " + std::to_string(environment.rank) + " lost contact with the job (another rank stopped: "
        + "killed, out of memory, or gone without a word; or the exchange timed out): " + why;
}

} // namespace

struct Cluster::State {
    ClusterEnvironment environment;
    c10::intrusive_ptr<c10d::ProcessGroupGloo> group;
    int tag = 0;
};

Cluster::Cluster(const ClusterEnvironment& environment, std::chrono::milliseconds timeout)
    : state_(std::make_unique<State>())
{
    state_->environment = environment;
    try {
        c10d::TCPStoreOptions options;
        options.port = static_cast<std::uint16_t>(environment.masterPort);
        options.timeout = timeout;
        if (!environment.agentStore) { // else torchrun's agent serves it, and counts no workers
            options.isServer = environment.rank == 0;
            options.numWorkers = static_cast<std::size_t>(environment.worldSize);
        }
        options.waitWorkers = !environment.agentStore;
        const auto store = c10::make_intrusive<c10d::TCPStore>(environment.masterAddress, options);
        const auto prefixed = c10::make_intrusive<c10d::PrefixStore>(
            "torchscope/attempt_" + std::to_string(environment.restartCount), store);
        auto glooOptions = c10d::ProcessGroupGloo::Options::create(timeout);
        glooOptions->devices.push_back(glooDevice(environment));
        state_->group = c10::make_intrusive<c10d::ProcessGroupGloo>(
            prefixed, environment.rank, environment.worldSize, glooOptions);
    } catch (const c10::Error& e) {
        throw Error(
            environment.describe() + ": could not join the job: " + torchErrorMessage(e.what_without_backtrace()));
    } catch (const std::exception& e) {
        throw Error(environment.describe() + ": could not join the job: " + e.what());
    }
}

Cluster::~Cluster() = default;

const ClusterEnvironment& Cluster::environment() const
{
    return state_->environment;
}

bool Cluster::available()
{
    return true;
}

std::vector<std::string> Cluster::allGather(const std::string& mine)
{
    const auto ranks = static_cast<size_t>(size());
    try {
        std::vector<at::Tensor> mySize{at::tensor({static_cast<int64_t>(mine.size())}, at::kLong)};
        std::vector<std::vector<at::Tensor>> sizes(1);
        for (size_t r = 0; r < ranks; ++r)
            sizes[0].push_back(at::empty({1}, at::kLong));
        state_->group->allgather(sizes, mySize)->wait();
        int64_t longest = 1; // Gloo does not exchange empty tensors
        for (const auto& s : sizes[0])
            longest = std::max(longest, s.item<int64_t>());

        std::vector<at::Tensor> myBytes{at::zeros({longest}, at::kByte)};
        std::memcpy(myBytes[0].data_ptr<uint8_t>(), mine.data(), mine.size());
        std::vector<std::vector<at::Tensor>> all(1);
        for (size_t r = 0; r < ranks; ++r)
            all[0].push_back(at::empty({longest}, at::kByte));
        state_->group->allgather(all, myBytes)->wait();
        std::vector<std::string> out;
        for (size_t r = 0; r < ranks; ++r)
            out.emplace_back(reinterpret_cast<const char*>(all[0][r].data_ptr<uint8_t>()),
                static_cast<size_t>(sizes[0][r].item<int64_t>()));
        return out;
    } catch (const c10::Error& e) {
        throw Error(lostContact(environment(), torchErrorMessage(e.what_without_backtrace())));
    } catch (const std::exception& e) { // Gloo's own (gloo::IoException: a peer closed its connection)
        throw Error(lostContact(environment(), e.what()));
    }
}

namespace {

template <typename T>
void sumInPlace(c10d::ProcessGroupGloo& group, const ClusterEnvironment& environment, T* values, int64_t count)
{
    if (count == 0)
        return;
    try {
        std::vector<at::Tensor> tensors{at::from_blob(values, {count}, c10::CppTypeToScalarType<T>::value)};
        group.allreduce(tensors)->wait();
    } catch (const c10::Error& e) {
        throw Error(lostContact(environment, torchErrorMessage(e.what_without_backtrace())));
    } catch (const std::exception& e) { // Gloo's own (gloo::IoException: a peer closed its connection)
        throw Error(lostContact(environment, e.what()));
    }
}

} // namespace

void Cluster::allReduceSum(float* values, int64_t count)
{
    sumInPlace(*state_->group, environment(), values, count);
}

void Cluster::allReduceSum(double* values, int64_t count)
{
    sumInPlace(*state_->group, environment(), values, count);
}

std::vector<std::string> Cluster::gatherToRoot(const std::string& mine)
{
    const std::vector<std::string> sizeTexts = allGather(std::to_string(mine.size()));
    try {
        const int tag = ++state_->tag;
        if (rank() != 0) {
            if (!mine.empty()) {
                std::vector<at::Tensor> bytes{at::empty({static_cast<int64_t>(mine.size())}, at::kByte)};
                std::memcpy(bytes[0].data_ptr<uint8_t>(), mine.data(), mine.size());
                state_->group->send(bytes, 0, tag)->wait();
            }
            return {};
        }
        std::vector<std::string> out{mine};
        for (int r = 1; r < size(); ++r) {
            const auto length = static_cast<int64_t>(std::stoll(sizeTexts[static_cast<size_t>(r)]));
            if (length == 0) {
                out.emplace_back();
                continue;
            }
            std::vector<at::Tensor> bytes{at::empty({length}, at::kByte)};
            state_->group->recv(bytes, r, tag)->wait();
            out.emplace_back(reinterpret_cast<const char*>(bytes[0].data_ptr<uint8_t>()), static_cast<size_t>(length));
        }
        return out;
    } catch (const c10::Error& e) {
        throw Error(lostContact(environment(), torchErrorMessage(e.what_without_backtrace())));
    } catch (const std::exception& e) { // Gloo's own (gloo::IoException: a peer closed its connection)
        throw Error(lostContact(environment(), e.what()));
    }
}

} // namespace torchscope
