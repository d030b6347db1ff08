#include "predictions_panel.h"

#include "document.h"

#include <QFileInfo>
#include <QHeaderView>
#include <QLabel>
#include <QProgressBar>
#include <QTableWidget>
#include <QVBoxLayout>

namespace torchscope {

PredictionsPanel::PredictionsPanel(Document* document, QWidget* parent)
    : QWidget(parent)
    , document_(document)
    , caption_(new QLabel)
    , table_(new QTableWidget(0, 3))
{
    table_->setHorizontalHeaderLabels({tr("Class"), tr("Label"), tr("Probability")});
    table_->horizontalHeader()->setSectionResizeMode(1, QHeaderView::Stretch);
    table_->verticalHeader()->hide();
    table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    caption_->setWordWrap(true);
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(caption_);
    layout->addWidget(table_);
    connect(document_, &Document::resultsChanged, this, &PredictionsPanel::refresh);
    connect(document_, &Document::selectionChanged, this, &PredictionsPanel::refresh);
    refresh();
}

void PredictionsPanel::refresh()
{
    const ImageResult* result = document_->selectedResult();
    table_->setRowCount(0);
    if (!result) {
        caption_->setText(tr("Drop images on the window to see predictions."));
        return;
    }
    if (result->predictions.empty()) {
        caption_->setText(document_->truncation().isEmpty()
                ? tr("The model's output is not a [1, classes] score vector.")
                : tr("Truncated at %1: no class scores.").arg(document_->truncation()));
        return;
    }
    caption_->setText(QFileInfo(QString::fromStdString(result->path)).fileName());
    table_->setRowCount(static_cast<int>(result->predictions.size()));
    for (int row = 0; row < table_->rowCount(); ++row) {
        const Prediction& p = result->predictions[static_cast<size_t>(row)];
        table_->setItem(row, 0, new QTableWidgetItem(QString::number(p.index)));
        table_->setItem(row, 1, new QTableWidgetItem(QString::fromStdString(p.label)));
        auto* bar = new QProgressBar;
        bar->setRange(0, 1000);
        bar->setValue(static_cast<int>(p.probability * 1000));
        bar->setFormat(QString::number(100.0 * p.probability, 'f', 1) + " %");
        table_->setCellWidget(row, 2, bar);
    }
}

} // namespace torchscope
