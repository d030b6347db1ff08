// The comparison helpers themselves: a NaN or an infinity never passes, whatever the tolerance.
#include "test_support.h"

#include <limits>

namespace torchscope::test {
namespace {

TEST(TestSupport, NaNAndInfinityFailEveryComparison)
{
    const at::Tensor expected = at::tensor({1.0f, 2.0f, 3.0f});
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const float inf = std::numeric_limits<float>::infinity();
    EXPECT_TRUE(tensorsClose("same", expected.clone(), expected));
    // A NaN after a finite difference: max() over the differences would have hidden it.
    EXPECT_FALSE(tensorsClose("nan", at::tensor({1.5f, 2.0f, nan}), expected, 1e9));
    EXPECT_FALSE(tensorsClose("nan expected", expected, at::tensor({1.0f, nan, 3.0f}), 1e9));
    EXPECT_FALSE(tensorsClose("inf", at::tensor({1.0f, inf, 3.0f}), expected, 1e9));
    EXPECT_FALSE(tensorsClose("both inf", at::tensor({inf, 2.0f, 3.0f}), at::tensor({inf, 2.0f, 3.0f}), 1e9));
    EXPECT_FALSE(tensorsCloseRelative("nan relative", at::tensor({nan, 2.0f, 3.0f}), expected, 1.0));
    const std::string message = tensorsClose("nan", at::tensor({nan, 2.0f, 3.0f}), expected, 1e9).message();
    EXPECT_NE(message.find("actual has 1 NaN"), std::string::npos) << message;
}

TEST(TestSupport, RelativeToleranceFollowsTheValuesScale)
{
    // Gradients of 1e-4: an absolute 1e-5 would let a 1 % error through; 1e-5 relative does not.
    const at::Tensor expected = at::tensor({1e-4, -2e-4, 5e-5}, at::kDouble);
    EXPECT_TRUE(tensorsCloseRelative("tiny error", expected * (1 + 1e-7), expected, 1e-5));
    EXPECT_FALSE(tensorsCloseRelative("1 % error", expected * 1.01, expected, 1e-5));
    EXPECT_TRUE(tensorsClose("1 % error, absolute", expected * 1.01, expected, 1e-5)); // what it used to pass
    EXPECT_FALSE(tensorsCloseRelative("all zero", at::zeros({3}), at::zeros({3}), 1e-5));
    EXPECT_FALSE(tensorsClose("shape", at::zeros({3}), at::zeros({4})));
}

} // namespace
} // namespace torchscope::test
