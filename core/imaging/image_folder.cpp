#include "imaging/image_folder.h"

#include "common/error.h"
#include "imaging/image_decoder.h"

#include <algorithm>
#include <cctype>
#include <filesystem>

namespace torchscope {

namespace {

std::string normalized(const std::string& name)
{
    std::string out;
    for (unsigned char c : name)
        if (std::isalnum(c))
            out += static_cast<char>(std::tolower(c));
    return out;
}

std::vector<int64_t> labelsFor(
    const std::vector<std::string>& classes, const std::vector<std::string>& modelLabels, std::string& source)
{
    std::vector<int64_t> labels;
    for (const auto& name : classes) {
        const auto it = std::find_if(modelLabels.begin(), modelLabels.end(),
            [&](const std::string& l) { return normalized(l) == normalized(name); });
        if (it == modelLabels.end())
            break;
        labels.push_back(it - modelLabels.begin());
    }
    if (!classes.empty() && labels.size() == classes.size()) {
        source = "model labels";
        return labels;
    }
    labels.clear();
    for (const auto& name : classes) {
        if (name.empty() || !std::all_of(name.begin(), name.end(), [](unsigned char c) { return std::isdigit(c); }))
            break;
        labels.push_back(std::stoll(name));
    }
    if (!classes.empty() && labels.size() == classes.size()) {
        source = "folder numbers";
        return labels;
    }
    labels.clear();
    for (size_t i = 0; i < classes.size(); ++i)
        labels.push_back(static_cast<int64_t>(i));
    source = classes.empty() ? "" : "folder order";
    return labels;
}

} // namespace

ImageFolder ImageFolder::scan(const std::string& folder, const std::vector<std::string>& modelLabels)
{
    namespace fs = std::filesystem;
    std::error_code ec;
    if (!fs::is_directory(folder, ec))
        throw Error("'" + folder + "' is not a folder");
    ImageFolder result;
    std::vector<std::string> subfolders;
    for (const auto& entry : fs::directory_iterator(folder, ec))
        if (entry.is_directory())
            subfolders.push_back(entry.path().filename().string());
    std::sort(subfolders.begin(), subfolders.end());
    std::vector<std::vector<std::string>> classImages;
    for (const auto& name : subfolders) {
        auto images = listImages((fs::path(folder) / name).string());
        if (images.empty())
            continue;
        result.classes.push_back(name);
        classImages.push_back(std::move(images));
    }
    result.classLabels = labelsFor(result.classes, modelLabels, result.labelSource);
    for (size_t c = 0; c < result.classes.size(); ++c)
        for (const auto& path : classImages[c])
            result.images.push_back({path, result.classLabels[c]});
    if (result.classes.empty()) // a flat folder
        for (const auto& path : listImages(folder))
            result.images.push_back({path, -1});
    if (result.images.empty())
        throw Error("the folder '" + folder + "' holds no images (.png, .jpg, .bmp, .tif, .webp)");
    return result;
}

ImageFolder ImageFolder::fromFiles(const std::vector<std::string>& files)
{
    ImageFolder result;
    for (const auto& path : files)
        result.images.push_back({path, -1});
    return result;
}

} // namespace torchscope
