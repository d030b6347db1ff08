#include "views/image_strip.h"

#include "document/document.h"
#include "views/image_list_model.h"

#include <QContextMenuEvent>
#include <QKeyEvent>
#include <QMenu>

#include <algorithm>

namespace torchscope {

ImageStrip::ImageStrip(Document* document, QWidget* parent)
    : QListView(parent)
    , document_(document)
    , model_(new ImageListModel(document, this))
{
    setModel(model_);
    setViewMode(QListView::IconMode);
    setFlow(QListView::LeftToRight);
    setWrapping(true);
    setResizeMode(QListView::Adjust);
    setIconSize(QSize(72, 72));
    setGridSize(QSize(112, 104));
    setTextElideMode(Qt::ElideMiddle);
    setMovement(QListView::Static);
    setUniformItemSizes(true);
    setLayoutMode(QListView::Batched); // thousands of images lay out in steps, not in one stall
    setBatchSize(200);
    setSelectionMode(QAbstractItemView::ExtendedSelection);
    connect(selectionModel(), &QItemSelectionModel::currentChanged, this, [this](const QModelIndex& current) {
        if (current.isValid())
            document_->setSelectedImage(current.row());
    });
    const auto follow = [this] {
        const int row = document_->selectedImage();
        if (row >= 0 && row < model_->rowCount() && currentIndex().row() != row)
            setCurrentIndex(model_->index(row));
    };
    connect(document_, &Document::selectionChanged, this, follow);
    connect(model_, &QAbstractItemModel::modelReset, this, follow);
}

void ImageStrip::removeSelected()
{
    QStringList paths;
    const QStringList images = document_->images();
    for (const QModelIndex& index : selectionModel()->selectedIndexes())
        paths << images.value(index.row());
    if (paths.isEmpty() && currentIndex().isValid())
        paths << images.value(currentIndex().row());
    document_->removeImages(paths);
}

void ImageStrip::keyPressEvent(QKeyEvent* event)
{
    if (event->key() == Qt::Key_Delete || event->key() == Qt::Key_Backspace) {
        removeSelected();
        return;
    }
    QListView::keyPressEvent(event);
}

void ImageStrip::contextMenuEvent(QContextMenuEvent* event)
{
    QMenu menu(this);
    QAction* remove = menu.addAction(tr("Remove"), this, &ImageStrip::removeSelected);
    remove->setShortcut(QKeySequence::Delete);
    remove->setEnabled(currentIndex().isValid());
    menu.addAction(tr("Clear All Images"), document_, &Document::clearImages)->setEnabled(model_->rowCount() > 0);
    menu.exec(event->globalPos());
}

} // namespace torchscope
