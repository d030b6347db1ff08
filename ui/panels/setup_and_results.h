#pragma once

class QWidget;

namespace torchscope {

// Lays out a tab as two columns in `tab`: its setup on the left (it scrolls when the window is
// short), what it computed on the right taking the rest of the width; a splitter between them.
void layOutSetupAndResults(QWidget* tab, QWidget* setup, QWidget* results);

} // namespace torchscope
