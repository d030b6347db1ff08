#include "test_support.h"

#include "common/atomic_file.h"
#include "common/error.h"
#include "export/manifest.h"
#include "export/pt_export.h"

#include <filesystem>
#include <fstream>

namespace torchscope::test {
namespace {

namespace fs = std::filesystem;

TEST(PtExport, RoundTripsADictionaryOfValues)
{
    const fs::path dir = freshFolder("pt");
    const at::Tensor a = at::arange(6, at::kFloat).view({2, 3});
    const c10::IValue tuple = c10::ivalue::Tuple::create({at::ones({1}), c10::IValue(std::string("x"))});
    writePtDictionary((dir / "out.pt").string(), {{"a", a}, {"t", tuple}});
    const auto dict = readTorchSaveFile((dir / "out.pt").string()).toGenericDict();
    EXPECT_TRUE(dict.at("a").toTensor().equal(a));
    EXPECT_TRUE(dict.at("t").isTuple());
    // Only the file itself: the temporary file was renamed into place.
    EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 1);
    fs::remove_all(dir);
}

TEST(AtomicFile, MissingFolderLeavesNothing)
{
    const std::string message = errorOf([] { writeFileAtomically("/nonexistent_dir/x.pt", "data"); });
    EXPECT_NE(message.find("the folder '/nonexistent_dir' does not exist"), std::string::npos) << message;
}

TEST(AtomicFile, ReplacesAnExistingFileWhole)
{
    const fs::path dir = freshFolder("atomic");
    const std::string path = (dir / "f.bin").string();
    writeFileAtomically(path, "old contents");
    writeFileAtomically(path, "new");
    EXPECT_EQ(fs::file_size(path), 3u);
    EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 1);
    fs::remove_all(dir);
}

TEST(AtomicFile, GetsTheModeAPlainNewFileGets)
{
    // The oracle: a file made the ordinary way (open(2) with 0666 under the process's umask).
    const fs::path dir = freshFolder("mode");
    std::ofstream((dir / "plain").string()) << "x";
    const auto plain = fs::status(dir / "plain").permissions();
    writeFileAtomically((dir / "bytes").string(), "x");
    replaceFileAtomically((dir / "written").string(), [](const std::string& temp) { std::ofstream(temp) << "x"; });
    EXPECT_EQ(fs::status(dir / "bytes").permissions(), plain);
    EXPECT_EQ(fs::status(dir / "written").permissions(), plain);
    fs::remove_all(dir);
}

TEST(Manifest, HashesFilesWithSha256)
{
    // FIPS 180-2's examples: "abc" and the empty message.
    const fs::path dir = freshFolder("sha");
    writeFileAtomically((dir / "abc").string(), "abc");
    writeFileAtomically((dir / "empty").string(), "");
    EXPECT_EQ(sha256OfFile((dir / "abc").string()), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    EXPECT_EQ(
        sha256OfFile((dir / "empty").string()), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    EXPECT_THROW(sha256OfFile((dir / "missing").string()), Error);
}

TEST(Manifest, SitsBesideTheExportAndInsideAFolder)
{
    const fs::path dir = freshFolder("manifest");
    EXPECT_EQ(manifestPathFor((dir / "acts.pt").string()), (dir / "acts.manifest.json").string());
    EXPECT_EQ(manifestPathFor((dir / "a.b.safetensors").string()), (dir / "a.b.manifest.json").string());
    EXPECT_EQ(manifestPathFor(dir.string()), (dir / "manifest.json").string());
}

TEST(Manifest, NamesEachCapturesModuleKindAndCall)
{
    const ManifestKey input = ManifestKey::capture("layer1.0:in1#2");
    EXPECT_EQ(input.module, "layer1.0");
    EXPECT_EQ(input.kind, "input");
    EXPECT_EQ(input.inputIndex, 1);
    EXPECT_EQ(input.call, 2);
    EXPECT_EQ(ManifestKey::capture("fc:grad").kind, "gradient");
    EXPECT_EQ(ManifestKey::capture("features.3#1").call, 1);
    EXPECT_EQ(ManifestKey::capture("output").kind, "model output");
    EXPECT_EQ(ManifestKey::capture("probe:shoes").module, "shoes");
}

TEST(TensorFile, ReadsPythonTorchSave)
{
    const auto value = readTorchSaveFile(fixture("resnet18_input.pt"));
    ASSERT_TRUE(value.isTensor());
    EXPECT_EQ(value.toTensor().sizes().vec(), (std::vector<int64_t>{2, 3, 224, 224}));
}

TEST(TensorFile, WrongFilesAreNamed)
{
    EXPECT_NE(errorOf([] { readTorchSaveFile(fixture("bad_text.pt")); }).find("text file"), std::string::npos);
    EXPECT_NE(errorOf([] { readTorchSaveFile(fixture("bad_lfs_pointer.pt")); }).find("Git LFS"), std::string::npos);
    EXPECT_NE(errorOf([] { readTorchSaveFile(fixture("missing.pt")); }).find("no such file"), std::string::npos);
    EXPECT_NE(errorOf([] { readTorchSaveFile(fixture("relu_twice.pt")); }), "");
}

// A torch.save archive whose central directory says a tensor's record is 2 GB: LibTorch's reader
// trusts the directory and would read past the file's end; the file is refused before it gets there.
TEST(TensorFile, AnArchiveThatClaimsMoreThanItHoldsIsRefused)
{
    const fs::path dir = freshFolder("claim");
    const std::string path = (dir / "claims.pt").string();
    writePtDictionary(path, {{"a", at::arange(64, at::kFloat)}, {"b", at::ones({3})}});
    std::string bytes;
    {
        std::ifstream in(path, std::ios::binary);
        bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
    ASSERT_TRUE(readTorchSaveFile(path).isGenericDict()); // whole, it opens
    size_t entry = 0;
    bool found = false;
    while ((entry = bytes.find("PK\x01\x02", entry)) != std::string::npos) {
        const auto nameLength = static_cast<uint8_t>(bytes[entry + 28]) | static_cast<uint8_t>(bytes[entry + 29]) << 8;
        if (bytes.substr(entry + 46, static_cast<size_t>(nameLength)).find("/data/0") != std::string::npos) {
            for (const size_t field : {entry + 20, entry + 24}) // compressed and uncompressed size: 0x7fffffff
                bytes.replace(field, 4, std::string("\xff\xff\xff\x7f", 4));
            found = true;
            break;
        }
        entry += 4;
    }
    ASSERT_TRUE(found) << "no central directory entry for a tensor's record";
    {
        std::ofstream out(path, std::ios::binary | std::ios::trunc);
        out << bytes;
    }
    const std::string message = errorOf([&] { readTorchSaveFile(path); });
    EXPECT_NE(message.find("damaged or cut short"), std::string::npos) << message;
    EXPECT_NE(message.find("claims.pt"), std::string::npos) << message;
    fs::remove_all(dir);
}

} // namespace
} // namespace torchscope::test
