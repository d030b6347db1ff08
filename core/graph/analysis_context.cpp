#include "graph/analysis_context.h"

#include "graph/engine.h"
#include "model/model.h"

namespace torchscope {
namespace {

LoadOptions loadOptions(const ModelKey& key)
{
    LoadOptions options;
    options.device = key.device;
    options.dtype = key.dtype;
    options.operatorLibraries = key.operatorLibraries;
    return options;
}

} // namespace

std::shared_ptr<Model> ModelSource::copy(const ModelKey& key)
{
    return Model::load(key.path, loadOptions(key));
}

struct LoadedModels::Entry {
    ModelKey key;
    std::shared_ptr<Model> model;
    std::shared_ptr<Engine> engine;
};

LoadedModels::LoadedModels() = default;
LoadedModels::~LoadedModels() = default;

void LoadedModels::add(const ModelKey& key, std::shared_ptr<Model> model)
{
    auto entry = std::make_unique<Entry>();
    entry->key = key;
    entry->model = std::move(model);
    entries_.push_back(std::move(entry));
}

std::shared_ptr<Model> LoadedModels::model(const ModelKey& key)
{
    for (const auto& entry : entries_)
        if (entry->key == key)
            return entry->model;
    add(key, Model::load(key.path, loadOptions(key)));
    return entries_.back()->model;
}

std::shared_ptr<Engine> LoadedModels::engine(const ModelKey& key)
{
    const auto loaded = model(key);
    for (const auto& entry : entries_)
        if (entry->key == key) {
            if (!entry->engine)
                entry->engine = std::make_shared<Engine>(loaded);
            return entry->engine;
        }
    return nullptr; // not reached: model() added the entry
}

} // namespace torchscope
