#include "concepts/concept_masks.h"

#include "common/error.h"
#include "imaging/image_decoder.h"
#include "preprocess/preprocess_tensor.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <limits>
#include <set>

namespace torchscope {

namespace {

std::string sizeText(int64_t width, int64_t height)
{
    return std::to_string(width) + " x " + std::to_string(height);
}

// [C, H, W] float planes of a decoded 8-bit file, channel by channel, in 0..255.
at::Tensor planes(const DecodedImage& decoded)
{
    return at::from_blob(
        const_cast<float*>(decoded.pixels.data()), {decoded.height, decoded.width, decoded.channels}, at::kFloat)
        .permute({2, 0, 1})
        .mul(255.0)
        .round();
}

// Columns of `maps` [rows, P] (integers from 0 to 65,535) that are equal share a combination, numbered
// in the columns' lexicographic order: `concepts(column)` names its concepts. Each column's rows are
// packed into one integer key (the key so far times the row's span plus the row's value; when the next
// row could overflow, the keys are first replaced by their ranks), so one-dimensional sorts rank them:
// at::unique_dim compared columns with a tensor operation per pair. 62 masks pack into one key.
template <typename Concepts> void combine(ConceptPixels& out, const at::Tensor& maps, const Concepts& concepts)
{
    const at::Tensor rows = maps.to(at::kLong);
    const int64_t positions = rows.size(1);
    at::Tensor key = at::zeros({positions}, at::kLong);
    int64_t bound = 1; // every key is below it
    const auto rankKeys = [&] {
        const auto [values, inverse] = at::_unique(key, true, true);
        key = inverse;
        bound = std::max<int64_t>(1, values.numel());
    };
    for (int64_t r = 0; positions > 0 && r < rows.size(0); ++r) {
        const at::Tensor row = rows[r];
        const int64_t low = row.min().item<int64_t>();
        const int64_t span = row.max().item<int64_t>() - low + 1;
        if (bound > std::numeric_limits<int64_t>::max() / span)
            rankKeys(); // bound <= positions now, and positions * 65,536 fits
        // key < bound <= max / span: key * span + (row - low) <= bound * span - 1 < 2^63.
        key = key * span + (row - low);
        bound *= span;
    }
    rankKeys(); // each key is its column's rank now, 0 .. bound - 1
    const int64_t distinct = positions == 0 ? 0 : bound;
    // Each combination's first pixel holds its column.
    const at::Tensor first = at::full({distinct}, positions, at::kLong)
                                 .scatter_reduce_(0, key, at::arange(positions, at::kLong), "amin", true);
    out.combination = key.contiguous();
    const at::Tensor columns = rows.index_select(1, first).t().contiguous(); // [m, rows]
    std::set<int32_t> present;
    for (int64_t j = 0; j < columns.size(0); ++j) {
        std::vector<int32_t> set = concepts(columns[j]);
        std::sort(set.begin(), set.end());
        set.erase(std::unique(set.begin(), set.end()), set.end());
        present.insert(set.begin(), set.end());
        out.combinations.push_back(std::move(set));
    }
    out.concepts.assign(present.begin(), present.end());
}

ConceptPixels fromMasks(
    const ConceptImage& image, const Preprocessing& preprocessing, int64_t imageHeight, int64_t imageWidth)
{
    std::vector<at::Tensor> masks;
    for (const auto& file : image.masks) {
        const DecodedImage decoded = decodeImage(file.path);
        if (decoded.height != imageHeight || decoded.width != imageWidth)
            throw Error("the mask '" + file.path + "' is " + sizeText(decoded.width, decoded.height)
                + " but its image '" + image.path + "' is " + sizeText(imageWidth, imageHeight)
                + ": a mask has its image's size");
        masks.push_back(at::from_blob(
            const_cast<float*>(decoded.pixels.data()), {decoded.height, decoded.width, decoded.channels}, at::kFloat)
                            .amax(2)
                            .gt(0)
                            .to(at::kByte)); // any bit depth: a 16-bit mask of 0 and 1 too
    }
    ConceptPixels out;
    if (masks.empty()) {
        const at::Tensor none = preprocessLabels(at::zeros({1, imageHeight, imageWidth}, at::kByte), preprocessing);
        out.height = none.size(1);
        out.width = none.size(2);
        out.combination = at::zeros({out.height * out.width}, at::kLong);
        out.combinations = {{}};
        return out;
    }
    const at::Tensor stacked = preprocessLabels(at::stack(masks), preprocessing);
    out.height = stacked.size(1);
    out.width = stacked.size(2);
    combine(out, stacked.flatten(1), [&](const at::Tensor& column) {
        std::vector<int32_t> concepts;
        const auto* values = column.data_ptr<int64_t>();
        for (size_t r = 0; r < image.masks.size(); ++r)
            if (values[r] != 0)
                concepts.push_back(image.masks[r].conceptId);
        return concepts;
    });
    return out;
}

ConceptPixels fromSegmentations(const ConceptSet& set, const ConceptImage& image)
{
    std::vector<at::Tensor> labels;
    for (const auto& path : image.segmentations) {
        const DecodedImage decoded = decodeImage(path);
        if (decoded.height != image.maskHeight || decoded.width != image.maskWidth)
            throw Error("the segmentation '" + path + "' is " + sizeText(decoded.width, decoded.height)
                + " but index.csv gives '" + image.name + "' segmentations of "
                + sizeText(image.maskWidth, image.maskHeight));
        if (decoded.sourceBitDepth != 8)
            throw Error("the segmentation '" + path + "' has " + std::to_string(decoded.sourceBitDepth)
                + "-bit pixels: Broden's labels are R + 256 G of an 8-bit PNG");
        const at::Tensor p = planes(decoded).to(at::kLong);
        labels.push_back(decoded.channels >= 2 ? p[0] + 256 * p[1] : p[0]);
    }
    ConceptPixels out;
    out.height = image.maskHeight;
    out.width = image.maskWidth;
    const at::Tensor maps
        = labels.empty() ? at::zeros({1, out.height * out.width}, at::kLong) : at::stack(labels).flatten(1);
    combine(out, maps, [&](const at::Tensor& column) {
        std::vector<int32_t> concepts = image.wholeImage;
        const auto* values = column.data_ptr<int64_t>();
        for (int64_t r = 0; r < column.numel(); ++r) {
            if (values[r] == 0)
                continue;
            const auto label = static_cast<size_t>(values[r]);
            if (label >= set.conceptOfLabel.size() || set.conceptOfLabel[label] < 0)
                throw Error("the segmentation of '" + image.name + "' has the label " + std::to_string(values[r])
                    + ", which label.csv does not name");
            concepts.push_back(set.conceptOfLabel[label]);
        }
        return concepts;
    });
    return out;
}

} // namespace

ConceptPixels readConceptPixels(
    const ConceptSet& set, size_t index, const Preprocessing& preprocessing, int64_t imageHeight, int64_t imageWidth)
{
    const ConceptImage& image = set.images.at(index);
    if (set.layout == "broden")
        return fromSegmentations(set, image);
    return fromMasks(image, preprocessing, imageHeight, imageWidth);
}

} // namespace torchscope
