// The workbench end to end, offscreen: open a model, drop images, tick a layer, truncate,
// export and read the files back (from Python), save and reopen a session, bad inputs.
#include "dialogs/channel_page.h"
#include "dialogs/save_dialog.h"
#include "document/document.h"
#include "export/pt_export.h"
#include "gui_test_support.h"
#include "jobs/job_handle.h"
#include "jobs/job_runner.h"
#include "jobs/run_controller.h"
#include "panels/compare_panel.h"
#include "panels/job_setup_column.h"
#include "panels/log_dock.h"
#include "panels/predictions_panel.h"
#include "panels/probes_panel.h"
#include "panels/recorders_panel.h"
#include "panels/statistics_panel.h"
#include "session/session_file.h"
#include "tree/module_tree_model.h"
#include "tree/module_tree_panel.h"
#include "views/activation_view.h"
#include "views/channel_grid.h"
#include "views/color_bar.h"
#include "views/compare_plots.h"
#include "views/grad_cam_view.h"
#include "views/image_strip.h"
#include "views/qcustomplot_include.h"
#include "views/statistics_plots.h"
#include "window/export_actions.h"
#include "window/main_window.h"
#include "window/startup_script.h"
#include <ATen/ATen.h>

#include <QAction>
#include <QComboBox>
#include <QDockWidget>
#include <QFile>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QMimeData>
#include <QPlainTextEdit>
#include <QPointer>
#include <QPushButton>
#include <QScrollBar>
#include <QStandardPaths>
#include <QTabWidget>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>

#include <sys/stat.h>

using namespace torchscope;

namespace {

constexpr int Timeout = 60000;

bool waitForRun(MainWindow& window)
{
    QSignalSpy done(window.controller(), &RunController::runCompleted);
    return done.wait(Timeout);
}

// Records the labelled fixture folder in the Recorders tab; the panel keeps the result.
void recordLabelledFolder(MainWindow& window, const QString& grabs)
{
    RecordersPanel* panel = window.recordersPanel();
    panel->folderField()->setText(test::fixture("labelled"));
    panel->grabsField()->setText(grabs);
    QSignalSpy finished(panel, &RecordersPanel::finished);
    panel->start();
    QVERIFY(finished.wait(Timeout));
}

QMimeData* urlsOf(const QStringList& paths)
{
    auto* mime = new QMimeData;
    QList<QUrl> urls;
    for (const auto& path : paths)
        urls << QUrl::fromLocalFile(path);
    mime->setUrls(urls);
    return mime;
}

} // namespace

class MainWindowTest : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase()
    {
        QStandardPaths::setTestModeEnabled(true); // QSettings away from the user's
        QCoreApplication::setOrganizationName("TorchScopeTest");
    }

    void opensTheModelAndShowsItsTree()
    {
        MainWindow window;
        test::openDemo(window);
        ModuleTreeModel* tree = window.treePanel()->model();
        QCOMPARE(tree->rowCount(), 3); // features, pool, classifier
        QVERIFY(tree->indexOfPath("features.2.conv").isValid());
        QVERIFY(window.windowTitle().contains("fashion_cnn.pt"));
    }

    void dropsImagesTicksALayerAndShowsItsMaps()
    {
        MainWindow window;
        test::openDemo(window);
        const QStringList images = test::demoImages().mid(0, 3); // ankle_boot, bag, coat

        // A drag of a text file is refused where it enters; images are accepted.
        std::unique_ptr<QMimeData> text(urlsOf({test::fixture("bad_text.pt") + ".txt"}));
        QDragEnterEvent refused(QPoint(10, 10), Qt::CopyAction, text.get(), Qt::LeftButton, Qt::NoModifier);
        QApplication::sendEvent(&window, &refused);
        QVERIFY(!refused.isAccepted());
        std::unique_ptr<QMimeData> mime(urlsOf(images));
        QDragEnterEvent enter(QPoint(10, 10), Qt::CopyAction, mime.get(), Qt::LeftButton, Qt::NoModifier);
        QApplication::sendEvent(&window, &enter);
        QVERIFY(enter.isAccepted());
        QDropEvent drop(QPointF(10, 10), Qt::CopyAction, mime.get(), Qt::LeftButton, Qt::NoModifier);
        QApplication::sendEvent(&window, &drop);
        QCOMPARE(window.document()->images().size(), 3);
        QVERIFY(waitForRun(window));
        // A file it cannot open, given with others, is named for what it is, not skipped in silence.
        QTemporaryDir dir;
        QFile gif(dir.filePath("anim.gif"));
        QVERIFY(gif.open(QIODevice::WriteOnly));
        gif.write(QByteArray("GIF89a") + QByteArray(32, '\0'));
        gif.close();
        window.openFiles({gif.fileName()});
        QVERIFY2(
            window.logDock()->text().contains("Ignored anim.gif: this is a GIF image, which TorchScope cannot read"),
            qPrintable(window.logDock()->text()));
        QCOMPARE(window.document()->images().size(), 3);

        ModuleTreeModel* tree = window.treePanel()->model();
        QVERIFY(tree->setData(tree->indexOfPath("features.1"), Qt::Checked, Qt::CheckStateRole));
        QVERIFY(waitForRun(window));
        ActivationView* view = window.activationView();
        QCOMPARE(view->shownKey(), QString("features.1"));
        QCOMPARE(view->shownShape(), (std::vector<int64_t>{64, 7, 7}));
        QCOMPARE(view->channelCount(), 64);
        QVERIFY(!view->gridImage().isNull());
        QCOMPARE(view->overlayPicture().size(), QSize(28, 28)); // the map over the 28x28 input
        // Its export is a figure: title above, the colour bar beside.
        QVERIFY(view->overlayImage().width() > 28 + 60 && view->overlayImage().height() > 28 + 20);
        // The colour bar is the picked channel's scale, which takes in zero: features.1 ends in a ReLU.
        QVERIFY(view->colorBar()->title().startsWith("channel "));
        QCOMPARE(view->colorBar()->low(), 0.0);
        QVERIFY(view->colorBar()->high() > 0.0);

        // The first image is the ankle boot; the model (90.9 % accurate) says so.
        QTableWidget* predictions = window.predictionsPanel()->table();
        QCOMPARE(predictions->rowCount(), 5);
        QCOMPARE(predictions->item(0, 1)->text(), QString("Ankle boot"));
        const auto snapshot = window.document()->snapshot();
        QCOMPARE(snapshot->statistics.at("features.1").samples, 3);
    }

    void startUpOptionsApplyToTheirModelOnly()
    {
        // As scripts/demo.sh starts: the face demo with --select and --gradcam of its layer. Then
        // another model: nothing of the first one's script may reach it.
        MainWindow window;
        StartupScript script;
        script.select = "features.dense2";
        script.gradCam = "features.dense2";
        applyToNextModel(window, script);
        QSignalSpy opened(window.controller(), &RunController::modelOpened);
        window.openModel(test::sourceDir() + "/resources/face/face_expression.pt");
        QVERIFY(opened.wait(Timeout));
        QVERIFY(window.document()->isGrabbed("features.dense2")); // the script ran for the first model

        QSignalSpy errors(&window, &MainWindow::errorReported);
        window.openModel(test::demoModel());
        QVERIFY(opened.wait(Timeout));
        QSignalSpy completed(window.controller(), &RunController::runCompleted);
        window.document()->addImages({test::fixture("probe/footwear/00.png"), test::fixture("probe/rest/00.png")});
        QVERIFY(completed.wait(Timeout));
        QCOMPARE(completed.last().at(1).toInt(), 2); // both images ran
        QCOMPARE(errors.count(), 0);
        QVERIFY(window.document()->snapshot());
        QVERIFY(!window.document()->isGrabbed("features.dense2"));
        QVERIFY(window.document()->selectedKey() != "features.dense2");
        // One thread a lane, jobs in order: when a task queued now on the interactive lane has
        // finished, a Grad-CAM the first model's script had started would have handed its result over.
        QCoreApplication::processEvents();
        JobHandle* after = window.controller()->startTask(
            QStringLiteral("after the script"), JobLane::Interactive, [](ModelSource&) {}, &window);
        QSignalSpy drained(after, &JobHandle::finished);
        QVERIFY(drained.wait(Timeout));
        QVERIFY(!window.gradCamView()->lastResult());
        QCOMPARE(errors.count(), 0);
    }

    void openingAModelResetsEveryTab()
    {
        // Model A with a run, a recording and a comparison; then model B: no tab keeps A's results.
        MainWindow window;
        test::openDemo(window);
        window.document()->addImages(test::demoImages().mid(0, 2));
        QVERIFY(waitForRun(window));
        recordLabelledFolder(window, "features.1");
        ComparePanel* compare = window.comparePanel();
        compare->setUp("precision", {}, "features.1 classifier.2", test::fixture("labelled"));
        QSignalSpy compared(compare, &ComparePanel::finished);
        compare->start();
        QVERIFY(compared.wait(Timeout));
        QVERIFY(compare->result());
        QVERIFY(compare->driftPlot()->graphCount() > 0);
        QVERIFY(compare->setupColumn()->exportButton()->isEnabled());

        const QPointer<ChannelPage> page = window.openChannelPage("features.1", 3);
        QVERIFY(page);

        QSignalSpy opened(window.controller(), &RunController::modelOpened);
        QSignalSpy errors(&window, &MainWindow::errorReported);
        QSignalSpy ran(window.controller(), &RunController::runCompleted);
        // Another model with a setup of its own: the face network (its images: the fashion ones).
        window.openModel(test::sourceDir() + "/resources/face/face_expression.pt");
        QVERIFY(opened.wait(Timeout));
        QVERIFY(!compare->result());
        QCOMPARE(compare->driftPlot()->graphCount(), 0);
        QVERIFY(compare->driftPlot()->plot()->yAxis->label().isEmpty()); // no axes of A's result
        QVERIFY(!compare->setupColumn()->exportButton()->isEnabled());
        QVERIFY(!compare->driftPlot()->plot()->yAxis->tickLabels()); // no "8·10^-1" on an empty plot
        QVERIFY(compare->layersField()->text().isEmpty()); // A's layer names are not B's
        QVERIFY(!window.recordersPanel()->snapshot());
        QVERIFY(!window.probesPanel()->lastResult());
        QTRY_VERIFY(page.isNull()); // A's channel page closed
        QVERIFY(ran.count() > 0 || ran.wait(Timeout)); // the images run through B
        QCOMPARE(errors.count(), 0);
        QCOMPARE(window.document()->snapshot()->images.size(), size_t{2});
    }

    // At a laptop's 1280 x 800 and at 1600 x 1000, every analysis tab's setup column is at least 300
    // pixels wide (or its form's width) and keeps its start, Cancel and Export buttons in view (its
    // form scrolls instead): they sat off-screen behind a thin scroll bar in a 150-pixel column.
    void everyAnalysisTabKeepsItsButtonsInView()
    {
        MainWindow window;
        test::openDemo(window);
        using Tab = MainWindow::CentralTab;
        for (const QSize size : {QSize(1280, 800), QSize(1600, 1000)}) {
            window.resize(size);
            window.show();
            QVERIFY(QTest::qWaitForWindowExposed(&window));
            QTRY_COMPARE(window.size(), size);
            for (const Tab tab : {Tab::Workbench, Tab::Attention, Tab::Recorders, Tab::Probes, Tab::Compare}) {
                window.showCentralTab(tab);
                QCoreApplication::processEvents();
                JobSetupColumn* column = nullptr;
                for (auto* candidate : window.findChildren<JobSetupColumn*>())
                    if (candidate->isVisible())
                        column = candidate;
                QVERIFY2(column, qPrintable(QString("tab %1").arg(int(tab))));
                const QString where = QString("%1 x %2, tab %3").arg(size.width()).arg(size.height()).arg(int(tab));
                QVERIFY2(column->width() >= std::min(column->preferredWidth(), 300), qPrintable(where));
                QList<QPushButton*> buttons{column->cancelButton()};
                if (column->exportButton())
                    buttons << column->exportButton();
                for (auto* button : column->findChildren<QPushButton*>())
                    if (button->parentWidget() == column && !buttons.contains(button)
                        && button != column->runAgainButton())
                        buttons << button; // the start buttons
                QVERIFY2(buttons.size() >= 2, qPrintable(where));
                const QRect inside = window.rect();
                for (auto* button : buttons) {
                    const QRect shown(button->mapTo(&window, QPoint(0, 0)), button->size());
                    QVERIFY2(button->isVisible() && inside.contains(shown)
                            && button->visibleRegion().boundingRect().size() == button->size(),
                        qPrintable(where + ": " + button->text()));
                }
            }
        }
    }

    // A laptop's 1280 x 800 screen holds the window with a vision transformer open: no tab, dock or
    // tool bar asks for more (it opened wider than the screen, its right dock and status bar cut off).
    void theWindowFitsALaptopScreen()
    {
        MainWindow window;
        test::openModel(window, test::fixture("vit_b_16_scripted.pt"));
        window.document()->addImages(test::demoImages().mid(0, 2));
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        QString sizes;
        auto* tabs = window.findChild<QTabWidget*>("centralTabs");
        QVERIFY(tabs);
        for (int i = 0; i < tabs->count(); ++i)
            sizes += QString(" %1 %2x%3;")
                         .arg(tabs->tabText(i))
                         .arg(tabs->widget(i)->minimumSizeHint().width())
                         .arg(tabs->widget(i)->minimumSizeHint().height());
        for (auto* dock : window.findChildren<QDockWidget*>())
            sizes += QString(" %1 %2x%3;")
                         .arg(dock->windowTitle())
                         .arg(dock->minimumSizeHint().width())
                         .arg(dock->minimumSizeHint().height());
        const QSize least = window.minimumSizeHint().expandedTo(window.minimumSize());
        QVERIFY2(least.width() <= 1280 && least.height() <= 800,
            qPrintable(QString("the window needs %1 x %2:%3").arg(least.width()).arg(least.height()).arg(sizes)));
        // At 1280 × 800 the centre leaves the side docks room to read: the module tree's paths and
        // types, the predictions' numbers (the Attention tab's fixed side column once needed 964
        // pixels of centre and left the docks 130).
        window.resize(1280, 800);
        QAction* reset = nullptr;
        for (QAction* action : window.findChildren<QAction*>())
            if (action->text() == "Reset &Layout")
                reset = action;
        QVERIFY(reset);
        reset->trigger(); // the docks sized as a first start sizes them
        for (const char* name : {"ModulesDock", "PredictionsDock"}) {
            auto* dock = window.findChild<QDockWidget*>(name);
            QVERIFY(dock);
            QTRY_VERIFY2(dock->width() >= 200,
                qPrintable(QString("%1 is %2 px wide:%3").arg(name).arg(dock->width()).arg(sizes)));
        }
    }

    // Opened after lines were added while it was closed, the log shows the newest line.
    void theLogOpensAtItsNewestLine()
    {
        MainWindow window;
        window.resize(1280, 800);
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        auto* log = window.findChild<LogDock*>();
        QVERIFY(log);
        log->hide();
        for (int i = 0; i < 300; ++i)
            log->append(QString("line %1").arg(i));
        log->show();
        QScrollBar* bar = log->view()->verticalScrollBar();
        QTRY_VERIFY(bar->maximum() > 0);
        QTRY_COMPARE(bar->value(), bar->maximum());
    }

    void resultsAppearAsEachImageRuns()
    {
        // The selected image runs first and shows at once; the others follow one by one; the whole
        // result keeps the strip's order.
        MainWindow window;
        test::openDemo(window);
        const QStringList images = test::demoImages().mid(0, 6);
        std::vector<size_t> sizes;
        QString firstShown;
        connect(window.document(), &Document::resultsChanged, &window, [&] {
            const auto snapshot = window.document()->snapshot();
            if (!snapshot)
                return;
            if (sizes.empty() && !snapshot->images.empty())
                firstShown = QString::fromStdString(snapshot->images.front().path);
            sizes.push_back(snapshot->images.size());
        });
        window.document()->addImages(images);
        window.document()->setSelectedImage(4);
        QVERIFY(waitForRun(window));
        // The selected image's result was shown alone, before any other image had run.
        QCOMPARE(firstShown, images[4]);
        QCOMPARE(sizes.front(), size_t{1});
        QCOMPARE(sizes.back(), size_t{6});
        const auto snapshot = window.document()->snapshot();
        QCOMPARE(snapshot->images.size(), size_t{6});
        for (int i = 0; i < 6; ++i)
            QCOMPARE(QString::fromStdString(snapshot->images[size_t(i)].path), images[i]);
        // Image 0 had no result while image 4 ran: its caption said the run was on.
        window.document()->setSelectedImage(0);
        QVERIFY(!window.predictionsPanel()->caption().contains("Running"));
    }

    void vectorOutputsArePlotted()
    {
        MainWindow window;
        test::openDemo(window);
        window.document()->addImages(test::demoImages().mid(0, 1));
        window.treePanel()->selectPath("classifier.2"); // the 10 class scores
        QVERIFY(waitForRun(window));
        QCOMPARE(window.activationView()->shownShape(), (std::vector<int64_t>{10}));
        QVERIFY(window.activationView()->isPlotShown());
        QCOMPARE(window.activationView()->plot()->plottableCount(), 1);
    }

    void aCancelledRunKeepsWhatItRecorded()
    {
        MainWindow window;
        test::openModel(window, test::fixture("resnet18_scripted.pt"));
        QTemporaryDir dir;
        QStringList images;
        for (int i = 0; i < 60; ++i) {
            images << dir.filePath(QString("copy_%1.png").arg(i, 2, 10, QChar('0')));
            QVERIFY(QFile::copy(test::fixture("images/rgb.png"), images.back()));
        }
        window.document()->setGrabbed("layer4", true);
        // The run waits at its progress report before image 5 until this slot has cancelled it: the
        // cancel lands there whatever the machine's speed.
        constexpr int Gate = 5;
        QObject receiver;
        connect(
            window.controller()->jobs(), &JobRunner::progress, &receiver,
            [&window](JobId, qint64 done, qint64, const QString&) {
                if (done == Gate)
                    window.controller()->cancel();
            },
            Qt::BlockingQueuedConnection);
        QSignalSpy completed(window.controller(), &RunController::runCompleted);
        window.document()->addImages(images);
        QVERIFY(completed.wait(Timeout));
        QVERIFY(completed.last().at(3).toBool()); // cancelled
        const auto snapshot = window.document()->snapshot();
        QVERIFY(snapshot->cancelled);
        const int kept = static_cast<int>(snapshot->images.size());
        QCOMPARE(kept, Gate); // the images before the cancel
        QCOMPARE(snapshot->statistics.at("layer4").samples, kept);
        // What was recorded before the cancel exports as usual.
        QSignalSpy exported(window.controller(), &RunController::exported);
        window.exportActions()->exportTensors(dir.filePath("partial.pt"));
        QVERIFY(exported.wait(Timeout));
        const auto dict = readTorchSaveFile(dir.filePath("partial.pt").toStdString()).toGenericDict();
        QCOMPARE(dict.at("layer4").toTensor().size(0), kept);
    }

    void recordsAFolderAndShowsItsStatistics()
    {
        MainWindow window;
        test::openDemo(window);
        recordLabelledFolder(window, "features.1");
        RecordersPanel* panel = window.recordersPanel();
        const auto snapshot = panel->snapshot();
        QCOMPARE(snapshot->images, int64_t(36));
        QCOMPARE(snapshot->samples.at("features.1"), int64_t(36));
        QCOMPARE(QString::fromStdString(snapshot->labelSource), QString("model labels"));
        // The per-channel means against the fixture script's NumPy numbers.
        const auto expected = readTorchSaveFile(test::fixture("labelled_expected.pt").toStdString()).toGenericDict();
        const at::Tensor want = expected.at("all/features.1/stats:mean").toTensor();
        const auto& mean = snapshot->statistics.at("features.1").channelMean;
        QCOMPARE(int64_t(mean.size()), want.numel());
        for (size_t c = 0; c < mean.size(); ++c)
            QVERIFY(std::abs(mean[c] - want[int64_t(c)].item<double>()) <= 1e-5 * std::max(1.0, std::abs(mean[c])));
        QCOMPARE(panel->layerBox()->currentText(), QString("features.1"));
        QCOMPARE(panel->topImages()->count(), 9);
        // Top images carry their mean activation and their file; a channel picked anywhere is picked here.
        const auto& top = snapshot->topSamples.at("features.1").front();
        QCOMPARE(panel->topImages()->item(0)->data(Qt::UserRole).toString(),
            QString::fromStdString(snapshot->imagePaths.at(size_t(top.front().sample))));
        QVERIFY(panel->topImages()->item(0)->text().startsWith(QString::number(top.front().value, 'g', 4)));
        QVERIFY(top.front().value >= top.back().value);
        window.document()->setSelectedChannel(5);
        QCOMPARE(panel->channelBox()->value(), 5);
        QCOMPARE(panel->plots()->markedChannel(), 5);
        QCOMPARE(window.statisticsPanel()->findChild<StatisticsPlots*>()->markedChannel(), 5);
        QCOMPARE(panel->plots()->histogramPlot()->plottableCount(), 1);
        QCOMPARE(panel->plots()->sortedPlot()->plottableCount(), 1);

        QTemporaryDir dir;
        QSignalSpy exported(panel, &RecordersPanel::exported);
        panel->exportTo(dir.filePath("recording.pt"));
        QVERIFY(exported.wait(Timeout));
        const auto dict = readTorchSaveFile(dir.filePath("recording.pt").toStdString()).toGenericDict();
        QCOMPARE(dict.at("features.1:samples").toTensor().item<int64_t>(), int64_t(36));
        // The summary beside it lists the images in sample order: torchvision's ImageFolder order,
        // so top_samples index the files Python would load.
        const QString same
            = test::runPython(QString("import json, os\n"
                                      "from torchvision.datasets import ImageFolder\n"
                                      "files = json.load(open('%1'))['image_files']\n"
                                      "want = [os.path.realpath(p) for p, _ in ImageFolder('%2').samples]\n"
                                      "print(len(files), [os.path.realpath(f) for f in files] == want)")
                                  .arg(dir.filePath("recording.json"), test::fixture("labelled")));
        QCOMPARE(same, QString("36 True"));
    }

    void recordingsApplyTheTreesEdits()
    {
        MainWindow window;
        test::openDemo(window);
        window.document()->addEdit(EditSpec::parse("features.0:zero:1,2"));
        recordLabelledFolder(window, "features.0");
        RecordersPanel* panel = window.recordersPanel();
        const auto& s = panel->snapshot()->statistics.at("features.0");
        QCOMPARE(panel->snapshot()->edits, std::vector<std::string>{"features.0:zero:1,2"});
        QCOMPARE(s.channelMax[1], 0.0);
        QCOMPARE(s.channelMin[2], 0.0);
        QCOMPARE(s.channelMax[2], 0.0);
        QVERIFY(s.channelMax[0] > 0.0 || s.channelMin[0] < 0.0);

        // Another edit: the recording shown is marked out of date (it did not apply it), the next
        // one will, and a long channel list is cut short in the column; Run Again records with it.
        JobSetupColumn* column = panel->findChild<JobSetupColumn*>();
        QVERIFY(!column->isOutdated());
        const int channels = static_cast<int>(s.channelMean.size());
        QVERIFY(channels > 8);
        QStringList all;
        for (int c = 0; c < channels; ++c)
            all << QString::number(c);
        const QString edit = "features.0:scale:" + all.join(',') + ":0.5";
        window.document()->addEdit(EditSpec::parse(edit.toStdString()));
        QVERIFY(column->isOutdated());
        QVERIFY2(
            column->outdatedText()->text().contains("the edits changed"), qPrintable(column->outdatedText()->text()));
        const auto* edits = panel->findChild<QLabel*>("nextRecordingEdits");
        QVERIFY(edits);
        QVERIFY2(edits->text().contains(QString("(%1 channels)").arg(channels)), qPrintable(edits->text()));
        QVERIFY(!edits->text().contains(all.last() + ":0.5"));
        QSignalSpy finished(panel, &RecordersPanel::finished);
        column->runAgainButton()->click();
        QVERIFY(finished.wait(Timeout));
        QVERIFY(!column->isOutdated());
        const auto& applied = panel->snapshot()->edits;
        QVERIFY(std::find(applied.begin(), applied.end(), edit.toStdString()) != applied.end());
    }

    void removingAnImageRemovesItsResults()
    {
        MainWindow window;
        test::openDemo(window);
        const QStringList images = test::demoImages().mid(0, 3);
        window.document()->addImages(images);
        window.document()->setGrabbed("features.1", true);
        QVERIFY(waitForRun(window));
        QCOMPARE(window.imageStrip()->model()->rowCount(), 3);
        window.document()->setSelectedImage(2);
        window.document()->removeImages({QFileInfo(images[1]).absoluteFilePath()});
        // At once: the strip, the selection (still the same image) and the results.
        QCOMPARE(window.imageStrip()->model()->rowCount(), 2);
        QCOMPARE(window.document()->selectedImage(), 1);
        for (const auto& image : window.document()->snapshot()->images)
            QVERIFY(QString::fromStdString(image.path) != QFileInfo(images[1]).absoluteFilePath());
        QCOMPARE(window.document()->snapshot()->images.size(), size_t(2));
        // And the statistics of the next run are over the two left.
        QVERIFY(waitForRun(window));
        QCOMPARE(window.document()->snapshot()->statistics.at("features.1").samples, int64_t(2));
    }

    void theTreeShowsGrabKindsEditsAndTheCutPart()
    {
        MainWindow window;
        test::openDemo(window);
        window.document()->addImages(test::demoImages().mid(0, 1));
        window.document()->setGrabbed("features.0:grad", true);
        window.document()->setGrabbed("features.1:in0", true);
        window.document()->addEdit(EditSpec::parse("features.0:scale:3:2.5"));
        QVERIFY(waitForRun(window));
        ModuleTreeModel* tree = window.treePanel()->model();
        const QString marks0 = tree->marksAt(tree->indexOfPath("features.0"));
        QVERIFY2(marks0.contains("∇") && marks0.contains("✎ scale:3:2.5"), qPrintable(marks0));
        QVERIFY(tree->marksAt(tree->indexOfPath("features.1")).contains("in0"));
        QVERIFY(!tree->marksAt(tree->indexOfPath("classifier")).contains("cut away"));
        // Gradients of a truncated run are refused: that grab goes first.
        window.document()->setGrabbed("features.0:grad", false);
        window.document()->setTruncation("features.1");
        QVERIFY(waitForRun(window));
        QVERIFY(tree->marksAt(tree->indexOfPath("features.1")).contains("truncate"));
        // What runs after the truncation point is marked; what runs before it and its parent are not.
        for (const QString cut : {"features.2", "features.2.conv", "pool", "classifier"})
            QVERIFY2(tree->marksAt(tree->indexOfPath(cut)).contains("cut away"), qPrintable(cut));
        for (const QString kept : {"features", "features.0", "features.1"})
            QVERIFY2(!tree->marksAt(tree->indexOfPath(kept)).contains("cut away"), qPrintable(kept));
        window.document()->setTruncation({});
        QVERIFY(waitForRun(window));
        QVERIFY(!tree->marksAt(tree->indexOfPath("classifier")).contains("cut away"));
    }

    void saveDialogsAddTheFiltersExtension()
    {
        const QString filters = "PyTorch (*.pt);;NumPy (*.npz);;safetensors (*.safetensors)";
        QCOMPARE(withFilterExtension("/tmp/rec_stats", "PyTorch (*.pt)", filters), QString("/tmp/rec_stats.pt"));
        QCOMPARE(withFilterExtension("/tmp/rec.npz", "NumPy (*.npz)", filters), QString("/tmp/rec.npz"));
        // An extension of another offered filter is what the user typed: kept.
        QCOMPARE(withFilterExtension("/tmp/rec.npz", "PyTorch (*.pt)", filters), QString("/tmp/rec.npz"));
        QCOMPARE(withFilterExtension("/tmp/v1.2", "PNG image (*.png)"), QString("/tmp/v1.2.png"));
        QCOMPARE(withFilterExtension("/tmp/s", "TorchScope sessions (*.torchscope.json)"),
            QString("/tmp/s.torchscope.json"));
        QCOMPARE(withFilterExtension("", "PNG image (*.png)"), QString());
    }

    void truncationReturnsTheLayerOutput()
    {
        MainWindow window;
        test::openDemo(window);
        window.document()->addImages(test::demoImages().mid(0, 2));
        QVERIFY(waitForRun(window));
        window.document()->setTruncation("features.0");
        QVERIFY(waitForRun(window));
        const ImageResult* result = window.document()->selectedResult();
        QVERIFY(result);
        QCOMPARE(result->output.shape, (std::vector<int64_t>{32, 14, 14}));
        QVERIFY(result->prediction.top.empty());
    }

    void exportsWhatPythonReads()
    {
        MainWindow window;
        test::openDemo(window);
        window.document()->addImages(test::demoImages().mid(0, 3));
        window.treePanel()->selectPath("features.2");
        window.document()->setGrabbed("features.0:grad", true);
        QVERIFY(waitForRun(window));
        QTemporaryDir dir;
        for (const QString name : {"out.pt", "out.npz", "out.safetensors"}) {
            QSignalSpy exported(window.controller(), &RunController::exported);
            window.exportActions()->exportTensors(dir.filePath(name));
            QVERIFY(exported.wait(Timeout));
        }
        // What the model saw, as raw float32: Python runs the demo's eager twin on it with hooks.
        const auto snapshot = window.document()->snapshot();
        QCOMPARE(snapshot->images.size(), size_t{3});
        QFile inputs(dir.filePath("inputs.f32"));
        QVERIFY(inputs.open(QIODevice::WriteOnly));
        for (const auto& image : snapshot->images) {
            QCOMPARE(image.modelInput.shape, (std::vector<int64_t>{1, 28, 28}));
            inputs.write(reinterpret_cast<const char*>(image.modelInput.values.data()),
                static_cast<qint64>(image.modelInput.values.size() * sizeof(float)));
        }
        inputs.close();
        // Read back by Python with torch.load, numpy.load and safetensors: every key, whole, equal
        // in the three formats and to forward hooks (and each image's own class gradient).
        const QString report
            = test::runPython(QString(
                "import sys, numpy, torch\n"
                "from safetensors.torch import load_file\n"
                "sys.path.insert(0, '%5/tests/cli')\n"
                "from demo_hooks import demo_model\n"
                "d, n, s = torch.load('%1'), numpy.load('%2'), load_file('%3')\n"
                "keys = sorted(d)\n"
                "assert sorted(n.files) == keys == sorted(s), (keys, n.files, list(s))\n"
                "assert all(bool(torch.isfinite(d[k]).all()) for k in keys)\n"
                "same = all(torch.equal(torch.from_numpy(n[k]), d[k]) and torch.equal(s[k], d[k]) for k in keys)\n"
                "model = demo_model()\n"
                "x = torch.from_numpy(numpy.fromfile('%4', dtype=numpy.float32)).view(3, 1, 28, 28)\n"
                "worst = 0.0\n"
                "for i in range(3):\n"
                "    seen = {}\n"
                "    hooks = [model.features[j].register_forward_hook("
                "lambda m, a, o, j=j: seen.__setitem__(j, o)) for j in (0, 2)]\n"
                "    out = model(x[i:i + 1])\n"
                "    [h.remove() for h in hooks]\n"
                "    grad, = torch.autograd.grad(out[0, out[0].argmax()], seen[0])\n"
                "    for key, want in (('output', out), ('features.2', seen[2]), ('features.0:grad', grad)):\n"
                "        err = float((d[key][i] - want[0]).abs().max())\n"
                "        assert err == err, key\n"
                "        worst = max(worst, err)\n"
                "print(' '.join(k + '=' + 'x'.join(map(str, d[k].shape)) for k in keys), same, worst == 0.0, worst)")
                                  .arg(dir.filePath("out.pt"), dir.filePath("out.npz"), dir.filePath("out.safetensors"),
                                      dir.filePath("inputs.f32"), test::sourceDir()));
        QCOMPARE(
            report.section(' ', 0, 3), QString("features.0:grad=3x32x14x14 features.2=3x128x3x3 output=3x10 True"));
        qInfo("%s", qPrintable(report));
        QVERIFY2(report.section(' ', 4, 4) == "True", qPrintable(report)); // exact: the tests' thread count
        QVERIFY(QFile::remove(dir.filePath("inputs.f32")));

        // out.manifest.json beside them (and inside the .safetensors): the model and images by
        // SHA-256 as hashlib computes it, the images in run order, every key with its module and kind.
        const QString manifest = test::runPython(
            QString("import hashlib, json\n"
                    "from safetensors import safe_open\n"
                    "m = json.load(open('%1'))\n"
                    "sha = lambda p: hashlib.sha256(open(p, 'rb').read()).hexdigest()\n"
                    "with safe_open('%2', framework='pt') as f:\n"
                    "    inside = json.loads(f.metadata()['torchscope_manifest'])\n"
                    "images = [i['path'] for i in m['images']]\n"
                    "print(m['model']['sha256'] == sha('%3'), images == %4,\n"
                    "      all(i['sha256'] == sha(i['path']) for i in m['images']), m['images'][0]['size'],\n"
                    "      sorted((k['key'], k['module'], k['kind']) for k in m['keys']),\n"
                    "      inside['keys'] == m['keys'], m['device'], m['libtorch'] == "
                    "__import__('torch').__version__.split('+')[0])")
                .arg(dir.filePath("out.manifest.json"), dir.filePath("out.safetensors"), test::demoModel(),
                    "['" + test::demoImages().mid(0, 3).join("', '") + "']"));
        QCOMPARE(manifest,
            QString("True True True [28, 28] [('features.0:grad', 'features.0', 'gradient'), ('features.2', "
                    "'features.2', 'output'), ('output', '', 'model output')] True cpu True"));

        QCOMPARE(window.exportActions()->exportActivationGrid(dir.filePath("grid.png")), QString());
        // A figure, not bare tiles: a title strip with text above the grid, the colour bar beside it.
        const QImage grid(dir.filePath("grid.png"));
        QVERIFY(grid.width() > window.activationView()->findChild<ChannelGrid*>()->image().width() + 60);
        bool titled = false;
        for (int x = 0; x < grid.width() && !titled; ++x)
            for (int y = 0; y < 30 && !titled; ++y)
                titled = qGray(grid.pixel(x, y)) < 100;
        QVERIFY(titled);
        QCOMPARE(window.exportActions()->exportPlot(dir.filePath("plot.png")), QString());
        QCOMPARE(window.exportActions()->exportPlot(dir.filePath("plot.pdf")), QString());
        QVERIFY(QFile(dir.filePath("plot.pdf")).size() > 0);
        // Every file with the mode a plain new file gets (0666 less the umask), not a temporary
        // file's 0600.
        const mode_t mask = ::umask(0);
        ::umask(mask);
        for (const char* name :
            {"out.pt", "out.safetensors", "out.manifest.json", "grid.png", "plot.png", "plot.pdf"}) {
            struct stat info { };
            QCOMPARE(::stat(QFile::encodeName(dir.filePath(name)).constData(), &info), 0);
            QCOMPARE(info.st_mode & 0777, 0666 & ~mask);
        }
        // Only the files and the manifest: temporary files were renamed into place.
        QCOMPARE(QDir(dir.path()).entryList(QDir::Files | QDir::Hidden).size(), 7);
    }

    void savesAndReopensASession()
    {
        QTemporaryDir dir;
        const QString path = dir.filePath("s.torchscope.json");
        {
            MainWindow window;
            test::openDemo(window);
            window.document()->addImages(test::demoImages().mid(2, 2));
            window.document()->setGrabbed("features.1", true);
            window.document()->setTruncation("features.2");
            window.document()->addEdit(EditSpec::parse("features.0:zero:1,2"));
            QVERIFY(waitForRun(window));
            window.document()->setSelectedKey("features.1");
            window.activationView()->applyViewSettings({"magma", "symmetric", 9, 30});
            window.activationView()->refresh();
            QCOMPARE(window.saveSession(path), QString());
        }
        MainWindow reopened;
        reopened.setInteractive(false);
        QCOMPARE(reopened.openSession(path), QString());
        QVERIFY(waitForRun(reopened));
        Document* document = reopened.document();
        QCOMPARE(document->modelPath(), QFileInfo(test::demoModel()).absoluteFilePath());
        QCOMPARE(document->grabs(), QStringList{"features.1"});
        QCOMPARE(document->truncation(), QString("features.2"));
        QCOMPARE(document->edits().size(), size_t(1));
        QCOMPARE(document->images(), test::demoImages().mid(2, 2));
        QVERIFY(document->selectedResult());
        // How the map was drawn comes back too; the zoom is the session's, not the fitted one.
        const SessionView view = reopened.activationView()->viewSettings();
        QCOMPARE(view.colorMap, std::string("magma"));
        QCOMPARE(view.contrast, std::string("symmetric"));
        QCOMPARE(view.zoom, 9);
        QCOMPARE(view.overlayOpacity, 30);
        QCOMPARE(reopened.activationView()->shownKey(), QString("features.1"));
    }

    void unreadableImagesAreListedWithTheReason()
    {
        MainWindow window;
        test::openDemo(window);
        window.document()->addImages({test::demoImages().first(), test::fixture("images/not_an_image.png")});
        QVERIFY(waitForRun(window));
        const auto snapshot = window.document()->snapshot();
        QCOMPARE(snapshot->images.size(), size_t(1));
        QCOMPARE(snapshot->failures.size(), size_t(1));
        QVERIFY(QString::fromStdString(snapshot->failures[0].second).contains("text file"));
        QVERIFY(window.logDock()->text().contains("not_an_image.png"));
    }

    void aWrongModelFileIsExplained()
    {
        MainWindow window;
        window.setInteractive(false);
        QSignalSpy failed(window.controller(), &RunController::failed);
        window.openModel(test::fixture("bad_state_dict.pt"));
        QVERIFY(failed.wait(Timeout));
        QVERIFY(failed.first().at(1).toString().contains("state_dict"));
        QVERIFY(window.logDock()->text().contains("state_dict"));
    }

    void aRunErrorIsReportedNotCrashed()
    {
        MainWindow window;
        test::openDemo(window);
        window.document()->addImages(test::demoImages().mid(0, 1));
        QVERIFY(waitForRun(window));
        QSignalSpy failed(window.controller(), &RunController::failed);
        window.document()->addEdit(EditSpec::parse("features.0:zero:999"));
        QVERIFY(failed.wait(Timeout));
        QVERIFY(failed.first().at(1).toString().contains("channel 999 is out of range"));
        QVERIFY(window.logDock()->text().contains("channel 999 is out of range"));
    }
};

QTEST_MAIN(MainWindowTest)
#include "main_window_test.moc"
