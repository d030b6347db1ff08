#pragma once

#include <QWidget>

class QLabel;
class QTableWidget;

namespace torchscope {

class Document;

// Top-k classes with probabilities for the selected image (labels from the model card).
class PredictionsPanel : public QWidget {
    Q_OBJECT
public:
    explicit PredictionsPanel(Document* document, QWidget* parent = nullptr);
    QTableWidget* table() const { return table_; }

public Q_SLOTS:
    void refresh();

private:
    Document* document_;
    QLabel* caption_;
    QTableWidget* table_;
};

} // namespace torchscope
