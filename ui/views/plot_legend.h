#pragma once

class QCustomPlot;

namespace torchscope {

// Moves the plot's legend out of the axis rect into a row of its own under it, where it never
// covers a bar or a curve. The row carries a stretching filler: a legend alone in a layout row
// caps the column at the legend's width, and the axis rect shrinks to 50 pixels.
void placeLegendBelow(QCustomPlot* plot);

} // namespace torchscope
