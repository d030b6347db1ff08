// The Relevance tab (CRP), offscreen, on the colour fixture CNN: what it shows equals core's
// computeConceptRelevance on the same images (held to zennit-crp in tests/cli/test_crp.py), a
// clicked bar picks its channel, the channel page opens for it, its exports read back in Python,
// and a bad channel list is refused before any job runs.
#include "document/document.h"
#include "graph/engine.h"
#include "gui_test_support.h"
#include "jobs/run_controller.h"
#include "model/model.h"
#include "panels/job_setup_column.h"
#include "panels/relevance_panel.h"
#include "views/qcustomplot_include.h"
#include "window/main_window.h"

#include <QComboBox>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>
#include <numeric>

using namespace torchscope;

namespace {

constexpr int Timeout = 300000;

QStringList photos()
{
    return {test::fixture("color/astronaut_a.png"), test::fixture("color/stripes.png")};
}

} // namespace

class RelevancePanelTest : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void channelsEqualTheCoreOperationAndABarPicksAChannel()
    {
        MainWindow window;
        test::openModel(window, test::fixture("color_cnn.pt"));
        window.document()->addImages(photos());
        window.showCentralTab(MainWindow::CentralTab::Relevance);
        RelevancePanel* panel = window.relevancePanel();
        panel->layerBox()->setCurrentText("features.4");
        panel->channelsField()->setText("top:3");
        panel->referenceFolder()->setText(test::fixture("color"));
        QSignalSpy finished(panel, &RelevancePanel::finished);
        panel->start();
        QVERIFY(finished.wait(Timeout));
        const auto result = finished.takeFirst().at(0).value<ConceptRelevanceResultPtr>();
        QVERIFY(result);
        QCOMPARE(result->images.size(), size_t{2});

        // The core on the same images, model and settings.
        ConceptRelevanceRequest request;
        for (const auto& image : photos())
            request.images.push_back(image.toStdString());
        request.setup = window.document()->setup();
        request.layer = "features.4";
        request.channels = ChannelChoice::parse("top:3");
        request.referenceFolder = test::fixture("color").toStdString();
        request.top = 9;
        Engine engine(Model::load(test::fixture("color_cnn.pt").toStdString()));
        const ConceptRelevanceResult expected = computeConceptRelevance(engine, request);
        for (size_t i = 0; i < 2; ++i) {
            QCOMPARE(result->images[i].shares, expected.images[i].shares);
            QCOMPARE(result->images[i].channels.size(), size_t{3});
            for (size_t k = 0; k < 3; ++k) {
                QCOMPARE(result->images[i].channels[k].channel, expected.images[i].channels[k].channel);
                QCOMPARE(result->images[i].channels[k].map.values, expected.images[i].channels[k].map.values);
            }
        }
        QCOMPARE(result->references.size(), expected.references.size());
        for (size_t r = 0; r < result->references.size(); ++r)
            for (size_t k = 0; k < result->references[r].references.size(); ++k)
                QCOMPARE(result->references[r].references[k].sample, expected.references[r].references[k].sample);

        // The first conditioned channel is shown, with its map and its references; a click on the
        // second's bar shows that one.
        const CrpImage& first = result->images[0];
        QCOMPARE(panel->pickedChannel(), first.channels[0].channel);
        QVERIFY(!panel->channelMap()->pixmap().isNull());
        QCOMPARE(panel->referenceLabels().size(), 4); // the folder's four images
        const int64_t second = first.channels[1].channel;
        std::vector<int64_t> order(first.shares.size());
        std::iota(order.begin(), order.end(), 0);
        std::stable_sort(order.begin(), order.end(),
            [&](int64_t a, int64_t b) { return std::abs(first.shares[a]) > std::abs(first.shares[b]); });
        const auto position = std::find(order.begin(), order.end(), second) - order.begin();
        QCustomPlot* bars = panel->bars();
        const QPoint bar(static_cast<int>(bars->xAxis->coordToPixel(static_cast<double>(position))),
            static_cast<int>(bars->yAxis->coordToPixel(first.shares[static_cast<size_t>(second)] / 2)));
        QTest::mouseClick(bars, Qt::LeftButton, {}, bar);
        QCOMPARE(panel->pickedChannel(), second);
        QVERIFY(panel->caption()->text().contains(QString("Channel <b>%1</b>").arg(second)));

        // Its channel page.
        QSignalSpy page(panel, &RelevancePanel::channelPageRequested);
        QTest::mouseClick(panel->channelPageButton(), Qt::LeftButton);
        QCOMPARE(page.size(), 1);
        QCOMPARE(page.at(0).at(0).toString(), QString("features.4"));
        QCOMPARE(page.at(0).at(1).toInt(), static_cast<int>(second));

        // The exports Python reads: the CLI's keys.
        QTemporaryDir dir;
        QCOMPARE(panel->exportTo(dir.filePath("crp.npz")), QString());
        QCOMPARE(panel->exportTo(dir.filePath("crp.json")), QString());
        QCOMPARE(panel->exportTo(dir.filePath("bars.png"), "bars"), QString());
        QVERIFY(!QImage(dir.filePath("bars.png")).isNull());
        const QString checked = test::runPython(QString(R"(
import json, numpy as np
m = np.load('%1')
j = json.load(open('%2'))
print(m['shares'].shape[0], m['channels'].shape, m['maps'].shape[:2], len(j['images']), j['layer'],
      bool(np.allclose(np.abs(m['shares']).sum(1), 1, atol=1e-6)))
)")
                                                    .arg(dir.filePath("crp.npz"), dir.filePath("crp.json")));
        QCOMPARE(checked, QString("2 (2, 3) (2, 3) 2 features.4 True"));
    }

    void aBadChannelListIsRefusedBeforeAnyJob()
    {
        MainWindow window;
        test::openModel(window, test::fixture("color_cnn.pt"));
        window.document()->addImages(photos());
        RelevancePanel* panel = window.relevancePanel();
        panel->layerBox()->setCurrentText("features.4");
        panel->channelsField()->setText("top:x");
        panel->start();
        QVERIFY(panel->column()->summary()->text().startsWith("Channels:"));
        QVERIFY(!panel->column()->job());
        QVERIFY(!panel->result());
    }
};

QTEST_MAIN(RelevancePanelTest)
#include "relevance_panel_test.moc"
