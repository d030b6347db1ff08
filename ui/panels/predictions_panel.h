#pragma once

#include <QWidget>

class QLabel;
class QTableWidget;

namespace torchscope {

class Document;

// What the model says about the selected image, by the kind of its output: the top classes with
// probabilities, a segmentation's class map with the classes by share of the pixels, or a
// detector's boxes with labels and scores (labels from the input setup).
class PredictionsPanel : public QWidget {
    Q_OBJECT
public:
    explicit PredictionsPanel(Document* document, QWidget* parent = nullptr);
    QTableWidget* table() const { return table_; }
    QLabel* picture() const { return picture_; }
    QString caption() const;

public Q_SLOTS:
    void refresh();

protected:
    void resizeEvent(QResizeEvent* event) override;

private:
    void showPicture();
    QString missingResultText() const;

    Document* document_;
    QLabel* caption_;
    QLabel* picture_;
    QTableWidget* table_;
    QImage image_;
};

} // namespace torchscope
