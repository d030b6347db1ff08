// The Attention tab, offscreen, on the fixture script's small ViT (torchvision's class, 4 layers of
// 2 heads; ViT-B/16 runs through the same code in attention_test and cli_attention): what it shows
// equals core's attention maps on the same images (their own tests hold them equal to eager
// PyTorch, a NumPy rollout and torchcam's LeGrad), a clicked patch becomes the query, its export
// reads back in Python, and a new model resets it.
#include "attention/attention_maps.h"
#include "document/document.h"
#include "graph/engine.h"
#include "gui_test_support.h"
#include "imaging/image_tensor.h"
#include "jobs/run_controller.h"
#include "model/model.h"
#include "panels/attention_panel.h"
#include "panels/job_setup_column.h"
#include "views/attention_head_grid.h"
#include "window/main_window.h"

#include <ATen/ATen.h>

#include <QLabel>
#include <QPushButton>
#include <QTemporaryDir>
#include <QtTest>

using namespace torchscope;

namespace {

constexpr int Timeout = 300000;

QStringList photos()
{
    return {test::fixture("images/rgb.png"), test::fixture("images/rgb.jpg")};
}

at::Tensor shown(const FloatTensor& map)
{
    return at::from_blob(const_cast<float*>(map.values.data()), map.shape, at::kFloat);
}

void openVit(MainWindow& window)
{
    test::openModel(window, test::fixture("vit_small_scripted.pt"));
}

AttentionWorkbenchResultPtr show(AttentionPanel* panel)
{
    QSignalSpy finished(panel, &AttentionPanel::finished);
    panel->start();
    if (!finished.wait(Timeout))
        return nullptr;
    return finished.takeFirst().at(0).value<AttentionWorkbenchResultPtr>();
}

} // namespace

class AttentionPanelTest : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void mapsEqualTheCoreOperationAndAClickedPatchIsTheQuery()
    {
        MainWindow window;
        openVit(window);
        const auto& modules = window.document()->model().modules;
        QCOMPARE(
            std::count_if(modules.begin(), modules.end(), [](const ModuleInfo& m) { return m.holdsAttention; }), 4L);
        window.document()->addImages(photos());
        window.showCentralTab(MainWindow::CentralTab::Attention);
        AttentionPanel* panel = window.attentionPanel();
        const AttentionWorkbenchResultPtr result = show(panel);
        QVERIFY(result);
        QCOMPARE(result->images.size(), size_t{2});
        QCOMPARE(result->layers.size(), size_t{4});
        QCOMPARE(result->heads, int64_t{2});
        QVERIFY(result->spatial);
        QCOMPARE(result->prefix, int64_t{1});
        QCOMPARE(result->gridHeight, int64_t{14});
        QCOMPARE(result->patchSize, int64_t{16});
        QCOMPARE(panel->grid()->rows(), 4);
        QCOMPARE(panel->grid()->columns(), 2);

        // The core on the same images and model.
        auto model = Model::load(test::fixture("vit_small_scripted.pt").toStdString());
        Engine engine(model);
        std::vector<std::string> paths;
        for (const auto& image : photos())
            paths.push_back(image.toStdString());
        const at::Tensor images = loadImageBatch(paths, window.document()->preprocessing());
        AttentionRequest request;
        request.methods = {AttentionHeads, AttentionRollout, AttentionLeGrad};
        const AttentionResult expected = attentionMaps(engine, images, request);
        for (size_t l = 0; l < 4; ++l)
            QVERIFY2(at::equal(shown(result->layers[l].probabilities), expected.probabilities[l]),
                result->layers[l].layer.c_str());
        for (int64_t i = 0; i < 2; ++i) {
            QVERIFY(at::equal(shown(result->images[static_cast<size_t>(i)].rollout), expected.rollout[i][0]));
            QVERIFY(at::equal(shown(result->images[static_cast<size_t>(i)].legrad), expected.legrad[i][0]));
            QCOMPARE(result->images[static_cast<size_t>(i)].target, expected.targets[static_cast<size_t>(i)]);
        }
        // A head's map: the class token's row over the patches, or the clicked patch's.
        const at::Tensor p = expected.probabilities[3];
        QVERIFY(
            at::equal(shown(attentionHeadMap(*result, 3, 1, 0, -1)), p[1][0][0].narrow(0, 1, 196).reshape({14, 14})));
        QTest::mouseClick(panel->grid(), Qt::LeftButton, {}, panel->grid()->cellCentre(3, 0));
        QLabel* enlarged = panel->enlargedMap();
        // Row 3, column 10 of the 14 x 14 grid: token 1 + 3 * 14 + 10.
        QTest::mouseClick(enlarged, Qt::LeftButton, {},
            QPoint(static_cast<int>(enlarged->width() * 10.5 / 14), static_cast<int>(enlarged->height() * 3.5 / 14)));
        QCOMPARE(panel->query(), 1 + 3 * 14 + 10);
        QVERIFY(at::equal(shown(attentionHeadMap(*result, 3, 1, 0, panel->query())),
            p[1][0][1 + 3 * 14 + 10].narrow(0, 1, 196).reshape({14, 14})));

        // The export Python reads: the CLI's keys.
        QTemporaryDir dir;
        QCOMPARE(panel->exportTo(dir.filePath("attention.npz")), QString());
        QCOMPARE(panel->exportTo(dir.filePath("distance.png"), "distance"), QString());
        QVERIFY(!QImage(dir.filePath("distance.png")).isNull());
        const QString checked = test::runPython(QString(R"(
import numpy as np
m = np.load('%1')
a = m['encoder.layers.encoder_layer_3.self_attention:attention']
print(a.shape, m['rollout'].shape, m['legrad'].shape, m['encoder.layers.encoder_layer_3.self_attention:distance'].shape,
      bool(np.allclose(a.sum(-1), 1, atol=1e-5)))
)")
                                                    .arg(dir.filePath("attention.npz")));
        QCOMPARE(checked, QString("(2, 2, 197, 197) (2, 1, 14, 14) (2, 1, 14, 14) (2, 2) True"));
    }

    void aModelWithoutAttentionSaysSoAndANewModelResets()
    {
        MainWindow window;
        test::openDemo(window);
        AttentionPanel* panel = window.attentionPanel();
        QVERIFY(panel->column()->summary()->text().contains("no attention"));
        QVERIFY(!panel->result());
        QVERIFY(!panel->column()->exportButton()->isEnabled());
        QVERIFY(!panel->startButton()->isEnabled()); // nothing to show: the hint says why
    }
};

QTEST_MAIN(AttentionPanelTest)
#include "attention_panel_test.moc"
