#pragma once

// The one zip reader of TorchScope (libzip underneath): the .pt2 archives of torch.export, NumPy's
// .npz files and the diagnosis of a .pt that will not load all read through it. Bounded: a record
// whose header declares more bytes than the file can hold is refused before anything is allocated,
// and every record is read in pieces, so a header that lies costs no more memory than the bytes
// that are really there. No Torch in this header.

#include "common/error.h"

#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace torchscope {

// Why a file cannot be opened as a zip: the whole message, and libzip's reason alone.
class ZipOpenError : public Error {
public:
    ZipOpenError(const std::string& message, std::string reason)
        : Error(message)
        , reason(std::move(reason))
    { }
    std::string reason;
};

class ZipArchive {
public:
    // Plain: libzip's own checks of the central directory. Consistent: also every record's local
    // header read and held against the directory, and every record lying wholly inside the file
    // (libzip's ZIP_CHECKCONS): for a reader that will trust the offsets, as LibTorch's does.
    enum class Check { Plain, Consistent };
    // `kind` names the file in messages: "zip archive", ".pt2 archive", ".npz archive".
    // Throws ZipOpenError saying why the file cannot be opened as a zip.
    explicit ZipArchive(const std::string& path, std::string kind = "zip archive", Check check = Check::Plain);
    ~ZipArchive();
    ZipArchive(const ZipArchive&) = delete;
    ZipArchive& operator=(const ZipArchive&) = delete;

    const std::string& path() const { return path_; }
    const std::string& kind() const { return kind_; }
    uint64_t fileSize() const { return fileSize_; }

    // Every record's name, in the archive's order.
    std::vector<std::string> names() const;
    bool has(const std::string& name) const;

    // The most bytes a record of `compressedSize` stored bytes can unpack to: the file's size for a
    // stored record, deflate's largest ratio (1032:1) for a compressed one.
    static uint64_t mostBytesOf(uint64_t compressedSize, bool stored, uint64_t fileSize);

    // The whole record. Throws torchscope::Error naming the archive and the record when it is
    // missing, declares more than the file can hold or more than `limit`, or cannot be read whole.
    std::string read(const std::string& name, uint64_t limit = std::numeric_limits<uint64_t>::max()) const;
    // The record, or nothing when it is missing, too large (`limit`) or unreadable; never throws.
    std::optional<std::string> tryRead(const std::string& name, uint64_t limit) const;

private:
    struct Handle;
    std::string path_;
    std::string kind_;
    uint64_t fileSize_ = 0;
    std::unique_ptr<Handle> zip_;
};

} // namespace torchscope
