// An image's combinations of concepts (concepts/concept_masks.h), held to each pixel's own set of
// concepts read off the labels the test wrote: masks of 3 concepts, masks of 70 (more than one packed
// key holds, so keys are ranked between rows), and Broden segmentations of 16-bit labels in 5 columns
// (ranked after every few columns), on images whose height differs from their width.
#include "concepts/concept_masks.h"
#include "imaging/contact_sheet.h"
#include "test_support.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <iterator>
#include <map>
#include <set>
#include <vector>

namespace torchscope {
namespace {

// What readConceptPixels must give: for every pixel the set of concepts on it, and all of them; the
// combinations numbered in the lexicographic order of the pixels' columns of `labels` [rows, P] (the
// values the test wrote, row 0 first).
void expectPixelSets(
    const ConceptPixels& read, const std::vector<std::vector<int32_t>>& expected, const at::Tensor& labels)
{
    ASSERT_EQ(read.combination.numel(), static_cast<int64_t>(expected.size()));
    ASSERT_EQ(read.combination.scalar_type(), at::kLong);
    const auto* ids = read.combination.data_ptr<int64_t>();
    std::set<int32_t> all;
    std::map<std::vector<int32_t>, int64_t> idOfSet;
    for (size_t p = 0; p < expected.size(); ++p) {
        ASSERT_GE(ids[p], 0);
        ASSERT_LT(ids[p], static_cast<int64_t>(read.combinations.size()));
        ASSERT_EQ(read.combinations[static_cast<size_t>(ids[p])], expected[p]) << "pixel " << p;
        // One set, one combination (the test's columns never repeat a concept in another column).
        const auto [it, added] = idOfSet.emplace(expected[p], ids[p]);
        ASSERT_EQ(it->second, ids[p]) << "pixel " << p << " has a second id for its set";
        all.insert(expected[p].begin(), expected[p].end());
    }
    EXPECT_EQ(idOfSet.size(), read.combinations.size()); // no combination without a pixel
    EXPECT_EQ(read.concepts, std::vector<int32_t>(all.begin(), all.end()));
    std::map<int64_t, std::vector<int64_t>> columnOfId;
    const at::Tensor columns = labels.to(at::kLong).t().contiguous(); // [P, rows]
    for (size_t p = 0; p < expected.size(); ++p) {
        const auto* column = columns[static_cast<int64_t>(p)].data_ptr<int64_t>();
        columnOfId.emplace(ids[p], std::vector<int64_t>(column, column + columns.size(1)));
    }
    for (auto it = columnOfId.begin(); std::next(it) != columnOfId.end(); ++it)
        EXPECT_LT(it->second, std::next(it)->second) << "combinations " << it->first << " and " << it->first + 1;
}

// Masks of `count` concepts on a height × width image: each concept a random sparse mask (some empty).
void checkMasks(int64_t count, int64_t height, int64_t width, double density)
{
    const auto dir = test::freshFolder("concept_masks");
    ConceptSet set;
    set.layout = "masks";
    set.pixelLevel = true;
    ConceptImage image;
    image.path = (dir / "image.png").string();
    writePng(image.path, at::rand({3, height, width}));
    at::manual_seed(count);
    const at::Tensor on = at::rand({count, height, width}).lt(density);
    on[count - 1].zero_(); // a concept whose mask file has no pixel
    for (int64_t c = 0; c < count; ++c) {
        const std::string path = (dir / ("mask_" + std::to_string(c) + ".png")).string();
        writePng(path, on[c].to(at::kFloat).unsqueeze(0));
        image.masks.push_back({static_cast<int32_t>(c), path});
    }
    set.images.push_back(image);
    const ConceptPixels read = readConceptPixels(set, 0, Preprocessing::none(), height, width);
    EXPECT_EQ(read.height, height);
    EXPECT_EQ(read.width, width);
    const at::Tensor flat = on.flatten(1).contiguous();
    std::vector<std::vector<int32_t>> expected(static_cast<size_t>(height * width));
    for (int64_t c = 0; c < count; ++c)
        for (int64_t p = 0; p < height * width; ++p)
            if (flat[c][p].item<bool>())
                expected[static_cast<size_t>(p)].push_back(static_cast<int32_t>(c));
    expectPixelSets(read, expected, flat);
}

TEST(ConceptPixels, MasksOfThreeConceptsGiveEachPixelItsConcepts)
{
    checkMasks(3, 23, 37, 0.4);
}

TEST(ConceptPixels, MasksOfSeventyConceptsGiveEachPixelItsConcepts)
{
    checkMasks(70, 29, 19, 0.05);
}

TEST(ConceptPixels, BrodenSegmentationsOfSixteenBitLabelsGiveEachPixelItsConcepts)
{
    // 5 columns of labels R + 256 G, 0 (none) or one of 6 distinct labels up to 60,000 per column: the
    // j-th of column k is concept 1000 k + j; the image's whole-image concepts 5000 and 5001 are on every
    // pixel.
    const int64_t height = 17, width = 31, columns = 5;
    const auto dir = test::freshFolder("concept_segmentations");
    ConceptSet set;
    set.layout = "broden";
    set.pixelLevel = true;
    set.conceptOfLabel.assign(60001, -1);
    ConceptImage image;
    image.name = "segmented";
    image.maskHeight = height;
    image.maskWidth = width;
    image.wholeImage = {5000, 5001};
    at::manual_seed(5);
    const at::Tensor pool = at::randperm(60000, at::kLong).narrow(0, 0, columns * 6).add(1).view({columns, 6});
    const at::Tensor drawn = pool.gather(1, at::randint(6, {columns, height * width}, at::kLong));
    const at::Tensor used
        = drawn.mul(at::rand({columns, height * width}).lt(0.7).to(at::kLong)).view({columns, height, width});
    for (int64_t k = 0; k < columns; ++k) {
        for (int64_t j = 0; j < 6; ++j) {
            const int64_t label = pool[k][j].item<int64_t>();
            set.conceptOfLabel[static_cast<size_t>(label)] = static_cast<int32_t>(k * 1000 + j);
        }
        const at::Tensor rgb = at::stack({used[k].remainder(256), used[k].div(256, "floor"), at::zeros_like(used[k])})
                                   .to(at::kFloat)
                                   .div(255.0);
        const std::string path = (dir / ("segmentation_" + std::to_string(k) + ".png")).string();
        writePng(path, rgb);
        image.segmentations.push_back(path);
    }
    set.images.push_back(image);
    const ConceptPixels read = readConceptPixels(set, 0, Preprocessing::none(), 100, 100);
    EXPECT_EQ(read.height, height);
    EXPECT_EQ(read.width, width);
    const at::Tensor flat = used.flatten(1).contiguous();
    std::vector<std::vector<int32_t>> expected(static_cast<size_t>(height * width));
    for (int64_t p = 0; p < height * width; ++p) {
        std::vector<int32_t>& concepts = expected[static_cast<size_t>(p)];
        concepts = {5000, 5001};
        for (int64_t k = 0; k < columns; ++k)
            if (const int64_t label = flat[k][p].item<int64_t>(); label > 0)
                concepts.push_back(set.conceptOfLabel[static_cast<size_t>(label)]);
        std::sort(concepts.begin(), concepts.end());
    }
    expectPixelSets(read, expected, flat);
}

} // namespace
} // namespace torchscope
