// Session files: what the window saves reads back the same; wrong fields are named, with what
// they hold, instead of being read as empty (as Qt's JSON accessors would).
#include "test_support.h"

#include "common/error.h"
#include "session/session_file.h"

namespace torchscope::test {
namespace {

TEST(SessionFile, RoundTripKeepsEverything)
{
    SessionFile session;
    session.model = "/models/resnet18.pt";
    session.device = "cpu";
    session.grabs = {"layer1", "layer2.0.conv1:in0", "fc:grad", "type:Conv2d"};
    session.truncate = "layer3";
    session.edits = {EditSpec::parse("layer2:zero:0,5-7"), EditSpec::parse("layer3:scale:1,2:0.1")};
    ModelSetup setup;
    setup.labels = {"cat", "dog"};
    setup.scores = "logits";
    setup.preprocessing.grayscale = true;
    session.setup = setup;
    session.target = 1;
    session.selectedLayer = "layer1";
    session.images = {"/images/a.png", "/images/b.jpg"};
    session.selectedImage = 1;
    session.view = {"magma", "symmetric", 9, 30};

    const SessionFile back = SessionFile::parse(session.toJson(), ModelSetup());
    EXPECT_EQ(back.toJson(), session.toJson());
    EXPECT_EQ(back.grabs, session.grabs);
    ASSERT_EQ(back.edits.size(), 2u);
    EXPECT_EQ(back.edits[0].channels, (std::vector<int64_t>{0, 5, 6, 7}));
    EXPECT_EQ(back.edits[1].factor, 0.1); // the shortest text that reads back exactly
    ASSERT_TRUE(back.setup.has_value());
    EXPECT_TRUE(*back.setup == setup);
    EXPECT_EQ(back.selectedImage, 1);
    EXPECT_EQ(back.view.colorMap, "magma");
    EXPECT_EQ(back.view.contrast, "symmetric");
    EXPECT_EQ(back.view.zoom, 9);
    EXPECT_EQ(back.view.overlayOpacity, 30);
}

TEST(SessionFile, WrongFieldsAreNamed)
{
    const std::string head = R"({"format": "torchscope-session", "version": 2, "model": "m.pt", )";
    const auto error = [&](const std::string& rest) {
        return errorOf([&] { SessionFile::parse(head + rest + "}", ModelSetup()); });
    };
    EXPECT_NE(error(R"("grabs": "layer1")").find("\"grabs\" must be a list of strings, not string \"layer1\""),
        std::string::npos);
    EXPECT_NE(error(R"("grabs": ["a", 3])").find("holds number 3"), std::string::npos);
    EXPECT_NE(error(R"("target": -2)").find("\"target\" must be an integer of at least -1"), std::string::npos);
    EXPECT_NE(error(R"("selected_image": 1.5)").find("\"selected_image\""), std::string::npos);
    EXPECT_NE(error(R"("edits": ["x:zero:9-2"])").find("the channel range 9-2 is empty"), std::string::npos);
    EXPECT_NE(error(R"("edits": ["x:zero:0-99999999999"])").find("more than 1048576 channels"), std::string::npos);
    EXPECT_NE(error(R"("grabs": ["a:in-1"])").find("is not an input index"), std::string::npos);
    EXPECT_NE(
        error(R"("setup": {"preprocess": {"crop": "big"}})").find("the session's input setup"), std::string::npos);
    EXPECT_NE(error(R"("preprocess": "/dev/zero")").find("not a regular file"), std::string::npos);
    EXPECT_NE(error(R"("view": {"color_map": "jet"})").find("unknown \"color_map\" 'jet' (known: viridis, magma"),
        std::string::npos);
    EXPECT_NE(error(R"("view": {"contrast": "auto"})").find("unknown \"contrast\" 'auto'"), std::string::npos);
    EXPECT_NE(error(R"("view": {"zoom": 33})").find("at most 32"), std::string::npos);
    EXPECT_NE(error(R"("view": {"overlay_opacity": 101})").find("at most 100"), std::string::npos);
    EXPECT_NE(error(R"("view": [1])").find("\"view\" must be an object"), std::string::npos);
    EXPECT_NE(errorOf([] {
        SessionFile::parse(R"({"format": "torchscope-session", "version": 9, "model": "m"})", {});
    }).find("newer TorchScope (session version 9"),
        std::string::npos);
    EXPECT_NE(
        errorOf([] { SessionFile::parse("[1, 2]", {}); }).find("not a TorchScope session file"), std::string::npos);
    EXPECT_NE(errorOf([] { SessionFile::parse("{", {}); }).find("not valid JSON"), std::string::npos);
    EXPECT_NE(errorOf([] { SessionFile::parse(R"({"format": "torchscope-session"})", {}); }).find("names no model"),
        std::string::npos);
}

TEST(SessionFile, VersionOneNamedItsSetupBySpec)
{
    ModelSetup base;
    base.labels = {"a", "b"};
    const SessionFile session = SessionFile::parse(
        R"({"format": "torchscope-session", "version": 1, "model": "m.pt", "preprocess": "none"})", base);
    ASSERT_TRUE(session.setup.has_value());
    EXPECT_EQ(session.setup->labels, base.labels); // what the spec leaves out comes from the model
    EXPECT_TRUE(session.setup->preprocessing == Preprocessing::fromSpec("none"));
}

} // namespace
} // namespace torchscope::test
