#pragma once

#include <QString>

class QWidget;

namespace torchscope {

// The path with the extension of the chosen filter added when it has none of that filter's
// ("rec_stats" with "PyTorch (*.pt)" -> "rec_stats.pt"; "a.npz" with "NumPy (*.npz)" stays).
// A path whose extension belongs to another filter of `filters` keeps it: the user typed it.
QString withFilterExtension(const QString& path, const QString& selectedFilter, const QString& filters = {});

// QFileDialog::getSaveFileName that adds the chosen filter's extension (as desktop save dialogs
// do). "" when cancelled.
QString askSavePath(QWidget* parent, const QString& caption, const QString& suggested, const QString& filters);

} // namespace torchscope
