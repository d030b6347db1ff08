#pragma once

#include <QListView>

namespace torchscope {

class Document;
class ImageListModel;

// The loaded images as a grid of thumbnails that scales to thousands (a view over
// ImageListModel). The current image is the one the views show; arrow keys move through them,
// Delete (or the context menu) removes the selected ones; unreadable images are marked.
class ImageStrip : public QListView {
    Q_OBJECT
public:
    explicit ImageStrip(Document* document, QWidget* parent = nullptr);

    ImageListModel* imageModel() const { return model_; }
    void removeSelected();

protected:
    void keyPressEvent(QKeyEvent* event) override;
    void contextMenuEvent(QContextMenuEvent* event) override;

private:
    Document* document_;
    ImageListModel* model_;
};

} // namespace torchscope
