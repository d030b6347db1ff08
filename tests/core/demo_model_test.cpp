// The bundled demo model through the whole image path: decode, the model card's preprocessing,
// forward. Each sample image is named after its true class.
#include "test_support.h"

#include "model/model_setup.h"

#include "common/strings.h"
#include "imaging/image_decoder.h"
#include "imaging/image_tensor.h"
#include "preprocess/preprocessing.h"

#include <filesystem>

namespace torchscope::test {
namespace {

TEST(DemoModel, ClassifiesItsSampleImages)
{
    const std::string root = test::sourceDir();
    auto model = Model::load(root + "/resources/demo/fashion_cnn.pt");
    const ModelSetup card = defaultSetup(*model);
    ASSERT_TRUE(storedSetup(*model).has_value());
    ASSERT_EQ(card.labels.size(), 10u);
    EXPECT_TRUE(card.preprocessing.grayscale);

    const auto images = listImages(root + "/resources/demo/images");
    ASSERT_EQ(images.size(), 10u);
    const at::Tensor batch = loadImageBatch(images, card.preprocessing);
    EXPECT_EQ(batch.sizes().vec(), (std::vector<int64_t>{10, 1, 28, 28}));
    Engine engine(model);
    const auto predicted = engine.run({}, {batch}).tensor("output").argmax(1);
    for (size_t i = 0; i < images.size(); ++i) {
        std::string label = card.labels[static_cast<size_t>(predicted[static_cast<int64_t>(i)].item<int64_t>())];
        for (auto& c : label)
            c = c == '/' || c == ' ' ? '_' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        EXPECT_EQ(std::filesystem::path(images[i]).stem().string(), label);
    }
}

} // namespace
} // namespace torchscope::test
