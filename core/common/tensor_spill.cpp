#include "common/tensor_spill.h"

#include "common/error.h"

#include <ATen/ATen.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>
#include <unistd.h>

namespace torchscope {

namespace {

std::string temporaryFolder(const std::string& folder)
{
    if (!folder.empty())
        return folder;
    std::error_code error;
    const auto path = std::filesystem::temp_directory_path(error);
    return error ? std::string("/tmp") : path.string();
}

} // namespace

TensorSpill::TensorSpill(const std::string& folder)
    : folder_(temporaryFolder(folder))
{
    std::string path = (std::filesystem::path(folder_) / "torchscope-spill-XXXXXX").string();
    fd_ = mkstemp(path.data());
    if (fd_ < 0)
        throw Error("cannot make a temporary file in '" + folder_ + "': " + std::strerror(errno));
    ::unlink(path.c_str()); // the open descriptor keeps it until the spill closes it
}

TensorSpill::~TensorSpill()
{
    if (fd_ >= 0)
        ::close(fd_);
}

bool TensorSpill::write(const at::Tensor& t)
{
    if (failed_)
        return false;
    const at::Tensor values = t.to(at::kCPU, at::kFloat).contiguous();
    const auto* data = static_cast<const char*>(values.data_ptr());
    const auto size = static_cast<size_t>(values.numel()) * sizeof(float);
    size_t written = 0;
    while (written < size) {
        const ssize_t n = ::pwrite(fd_, data + written, size - written, static_cast<off_t>(bytes_ + written));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            failed_ = true;
            sizes_.clear();
            [[maybe_unused]] const int released = ::ftruncate(fd_, 0); // the space back: nothing more is read
            bytes_ = 0;
            return false;
        }
        written += static_cast<size_t>(n);
    }
    sizes_.push_back(values.sizes().vec());
    bytes_ += static_cast<int64_t>(size);
    return true;
}

at::Tensor TensorSpill::read()
{
    if (failed_)
        throw Error("the temporary file in '" + folder_ + "' could not take what was written to it");
    if (next_ >= sizes_.size())
        throw Error("read past the " + std::to_string(sizes_.size()) + " tensors written to a temporary file");
    at::Tensor values = at::empty(sizes_[next_++], at::kFloat);
    auto* data = static_cast<char*>(values.data_ptr());
    const auto size = static_cast<size_t>(values.numel()) * sizeof(float);
    size_t done = 0;
    while (done < size) {
        const ssize_t n = ::pread(fd_, data + done, size - done, static_cast<off_t>(offset_ + done));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            throw Error("the temporary file in '" + folder_ + "' ends " + std::to_string(offset_ + done)
                + " bytes in, before the " + std::to_string(bytes_) + " written to it"
                + (n < 0 ? std::string(": ") + std::strerror(errno) : std::string{}));
        done += static_cast<size_t>(n);
    }
    offset_ += static_cast<int64_t>(size);
    return values;
}

int64_t defaultSpillBudget(const std::string& folder)
{
    std::error_code error;
    const auto space = std::filesystem::space(temporaryFolder(folder), error);
    return error ? 0 : static_cast<int64_t>(space.available / 2);
}

} // namespace torchscope
