#include "views/attribution_grid.h"

#include "attribution/attribution_names.h"
#include "views/color_bar.h"
#include "views/overlay_image.h"

#include <QFileInfo>
#include <QGridLayout>
#include <QLabel>
#include <QPixmap>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

namespace torchscope {
namespace {

constexpr int LargestCell = 168;
constexpr int SmallestCell = 96;
constexpr int NameWidth = 150;
constexpr int Spacing = 12;

QString metricLine(const std::string& metric, double value)
{
    const NamedChoice* found = findChoice(faithfulnessMetricChoices(), metric);
    const QString name = QString::fromStdString(found ? found->label : metric);
    return std::isfinite(value) ? QString("%1 %2").arg(name, scaleNumber(value)) : QString("%1 —").arg(name);
}

QLabel* mapCell(const WorkbenchImage& image, const WorkbenchMap& map, const MapScale& scale, int size)
{
    const std::vector<float> unit = scaledToUnit(map.importance, scale.low, scale.high);
    const QImage overlay = overlayImage(image.picture, unit.data(), map.importance.shape[1], map.importance.shape[0],
        scale.diverging ? ColorMap::CoolWarm : ColorMap::Viridis, 0.65f);
    auto* label = new QLabel;
    label->setPixmap(QPixmap::fromImage(overlay.scaled(size, size, Qt::KeepAspectRatio, Qt::SmoothTransformation)));
    label->setAlignment(Qt::AlignCenter);
    return label;
}

} // namespace

MapScale scaleOf(double low, double high)
{
    MapScale scale;
    scale.diverging = low < 0.0;
    if (scale.diverging) {
        const double bound = std::max(std::abs(low), std::abs(high));
        scale.low = -bound;
        scale.high = bound;
    } else {
        scale.low = low;
        scale.high = high;
    }
    return scale;
}

MapScale sharedScaleOf(const std::vector<const FloatTensor*>& maps)
{
    double low = INFINITY, high = -INFINITY;
    size_t count = 0;
    for (const FloatTensor* map : maps)
        for (const float v : map->values) {
            low = std::min<double>(low, v);
            high = std::max<double>(high, v);
            ++count;
        }
    if (count == 0 || !std::isfinite(low) || !std::isfinite(high))
        return scaleOf(low, high);
    const bool diverging = low < 0.0;
    std::vector<float> values;
    values.reserve(count);
    for (const FloatTensor* map : maps)
        for (const float v : map->values)
            values.push_back(diverging ? std::abs(v) : v);
    const auto at = values.begin() + static_cast<std::ptrdiff_t>(0.98 * static_cast<double>(count - 1));
    std::nth_element(values.begin(), at, values.end());
    const double upper = *at;
    if (diverging)
        return upper > 0.0 ? MapScale{-upper, upper, true} : scaleOf(low, high);
    return upper > low ? MapScale{low, upper, false} : scaleOf(low, high);
}

AttributionGrid::AttributionGrid(QWidget* parent)
    : QScrollArea(parent)
{
    setWidgetResizable(true);
    clear(tr("Tick methods, then Explain the Images: each image's maps appear here, a column per method."));
}

void AttributionGrid::setResult(const AttributionWorkbenchResultPtr& result)
{
    result_ = result;
    message_.clear();
    rebuild();
}

void AttributionGrid::setSharedScale(bool shared)
{
    shared_ = shared;
    rebuild();
}

void AttributionGrid::clear(const QString& message)
{
    result_.reset();
    message_ = message;
    rebuild();
}

int AttributionGrid::fittingCellSize() const
{
    const int methods = result_ ? std::max<int>(1, static_cast<int>(result_->methods.size())) : 1;
    const int free = viewport()->width() - NameWidth - Spacing * (methods + 1);
    return std::clamp(free / methods, SmallestCell, LargestCell);
}

void AttributionGrid::resizeEvent(QResizeEvent* event)
{
    QScrollArea::resizeEvent(event);
    if (result_ && std::abs(fittingCellSize() - cellSize_) >= 8)
        rebuild();
}

void AttributionGrid::rebuild()
{
    cellSize_ = fittingCellSize();
    auto* content = new QWidget;
    auto* grid = new QGridLayout(content);
    grid->setHorizontalSpacing(Spacing);
    cells_ = 0;
    if (!result_ || result_->images.empty()) {
        auto* note = new QLabel(message_.isEmpty() ? tr("Nothing explained yet.") : message_);
        note->setWordWrap(true);
        grid->addWidget(note, 0, 0);
        grid->setRowStretch(1, 1);
        setWidget(content);
        return;
    }
    const auto& methods = result_->methods;
    for (size_t m = 0; m < methods.size(); ++m) {
        auto* header = new QLabel(QString("<b>%1</b>").arg(QString::fromStdString(methods[m])));
        header->setAlignment(Qt::AlignCenter);
        grid->addWidget(header, 0, static_cast<int>(m) + 1);
    }
    // One scale per column: the method's values over every image, its outliers saturated.
    std::map<std::string, MapScale> columnScales;
    for (const auto& method : methods) {
        std::vector<const FloatTensor*> maps;
        const auto found = result_->maps.find(method);
        if (found != result_->maps.end())
            for (const auto& map : found->second)
                maps.push_back(&map.importance);
        columnScales[method] = sharedScaleOf(maps);
    }
    int row = 1;
    if (shared_) {
        for (size_t m = 0; m < methods.size(); ++m) {
            const MapScale& scale = columnScales[methods[m]];
            auto* bar = new ColorBar;
            bar->setScale(scale.low, scale.high, scale.diverging ? ColorMap::CoolWarm : ColorMap::Viridis,
                tr("all images, to the 98th pct."));
            bar->setToolTip(tr("One scale for the column: up to the 98th percentile of its values (of |value| for "
                               "signed maps), as Captum draws maps; the 2 % above it saturate. Untick \"One colour "
                               "scale per method\" to give each map its own range."));
            bar->setMinimumHeight(60);
            bar->setMaximumHeight(90);
            grid->addWidget(bar, row, static_cast<int>(m) + 1);
        }
        ++row;
    }
    for (size_t i = 0; i < result_->images.size(); ++i, ++row) {
        const WorkbenchImage& image = result_->images[i];
        auto* name = new QLabel(QString("%1\n%2").arg(QFileInfo(QString::fromStdString(image.image)).fileName(),
            QString::fromStdString(image.targetDescription)));
        name->setWordWrap(true);
        name->setMaximumWidth(NameWidth);
        name->setToolTip(QString::fromStdString(image.image));
        grid->addWidget(name, row, 0);
        for (size_t m = 0; m < methods.size(); ++m) {
            // A cancel between an image's methods leaves it without the later methods' maps.
            const auto found = result_->maps.find(methods[m]);
            if (found == result_->maps.end() || i >= found->second.size()) {
                auto* missing = new QLabel(tr("not made:\ncancelled"));
                missing->setAlignment(Qt::AlignCenter);
                grid->addWidget(missing, row, static_cast<int>(m) + 1);
                continue;
            }
            const WorkbenchMap& map = found->second[i];
            const MapScale scale = shared_ ? columnScales[methods[m]] : scaleOf(map.low, map.high);
            auto* cell = new QWidget;
            auto* column = new QVBoxLayout(cell);
            column->setContentsMargins(0, 0, 0, 0);
            column->addWidget(mapCell(image, map, scale, cellSize_));
            QStringList lines;
            if (!shared_)
                lines << tr("scale %1 … %2").arg(scaleNumber(scale.low), scaleNumber(scale.high));
            for (const auto& [metric, value] : map.metrics)
                lines << metricLine(metric, value);
            auto* text = new QLabel(lines.join('\n'));
            text->setAlignment(Qt::AlignHCenter | Qt::AlignTop);
            column->addWidget(text);
            grid->addWidget(cell, row, static_cast<int>(m) + 1);
            ++cells_;
        }
    }
    grid->setRowStretch(row, 1);
    grid->setColumnStretch(static_cast<int>(methods.size()) + 1, 1);
    setWidget(content);
}

} // namespace torchscope
