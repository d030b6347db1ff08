// The spill dissect's second pass reads its maps from (common/tensor_spill.h): tensors come back in the
// order written, bit for bit, as float32; a file system that refuses bytes makes it refuse, and no
// read after that returns anything.
#include "common/error.h"
#include "common/tensor_spill.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <csignal>
#include <filesystem>
#include <sys/resource.h>

namespace torchscope {
namespace {

TEST(TensorSpill, GivesBackWhatWasWrittenInOrder)
{
    TensorSpill spill;
    at::manual_seed(3);
    const at::Tensor a = at::randn({2, 3, 5, 7}); // a batch of maps: N, C, H != W
    const at::Tensor b = at::randn({4, 6, 7, 5}).transpose(2, 3); // not contiguous
    const at::Tensor c = at::randn({1, 2, 3}, at::kDouble); // stored as float32
    ASSERT_TRUE(spill.write(a));
    ASSERT_TRUE(spill.write(b));
    ASSERT_TRUE(spill.write(c));
    EXPECT_EQ(spill.bytes(), (a.numel() + b.numel() + c.numel()) * 4);
    const at::Tensor ra = spill.read(), rb = spill.read(), rc = spill.read();
    EXPECT_EQ(ra.sizes(), a.sizes());
    EXPECT_TRUE(at::equal(ra, a));
    EXPECT_EQ(rb.sizes(), b.sizes());
    EXPECT_TRUE(at::equal(rb, b));
    EXPECT_EQ(rc.scalar_type(), at::kFloat);
    EXPECT_TRUE(at::equal(rc, c.to(at::kFloat)));
    EXPECT_THROW(spill.read(), Error); // three written, three read
}

TEST(TensorSpill, LeavesNoFileBehind)
{
    const auto folder = std::filesystem::temp_directory_path() / "torchscope_spill_test";
    std::filesystem::remove_all(folder);
    std::filesystem::create_directories(folder);
    {
        TensorSpill spill(folder.string());
        ASSERT_TRUE(spill.write(at::ones({64, 64})));
        EXPECT_TRUE(std::filesystem::is_empty(folder)); // unlinked at once: nothing to clean after a crash
        EXPECT_TRUE(at::equal(spill.read(), at::ones({64, 64})));
    }
    std::filesystem::remove_all(folder);
    try {
        TensorSpill nowhere((folder / "missing").string());
        FAIL() << "a spill in a folder that does not exist";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("missing"), std::string::npos) << e.what();
    }
}

TEST(TensorSpill, RefusesWhatTheFileSystemRefuses)
{
    // A file size limit of 64 KiB stands for a full disk (writes past it fail with EFBIG; SIGXFSZ,
    // which would end the process, ignored meanwhile).
    rlimit before{};
    ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &before), 0);
    const auto handler = std::signal(SIGXFSZ, SIG_IGN);
    rlimit limited = before;
    limited.rlim_cur = 64 << 10;
    ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &limited), 0);
    TensorSpill spill;
    const bool small = spill.write(at::ones({100})); // 400 bytes
    const bool large = spill.write(at::ones({64, 1024})); // 256 KiB: past the limit
    const bool after = spill.write(at::ones({10}));
    setrlimit(RLIMIT_FSIZE, &before);
    std::signal(SIGXFSZ, handler);
    EXPECT_TRUE(small);
    EXPECT_FALSE(large);
    EXPECT_FALSE(after); // nothing more once it failed
    EXPECT_EQ(spill.bytes(), 0);
    EXPECT_THROW(spill.read(), Error); // not even the first tensor, which fitted
}

} // namespace
} // namespace torchscope
