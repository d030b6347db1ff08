#pragma once

// What the command line asks of the model it names (scripts/demo.sh: --select, --gradcam, --setup,
// --labels, --sweep): done once, for that model only. A model opened later starts clean: no
// selection, setup or Grad-CAM layer of the first one reaches it.

#include <QString>
#include <QStringList>

namespace torchscope {

class MainWindow;

struct StartupScript {
    QString select; // a module path to select in the tree
    QString gradCam; // a layer: the Grad-CAM tab for the selected image after the first run
    QString setup; // an input setup JSON (as torchscope-cli --preprocess)
    QString labels; // a labels file (one per line, or JSON)
    QStringList sweep; // layers ticked and swept by the Probes panel
    bool empty() const
    {
        return select.isEmpty() && gradCam.isEmpty() && setup.isEmpty() && labels.isEmpty() && sweep.isEmpty();
    }
};

// Connects the script to the window's next model opening (call before opening it); it is spent by
// that opening, whatever happens later.
void applyToNextModel(MainWindow& window, const StartupScript& script);

} // namespace torchscope
