#pragma once

#include <QAbstractListModel>
#include <QHash>
#include <QIcon>

namespace torchscope {

class Document;

// The Document's images as a list model: file name, thumbnail (made by the worker with the
// decoder the model saw), and as tool tip the full path with the top prediction or the reason
// the image could not be read. Rows are the Document's image order.
class ImageListModel : public QAbstractListModel {
    Q_OBJECT
public:
    explicit ImageListModel(Document* document, QObject* parent = nullptr);

    int rowCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role) const override;

private:
    void reset();
    void takeResults();

    Document* document_;
    // Kept across runs and removals by path, so rows do not wait for the next run.
    QHash<QString, QIcon> thumbnails_;
    QHash<QString, QString> predictions_; // "happy (98.1 %)"
};

} // namespace torchscope
