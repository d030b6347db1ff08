#pragma once

// The models every job of the window runs on, keyed by (path, device, dtype): a device or precision
// change reaches every tab, and no tab loads its own copy per request. Each lane gets its own
// instance of a model (and its own Engine): a TorchScript module must not run on two threads at
// once (Mask R-CNN changes module attributes during forward), and that way the lanes never wait
// for each other. No Torch in this header.

#include "graph/analysis_context.h"

#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace torchscope {

class Engine;
class Model;
enum class JobLane;

class ModelCache {
public:
    ModelCache();
    ~ModelCache();

    // The lane's instance, loaded on first use (throws torchscope::Error naming what is wrong).
    // Call on the lane's thread only: the Engine is that thread's.
    std::shared_ptr<Model> model(JobLane lane, const ModelKey& key);
    std::shared_ptr<Engine> engine(JobLane lane, const ModelKey& key);
    // Drops every instance of the file (thread-safe): the next use loads it afresh. Jobs running on
    // an instance keep it until they end.
    void forget(const std::string& path);
    size_t size() const; // instances held, over both lanes

private:
    struct Entry;
    std::shared_ptr<Entry> entry(JobLane lane, const ModelKey& key);

    mutable std::mutex mutex_;
    std::list<std::shared_ptr<Entry>> entries_; // most recently used first
};

// One lane's models as an analysis asks for them (graph/analysis_context.h): the cache's instances of
// that lane. Used on the lane's thread only.
class LaneModels : public ModelSource {
public:
    LaneModels(ModelCache& cache, JobLane lane)
        : cache_(cache)
        , lane_(lane)
    { }
    std::shared_ptr<Model> model(const ModelKey& key) override { return cache_.model(lane_, key); }
    std::shared_ptr<Engine> engine(const ModelKey& key) override { return cache_.engine(lane_, key); }

private:
    ModelCache& cache_;
    JobLane lane_;
};

} // namespace torchscope
