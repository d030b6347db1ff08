#include "panels/predictions_panel.h"

#include "document/document.h"
#include "views/prediction_picture.h"

#include <QFileInfo>
#include <QHeaderView>
#include <QLabel>
#include <QProgressBar>
#include <QTableWidget>
#include <QVBoxLayout>

namespace torchscope {
namespace {

// The output's other elements beside the scores, a line each: "[1]: 34.21" (a face network's age
// beside its gender), "boxes: 0.12, 0.4, 0.9, 0.77".
QString readingsText(const std::vector<OutputReading>& readings)
{
    QStringList lines;
    for (const auto& reading : readings) {
        QStringList values;
        for (const double v : reading.values)
            values << QString::number(v, 'g', 4);
        lines << QString("%1: %2").arg(QString::fromStdString(reading.element), values.join(", "));
    }
    return lines.isEmpty() ? QString() : QObject::tr("Also in the output:\n%1").arg(lines.join('\n'));
}

} // namespace

PredictionsPanel::PredictionsPanel(Document* document, QWidget* parent)
    : QWidget(parent)
    , document_(document)
    , caption_(new QLabel)
    , picture_(new QLabel)
    , table_(new QTableWidget(0, 3))
{
    table_->setHorizontalHeaderLabels({tr("Class"), tr("Label"), tr("Probability")});
    // The label takes the room; the class number and the percentage keep theirs in a narrow dock.
    table_->horizontalHeader()->setSectionResizeMode(0, QHeaderView::ResizeToContents);
    table_->horizontalHeader()->setSectionResizeMode(1, QHeaderView::Stretch);
    table_->horizontalHeader()->setSectionResizeMode(2, QHeaderView::Fixed);
    table_->horizontalHeader()->resizeSection(2, 86);
    table_->setTextElideMode(Qt::ElideMiddle);
    table_->verticalHeader()->hide();
    table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    caption_->setWordWrap(true);
    picture_->setAlignment(Qt::AlignCenter);
    picture_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Ignored);
    picture_->setMinimumHeight(120);
    picture_->hide();
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(caption_);
    layout->addWidget(picture_, 2);
    layout->addWidget(table_, 1);
    connect(document_, &Document::resultsChanged, this, &PredictionsPanel::refresh);
    connect(document_, &Document::selectionChanged, this, &PredictionsPanel::refresh);
    refresh();
}

void PredictionsPanel::refresh()
{
    const ImageResult* result = document_->selectedResult();
    table_->setRowCount(0);
    image_ = QImage();
    picture_->hide();
    if (!result) {
        caption_->setText(missingResultText());
        return;
    }
    const ImagePrediction& p = result->prediction;
    if (!document_->truncation().isEmpty()) {
        caption_->setText(tr("Truncated at %1: the model's output is not computed.").arg(document_->truncation()));
        return;
    }
    const QString file = QFileInfo(QString::fromStdString(result->path)).fileName();
    const QString from
        = p.element.empty() ? QString() : tr(" (output element '%1')").arg(QString::fromStdString(p.element));
    QString column = tr("Probability");
    switch (p.kind) {
    case OutputKind::Classes:
        caption_->setText(file + from);
        break;
    case OutputKind::Segmentation:
        caption_->setText(tr("%1: segmentation%2, classes by share of the pixels").arg(file, from));
        column = tr("Pixels");
        image_ = classMapPicture(result->inputPicture, p.classMap);
        break;
    case OutputKind::Detection:
        caption_->setText(p.detections.empty()
                ? tr("%1: nothing detected%2").arg(file, from)
                : tr("%1: %n detection(s)%2", nullptr, int(p.detections.size())).arg(file, from));
        column = tr("Score");
        image_ = detectionPicture(result->inputPicture, p.detections, 2.0);
        break;
    case OutputKind::Other:
        caption_->setText(tr("The model's output holds no class scores ([1, classes]), segmentation or detections: "
                             "choose the output element with the scores in Model > Input Setup…"));
        if (const QString others = readingsText(p.others); !others.isEmpty())
            caption_->setText(caption_->text() + "\n" + others);
        return;
    }
    if (const QString others = readingsText(p.others); !others.isEmpty())
        caption_->setText(caption_->text() + "\n" + others);
    table_->setHorizontalHeaderLabels({tr("Class"), tr("Label"), column});
    // Without labels each label would be "class N" beside N: the column goes, which a narrow dock
    // needs (at 1280 × 800 it showed "…3").
    const bool unlabelled = document_->setup().labels.empty();
    table_->setColumnHidden(1, unlabelled);
    table_->horizontalHeader()->setSectionResizeMode(2, unlabelled ? QHeaderView::Stretch : QHeaderView::Fixed);
    if (!unlabelled)
        table_->horizontalHeader()->resizeSection(2, 86);
    table_->setRowCount(static_cast<int>(p.top.size()));
    for (int row = 0; row < table_->rowCount(); ++row) {
        const Prediction& top = p.top[static_cast<size_t>(row)];
        auto* index = new QTableWidgetItem(QString::number(top.index));
        if (p.kind != OutputKind::Classes)
            index->setData(Qt::DecorationRole, classColour(top.index));
        table_->setItem(row, 0, index);
        table_->setItem(row, 1, new QTableWidgetItem(QString::fromStdString(top.label)));
        auto* bar = new QProgressBar;
        bar->setRange(0, 1000);
        bar->setValue(static_cast<int>(top.probability * 1000));
        bar->setFormat(p.kind == OutputKind::Detection ? QString::number(top.probability, 'f', 3)
                                                       : QString::number(100.0 * top.probability, 'f', 1) + " %");
        table_->setCellWidget(row, 2, bar);
    }
    showPicture();
}

QString PredictionsPanel::caption() const
{
    return caption_->text();
}

// What is true now of an image without a result: no model, no images, still running, failed.
QString PredictionsPanel::missingResultText() const
{
    if (!document_->hasModel())
        return tr("Open a model (File > Open Model…) to see predictions.");
    if (document_->images().isEmpty())
        return tr("Drop images on the window to see predictions.");
    if (document_->isRunning())
        return tr("Running image %1 of %2… this image's predictions appear when it has run.")
            .arg(std::min(document_->runDone() + 1, document_->runTotal()))
            .arg(document_->runTotal());
    if (const QString why = document_->imageFailure(document_->selectedImage()); !why.isEmpty())
        return tr("This image could not be run: %1").arg(why.section('\n', 0, 0));
    return tr("This image has not run yet.");
}

void PredictionsPanel::showPicture()
{
    if (image_.isNull())
        return;
    picture_->show();
    const QSize room = picture_->size().expandedTo(QSize(120, 120));
    picture_->setPixmap(QPixmap::fromImage(image_.scaled(room, Qt::KeepAspectRatio, Qt::SmoothTransformation)));
}

void PredictionsPanel::resizeEvent(QResizeEvent* event)
{
    QWidget::resizeEvent(event);
    showPicture();
}

} // namespace torchscope
