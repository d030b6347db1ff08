#include "common/zip_archive.h"

#include "common/error.h"

#include <zip.h>

#include <algorithm>
#include <filesystem>

namespace torchscope {

struct ZipArchive::Handle {
    zip_t* zip = nullptr;
    ~Handle()
    {
        if (zip)
            zip_discard(zip);
    }
};

ZipArchive::ZipArchive(const std::string& path, std::string kind, Check check)
    : path_(path)
    , kind_(std::move(kind))
    , zip_(std::make_unique<Handle>())
{
    std::error_code sizeError;
    const auto size = std::filesystem::file_size(path, sizeError);
    fileSize_ = sizeError ? 0 : static_cast<uint64_t>(size);
    int error = 0;
    zip_->zip = zip_open(path.c_str(), ZIP_RDONLY | (check == Check::Consistent ? ZIP_CHECKCONS : 0), &error);
    if (!zip_->zip) {
        zip_error_t details;
        zip_error_init_with_code(&details, error);
        const std::string why = zip_error_strerror(&details);
        zip_error_fini(&details);
        throw ZipOpenError("'" + path + "' cannot be opened as a " + kind_ + " (" + why + ")", why);
    }
    // Each record's stored bytes lie in the file once: records that claim more together than the
    // file holds share bytes, as in an archive whose directory names one record many times over
    // (each read alone fits the file; together they unpack many copies of it).
    uint64_t claimed = 0;
    const zip_int64_t count = zip_get_num_entries(zip_->zip, 0);
    for (zip_int64_t i = 0; i < count; ++i) {
        zip_stat_t stat;
        zip_stat_init(&stat);
        if (zip_stat_index(zip_->zip, static_cast<zip_uint64_t>(i), 0, &stat) == 0 && (stat.valid & ZIP_STAT_COMP_SIZE)
            && __builtin_add_overflow(claimed, stat.comp_size, &claimed))
            claimed = std::numeric_limits<uint64_t>::max();
    }
    if (claimed > fileSize_) {
        const std::string why = "its " + std::to_string(count) + " records claim " + std::to_string(claimed)
            + " stored bytes together, more than the file's " + std::to_string(fileSize_) + ": they overlap";
        throw ZipOpenError("'" + path + "' cannot be opened as a " + kind_ + " (" + why + ")", why);
    }
}

ZipArchive::~ZipArchive() = default;

std::vector<std::string> ZipArchive::names() const
{
    std::vector<std::string> out;
    const zip_int64_t count = zip_get_num_entries(zip_->zip, 0);
    for (zip_int64_t i = 0; i < count; ++i)
        if (const char* name = zip_get_name(zip_->zip, static_cast<zip_uint64_t>(i), 0))
            out.emplace_back(name);
    return out;
}

bool ZipArchive::has(const std::string& name) const
{
    return zip_name_locate(zip_->zip, name.c_str(), 0) >= 0;
}

uint64_t ZipArchive::mostBytesOf(uint64_t compressedSize, bool stored, uint64_t fileSize)
{
    if (stored)
        return fileSize;
    constexpr uint64_t deflateRatio = 1032; // deflate's largest expansion: 258 bytes per 2 bits
    return compressedSize > std::numeric_limits<uint64_t>::max() / deflateRatio ? std::numeric_limits<uint64_t>::max()
                                                                                : compressedSize * deflateRatio;
}

std::string ZipArchive::read(const std::string& name, uint64_t limit) const
{
    const std::string record = "the " + kind_ + "'s record '" + name + "'";
    zip_stat_t stat;
    zip_stat_init(&stat);
    if (zip_stat(zip_->zip, name.c_str(), 0, &stat) != 0 || !(stat.valid & ZIP_STAT_SIZE))
        throw Error("the " + kind_ + " '" + path_ + "' has no record '" + name + "'");
    const bool stored = (stat.valid & ZIP_STAT_COMP_METHOD) && stat.comp_method == ZIP_CM_STORE;
    const uint64_t compressed = (stat.valid & ZIP_STAT_COMP_SIZE) ? stat.comp_size : fileSize_;
    const uint64_t most = mostBytesOf(std::min<uint64_t>(compressed, fileSize_), stored, fileSize_);
    if (stat.size > most)
        throw Error(record + " declares " + std::to_string(stat.size) + " bytes, more than the file ("
            + std::to_string(fileSize_) + " bytes) can hold: '" + path_ + "' is damaged");
    if (stat.size > limit)
        throw Error(record + " holds " + std::to_string(stat.size) + " bytes, more than the " + std::to_string(limit)
            + " TorchScope reads of it");
    zip_file_t* file = zip_fopen(zip_->zip, name.c_str(), 0);
    if (!file)
        throw Error(record + " cannot be opened: " + zip_strerror(zip_->zip));
    // In pieces, never more than the declared size: a header that lies costs only what is there.
    std::string bytes;
    bytes.reserve(static_cast<size_t>(std::min<uint64_t>(stat.size, std::max<uint64_t>(fileSize_, 1 << 16))));
    char piece[1 << 16];
    zip_int64_t got = 0;
    while (bytes.size() <= stat.size && (got = zip_fread(file, piece, sizeof piece)) > 0)
        bytes.append(piece, static_cast<size_t>(got));
    zip_fclose(file);
    if (got < 0 || bytes.size() != stat.size)
        throw Error(record + " is damaged (" + std::to_string(bytes.size()) + " of " + std::to_string(stat.size)
            + " bytes could be read)");
    return bytes;
}

std::optional<std::string> ZipArchive::tryRead(const std::string& name, uint64_t limit) const
{
    try {
        return read(name, limit);
    } catch (const std::exception&) {
        return std::nullopt;
    }
}

} // namespace torchscope
