// torchscope: the workbench window. With no files it opens the bundled demo model and images.
// --screenshot FILE.png waits for the first run (and the --sweep, when asked for), writes the
// window to FILE.png and exits. --sweep trains a probe per layer on --probe-data once the model
// is open; --sweep-plot writes its accuracy-by-layer plot. --gradcam LAYER shows the Grad-CAM tab
// for the selected image once the first run is in.
#include "common/heap_tuning.h"
#include "dialogs/channel_page.h"
#include "document/document.h"
#include "gui_options.h"
#include "jobs/run_controller.h"
#include "panels/compare_panel.h"
#include "panels/probes_panel.h"
#include "panels/recorders_panel.h"
#include "tree/module_tree_model.h"
#include "tree/module_tree_panel.h"
#include "views/grad_cam_view.h"
#include "window/main_window.h"
#include "window/startup_script.h"

#include <QApplication>
#include <QCoreApplication>
#include <QLineEdit>
#include <QPointer>
#include <QTimer>

#include <cstdio>
#include <memory>

int main(int argc, char** argv)
{
    torchscope::tuneHeapForTensors(); // activations reuse freed memory instead of faulting in anew
    GuiOptions options;
    {
        // Parsed before the window system is reached: --help, --version and usage errors work
        // without a display.
        const QCoreApplication parsing(argc, argv);
        QCoreApplication::setApplicationVersion(TORCHSCOPE_VERSION);
        options = parseGuiOptions(QCoreApplication::arguments());
    }
    if (!options.error.isEmpty()) {
        std::fprintf(stderr, "torchscope: %s\nRun 'torchscope --help' for the options.\n", qPrintable(options.error));
        return 2;
    }
    if (!options.helpText.isEmpty() || !options.versionText.isEmpty()) {
        std::fputs(qPrintable(options.helpText.isEmpty() ? options.versionText : options.helpText), stdout);
        return 0;
    }
    QApplication app(argc, argv);
    QApplication::setOrganizationName("TorchScope");
    QApplication::setApplicationName("TorchScope");
    QApplication::setApplicationVersion(TORCHSCOPE_VERSION);

    torchscope::MainWindow window;
    const bool screenshot = !options.screenshot.isEmpty();
    window.setInteractive(!screenshot);
    window.show();
    // --select, --gradcam, --setup, --labels, --sweep: for the model given here, not for later ones.
    torchscope::StartupScript script;
    script.select = options.select;
    script.gradCam = options.gradCam;
    script.setup = options.setup;
    script.labels = options.labels;
    script.sweep = options.sweep;
    torchscope::applyToNextModel(window, script);
    window.openFiles(options.files);

    torchscope::ProbesPanel* probes = window.probesPanel();
    if (!options.probeData.isEmpty())
        probes->setDataFolder(options.probeData);
    const bool sweeping = !options.sweep.isEmpty();
    if (sweeping) {
        QObject::connect(probes, &torchscope::ProbesPanel::finished, &window, [&options, probes] {
            if (options.sweepPlot.isEmpty())
                return;
            const QString error = probes->saveSweepPlot(options.sweepPlot);
            std::fprintf(stderr, "torchscope: %s %s\n", error.isEmpty() ? "wrote" : "could not write",
                qPrintable(options.sweepPlot));
        });
    }
    const bool gradCam = !options.gradCam.isEmpty();
    const bool comparing = !options.compareData.isEmpty();
    if (comparing) {
        auto* once = new QObject(&window);
        QObject::connect(window.controller(), &torchscope::RunController::modelOpened, once, [&window, &options, once] {
            once->deleteLater();
            window.showCentralTab(torchscope::MainWindow::CentralTab::Compare);
            window.comparePanel()->setUp(options.compareMode, options.compareWith,
                options.compareLayers.split(',', Qt::SkipEmptyParts).join(' '), options.compareData);
            window.comparePanel()->start();
        });
    }
    const bool recording = !options.record.isEmpty();
    if (recording) {
        auto* once = new QObject(&window);
        QObject::connect(window.controller(), &torchscope::RunController::modelOpened, once, [&window, &options, once] {
            once->deleteLater();
            window.showCentralTab(torchscope::MainWindow::CentralTab::Recorders);
            window.recordersPanel()->folderField()->setText(options.record);
            window.recordersPanel()->start();
        });
    }
    const bool channelPage = !options.channelPageLayer.isEmpty();
    QPointer<torchscope::ChannelPage> page;
    const auto write = [&window, &options, &page](int code) {
        QApplication::processEvents();
        QWidget* shown = page ? static_cast<QWidget*>(page.data()) : &window;
        const bool saved = shown->grab().save(options.screenshot);
        std::fprintf(
            stderr, "torchscope: %s %s\n", saved ? "wrote" : "could not write", qPrintable(options.screenshot));
        QApplication::exit(saved ? code : 1);
    };
    if (channelPage) {
        auto* once = new QObject(&window);
        auto open = [&window, &options, &page, once, screenshot, write] {
            once->deleteLater();
            page = window.openChannelPage(options.channelPageLayer, options.channelPageChannel);
            if (!screenshot)
                return;
            if (!page) {
                std::fprintf(stderr, "torchscope: no model to open a channel page for\n");
                QApplication::exit(1);
                return;
            }
            // The worker's signals are queued: connected here, none is missed. A failure reaches the
            // window's errorReported, which ends the run below.
            QObject::connect(page, &torchscope::ChannelPage::optimised, page,
                [write, p = page.data()] { QTimer::singleShot(300, p, [write] { write(0); }); });
        };
        if (recording)
            QObject::connect(window.recordersPanel(), &torchscope::RecordersPanel::finished, once, open);
        else
            QObject::connect(window.controller(), &torchscope::RunController::modelOpened, once, open);
    }
    if (screenshot) {
        if (channelPage) {
            // Written when the page's image is in (connected where the page opens).
        } else if (comparing) {
            QObject::connect(window.comparePanel(), &torchscope::ComparePanel::finished, &window,
                [write, &window] { QTimer::singleShot(500, &window, [write] { write(0); }); });
        } else if (gradCam) {
            QObject::connect(window.gradCamView(), &torchscope::GradCamView::finished, &window,
                [write, &window] { QTimer::singleShot(300, &window, [write] { write(0); }); });
        } else if (sweeping) {
            // Both the sweep and the images' run, whichever ends last, so that neither shows half done.
            auto probesDone = std::make_shared<bool>(false);
            auto writeWhenBoth = [write, &window, probesDone] {
                if (*probesDone && window.document()->snapshot() && !window.controller()->isBusy())
                    QTimer::singleShot(500, &window, [write] { write(0); });
            };
            QObject::connect(probes, &torchscope::ProbesPanel::finished, &window, [writeWhenBoth, probesDone] {
                *probesDone = true;
                writeWhenBoth();
            });
            QObject::connect(window.document(), &torchscope::Document::resultsChanged, &window, writeWhenBoth);
            QObject::connect(
                probes, &torchscope::ProbesPanel::failed, &window, [write](const QString&, const QString& message) {
                    std::fprintf(stderr, "torchscope: %s\n", qPrintable(message));
                    write(1);
                });
        } else {
            QObject::connect(window.document(), &torchscope::Document::resultsChanged, &window, [write, &window] {
                if (window.document()->snapshot())
                    QTimer::singleShot(300, &window, [write] { write(0); }); // let the views lay out
            });
        }
        // Any error the window reports (opening, running, the setup, Grad-CAM) ends the screenshot run.
        QObject::connect(&window, &torchscope::MainWindow::errorReported, &window,
            [write](const QString& title, const QString& message) {
                std::fprintf(stderr, "torchscope: %s: %s\n", qPrintable(title), qPrintable(message));
                write(1);
            });
        QTimer::singleShot(180000, &window, [write] { write(1); });
    }
    return QApplication::exec();
}
