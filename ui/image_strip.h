#pragma once

#include <QListWidget>

namespace torchscope {

class Document;

// Thumbnails of the loaded images; the current one is the image the views show. Images the
// model could not read are marked, with the reason as tooltip.
class ImageStrip : public QListWidget {
    Q_OBJECT
public:
    explicit ImageStrip(Document* document, QWidget* parent = nullptr);

public Q_SLOTS:
    void rebuild();
    void refreshResults();

private:
    Document* document_;
};

} // namespace torchscope
