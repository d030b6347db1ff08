// A request that describes itself (common/parameters.h): the settings a result records, the
// descriptions with the struct's own defaults, and the problems its description finds, on a request
// made for the test whose every value is known.
#include "common/error.h"
#include "common/parameters.h"

#include <gtest/gtest.h>

#include <limits>

namespace torchscope {
namespace {

// A type read and written as text, as ChannelChoice is.
struct Window {
    int64_t width = 8;
    static Window parse(const std::string& text)
    {
        if (text.rfind("w", 0) != 0)
            throw Error("a window is wN, got '" + text + "'");
        return Window{std::stoll(text.substr(1))};
    }
    std::string toString() const { return "w" + std::to_string(width); }
};

struct TestRequest {
    std::string layer;
    int64_t target = -1;
    int top = 9;
    double quantile = 0.005;
    bool dense = false;
    std::string mode = "relevance";
    std::vector<std::string> rules;
    Window window;
    std::string scratch = "/tmp/x"; // not recorded: the manifest holds it elsewhere

    void visit(ParameterVisitor& v)
    {
        v.visit(Parameter("layer", "the module measured").needed(), layer);
        v.visit(Parameter("target", "the class explained").atLeast(-1).defaultNotShown(), target);
        v.visit(Parameter("top", "references per channel").range(1, 10000), top);
        v.visit(Parameter("quantile", "the top quantile").range(0, 1), quantile);
        v.visit(Parameter("dense", "every position"), dense);
        v.visit(Parameter("reference_by", "relevance or activation").oneOf({"relevance", "activation"}), mode);
        v.visit(Parameter("rule", "PATH=RULE").checkedBy([](const std::string& text) -> std::string {
            return text.find('=') == std::string::npos ? "expected PATH=RULE" : "";
        }),
            rules);
        v.visit(Parameter("window", "wN"), textField(window));
        v.visit(Parameter("scratch", "a folder").unrecorded(), scratch);
    }
};

using Settings = std::vector<std::pair<std::string, std::string>>;

TEST(Parameters, SettingsAreEveryRecordedValueAsTextInVisitOrder)
{
    TestRequest r;
    r.layer = "features.3";
    r.target = 4;
    r.top = 12;
    r.quantile = 0.1234567;
    r.dense = true;
    r.mode = "activation";
    r.rules = {"conv=flat", "fc=epsilon:0.25"};
    r.window.width = 16;
    const Settings expected{{"layer", "features.3"}, {"target", "4"}, {"top", "12"}, {"quantile", "0.1234567"},
        {"dense", "true"}, {"reference_by", "activation"}, {"rule", "conv=flat fc=epsilon:0.25"}, {"window", "w16"}};
    EXPECT_EQ(requestSettings(r), expected);
}

TEST(Parameters, NumbersReadBackAsTheSameValue)
{
    TestRequest r;
    r.quantile = 0.1 + 0.2; // 0.30000000000000004: six digits would make it 0.3
    const auto settings = requestSettings(r);
    ASSERT_EQ(settings[3].first, "quantile");
    EXPECT_EQ(std::stod(settings[3].second), r.quantile);
    EXPECT_NE(settings[3].second, "0.3");
}

TEST(Parameters, DescriptionsCarryTheStructsOwnDefaults)
{
    const auto described = describeParameters<TestRequest>();
    ASSERT_EQ(described.size(), 9u);
    EXPECT_EQ(described[0].parameter.name, "layer");
    EXPECT_TRUE(described[0].parameter.required);
    EXPECT_EQ(described[0].defaultValue, "");
    EXPECT_EQ(described[1].defaultValue, "-1");
    EXPECT_FALSE(described[1].parameter.describesDefault);
    EXPECT_EQ(described[2].kind, "integer");
    EXPECT_EQ(described[2].defaultValue, "9");
    EXPECT_EQ(*described[2].parameter.min, 1.0);
    EXPECT_EQ(*described[2].parameter.max, 10000.0);
    EXPECT_EQ(described[3].kind, "number");
    EXPECT_EQ(described[3].defaultValue, "0.005");
    EXPECT_EQ(described[4].kind, "bool");
    EXPECT_EQ(described[4].defaultValue, "false");
    EXPECT_EQ(described[5].parameter.choices, (std::vector<std::string>{"relevance", "activation"}));
    EXPECT_EQ(described[6].kind, "list");
    EXPECT_EQ(described[7].defaultValue, "w8");
    EXPECT_FALSE(described[8].parameter.recorded);
    EXPECT_EQ(described[8].defaultValue, "/tmp/x");
}

TEST(Parameters, TheDefaultRequestHasOneProblemItsNeededLayer)
{
    EXPECT_EQ(parameterProblems(TestRequest{}), std::vector<std::string>{"layer is needed"});
}

TEST(Parameters, ProblemsNameTheParameterAndWhatIsAllowed)
{
    TestRequest r;
    r.layer = "features.3";
    EXPECT_TRUE(parameterProblems(r).empty());

    r.top = 0;
    r.target = -2;
    r.quantile = std::numeric_limits<double>::quiet_NaN();
    r.mode = "gradient";
    r.rules = {"conv=flat", "flat"};
    const std::vector<std::string> expected{"target is -2; it must be at least -1",
        "top is 0; it must be from 1 to 10000", "quantile is nan; it must be from 0 to 1",
        "reference_by is 'gradient'; it must be one of relevance, activation", "rule 'flat': expected PATH=RULE"};
    EXPECT_EQ(parameterProblems(r), expected);
}

TEST(Parameters, BoundsAreClosed)
{
    TestRequest r;
    r.layer = "x";
    r.top = 10000;
    r.quantile = 0.0;
    r.target = -1;
    EXPECT_TRUE(parameterProblems(r).empty());
    r.top = 10001;
    r.quantile = 1.0000001;
    EXPECT_EQ(parameterProblems(r).size(), 2u);
}

struct FractionRequest {
    double alpha = 0.05;
    void visit(ParameterVisitor& v) { v.visit(Parameter("alpha", "a p value").openRange(0, 1), alpha); }
};

TEST(Parameters, AnOpenRangeRefusesItsBounds)
{
    FractionRequest r;
    EXPECT_TRUE(parameterProblems(r).empty());
    for (const double bound : {0.0, 1.0}) {
        r.alpha = bound;
        EXPECT_EQ(parameterProblems(r),
            std::vector<std::string>{
                "alpha is " + std::to_string(int(bound)) + "; it must be between 0 and 1, exclusive"});
    }
    r.alpha = 1e-300;
    EXPECT_TRUE(parameterProblems(r).empty());
}

TEST(Parameters, ATextFieldReadsAndWritesItsOwnType)
{
    TestRequest r;
    TextField field = textField(r.window);
    field.parse("w32");
    EXPECT_EQ(r.window.width, 32);
    EXPECT_EQ(field.format(), "w32");
    EXPECT_THROW(field.parse("32"), Error);
    EXPECT_EQ(r.window.width, 32); // a refused text leaves the value as it was
}

} // namespace
} // namespace torchscope
