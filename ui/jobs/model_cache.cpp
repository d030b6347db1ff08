#include "jobs/model_cache.h"

#include "graph/engine.h"
#include "jobs/job_runner.h"
#include "model/model.h"

#include <algorithm>

namespace torchscope {
namespace {

// Instances kept per lane: the window's model and a comparison's second one, with room for one
// more (the previous device's, until it falls out).
constexpr size_t InstancesPerLane = 3;

} // namespace

struct ModelCache::Entry {
    JobLane lane;
    ModelKey key;
    std::shared_ptr<Model> model;
    std::shared_ptr<Engine> engine;
};

ModelCache::ModelCache() = default;
ModelCache::~ModelCache() = default;

std::shared_ptr<ModelCache::Entry> ModelCache::entry(JobLane lane, const ModelKey& key)
{
    {
        const std::lock_guard<std::mutex> lock(mutex_);
        const auto it = std::find_if(entries_.begin(), entries_.end(),
            [&](const std::shared_ptr<Entry>& e) { return e->lane == lane && e->key == key; });
        if (it != entries_.end()) {
            entries_.splice(entries_.begin(), entries_, it);
            return entries_.front();
        }
    }
    // Loading takes seconds: outside the lock, so the other lane is not held up. Only this lane's
    // thread loads this lane's instances, so no one else loads the same one meanwhile.
    auto loaded = std::make_shared<Entry>();
    loaded->lane = lane;
    loaded->key = key;
    LoadOptions options;
    options.device = key.device;
    options.dtype = key.dtype;
    options.operatorLibraries = key.operatorLibraries;
    loaded->model = Model::load(key.path, options);
    loaded->engine = std::make_shared<Engine>(loaded->model);
    const std::lock_guard<std::mutex> lock(mutex_);
    entries_.push_front(loaded);
    size_t kept = 0;
    for (auto it = entries_.begin(); it != entries_.end();)
        if ((*it)->lane == lane && ++kept > InstancesPerLane)
            it = entries_.erase(it);
        else
            ++it;
    return loaded;
}

std::shared_ptr<Model> ModelCache::model(JobLane lane, const ModelKey& key)
{
    return entry(lane, key)->model;
}

std::shared_ptr<Engine> ModelCache::engine(JobLane lane, const ModelKey& key)
{
    return entry(lane, key)->engine;
}

void ModelCache::forget(const std::string& path)
{
    const std::lock_guard<std::mutex> lock(mutex_);
    entries_.remove_if([&](const std::shared_ptr<Entry>& e) { return e->key.path == path; });
}

size_t ModelCache::size() const
{
    const std::lock_guard<std::mutex> lock(mutex_);
    return entries_.size();
}

} // namespace torchscope
