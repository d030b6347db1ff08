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
    const auto snapshot = document_->snapshot();
    if (!snapshot)
        return;
    // Rows are in the Document's image order.
    const QStringList images = document_->images();
    auto itemOf = [&](const std::string& path) { return item(int(images.indexOf(QString::fromStdString(path)))); };
    for (const auto& [path, why] : snapshot->failures)
        if (QListWidgetItem* it = itemOf(path)) {
            it->setIcon(style()->standardIcon(QStyle::SP_MessageBoxWarning));
            it->setToolTip(QString::fromStdString(path) + "\n" + QString::fromStdString(why));
        }
    for (const auto& image : snapshot->images) {
        QListWidgetItem* it = itemOf(image.path);
        if (!it || image.thumbnail.empty())
            continue;
        // The worker made the thumbnail, with the decoder the model saw; here it is only wrapped.
        const QImage picture(image.thumbnail.data(), image.thumbnailWidth, image.thumbnailHeight,
            image.thumbnailWidth * 3, QImage::Format_RGB888);
        it->setIcon(QPixmap::fromImage(picture));
        QString tip = QString::fromStdString(image.path);
        if (!image.prediction.top.empty())
            tip += "\n" + QString::fromStdString(image.prediction.top[0].label)
                + QString(" (%1 %)").arg(100.0 * image.prediction.top[0].probability, 0, 'f', 1);
        it->setToolTip(tip);
    }
}

} // namespace torchscope
