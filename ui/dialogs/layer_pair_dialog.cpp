#include "dialogs/layer_pair_dialog.h"

#include "views/channel_grid.h"
#include "views/color_bar.h"

#include <QFileInfo>
#include <QGridLayout>
#include <QLabel>
#include <QScrollArea>

#include <algorithm>
#include <utility>

namespace torchscope {
namespace {

QScrollArea* scrolled(QWidget* widget)
{
    auto* area = new QScrollArea;
    area->setWidget(widget);
    area->setWidgetResizable(true);
    area->setMinimumSize(320, 280);
    return area;
}

QString shapeText(const FloatTensor& maps)
{
    QStringList sizes;
    for (const int64_t s : maps.shape)
        sizes << QString::number(s);
    return "[" + sizes.join(", ") + "]";
}

} // namespace

LayerPairDialog::LayerPairDialog(QWidget* parent)
    : QDialog(parent)
    , header_(new QLabel)
    , titleA_(new QLabel)
    , titleB_(new QLabel)
    , gridA_(new ChannelGrid)
    , gridB_(new ChannelGrid)
    , barA_(new ColorBar)
    , barB_(new ColorBar)
{
    setWindowTitle(tr("Layer Maps"));
    header_->setWordWrap(true);
    auto* layout = new QGridLayout(this);
    layout->addWidget(header_, 0, 0, 1, 4);
    layout->addWidget(titleA_, 1, 0, 1, 2);
    layout->addWidget(titleB_, 1, 2, 1, 2);
    layout->addWidget(scrolled(gridA_), 2, 0);
    layout->addWidget(barA_, 2, 1);
    layout->addWidget(scrolled(gridB_), 2, 2);
    layout->addWidget(barB_, 2, 3);
    layout->setRowStretch(2, 1);
    layout->setColumnStretch(0, 1);
    layout->setColumnStretch(2, 1);
    resize(1000, 600);
}

void LayerPairDialog::showMaps(const LayerPairResult& maps, const QString& titleA, const QString& titleB)
{
    titleA_->setText(QString("<b>%1</b> %2 %3").arg(titleA, QString::fromStdString(maps.layerA), shapeText(maps.a)));
    titleB_->setText(QString("<b>%1</b> %2 %3").arg(titleB, QString::fromStdString(maps.layerB), shapeText(maps.b)));
    // Small enough tiles that a layer's channels make a grid, not a column of large tiles.
    for (auto [grid, side] : {std::pair{gridA_, &maps.a}, std::pair{gridB_, &maps.b}}) {
        const int64_t extent = side->shape.size() >= 2
            ? std::max(side->shape[side->shape.size() - 1], side->shape[side->shape.size() - 2])
            : 1;
        grid->setZoom(static_cast<int>(std::clamp<int64_t>(96 / std::max<int64_t>(1, extent), 1, 4)));
    }
    const QString image = QFileInfo(QString::fromStdString(maps.image)).fileName();
    if (maps.a.shape == maps.b.shape && !maps.a.values.empty()) {
        // One layer twice (two precisions, two checkpoints): one scale, so colours compare.
        const auto [loA, hiA] = std::minmax_element(maps.a.values.begin(), maps.a.values.end());
        const auto [loB, hiB] = std::minmax_element(maps.b.values.begin(), maps.b.values.end());
        const float low = std::min(*loA, *loB), high = std::max(*hiA, *hiB);
        gridA_->setMaps(maps.a, low, high, ColorMap::Viridis);
        gridB_->setMaps(maps.b, low, high, ColorMap::Viridis);
        header_->setText(tr("%1 — both sides on one scale").arg(image));
        barA_->hide();
        barB_->setScale(low, high, ColorMap::Viridis, tr("A and B"));
        return;
    }
    gridA_->setMaps(maps.a, Contrast::Shared, ColorMap::Viridis);
    gridB_->setMaps(maps.b, Contrast::Shared, ColorMap::Viridis);
    header_->setText(tr("%1 — each layer on its own scale (its min … max)").arg(image));
    barA_->show();
    barA_->setScale(gridA_->channelRange(0).low, gridA_->channelRange(0).high, ColorMap::Viridis, titleA);
    barB_->setScale(gridB_->channelRange(0).low, gridB_->channelRange(0).high, ColorMap::Viridis, titleB);
}

} // namespace torchscope
