#include "image_strip.h"

#include "document.h"

#include <QFileInfo>
#include <QImage>
#include <QStyle>

#include <algorithm>

namespace torchscope {

ImageStrip::ImageStrip(Document* document, QWidget* parent)
    : QListWidget(parent)
    , document_(document)
{
    setViewMode(QListView::IconMode);
    setFlow(QListView::LeftToRight);
    setWrapping(false);
    setIconSize(QSize(72, 72));
    setMovement(QListView::Static);
    setUniformItemSizes(true);
    setMaximumHeight(130);
    Document* doc = document_;
    connect(doc, &Document::imagesChanged, this, &ImageStrip::rebuild);
    connect(doc, &Document::resultsChanged, this, &ImageStrip::refreshResults);
    connect(this, &QListWidget::currentRowChanged, doc, [doc](int row) {
        if (row >= 0)
            doc->setSelectedImage(row);
    });
    connect(doc, &Document::selectionChanged, this, [this, doc] {
        if (currentRow() != doc->selectedImage() && doc->selectedImage() < count())
            setCurrentRow(doc->selectedImage());
    });
}

void ImageStrip::rebuild()
{
    Document* document = document_;
    const QSignalBlocker block(this);
    clear();
    for (const auto& path : document->images()) {
        auto* item = new QListWidgetItem(style()->standardIcon(QStyle::SP_FileIcon), QFileInfo(path).fileName(), this);
        item->setToolTip(path);
    }
    setCurrentRow(std::min(document->selectedImage(), count() - 1));
}

void ImageStrip::refreshResults()
{
    Document* document = document_;
    const auto snapshot = document->snapshot();
    if (!snapshot)
        return;
    for (int row = 0; row < count(); ++row) {
        QListWidgetItem* it = item(row);
        const std::string path = document->images().value(row).toStdString();
        for (const auto& [failed, why] : snapshot->failures)
            if (failed == path) {
                it->setIcon(style()->standardIcon(QStyle::SP_MessageBoxWarning));
                it->setToolTip(QString::fromStdString(why));
            }
        for (const auto& image : snapshot->images) {
            if (image.path != path || image.picture.empty())
                continue;
            // The thumbnail from the decoded picture: the same decoder the model saw.
            const int h = int(image.picture.shape[0]), w = int(image.picture.shape[1]);
            QImage picture(w, h, QImage::Format_RGB888);
            for (int y = 0; y < h; ++y)
                for (int x = 0; x < w * 3; ++x)
                    picture.scanLine(y)[x] = static_cast<uchar>(
                        std::clamp(image.picture.values[static_cast<size_t>(y) * w * 3 + x], 0.f, 1.f) * 255.f + 0.5f);
            it->setIcon(QPixmap::fromImage(picture.scaled(iconSize(), Qt::KeepAspectRatio, Qt::SmoothTransformation)));
            QString tip = QString::fromStdString(path);
            if (!image.predictions.empty())
                tip += "\n" + QString::fromStdString(image.predictions[0].label)
                    + QString(" (%1 %)").arg(100.0 * image.predictions[0].probability, 0, 'f', 1);
            it->setToolTip(tip);
        }
    }
}

} // namespace torchscope
