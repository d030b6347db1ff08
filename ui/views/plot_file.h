#pragma once

#include <QString>

class QCustomPlot;

namespace torchscope {

// Writes a plot to .png (at width x height, 0: its size on screen) or .pdf, atomically.
// Returns an error or "".
QString savePlotFile(QCustomPlot* plot, const QString& path, int width = 0, int height = 0);

} // namespace torchscope
