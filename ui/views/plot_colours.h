#pragma once

#include <QColor>
#include <QList>

namespace torchscope {

// The plots' series colours: matplotlib's first eight (tab10), so a plot reads as the notebook's would.
inline QColor seriesColour(int index)
{
    static const QList<QColor> colours{QColor(31, 119, 180), QColor(255, 127, 14), QColor(44, 160, 44),
        QColor(214, 39, 40), QColor(148, 103, 189), QColor(140, 86, 75), QColor(227, 119, 194), QColor(127, 127, 127)};
    return colours[index % colours.size()];
}

} // namespace torchscope
