#include "views/empty_plot.h"

#include "views/qcustomplot_include.h"

#include <QString>
#include <QStringList>

namespace torchscope {

namespace {

// A note's lines of at most NoteLine characters, broken between words (its own line breaks kept): a
// plot in a tab's results column is about 330 pixels wide in a 1280-pixel window, and the note,
// which QCustomPlot does not wrap, was cut at both ends there.
constexpr int NoteLine = 44;

QString wrapped(const QString& note)
{
    QStringList lines;
    for (const QString& paragraph : note.split('\n')) {
        QString line;
        for (const QString& word : paragraph.split(' ', Qt::SkipEmptyParts)) {
            if (!line.isEmpty() && line.size() + 1 + word.size() > NoteLine) {
                lines << line;
                line.clear();
            }
            line += (line.isEmpty() ? QString() : QString(" ")) + word;
        }
        lines << line;
    }
    return lines.join('\n');
}

} // namespace

void showEmptyPlot(QCustomPlot* plot, const QString& note)
{
    plot->clearPlottables();
    plot->clearItems();
    for (QCPAxis* axis : {plot->xAxis, plot->yAxis}) {
        axis->setTicker(QSharedPointer<QCPAxisTicker>::create());
        axis->setScaleType(QCPAxis::stLinear);
        axis->setRange(0, 1);
        axis->setTickLabels(false);
    }
    if (plot->legend)
        plot->legend->setVisible(false);
    auto* text = new QCPItemText(plot);
    text->position->setType(QCPItemPosition::ptAxisRectRatio);
    text->position->setCoords(0.5, 0.5);
    text->setText(wrapped(note));
    text->setColor(Qt::gray);
    plot->replot(QCustomPlot::rpQueuedReplot);
}

void prepareFilledPlot(QCustomPlot* plot)
{
    plot->clearItems();
    plot->xAxis->setTickLabels(true);
    plot->yAxis->setTickLabels(true);
}

} // namespace torchscope
