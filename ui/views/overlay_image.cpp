#include "views/overlay_image.h"

#include "common/float_tensor.h"
#include "maps/channel_maps.h"

#include <algorithm>

namespace torchscope {

QImage overlayImage(
    const FloatTensor& picture, const float* map, int64_t mapWidth, int64_t mapHeight, ColorMap colorMap, float alpha)
{
    if (picture.shape.size() != 3 || picture.shape[2] != 3)
        return {};
    const int height = static_cast<int>(picture.shape[0]), width = static_cast<int>(picture.shape[1]);
    std::vector<uint8_t> rgb(picture.values.size());
    std::transform(picture.values.begin(), picture.values.end(), rgb.begin(),
        [](float v) { return static_cast<uint8_t>(std::clamp(v, 0.f, 1.f) * 255.f + 0.5f); });
    if (!map || mapWidth <= 0 || mapHeight <= 0) // the picture alone
        return QImage(rgb.data(), width, height, width * 3, QImage::Format_RGB888).copy();
    const auto blended = overlayMap(rgb, width, height, map, mapWidth, mapHeight, colorMap, alpha);
    return QImage(blended.data(), width, height, width * 3, QImage::Format_RGB888).copy();
}

std::vector<float> scaledToUnit(const FloatTensor& map, double low, double high)
{
    std::vector<float> scaled(map.values.size(), 0.f);
    if (high > low)
        for (size_t i = 0; i < scaled.size(); ++i)
            scaled[i] = static_cast<float>((map.values[i] - low) / (high - low));
    return scaled;
}

FloatTensor pictureFromFile(const QString& path, int side)
{
    QImage image(path);
    if (image.isNull())
        return {};
    image = image.convertToFormat(QImage::Format_RGB888)
                .scaled(side, side, Qt::KeepAspectRatio, Qt::SmoothTransformation);
    FloatTensor picture{{image.height(), image.width(), 3}, {}};
    picture.values.reserve(static_cast<size_t>(picture.numel()));
    for (int y = 0; y < image.height(); ++y) {
        const uchar* row = image.constScanLine(y);
        for (int x = 0; x < image.width() * 3; ++x)
            picture.values.push_back(static_cast<float>(row[x]) / 255.0f);
    }
    return picture;
}

} // namespace torchscope
