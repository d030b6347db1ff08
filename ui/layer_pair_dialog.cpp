#include "layer_pair_dialog.h"

#include "channel_grid.h"

#include <QFileInfo>
#include <QGridLayout>
#include <QLabel>
#include <QScrollArea>

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
{
    setWindowTitle(tr("Layer Maps"));
    header_->setWordWrap(true);
    auto* layout = new QGridLayout(this);
    layout->addWidget(header_, 0, 0, 1, 2);
    layout->addWidget(titleA_, 1, 0);
    layout->addWidget(titleB_, 1, 1);
    layout->addWidget(scrolled(gridA_), 2, 0);
    layout->addWidget(scrolled(gridB_), 2, 1);
    layout->setRowStretch(2, 1);
    resize(900, 560);
}

void LayerPairDialog::showMaps(const LayerPairMaps& maps, const QString& titleA, const QString& titleB)
{
    header_->setText(tr("%1 — each side on its own scale: one min…max per layer")
                         .arg(QFileInfo(QString::fromStdString(maps.image)).fileName()));
    titleA_->setText(QString("<b>%1</b> %2 %3").arg(titleA, QString::fromStdString(maps.layerA), shapeText(maps.a)));
    titleB_->setText(QString("<b>%1</b> %2 %3").arg(titleB, QString::fromStdString(maps.layerB), shapeText(maps.b)));
    gridA_->setMaps(maps.a, Contrast::Shared, ColorMap::Viridis);
    gridB_->setMaps(maps.b, Contrast::Shared, ColorMap::Viridis);
}

} // namespace torchscope
