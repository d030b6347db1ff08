// The core tests' main: GoogleTest's, plus the rule CI holds every test to. The tests run in shards
// (tests/core/CMakeLists.txt), where a skipped test no longer shows as a skipped ctest entry: under
// CI=true a test that skips for another reason than a missing CUDA device fails its shard, naming it.
#include <gtest/gtest.h>

#include <cctype>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

namespace {

bool mentionsCuda(std::string text)
{
    for (char& c : text)
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return text.find("cuda") != std::string::npos;
}

class SkipsCiMustNotAllow : public testing::EmptyTestEventListener {
public:
    void OnTestPartResult(const testing::TestPartResult& result) override
    {
        if (!result.skipped() || mentionsCuda(result.message()))
            return;
        const testing::TestInfo* test = testing::UnitTest::GetInstance()->current_test_info();
        refused_.push_back(std::string(test->test_suite_name()) + "." + test->name() + " (" + result.message() + ")");
    }
    const std::vector<std::string>& refused() const { return refused_; }

private:
    std::vector<std::string> refused_;
};

} // namespace

int main(int argc, char** argv)
{
    testing::InitGoogleTest(&argc, argv);
    const char* ci = std::getenv("CI");
    SkipsCiMustNotAllow* skips = nullptr;
    if (ci && std::string(ci) == "true") {
        skips = new SkipsCiMustNotAllow; // owned by GoogleTest's listener list
        testing::UnitTest::GetInstance()->listeners().Append(skips);
    }
    const int status = RUN_ALL_TESTS();
    if (skips && !skips->refused().empty()) {
        for (const auto& name : skips->refused())
            std::cerr << "ci: skipped a test CI must run: " << name << '\n';
        return 1;
    }
    return status;
}
