#pragma once

class QCustomPlot;
class QString;

namespace torchscope {

// A plot with nothing to show says so: no graphs, no items, plain axes over 0..1 without tick
// labels (an empty axis otherwise reads "8·10^-1"), the axes' titles kept, and a grey note in the
// middle, in lines of at most 44 characters broken between words. Nothing of a previous result
// stays: a plot emptied when a model opens shows none of the last model's layers.
void showEmptyPlot(QCustomPlot* plot, const QString& note);
// Before drawing a result into a plot that was empty: the tick labels back, the note gone.
void prepareFilledPlot(QCustomPlot* plot);

} // namespace torchscope
