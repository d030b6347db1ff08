#include "concepts/synthetic_concepts.h"

#include "common/atomic_file.h"
#include "common/error.h"
#include "imaging/image_decoder.h"

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <array>
#include <cmath>
#include <filesystem>
#include <random>

namespace torchscope {

namespace fs = std::filesystem;

namespace {

struct Colour {
    const char* name;
    std::array<int, 3> rgb;
};
constexpr std::array<Colour, 5> Colours{{{"red", {220, 30, 30}}, {"green", {30, 170, 40}}, {"blue", {30, 70, 220}},
    {"yellow", {235, 210, 30}}, {"purple", {140, 40, 180}}}};
constexpr std::array<const char*, 4> Shapes{"circle", "square", "triangle", "star"};
constexpr std::array<const char*, 3> Textures{"stripes", "checker", "dots"};
constexpr int DarkGrey = 40;

struct Object {
    int shape = 0, colour = 0;
    int texture = -1; // -1: solid
};

// The shape's pixels (255) on a height × width canvas, centred at (cx, cy) with radius r, turned by `angle`.
cv::Mat shapeMask(int shape, int height, int width, double cx, double cy, double r, double angle)
{
    cv::Mat mask = cv::Mat::zeros(height, width, CV_8U);
    std::vector<cv::Point> points;
    const auto polygon = [&](int corners, double inner) {
        const int steps = inner > 0 ? 2 * corners : corners;
        for (int k = 0; k < steps; ++k) {
            const double radius = inner > 0 && k % 2 == 1 ? r * inner : r;
            const double a = angle + 2.0 * M_PI * k / steps;
            points.emplace_back(static_cast<int>(std::lround(cx + radius * std::cos(a))),
                static_cast<int>(std::lround(cy + radius * std::sin(a))));
        }
    };
    if (shape == 0) {
        cv::circle(mask, cv::Point(static_cast<int>(std::lround(cx)), static_cast<int>(std::lround(cy))),
            static_cast<int>(std::lround(r)), cv::Scalar(255), cv::FILLED, cv::LINE_8);
        return mask;
    }
    if (shape == 1)
        polygon(4, 0.0);
    else if (shape == 2)
        polygon(3, 0.0);
    else
        polygon(5, 0.45);
    cv::fillPoly(mask, std::vector<std::vector<cv::Point>>{points}, cv::Scalar(255), cv::LINE_8);
    return mask;
}

// The texture's coloured pixels (255) over the whole canvas.
cv::Mat texturePattern(int texture, int height, int width, int period, double angle)
{
    cv::Mat pattern = cv::Mat::zeros(height, width, CV_8U);
    const double c = std::cos(angle), s = std::sin(angle);
    for (int y = 0; y < height; ++y)
        for (int x = 0; x < width; ++x) {
            bool on = false;
            if (texture == 0) {
                const double t = x * c + y * s;
                on = std::fmod(std::fmod(t, period) + period, period) < period / 2.0;
            } else if (texture == 1) {
                on = ((x / period) + (y / period)) % 2 == 0;
            } else {
                const int dx = x % period - period / 2, dy = y % period - period / 2;
                on = 4 * (dx * dx + dy * dy) <= period * period / 3;
            }
            pattern.at<uint8_t>(y, x) = on ? 255 : 0;
        }
    return pattern;
}

cv::Mat noiseBackground(int height, int width, std::mt19937_64& random)
{
    cv::Mat grey(height, width, CV_8U);
    std::uniform_int_distribution<int> value(70, 190);
    for (int y = 0; y < height; ++y)
        for (int x = 0; x < width; ++x)
            grey.at<uint8_t>(y, x) = static_cast<uint8_t>(value(random));
    cv::GaussianBlur(grey, grey, cv::Size(5, 5), 1.2);
    cv::Mat rgb;
    cv::cvtColor(grey, rgb, cv::COLOR_GRAY2RGB);
    return rgb;
}

// A random crop of a background photo, resized to cover the canvas. RGB.
cv::Mat photoBackground(const std::string& path, int height, int width, std::mt19937_64& random)
{
    const DecodedImage decoded = decodeImage(path);
    cv::Mat image(decoded.height, decoded.width, decoded.channels == 1 ? CV_32F : CV_32FC3,
        const_cast<float*>(decoded.pixels.data()));
    cv::Mat rgb;
    image.convertTo(rgb, decoded.channels == 1 ? CV_8U : CV_8UC3, 255.0);
    if (decoded.channels == 1)
        cv::cvtColor(rgb, rgb, cv::COLOR_GRAY2RGB);
    const double scale = std::max(static_cast<double>(height) / rgb.rows, static_cast<double>(width) / rgb.cols);
    cv::Mat resized;
    cv::resize(rgb, resized,
        cv::Size(std::max(width, static_cast<int>(std::ceil(rgb.cols * scale))),
            std::max(height, static_cast<int>(std::ceil(rgb.rows * scale)))),
        0, 0, cv::INTER_AREA);
    std::uniform_int_distribution<int> top(0, resized.rows - height), left(0, resized.cols - width);
    return resized(cv::Rect(left(random), top(random), width, height)).clone();
}

void writePng(const fs::path& path, const cv::Mat& image)
{
    cv::Mat out = image;
    if (image.channels() == 3)
        cv::cvtColor(image, out, cv::COLOR_RGB2BGR);
    if (!cv::imwrite(path.string(), out))
        throw Error("cannot write '" + path.string() + "'");
}

} // namespace

std::vector<std::string> syntheticConceptNames()
{
    std::vector<std::string> names;
    for (const auto& colour : Colours)
        names.emplace_back(colour.name);
    for (const char* shape : Shapes)
        names.emplace_back(shape);
    for (const char* texture : Textures)
        names.emplace_back(texture);
    return names;
}

SyntheticConceptsResult makeSyntheticConcepts(const SyntheticConceptsRequest& request, const ProgressCallback& progress)
{
    if (request.height < 32 || request.width < 32 || request.height > 4096 || request.width > 4096)
        throw Error("synthetic concept images are 32 to 4096 pixels high and wide, not " + std::to_string(request.width)
            + " x " + std::to_string(request.height));
    if (request.images < 1)
        throw Error("make at least one image, not " + std::to_string(request.images));
    fs::path out = fs::path(request.out).lexically_normal();
    if (out.filename().empty()) // "shapes/"
        out = out.parent_path();
    std::error_code ec;
    if (fs::exists(out, ec) && !(fs::is_directory(out, ec) && fs::is_empty(out, ec)))
        throw Error("'" + request.out + "' exists and is not an empty folder: give a new folder for the concept set");
    std::vector<std::string> backgrounds;
    if (!request.backgrounds.empty()) {
        backgrounds = listImages(request.backgrounds);
        if (backgrounds.empty())
            throw Error("the background folder '" + request.backgrounds + "' has no images");
    }
    SyntheticConceptsResult result;
    result.concepts = syntheticConceptNames();
    for (size_t c = 0; c < result.concepts.size(); ++c)
        result.categories.emplace_back(c < Colours.size() ? "color"
                : c < Colours.size() + Shapes.size()      ? "shape"
                                                          : "texture");
    result.imagesWith.assign(result.concepts.size(), 0);

    const fs::path partial = out.parent_path() / (out.filename().string() + ".partial");
    fs::remove_all(partial, ec);
    fs::create_directories(partial / "images");
    for (const auto& name : result.concepts)
        fs::create_directories(partial / "masks" / name);
    std::string csv = "concept,category\n";
    for (size_t c = 0; c < result.concepts.size(); ++c)
        csv += result.concepts[c] + "," + result.categories[c] + "\n";
    writeFileAtomically((partial / "concepts.csv").string(), csv);

    std::mt19937_64 random(request.seed);
    const int h = request.height, w = request.width, side = std::min(h, w);
    std::uniform_int_distribution<int> objectCount(1, 3), shapeOf(0, static_cast<int>(Shapes.size()) - 1),
        colourOf(0, static_cast<int>(Colours.size()) - 1), textureOf(-2, static_cast<int>(Textures.size()) - 1),
        jitter(-18, 18);
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    for (int64_t index = 0; index < request.images; ++index) {
        cv::Mat canvas = backgrounds.empty()
            ? noiseBackground(h, w, random)
            : photoBackground(backgrounds[static_cast<size_t>(random() % backgrounds.size())], h, w, random);
        cv::Mat objectId = cv::Mat::zeros(h, w, CV_8U), colourId = cv::Mat::zeros(h, w, CV_8U);
        std::vector<Object> objects;
        const int count = objectCount(random);
        for (int k = 0; k < count; ++k) {
            Object object{shapeOf(random), colourOf(random), std::max(-1, textureOf(random))};
            const double r = side * (0.14 + 0.12 * unit(random));
            const double cx = r + (w - 2 * r) * unit(random), cy = r + (h - 2 * r) * unit(random);
            const cv::Mat region = shapeMask(object.shape, h, w, cx, cy, r, 2.0 * M_PI * unit(random));
            const auto& rgb = Colours[static_cast<size_t>(object.colour)].rgb;
            const cv::Vec3b colour(static_cast<uint8_t>(std::clamp(rgb[0] + jitter(random), 0, 255)),
                static_cast<uint8_t>(std::clamp(rgb[1] + jitter(random), 0, 255)),
                static_cast<uint8_t>(std::clamp(rgb[2] + jitter(random), 0, 255)));
            cv::Mat painted = region.clone();
            if (object.texture >= 0) {
                const int period = std::max(4, static_cast<int>(side * (0.04 + 0.03 * unit(random))));
                cv::bitwise_and(region, texturePattern(object.texture, h, w, period, M_PI * unit(random)), painted);
                canvas.setTo(cv::Scalar(DarkGrey, DarkGrey, DarkGrey), region);
                colourId.setTo(0, region);
            }
            canvas.setTo(cv::Scalar(colour[0], colour[1], colour[2]), painted);
            colourId.setTo(object.colour + 1, painted);
            objects.push_back(object);
            objectId.setTo(static_cast<int>(objects.size()), region);
        }
        char name[32];
        std::snprintf(name, sizeof name, "%05lld.png", static_cast<long long>(index));
        writePng(partial / "images" / name, canvas);
        for (size_t c = 0; c < result.concepts.size(); ++c) {
            cv::Mat mask = cv::Mat::zeros(h, w, CV_8U);
            if (c < Colours.size()) {
                mask = colourId == static_cast<int>(c) + 1;
            } else {
                for (size_t k = 0; k < objects.size(); ++k) {
                    const bool has = c < Colours.size() + Shapes.size()
                        ? objects[k].shape == static_cast<int>(c - Colours.size())
                        : objects[k].texture == static_cast<int>(c - Colours.size() - Shapes.size());
                    if (has)
                        mask.setTo(255, objectId == static_cast<int>(k) + 1);
                }
            }
            if (cv::countNonZero(mask) == 0)
                continue;
            writePng(partial / "masks" / result.concepts[c] / name, mask);
            ++result.imagesWith[c];
        }
        ++result.images;
        if (progress && !progress(Progress{index + 1, request.images, "images", {}})) {
            result.cancelled = index + 1 < request.images;
            break;
        }
    }
    fs::remove(out, ec); // an empty folder
    fs::rename(partial, out, ec);
    if (ec)
        throw Error("cannot move the concept set into '" + request.out + "': " + ec.message() + " (it is in '"
            + partial.string() + "')");
    return result;
}

} // namespace torchscope
