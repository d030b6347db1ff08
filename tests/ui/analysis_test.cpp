// Probes, Grad-CAM and patching in the workbench, offscreen, against the core computations
// (which their own tests check against Python) and what patching must do by construction.
#include "attribution/grad_cam.h"
#include "document/document.h"
#include "graph/engine.h"
#include "gui_test_support.h"
#include "imaging/image_tensor.h"
#include "jobs/run_controller.h"
#include "model/model.h"
#include "panels/probes_panel.h"
#include "tree/module_tree_model.h"
#include "tree/module_tree_panel.h"
#include "views/color_bar.h"
#include "views/figure_image.h"
#include "views/grad_cam_view.h"
#include "views/patching_view.h"
#include "views/qcustomplot_include.h"
#include "window/main_window.h"

#include <ATen/ATen.h>

#include <QDir>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QtTest>

using namespace torchscope;

namespace {

constexpr int Timeout = 120000;

QString probeImage(const QString& cls, int k)
{
    return test::fixture(QString("probe/%1/%2.png").arg(cls).arg(k, 2, 10, QChar('0')));
}

} // namespace

class AnalysisTest : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase()
    {
        QStandardPaths::setTestModeEnabled(true); // settings and the activation cache away from the user's
        QCoreApplication::setOrganizationName("TorchScopeTest");
        QDir(QStandardPaths::writableLocation(QStandardPaths::CacheLocation)).removeRecursively();
    }

    void sweepsTickedLayersAndMarksTheBestInTheTree()
    {
        MainWindow window;
        test::openDemo(window);
        ModuleTreeModel* tree = window.treePanel()->model();
        for (const char* layer : {"features.0", "features.1", "features.2"})
            QVERIFY(tree->setData(tree->indexOfPath(layer), Qt::Checked, Qt::CheckStateRole));
        ProbesPanel* probes = window.probesPanel();
        QCOMPARE(probes->tickedLayers(), (QStringList{"features.0", "features.1", "features.2"}));
        probes->setDataFolder(test::fixture("probe"));
        QSignalSpy finished(probes, &ProbesPanel::finished);
        probes->train(probes->tickedLayers());
        QVERIFY(finished.wait(Timeout));
        const ProbeResultPtr result = probes->lastResult();
        QCOMPARE(result->layers.size(), size_t{3});
        QCOMPARE(result->samples, int64_t{120});
        QCOMPARE(result->classNames, (std::vector<std::string>{"footwear", "rest"}));
        const auto& best = result->layers[static_cast<size_t>(result->best)];
        QVERIFY2(best.validationAccuracy >= 0.9, qPrintable(QString::number(best.validationAccuracy)));
        for (const auto& l : result->layers)
            QVERIFY(l.validationAccuracy <= best.validationAccuracy);

        // The tree marks every probed layer and the best one.
        const QString bestPath = QString::fromStdString(best.layer);
        QCOMPARE(window.document()->bestProbeLayer(), bestPath);
        const QModelIndex marks = tree->indexOfPath(bestPath).siblingAtColumn(ModuleTreeModel::Marks);
        QVERIFY2(tree->data(marks).toString().contains("★ best probe"), qPrintable(tree->data(marks).toString()));
        QVERIFY(tree->data(tree->indexOfPath(bestPath), Qt::FontRole).value<QFont>().bold());
        // Bars, the best layer's bar and the chance line.
        QCOMPARE(probes->sweepPlot()->plottableCount(), 3);
        QTemporaryDir dir;
        QCOMPARE(probes->saveSweepPlot(dir.filePath("sweep.png")), QString());
        QVERIFY(!QImage(dir.filePath("sweep.png")).isNull());

        // A second training of the same layer reads the cached activations.
        probes->train({"features.1"});
        QVERIFY(finished.wait(Timeout));
        QCOMPARE(probes->lastResult()->cachedLayers, (std::vector<std::string>{"features.1"}));

        // Export the probe, import it back: it scores the window's images (footwear, then the rest).
        const QString file = dir.filePath("probe.pt");
        QSignalSpy exported(probes, &ProbesPanel::message);
        probes->exportProbeTo("features.1", file, false);
        QVERIFY(exported.wait(Timeout));
        QVERIFY(exported.first().at(0).toString().contains(file));
        QSignalSpy scored(probes, &ProbesPanel::scoresShown);
        const QStringList images{probeImage("footwear", 5), probeImage("rest", 5)};
        probes->applyProbeFile(file, images);
        QVERIFY(scored.wait(Timeout));
        const auto scores = scored.takeFirst().at(0).value<ProbeScoresPtr>();
        QCOMPARE(scores->layer, std::string("features.1"));
        QCOMPARE(scores->classNames, (std::vector<std::string>{"footwear", "rest"}));
        QVERIFY(scores->probabilities[0][0] > 0.5); // the footwear image
        QVERIFY(scores->probabilities[1][1] > 0.5); // the other one
        QCOMPARE(scores->probabilities[0][0] + scores->probabilities[0][1], 1.0);
    }

    void gradCamOfTheSelectedImageEqualsTheCoreComputation()
    {
        MainWindow window;
        test::openDemo(window);
        const QString image = probeImage("footwear", 3);
        window.document()->addImages({image});
        GradCamView* view = window.gradCamView();
        window.showCentralTab(MainWindow::CentralTab::Attribution);
        view->setLayer("features.2");
        QSignalSpy finished(view, &GradCamView::finished);
        view->compute();
        QVERIFY(finished.wait(Timeout));
        const GradCamResultPtr result = view->lastResult();

        auto model = Model::load(test::demoModel().toStdString());
        Engine engine(model);
        const at::Tensor input = loadImageBatch({image.toStdString()}, window.document()->preprocessing());
        const Attribution expected = computeAttribution(engine, input, "features.2");
        QCOMPARE(result->images.size(), size_t{1});
        const GradCamImage& computed = result->images.front();
        QCOMPARE(computed.target, expected.targets.front());
        const at::Tensor cam = expected.gradCamUpsampled[0];
        const at::Tensor shown
            = at::from_blob(const_cast<float*>(computed.gradCam.values.data()), {28, 28}, at::kFloat);
        QVERIFY2(at::allclose(shown, cam, 1e-5, 1e-6), "the window's Grad-CAM differs from the core's");
        QCOMPARE(view->image().size(), QSize(28, 28));

        QTemporaryDir dir;
        QCOMPARE(view->savePng(dir.filePath("gradcam.png")), QString());
        // A figure: a title over the 28 × 28 map enlarged ten times, its colour bar beside it.
        const QImage exported(dir.filePath("gradcam.png"));
        const QPoint origin = figurePictureOrigin();
        QVERIFY(exported.width() >= figureScaleLeft(280) + 96 && exported.height() >= origin.y() + 280);
        QCOMPARE(exported.pixel(origin + QPoint(5, 5)), exported.pixel(origin + QPoint(9, 9))); // one map pixel
        QCOMPARE(exported.pixel(origin + QPoint(5, 5)), view->image().pixel(0, 0));
        const QRgb middle = view->colorBar()->image(280).pixel(8, 140);
        QVERIFY(middle != qRgb(255, 255, 255));
        QCOMPARE(exported.pixel(figureScaleLeft(280) + 8, origin.y() + 140), middle);
        bool titled = false; // dark text above the picture
        for (int x = 0; x < exported.width() && !titled; ++x)
            for (int y = 0; y < origin.y() && !titled; ++y)
                titled = qGray(exported.pixel(x, y)) < 100;
        QVERIFY(titled);
        view->setShowSaliency(true);
        QCOMPARE(view->savePng(dir.filePath("saliency.png")), QString());
        QVERIFY(QImage(dir.filePath("saliency.png")) != QImage(dir.filePath("gradcam.png")));
    }

    void patchingBsLastLayerIntoAGivesBsPrediction()
    {
        MainWindow window;
        test::openDemo(window);
        window.document()->addImages({probeImage("rest", 0), probeImage("footwear", 0)});
        PatchingView* view = window.patchingView();
        view->setup(0, 1, "classifier.2", "features.2");
        QSignalSpy finished(view, &PatchingView::finished);
        view->compute();
        QVERIFY(finished.wait(Timeout));
        const PatchResultPtr result = view->lastResult();
        QCOMPARE(result->columns.size(), size_t{3});
        const auto& a = result->columns[0].predictions.front();
        const auto& b = result->columns[1].predictions.front();
        const auto& patched = result->columns[2].predictions.front();
        QVERIFY2(a.index != b.index, "the two images must be told apart for the test to mean anything");
        QCOMPARE(patched.index, b.index);
        QCOMPARE(patched.probability, b.probability);
        QCOMPARE(result->columns[2].map.shape, (std::vector<int64_t>{3, 3}));

        // Ablation: every channel of the last block zeroed leaves the classifier only its bias.
        QString all;
        for (int c = 0; c < 128; ++c)
            all += QString(c ? ",%1" : "%1").arg(c);
        view->setup(0, 0, "features.2", "", true, all);
        view->compute();
        QVERIFY(finished.wait(Timeout));
        QCOMPARE(view->lastResult()->columns.size(), size_t{2});
        // Pooled zeros reach the last Linear, so the scores are its bias: read by Python from the file.
        const QStringList bias
            = test::runPython(QString("import torch\n"
                                      "p = torch.jit.load('%1').state_dict()['classifier.2.bias'].softmax(0)\n"
                                      "print(int(p.argmax()), repr(float(p.max())))")
                                  .arg(test::sourceDir() + "/resources/demo/fashion_cnn.pt"))
                  .split(' ');
        QCOMPARE(bias.size(), 2);
        const auto& ablated = view->lastResult()->columns[1].predictions.front();
        QCOMPARE(ablated.index, bias[0].toLongLong());
        QVERIFY2(std::abs(ablated.probability - bias[1].toDouble()) < 1e-7,
            qPrintable(QString("%1 against %2").arg(ablated.probability, 0, 'g', 9).arg(bias[1])));
        QVERIFY(ablated.index != view->lastResult()->columns[0].predictions.front().index
            || ablated.probability != view->lastResult()->columns[0].predictions.front().probability);
    }
};

QTEST_MAIN(AnalysisTest)
#include "analysis_test.moc"
