#include "probe/probe_folder.h"

#include "common/error.h"
#include "imaging/batch_reader.h"
#include "probe/activation_cache.h"

#include <algorithm>
#include <filesystem>
#include <memory>

namespace torchscope {

ProbeSamples folderSamples(
    const ImageFolder& folder, const Preprocessing& preprocessing, int batchSize, int threads, const Shard& shard)
{
    if (folder.classes.size() < 2)
        throw Error("a probe needs labelled images: a folder with one subfolder per class (at least two); this one has "
            + std::to_string(folder.classes.size()) + " class folder(s) and " + std::to_string(folder.images.size())
            + " image(s)");
    ProbeSamples samples;
    samples.classNames = folder.classes;
    samples.preprocessing = preprocessing.toJson();
    std::string listing;
    for (const auto& image : folder.images) {
        // The folder's own label scheme (model labels, numbers) maps back to the class position.
        const auto it = std::find(folder.classLabels.begin(), folder.classLabels.end(), image.label);
        samples.labels.push_back(it - folder.classLabels.begin());
        std::error_code ec;
        const auto size = std::filesystem::file_size(image.path, ec);
        const auto time = std::filesystem::last_write_time(image.path, ec).time_since_epoch().count();
        listing += image.path + "|" + std::to_string(size) + "|" + std::to_string(time) + "|"
            + std::to_string(samples.labels.back()) + "\n";
    }
    samples.fingerprint = textHash(listing);
    auto reader = std::make_shared<BatchReader>(folder, preprocessing, batchSize, threads, 3, shard);
    samples.next = [reader]() -> std::optional<SampleBatch> {
        auto batch = reader->next();
        if (!batch)
            return std::nullopt;
        return SampleBatch{batch->images, batch->indices, batch->failures};
    };
    samples.cancel = [reader] { reader->cancel(); };
    return samples;
}

} // namespace torchscope
