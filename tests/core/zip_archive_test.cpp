// The one zip reader (common/zip_archive): a record whose header declares more than the file holds
// is refused before anything is allocated, for .npz and .pt2 alike; the declared size is read in
// pieces otherwise.
#include "test_support.h"

#include "common/zip_archive.h"
#include "export/array_files.h"
#include "export/read_tensors.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>

namespace torchscope::test {
namespace {

namespace fs = std::filesystem;

std::string readAll(const fs::path& path)
{
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), {}};
}

void writeAll(const fs::path& path, const std::string& bytes)
{
    std::ofstream(path, std::ios::binary) << bytes;
}

// Sets the uncompressed size of the record `name` in its local and its central header, as a
// damaged (or crafted) archive would declare it.
std::string declareSize(std::string zip, const std::string& name, uint32_t size)
{
    const auto put = [&](size_t at) {
        for (int k = 0; k < 4; ++k)
            zip[at + k] = static_cast<char>((size >> (8 * k)) & 0xff);
    };
    int patched = 0;
    for (const auto& [signature, sizeAt, nameAt] :
        {std::tuple<std::string, size_t, size_t>{std::string("PK\x03\x04", 4), 22, 30},
            {std::string("PK\x01\x02", 4), 24, 46}})
        for (size_t at = zip.find(signature); at != std::string::npos; at = zip.find(signature, at + 4))
            if (zip.compare(at + nameAt, name.size(), name) == 0) {
                put(at + sizeAt);
                ++patched;
            }
    EXPECT_EQ(patched, 2) << "the record's two headers";
    return zip;
}

// An archive whose central directory names the one record of `zip` `copies` times, each entry under
// its own name and all at the record's offset: each read alone fits the file, together they are
// `copies` times its data.
std::string nameOneRecordManyTimes(const std::string& zip, int copies)
{
    const size_t central = zip.find(std::string("PK\x01\x02", 4));
    const size_t end = zip.rfind(std::string("PK\x05\x06", 4));
    const auto byte
        = [](const std::string& s, size_t at) { return static_cast<uint32_t>(static_cast<unsigned char>(s[at])); };
    const auto put = [](std::string& s, size_t at, uint32_t value, int bytes) {
        for (int k = 0; k < bytes; ++k)
            s[at + k] = static_cast<char>((value >> (8 * k)) & 0xff);
    };
    const size_t nameLength = byte(zip, central + 28) | byte(zip, central + 29) << 8;
    const std::string fixed = zip.substr(central, 46);
    const std::string extraAndComment = zip.substr(central + 46 + nameLength, end - (central + 46 + nameLength));
    std::string directory;
    for (int i = 0; i < copies; ++i) {
        const std::string name = "m" + std::to_string(1000 + i) + ".npy";
        std::string entry = fixed;
        put(entry, 28, static_cast<uint32_t>(name.size()), 2);
        directory += entry + name + extraAndComment;
    }
    std::string out = zip.substr(0, central) + directory + zip.substr(end);
    const size_t record = central + directory.size();
    put(out, record + 8, static_cast<uint32_t>(copies), 2); // entries on this disk
    put(out, record + 10, static_cast<uint32_t>(copies), 2); // entries in all
    put(out, record + 12, static_cast<uint32_t>(directory.size()), 4);
    return out;
}

long peakKiB()
{
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    return usage.ru_maxrss;
}

TEST(ZipArchive, ReadsWhatNumpyWouldAndNamesTheRecords)
{
    const fs::path dir = freshFolder("good");
    const at::Tensor a = at::arange(12, at::kFloat).reshape({3, 4});
    writeNpz((dir / "maps.npz").string(), {{"a", a}, {"b", at::ones({2}, at::kLong)}});
    const ZipArchive archive((dir / "maps.npz").string(), ".npz archive");
    EXPECT_EQ(archive.names(), (std::vector<std::string>{"a.npy", "b.npy"}));
    EXPECT_TRUE(archive.has("a.npy"));
    EXPECT_FALSE(archive.has("c.npy"));
    const auto tensors = readNamedTensors((dir / "maps.npz").string());
    ASSERT_EQ(tensors.size(), 2u);
    EXPECT_TRUE(at::equal(tensors.at("a"), a));
    EXPECT_NE(errorOf([&] { archive.read("c.npy"); }).find("has no record 'c.npy'"), std::string::npos);
    EXPECT_NE(errorOf([&] { archive.read("a.npy", 16); }).find("more than the 16 TorchScope reads"), std::string::npos);
    EXPECT_FALSE(archive.tryRead("a.npy", 16).has_value());
    EXPECT_TRUE(archive.tryRead("a.npy", 1 << 20).has_value());
}

TEST(ZipArchive, ANpzRecordDeclaringGigabytesIsRefusedBeforeAllocating)
{
    const fs::path dir = freshFolder("claims");
    writeNpz((dir / "good.npz").string(), {{"maps", at::rand({4, 1, 28, 28})}});
    const std::string good = readAll(dir / "good.npz");
    const fs::path claims = dir / "claims.npz";
    writeAll(claims, declareSize(good, "maps.npy", 0xFFFFFFF0u));
    const long before = peakKiB();
    const std::string why = errorOf([&] { readNamedTensors(claims.string()); });
    EXPECT_NE(why.find("declares 4294967280 bytes"), std::string::npos) << why;
    EXPECT_NE(why.find(claims.string()), std::string::npos) << "the message names the file: " << why;
    // Nothing near the declared 4 GiB was allocated (the peak of the whole process moved < 100 MB).
    EXPECT_LT(peakKiB() - before, 100 * 1024);
}

TEST(ZipArchive, ADirectoryNamingOneRecordManyTimesIsRefused)
{
    const fs::path dir = freshFolder("overlap");
    // 1 MiB of data named 200 times: 200 MiB for a reader that trusts each entry on its own.
    writeNpz((dir / "good.npz").string(), {{"maps", at::zeros({256 * 1024}, at::kFloat)}});
    const fs::path overlap = dir / "overlap.npz";
    writeAll(overlap, nameOneRecordManyTimes(readAll(dir / "good.npz"), 200));
    const long before = peakKiB();
    const std::string why = errorOf([&] { readNamedTensors(overlap.string()); });
    EXPECT_NE(why.find("its 200 records claim"), std::string::npos) << why;
    EXPECT_NE(why.find("they overlap"), std::string::npos) << why;
    EXPECT_NE(why.find(overlap.string()), std::string::npos) << "the message names the file: " << why;
    EXPECT_LT(peakKiB() - before, 100 * 1024);
}

// What the CLI's --attributions reads: a .safetensors file written by TorchScope comes back whole,
// every dtype it writes (the safetensors library reads the same files in test_cli.py).
TEST(TensorReaders, SafetensorsRoundTripsEveryDtype)
{
    const fs::path dir = freshFolder("safetensors");
    const at::Tensor floats = at::randn({2, 3, 5});
    NamedTensors written{{"f32", floats}, {"f64", floats.to(at::kDouble)}, {"f16", floats.to(at::kHalf)},
        {"bf16", floats.to(at::kBFloat16)}, {"i64", at::arange(7, at::kLong)}, {"u8", at::arange(9, at::kByte)},
        {"b", floats.gt(0)}, {"empty", at::zeros({0, 4})}};
    writeSafetensors((dir / "t.safetensors").string(), written, "{\"x\": 1}");
    const auto read = readNamedTensors((dir / "t.safetensors").string());
    ASSERT_EQ(read.size(), written.size());
    for (const auto& [key, tensor] : written) {
        ASSERT_TRUE(read.count(key)) << key;
        // bfloat16 is written as float32 (NumPy has no bfloat16; the .npz and .safetensors files agree).
        const at::Tensor want = key == "bf16" ? tensor.to(at::kFloat) : tensor;
        EXPECT_EQ(read.at(key).scalar_type(), want.scalar_type()) << key;
        EXPECT_TRUE(read.at(key).equal(want)) << key;
    }
}

// Little-endian header length (the header's own unless `declared` is given), the header, the data.
std::string safetensorsWith(const std::string& header, const std::string& data, uint64_t declared = 0)
{
    const uint64_t length = declared ? declared : header.size();
    std::string bytes(8, '\0');
    for (int k = 0; k < 8; ++k)
        bytes[k] = static_cast<char>((length >> (8 * k)) & 0xff);
    return bytes + header + data;
}

TEST(TensorReaders, SafetensorsDeclaringGigabytesAreRefusedBeforeAllocating)
{
    const fs::path dir = freshFolder("safetensors_claims");
    const std::string header = R"({"maps": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}})";
    const std::string data(8, '\0');
    struct Case {
        std::string name, bytes, says;
    };
    const std::vector<Case> cases{
        {"length.safetensors", safetensorsWith(header, data, uint64_t{4} << 30), "declares a .safetensors header of"},
        {"range.safetensors",
            safetensorsWith(R"({"maps":{"dtype":"F32","shape":[1073741824],"data_offsets":[0,4294967296]}})", data),
            "claims bytes 0 to 4294967296"},
        {"shape.safetensors",
            safetensorsWith(R"({"maps":{"dtype":"F32","shape":[65536,65536],"data_offsets":[0,8]}})", data),
            "needs 17179869184 bytes, its data_offsets give 8"},
        {"overflow.safetensors",
            safetensorsWith(R"({"maps":{"dtype":"F64","shape":[4611686018427387904,8],"data_offsets":[0,8]}})", data),
            "needs more bytes than any file"},
        {"empty.safetensors",
            safetensorsWith(
                R"({"maps":{"dtype":"F32","shape":[0,4611686018427387904,4611686018427387904],"data_offsets":[0,0]}})",
                ""),
            "needs more bytes than any file"},
        // Many tensors over the same bytes: each range fits the data, together they declare copies of it.
        {"overlap.safetensors",
            safetensorsWith(R"({"a":{"dtype":"U8","shape":[8],"data_offsets":[0,8]},)"
                            R"("b":{"dtype":"U8","shape":[8],"data_offsets":[0,8]}})",
                data),
            "overlap or leave gaps"},
    };
    for (const auto& c : cases) {
        writeAll(dir / c.name, c.bytes);
        const long before = peakKiB();
        const std::string why = errorOf([&] { readNamedTensors((dir / c.name).string()); });
        EXPECT_NE(why.find(c.says), std::string::npos) << c.name << ": " << why;
        EXPECT_NE(why.find(c.name), std::string::npos) << "the message names the file: " << why;
        EXPECT_LT(peakKiB() - before, 100 * 1024) << c.name;
    }
}

TEST(TensorReaders, AnNpyShapeOfGigabytesOverAFewBytesIsRefused)
{
    std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (100000, 100000), }";
    header += std::string(118 - header.size(), ' ') + "\n"; // 10 + 118 bytes: a multiple of 64
    std::string npy = std::string("\x93NUMPY\x01\x00", 8);
    npy += static_cast<char>(header.size() & 0xff);
    npy += static_cast<char>(header.size() >> 8);
    npy += header + std::string(8, '\0');
    const long before = peakKiB();
    const std::string why = errorOf([&] { decodeNpy(npy, "maps"); });
    EXPECT_NE(why.find("of shape (100000, 100000) should hold 40000000000 bytes, has 8"), std::string::npos) << why;
    EXPECT_LT(peakKiB() - before, 100 * 1024);
    const std::string huge = errorOf([&] {
        std::string h = "{'descr': '<f8', 'fortran_order': False, 'shape': (99999999999999999999, 8), }";
        h += std::string(118 - h.size(), ' ') + "\n";
        decodeNpy(std::string("\x93NUMPY\x01\x00", 8) + static_cast<char>(h.size()) + '\0' + h, "maps");
    });
    EXPECT_NE(huge.find("more bytes than any file"), std::string::npos) << huge;
}

TEST(ZipArchive, ARecordCutShortSaysHowMuchCouldBeRead)
{
    const fs::path dir = freshFolder("short");
    writeNpz((dir / "good.npz").string(), {{"maps", at::zeros({64}, at::kFloat)}});
    const std::string good = readAll(dir / "good.npz");
    // One byte more than the record holds: within what the file could hold, so it is read, and
    // what comes out is short.
    const ZipArchive original((dir / "good.npz").string());
    const auto size = static_cast<uint32_t>(original.read("maps.npy").size());
    writeAll(dir / "short.npz", declareSize(good, "maps.npy", size + 1));
    const std::string why = errorOf([&] { readNamedTensors((dir / "short.npz").string()); });
    EXPECT_TRUE(why.find("could be read") != std::string::npos || why.find("damaged") != std::string::npos) << why;
}

TEST(ZipArchive, BoundsFollowTheCompressionMethod)
{
    EXPECT_EQ(ZipArchive::mostBytesOf(10, true, 1000), 1000u); // stored: the file's size
    EXPECT_EQ(ZipArchive::mostBytesOf(10, false, 1000), 10320u); // deflate: 1032 per byte
    EXPECT_EQ(ZipArchive::mostBytesOf(~uint64_t{0} / 2, false, 1000), ~uint64_t{0}); // no overflow
}

TEST(ZipArchive, NotAZipSaysWhatTheFileIs)
{
    const fs::path dir = freshFolder("text");
    writeAll(dir / "notes.npz", "just some text\n");
    const std::string why = errorOf([&] { readNamedTensors((dir / "notes.npz").string()); });
    EXPECT_NE(why.find("cannot be opened as a .npz archive"), std::string::npos) << why;
    try {
        const ZipArchive archive((dir / "notes.npz").string());
        FAIL() << "a text file opened as a zip";
    } catch (const ZipOpenError& e) {
        EXPECT_FALSE(e.reason.empty());
    }
}

} // namespace
} // namespace torchscope::test
