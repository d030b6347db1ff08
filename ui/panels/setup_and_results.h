#pragma once

class QWidget;

namespace torchscope {

class JobSetupColumn;

// Lays out a tab as two columns in `tab`: its setup column on the left (its form scrolls when the
// window is short, its buttons stay in view), what it computed on the right taking the rest of the
// width; a splitter between them.
void layOutSetupAndResults(QWidget* tab, JobSetupColumn* setup, QWidget* results);

} // namespace torchscope
