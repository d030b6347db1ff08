#include "distributed/lockstep.h"

#include "common/error.h"
#include "distributed/cluster.h"
#include "graph/engine.h"

#include <c10/util/Exception.h>

#include <nlohmann/json.hpp>

namespace torchscope {
namespace {

using nlohmann::json;

std::string encoded(const StepResult& r)
{
    return json{{"batch", r.hadBatch}, {"images", r.images}, {"samples", r.samples}, {"selected", r.selected},
        {"stop", r.stop}, {"error", r.error}, {"failures", r.failures}, {"agreement", r.agreement}}
        .dump();
}

StepResult decoded(const std::string& text)
{
    const json j = json::parse(text);
    StepResult r;
    r.hadBatch = j.at("batch");
    r.images = j.at("images");
    r.samples = j.at("samples");
    r.selected = j.at("selected");
    r.stop = j.at("stop");
    r.error = j.at("error");
    r.failures = j.at("failures").get<std::vector<std::pair<std::string, std::string>>>();
    r.agreement = j.at("agreement");
    return r;
}

} // namespace

Lockstep::Lockstep(Cluster& cluster)
    : cluster_(cluster)
{ }

std::vector<StepResult> Lockstep::exchange(const StepResult& mine)
{
    ++steps_;
    std::vector<StepResult> all;
    std::vector<std::string> texts;
    try {
        texts = cluster_.allGather(encoded(mine));
    } catch (const Error& e) {
        throw JobError(e.what());
    }
    for (const auto& text : texts)
        all.push_back(decoded(text));
    for (size_t r = 0; r < all.size(); ++r)
        if (!all[r].error.empty())
            throw JobError(static_cast<int>(r) == cluster_.rank()
                    ? all[r].error
                    : "rank " + std::to_string(r) + " failed: " + all[r].error);
    return all;
}

void Lockstep::fail(const std::string& message)
{
    StepResult report;
    report.error = message.empty() ? "failed without a message" : message;
    exchange(report); // throws: this rank's message
    throw JobError(report.error);
}

void Lockstep::orFail(const std::function<void()>& work, const std::function<void()>& cleanup)
{
    std::string message;
    try {
        work();
        return;
    } catch (const JobError&) {
        throw;
    } catch (const Error& e) {
        message = e.what();
    } catch (const c10::Error& e) {
        message = torchErrorMessage(e.what_without_backtrace());
    } catch (const std::exception& e) {
        message = e.what();
    }
    if (cleanup)
        cleanup();
    fail(message);
}

void Lockstep::agree(const std::string& error)
{
    if (!error.empty())
        fail(error);
    exchange({});
}

} // namespace torchscope
