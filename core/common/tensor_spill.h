#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

namespace torchscope {

// Float tensors written once in order and read back once in the same order, from a temporary file
// that is unlinked as soon as it is made: the disk holds them, not the memory, and the file is gone
// with the spill (or the process, however it ends). dissect's second pass reads its layers' maps from
// one instead of running the model again.
class TensorSpill {
public:
    // In `folder` ("": the system's temporary folder, $TMPDIR or /tmp). Throws torchscope::Error
    // naming the folder when no file can be made there.
    explicit TensorSpill(const std::string& folder = {});
    ~TensorSpill();
    TensorSpill(const TensorSpill&) = delete;
    TensorSpill& operator=(const TensorSpill&) = delete;

    // Appends a tensor as float32 (from any device, dtype or layout). Returns false when the file
    // system refused the bytes (full): the spill then holds nothing more and cannot be read.
    bool write(const at::Tensor& t);
    // The next tensor in the order written, with its sizes, on the CPU. Throws torchscope::Error when
    // every tensor was read, the spill failed, or the file is shorter than what was written.
    at::Tensor read();

    int64_t bytes() const { return bytes_; }
    const std::string& folder() const { return folder_; }

private:
    std::string folder_;
    int fd_ = -1;
    bool failed_ = false;
    std::vector<std::vector<int64_t>> sizes_; // of each tensor written, in order
    size_t next_ = 0; // the next one to read
    int64_t bytes_ = 0; // written
    int64_t offset_ = 0; // of the next one to read
};

// The bytes a spill may take when the user does not say: half of what the file system of `folder`
// ("": the temporary folder) has available to this user; 0 when that cannot be read.
int64_t defaultSpillBudget(const std::string& folder = {});

} // namespace torchscope
