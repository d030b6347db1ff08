// The Compare tab and the patching view's difference mode in the workbench, offscreen: the numbers
// against NumPy's minibatch CKA on forward hooks (the fixture), the maps against the engine's own
// run of the same image, and what the plots, exports and clicks must do.
#include "document/document.h"
#include "export/pt_export.h"
#include "graph/engine.h"
#include "gui_test_support.h"
#include "imaging/image_tensor.h"
#include "jobs/run_controller.h"
#include "model/model.h"
#include "model/model_setup.h"
#include "panels/compare_panel.h"
#include "panels/job_setup_column.h"
#include "views/channel_grid.h"
#include "views/compare_plots.h"
#include "views/patching_view.h"
#include "views/qcustomplot_include.h"
#include "window/main_window.h"

#include <ATen/ATen.h>

#include <QLabel>
#include <QPushButton>
#include <QSpinBox>
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>

using namespace torchscope;

namespace {

constexpr int Timeout = 120000;

at::Tensor expected(const std::string& key)
{
    return readTorchSaveFile(test::fixture("compare_expected.pt").toStdString()).toGenericDict().at(key).toTensor();
}

at::Tensor tensorOf(const FloatTensor& value)
{
    return at::tensor(value.values).reshape(value.shape);
}

} // namespace

class ComparePanelTest : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void comparesTwoCheckpointsDrawsExportsAndOpensAPair()
    {
        MainWindow window;
        test::openDemo(window);
        window.document()->addImages(test::demoImages());
        ComparePanel* panel = window.comparePanel();
        // B is the demo with its last block and classifier moved (tests/fixtures/make_fixtures.py).
        panel->setUp("checkpoints", test::fixture("compare_b.pt"), "features.0 features.1 features.2 classifier.2",
            test::fixture("labelled"));
        panel->batchBox()->setValue(12); // the fixture's batches: 36 images in 3
        QSignalSpy finished(panel, &ComparePanel::finished);
        panel->start();
        QVERIFY(finished.wait(Timeout));
        const CompareResultPtr result = panel->result();
        QCOMPARE(result->layersA, (std::vector<std::string>{"features.0", "features.1", "features.2", "classifier.2"}));
        QCOMPARE(result->samples, int64_t{36});
        const at::Tensor numpy = expected("cka_minibatch");
        for (size_t i = 0; i < 4; ++i)
            for (size_t j = 0; j < 4; ++j) {
                const double ours = result->ckaAt(i, j), theirs = numpy[int64_t(i)][int64_t(j)].item<double>();
                QVERIFY2(std::abs(ours - theirs) < 1e-5,
                    qPrintable(QString("CKA(%1, %2): %3 against NumPy's %4").arg(i).arg(j).arg(ours).arg(theirs)));
            }
        QCOMPARE(result->comparisons.size(), size_t{1});
        QVERIFY(result->comparisons[0].firstOver.has_value());
        QCOMPARE(result->comparisons[0].layers[*result->comparisons[0].firstOver].layer, std::string("features.2"));

        // The heat map names the cell under the pointer; the drift plot has CKA, cosine, the ring
        // around the first layer apart and the threshold.
        CkaHeatMap* heatMap = panel->heatMap();
        heatMap->plot()->replot();
        const QString cell = heatMap->describeAt(heatMap->cellCentre(2, 1));
        QVERIFY2(cell.contains("A features.2") && cell.contains("B features.1")
                && cell.contains(QString::number(result->ckaAt(2, 1), 'f', 4)),
            qPrintable(cell));
        QVERIFY(heatMap->describeAt(QPointF(1, 1)).isEmpty());
        QCOMPARE(panel->driftPlot()->graphCount(), 5);

        QTemporaryDir dir;
        QCOMPARE(panel->exportTo(dir.filePath("cka.png"), "heat map"), QString());
        QCOMPARE(QImage(dir.filePath("cka.png")).size(), QSize(900, 760));
        QCOMPARE(panel->exportTo(dir.filePath("drift.pdf"), "drift"), QString());
        QVERIFY(QFileInfo(dir.filePath("drift.pdf")).size() > 1000);
        QCOMPARE(panel->exportTo(dir.filePath("numbers.csv")), QString());
        QFile csv(dir.filePath("numbers.csv"));
        QVERIFY(csv.open(QIODevice::ReadOnly));
        const QStringList lines = QString(csv.readAll()).split('\n', Qt::SkipEmptyParts);
        QCOMPARE(lines.size(), 5);
        QVERIFY(lines[0].startsWith("comparison,layer,cka,cosine"));
        QVERIFY(lines[3].startsWith("B,features.2,") && lines[3].endsWith(",yes"));
        QVERIFY(panel->exportTo(dir.filePath("numbers.txt")).contains("FILE.pt, FILE.json or FILE.csv"));

        // A click on a cell runs the selected image through A and B at that pair of layers.
        QSignalSpy shown(panel, &ComparePanel::pairShown);
        const QPointF centre = heatMap->cellCentre(1, 2);
        QTest::mouseClick(heatMap->plot(), Qt::LeftButton, {}, centre.toPoint());
        QVERIFY(shown.wait(Timeout));
        const auto maps = shown.takeFirst().at(0).value<LayerPairResult>();
        QCOMPARE(maps.layerA, std::string("features.1"));
        QCOMPARE(maps.layerB, std::string("features.2"));
        QCOMPARE(maps.a.shape, (std::vector<int64_t>{64, 7, 7}));
        QCOMPARE(maps.b.shape, (std::vector<int64_t>{128, 3, 3}));
    }

    void saysWhatTheFormLacks()
    {
        MainWindow window;
        ComparePanel* panel = window.comparePanel();
        QString error;
        panel->request(&error);
        QVERIFY2(error.contains("Open a model first"), qPrintable(error));
        test::openDemo(window);
        panel->setUp("checkpoints", "", "features.1", test::fixture("labelled"));
        panel->request(&error);
        QVERIFY2(error.contains("second checkpoint"), qPrintable(error));
        panel->setUp("cka", "", "", test::fixture("labelled"));
        panel->request(&error);
        QVERIFY2(error.contains("Choose the layers"), qPrintable(error));
        panel->setUp("cka", "", "features.1", test::fixture("no such folder"));
        panel->request(&error);
        QVERIFY2(error.contains("folder of images"), qPrintable(error));
        // A bad layer reaches the worker and comes back as a message naming it.
        panel->setUp("cka", "", "featurs.1", test::fixture("labelled"));
        // The job's failure reaches the window's error box (the controller's failed()) and the
        // tab's summary (its column follows the job), once each.
        QSignalSpy failed(window.controller(), &RunController::failed);
        QSignalSpy panelFailed(panel, &ComparePanel::failed);
        panel->start();
        QVERIFY(failed.wait(Timeout));
        QCOMPARE(failed.first().at(0).toString(), QString("Comparison Failed"));
        QVERIFY2(failed.first().at(1).toString().contains("featurs.1"), qPrintable(failed.first().at(1).toString()));
        QVERIFY2(panel->setupColumn()->summary()->text().contains("featurs.1"),
            qPrintable(panel->setupColumn()->summary()->text()));
        QVERIFY(!panel->setupColumn()->cancelButton()->isEnabled());
        QCOMPARE(panelFailed.count(), 0);
    }

    void patchingComparesTwoInputsAtALayer()
    {
        MainWindow window;
        test::openDemo(window);
        const QStringList images = test::demoImages();
        window.document()->addImages({images[0], images[1]});
        PatchingView* view = window.patchingView();
        view->setup(0, 1, "features.1", "");
        view->setMode(PatchingView::Mode::Difference);
        QSignalSpy finished(view, &PatchingView::finished);
        view->compute();
        QVERIFY(finished.wait(Timeout));
        const auto d = view->lastResult()->difference;
        QVERIFY(d != nullptr);

        // The engine's own run of each image at the layer is what the view shows.
        const auto model = Model::load(test::demoModel().toStdString());
        Engine engine(model);
        Request grab;
        grab.grabOutput("features.1");
        auto layerOf = [&](const QString& image) {
            const at::Tensor input = loadImageBatch({image.toStdString()}, defaultSetup(*model).preprocessing);
            return engine.run(grab, forwardInputsFromBatch(*model, input)).tensor("features.1")[0];
        };
        const at::Tensor a = layerOf(images[0]), b = layerOf(images[1]);
        QVERIFY(at::equal(tensorOf(d->a), a));
        QVERIFY(at::equal(tensorOf(d->b), b));
        QVERIFY(at::allclose(tensorOf(d->difference), a - b));
        const at::Tensor meanAbs = (a - b).abs().reshape({64, -1}).to(at::kDouble).mean(1);
        const auto order = std::get<1>(meanAbs.sort(0, true));
        QCOMPARE(d->ranked.front(), order[0].item<int64_t>());
        for (size_t i = 1; i < d->ranked.size(); ++i)
            QVERIFY(d->channelDifference[size_t(d->ranked[i - 1])] >= d->channelDifference[size_t(d->ranked[i])]);
        QCOMPARE(d->low, std::min(a.min().item<float>(), b.min().item<float>()));
        QCOMPARE(d->largest, (a - b).abs().max().item<float>());

        // Three rows of the 32 most different channels: A and B on one scale, A − B symmetric.
        const QList<ChannelGrid*> grids = view->differenceGrids();
        QCOMPARE(grids.size(), 3);
        for (ChannelGrid* grid : grids)
            QCOMPARE(grid->channelCount(), 32);
        QCOMPARE(grids[0]->channelRange(5).low, d->low);
        QCOMPARE(grids[1]->channelRange(5).high, d->high);
        QCOMPARE(grids[2]->channelRange(0).low, -d->largest);
        QVERIFY(grids[0]->describeAt(QPoint(2, 2)).startsWith(QString("channel %1 ").arg(d->ranked[0])));
    }
};

QTEST_MAIN(ComparePanelTest)
#include "compare_panel_test.moc"
