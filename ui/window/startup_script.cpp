#include "window/startup_script.h"

#include "document/document.h"
#include "jobs/run_controller.h"
#include "model/model_setup.h"
#include "panels/probes_panel.h"
#include "tree/module_tree_model.h"
#include "tree/module_tree_panel.h"
#include "views/grad_cam_view.h"
#include "window/main_window.h"
#include "window/setup_actions.h"

namespace torchscope {

void applyToNextModel(MainWindow& window, const StartupScript& script)
{
    if (script.empty())
        return;
    if (!script.setup.isEmpty() || !script.labels.isEmpty())
        window.setupActions()->setAutoOpen(false);
    // Parent of every connection below: deleted once the model has opened, which disconnects them.
    auto* spent = new QObject(&window);
    QObject::connect(window.controller(), &RunController::modelOpened, spent, [&window, script, spent] {
        spent->deleteLater();
        Document* document = window.document();
        if (!script.setup.isEmpty() || !script.labels.isEmpty()) {
            // After the window's own choice (stored, remembered or default): the command line wins.
            try {
                ModelSetup setup = document->setup();
                if (!script.setup.isEmpty())
                    setup = readSetupSpec(script.setup.toStdString(), setup);
                if (!script.labels.isEmpty())
                    setup.labels = readLabelsFile(script.labels.toStdString());
                document->setSetup(setup, QObject::tr("from the command line"));
                window.setupActions()->announce(QObject::tr("from the command line"));
            } catch (const std::exception& e) {
                window.reportError(QObject::tr("Error in Input Setup"), QString::fromStdString(e.what()));
            }
        }
        if (!script.select.isEmpty())
            window.treePanel()->selectPath(script.select);
        if (!script.sweep.isEmpty()) {
            ModuleTreeModel* tree = window.treePanel()->model();
            for (const auto& layer : script.sweep)
                tree->setData(tree->indexOfPath(layer), Qt::Checked, Qt::CheckStateRole);
            window.showCentralTab(MainWindow::CentralTab::Probes);
            window.probesPanel()->train(script.sweep);
        }
        if (script.gradCam.isEmpty())
            return;
        // Grad-CAM of the first run's selected image, if that run is still of this model.
        const QString model = document->modelPath();
        auto* firstRun = new QObject(&window);
        QObject::connect(document, &Document::resultsChanged, firstRun, [&window, script, model, firstRun] {
            if (!window.document()->snapshot())
                return;
            firstRun->deleteLater();
            if (window.document()->modelPath() != model)
                return;
            window.showCentralTab(MainWindow::CentralTab::Attribution);
            window.gradCamView()->setLayer(script.gradCam);
            window.gradCamView()->compute();
        });
        QObject::connect(window.controller(), &RunController::modelOpened, firstRun, &QObject::deleteLater);
    });
}

} // namespace torchscope
