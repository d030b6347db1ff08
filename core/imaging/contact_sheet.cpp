#include "imaging/contact_sheet.h"

#include "common/atomic_file.h"
#include "common/error.h"
#include "common/strings.h"

#include <ATen/ATen.h>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <string>
#include <utility>

namespace torchscope {
namespace {

// An 8-bit BGR picture of a [C, H, W] tensor in [0, 1].
cv::Mat toMat(const at::Tensor& image)
{
    if (image.dim() != 3 || (image.size(0) != 1 && image.size(0) != 3))
        throw Error("a picture must be [channels, height, width] with 1 or 3 channels, got "
            + shapeToString(image.sizes().vec()));
    const at::Tensor rgb = image.detach().to(at::kCPU, at::kFloat).expand({3, image.size(1), image.size(2)});
    const at::Tensor bytes = (rgb.flip({0}).permute({1, 2, 0}).clamp(0, 1) * 255.0).round().to(at::kByte).contiguous();
    const cv::Mat view(static_cast<int>(bytes.size(0)), static_cast<int>(bytes.size(1)), CV_8UC3, bytes.data_ptr());
    return view.clone();
}

cv::Mat fitted(const cv::Mat& picture, int side)
{
    const double factor = static_cast<double>(side) / std::max(picture.cols, picture.rows);
    cv::Mat out;
    cv::resize(picture, out, cv::Size(), factor, factor, factor > 1.0 ? cv::INTER_NEAREST : cv::INTER_AREA);
    cv::Mat square(side, side, CV_8UC3, cv::Scalar(255, 255, 255));
    out.copyTo(square(cv::Rect((side - out.cols) / 2, (side - out.rows) / 2, out.cols, out.rows)));
    return square;
}

// OpenCV's Hershey fonts draw ASCII only ("??" for anything else): the signs our captions use, in ASCII.
std::string drawable(const std::string& text)
{
    static const std::pair<const char*, const char*> Replacements[]
        = {{"\u2212", "-"}, {"\u00d7", "x"}, {"\u00b7", "."}, {"\u2026", "..."}, {"\u2013", "-"}};
    std::string out = text;
    for (const auto& [from, to] : Replacements)
        for (size_t at = out.find(from); at != std::string::npos; at = out.find(from, at))
            out.replace(at, std::string(from).size(), to);
    std::string ascii;
    for (size_t i = 0; i < out.size(); ++i) {
        const auto byte = static_cast<unsigned char>(out[i]);
        if (byte < 0x80) {
            ascii += out[i];
        } else if ((byte & 0xC0) != 0x80) {
            ascii += '?'; // one mark per character, not per byte
        }
    }
    return ascii;
}

void writeEncoded(const std::string& path, const cv::Mat& picture)
{
    std::vector<uchar> png;
    if (!cv::imencode(".png", picture, png))
        throw Error("could not encode '" + path + "' as PNG");
    writeFileAtomically(path, std::string_view(reinterpret_cast<const char*>(png.data()), png.size()));
}

} // namespace

void writePng(const std::string& path, const at::Tensor& image, int minSide)
{
    cv::Mat picture = toMat(image);
    const int shorter = std::min(picture.cols, picture.rows);
    if (minSide > shorter) {
        const int factor = (minSide + shorter - 1) / shorter;
        cv::resize(picture, picture, cv::Size(), factor, factor, cv::INTER_NEAREST);
    }
    writeEncoded(path, picture);
}

void writeContactSheet(const std::string& path, const std::vector<SheetRow>& rows, int tileSide)
{
    if (rows.empty())
        throw Error("a contact sheet needs at least one row");
    constexpr int Gap = 8, TitleWidth = 150, CaptionHeight = 20;
    size_t columns = 1;
    for (const auto& row : rows)
        columns = std::max(columns, row.tiles.size());
    const int rowHeight = tileSide + CaptionHeight + Gap;
    const int width = TitleWidth + static_cast<int>(columns) * (tileSide + Gap) + Gap;
    cv::Mat sheet(static_cast<int>(rows.size()) * rowHeight + Gap, width, CV_8UC3, cv::Scalar(255, 255, 255));
    const auto font = cv::FONT_HERSHEY_SIMPLEX;
    for (size_t r = 0; r < rows.size(); ++r) {
        const int top = Gap + static_cast<int>(r) * rowHeight;
        cv::putText(
            sheet, drawable(rows[r].title), {Gap, top + tileSide / 2}, font, 0.5, cv::Scalar(0, 0, 0), 1, cv::LINE_AA);
        for (size_t t = 0; t < rows[r].tiles.size(); ++t) {
            const int left = TitleWidth + static_cast<int>(t) * (tileSide + Gap);
            fitted(toMat(rows[r].tiles[t].image), tileSide).copyTo(sheet(cv::Rect(left, top, tileSide, tileSide)));
            cv::putText(sheet, drawable(rows[r].tiles[t].caption), {left, top + tileSide + 15}, font, 0.4,
                cv::Scalar(60, 60, 60), 1, cv::LINE_AA);
        }
    }
    writeEncoded(path, sheet);
}

} // namespace torchscope
