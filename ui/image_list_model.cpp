#include "image_list_model.h"

#include "document.h"

#include <QApplication>
#include <QFileInfo>
#include <QImage>
#include <QPixmap>
#include <QStyle>

namespace torchscope {

ImageListModel::ImageListModel(Document* document, QObject* parent)
    : QAbstractListModel(parent)
    , document_(document)
{
    connect(document_, &Document::imagesChanged, this, &ImageListModel::reset);
    connect(document_, &Document::resultsChanged, this, &ImageListModel::takeResults);
}

int ImageListModel::rowCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : static_cast<int>(document_->images().size());
}

QString ImageListModel::failure(int row) const
{
    const QStringList images = document_->images();
    return row >= 0 && row < images.size() ? failures_.value(images[row]) : QString();
}

QVariant ImageListModel::data(const QModelIndex& index, int role) const
{
    const QStringList images = document_->images();
    if (!index.isValid() || index.row() >= images.size())
        return {};
    const QString& path = images[index.row()];
    switch (role) {
    case Qt::DisplayRole:
        return QFileInfo(path).fileName();
    case Qt::DecorationRole:
        if (failures_.contains(path))
            return QApplication::style()->standardIcon(QStyle::SP_MessageBoxWarning);
        return thumbnails_.value(path, QApplication::style()->standardIcon(QStyle::SP_FileIcon));
    case Qt::ToolTipRole: {
        QString tip = path;
        if (const QString why = failures_.value(path); !why.isEmpty())
            tip += tr("\nCannot be read: %1").arg(why);
        else if (const QString top = predictions_.value(path); !top.isEmpty())
            tip += "\n" + top;
        return tip;
    }
    default:
        return {};
    }
}

void ImageListModel::reset()
{
    beginResetModel();
    // Thumbnails of images still listed stay: a removal or an addition does not wait for a run.
    const QStringList images = document_->images();
    for (auto* cache : {&failures_, &predictions_})
        for (auto it = cache->begin(); it != cache->end();)
            it = images.contains(it.key()) ? std::next(it) : cache->erase(it);
    for (auto it = thumbnails_.begin(); it != thumbnails_.end();)
        it = images.contains(it.key()) ? std::next(it) : thumbnails_.erase(it);
    endResetModel();
}

void ImageListModel::takeResults()
{
    const auto snapshot = document_->snapshot();
    if (!snapshot)
        return;
    failures_.clear();
    for (const auto& [path, why] : snapshot->failures)
        failures_[QString::fromStdString(path)] = QString::fromStdString(why);
    for (const auto& image : snapshot->images) {
        const QString path = QString::fromStdString(image.path);
        if (!image.thumbnail.empty()) {
            const QImage picture(image.thumbnail.data(), image.thumbnailWidth, image.thumbnailHeight,
                image.thumbnailWidth * 3, QImage::Format_RGB888);
            thumbnails_[path] = QIcon(QPixmap::fromImage(picture)); // a deep copy: the snapshot may go
        }
        if (!image.prediction.top.empty())
            predictions_[path] = QString("%1 (%2 %)")
                                     .arg(QString::fromStdString(image.prediction.top[0].label))
                                     .arg(100.0 * image.prediction.top[0].probability, 0, 'f', 1);
    }
    if (rowCount() > 0)
        Q_EMIT dataChanged(index(0), index(rowCount() - 1));
}

} // namespace torchscope
