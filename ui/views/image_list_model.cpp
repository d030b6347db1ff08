#include "views/image_list_model.h"

#include "document/document.h"

#include <QApplication>
#include <QFileInfo>
#include <QImage>
#include <QPixmap>
#include <QSet>
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
        if (!document_->imageFailure(index.row()).isEmpty())
            return QApplication::style()->standardIcon(QStyle::SP_MessageBoxWarning);
        return thumbnails_.value(path, QApplication::style()->standardIcon(QStyle::SP_FileIcon));
    case Qt::ToolTipRole: {
        QString tip = path;
        if (const QString why = document_->imageFailure(index.row()); !why.isEmpty())
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
    const QStringList list = document_->images();
    const QSet<QString> images(list.begin(), list.end());
    thumbnails_.removeIf([&](QHash<QString, QIcon>::iterator it) { return !images.contains(it.key()); });
    predictions_.removeIf([&](QHash<QString, QString>::iterator it) { return !images.contains(it.key()); });
    endResetModel();
}

void ImageListModel::takeResults()
{
    const auto snapshot = document_->snapshot();
    if (!snapshot)
        return;
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
