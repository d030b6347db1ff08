#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace torchscope {

struct LabelledImage {
    std::string path;
    int64_t label = -1; // -1: unlabelled
};

// An image folder as torchvision's ImageFolder reads it: one subfolder per class, or a flat
// folder of unlabelled images. A class's label is, in this order of preference: the model's own
// index for it when every folder name matches one of the model's labels (ignoring case and
// punctuation: "ankle_boot" = "Ankle boot"), the number when every folder name is one, or the
// folder's position in name order (torchvision's rule).
struct ImageFolder {
    std::vector<std::string> classes; // folder names, sorted
    std::vector<int64_t> classLabels; // the label each class folder gets
    std::string labelSource; // "model labels", "folder numbers", "folder order" or ""
    std::vector<LabelledImage> images;

    static ImageFolder scan(const std::string& folder, const std::vector<std::string>& modelLabels = {});
    static ImageFolder fromFiles(const std::vector<std::string>& files);
};

} // namespace torchscope
