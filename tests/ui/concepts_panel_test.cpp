// The Concepts tab (network dissection), offscreen, on the colour fixture CNN (3 × 40 × 56 images): a
// concept set drawn at the model's input size; a dissection equal to core's dissect on the same
// request (held to NetDissect-Lite transcribed in NumPy, scikit-learn and SciPy in
// tests/cli/test_dissect.py); the category plot, the unit table sorted and searched, a unit's top
// images, and the channel page that shows the unit's concept labels.
#include "concepts/dissection.h"
#include "dialogs/channel_page.h"
#include "document/document.h"
#include "graph/engine.h"
#include "gui_test_support.h"
#include "model/model.h"
#include "panels/concepts_panel.h"
#include "panels/job_setup_column.h"
#include "views/qcustomplot_include.h"
#include "window/main_window.h"

#include <QComboBox>
#include <QDir>
#include <QImage>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QtTest>

using namespace torchscope;

namespace {

constexpr int Timeout = 300000;

} // namespace

class ConceptsPanelTest : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void drawASetDissectAndBrowse()
    {
        QTemporaryDir dir;
        MainWindow window;
        window.setInteractive(false);
        test::openModel(window, test::fixture("color_cnn.pt"));
        window.showCentralTab(MainWindow::CentralTab::Concepts);
        ConceptsPanel* panel = window.conceptsPanel();

        // Nothing to dissect yet: the summary says what is missing.
        panel->layerBox()->setCurrentText("features.3");
        panel->dissect();
        QVERIFY(panel->column()->summary()->text().contains("concept set"));

        // A set drawn at the model's input size (its setup resizes to 40 × 56).
        const QString set = dir.filePath("shapes");
        panel->conceptsField()->setText(set);
        QSignalSpy made(panel, &ConceptsPanel::setMade);
        panel->makeSetButton()->click();
        QVERIFY(made.wait(Timeout));
        QCOMPARE(made.takeFirst().at(0).toString(), set);
        QCOMPARE(QDir(set + "/images").entryList(QDir::Files).size(), 200);
        QVERIFY(QFile::exists(set + "/concepts.csv"));
        const QImage first(set + "/images/00000.png");
        QCOMPARE(first.size(), QSize(56, 40));

        panel->formulaBox()->setValue(2);
        QSignalSpy dissected(panel, &ConceptsPanel::dissected);
        panel->dissectButton()->click();
        QVERIFY(dissected.wait(Timeout));
        const auto result = panel->result();
        QVERIFY(result && result->layers.size() == 1);

        // Core's dissect on the same request.
        DissectionRequest request;
        request.setup = window.document()->setup();
        request.layers = {"features.3"};
        request.concepts = set.toStdString();
        request.formulaLength = 2;
        request.top = 5;
        request.topImages = 8;
        Engine engine(Model::load(test::fixture("color_cnn.pt").toStdString()));
        const DissectionResult expected = dissect(engine, request);
        const DissectedLayer& layer = result->layers.front();
        QCOMPARE(layer.unitResults.size(), expected.layers.front().unitResults.size());
        for (size_t u = 0; u < layer.unitResults.size(); ++u) {
            const DissectedUnit& got = layer.unitResults[u];
            const DissectedUnit& want = expected.layers.front().unitResults[u];
            QCOMPARE(got.iou.front().label, want.iou.front().label);
            QCOMPARE(got.iou.front().score, want.iou.front().score);
            QCOMPARE(got.invert.front().label, want.invert.front().label);
            QCOMPARE(got.formula.label, want.formula.label);
        }

        // The category plot: interpretable units by IoU and by INVERT.
        QCOMPARE(panel->categoryPlot()->plottableCount(), 2);
        // The table: a row per unit, by IoU, best first; its first row's unit is shown.
        QTableWidget* table = panel->unitTable();
        QCOMPARE(table->rowCount(), static_cast<int>(layer.unitResults.size()));
        for (int row = 1; row < table->rowCount(); ++row)
            QVERIFY(table->item(row - 1, 2)->data(Qt::UserRole).toDouble()
                >= table->item(row, 2)->data(Qt::UserRole).toDouble());
        const int64_t shown = table->item(0, 0)->data(Qt::UserRole + 1).toLongLong();
        QCOMPARE(panel->pickedUnit(), shown);
        const DissectedUnit& unit = layer.unitResults[static_cast<size_t>(shown)];
        QCOMPARE(panel->topImageLabels().size(), static_cast<int>(unit.topImages.size()));
        QVERIFY(!panel->topImageLabels().front()->pixmap().isNull());
        QVERIFY(panel->unitCaption()->text().contains(QString::fromStdString(unit.iou.front().label)));
        // The search keeps the units labelled with the concept searched for.
        const QString label = table->item(0, 1)->text();
        panel->searchField()->setText(label);
        for (int row = 0; row < table->rowCount(); ++row) {
            bool labelled = false;
            for (const int column : {1, 3, 4})
                labelled = labelled || table->item(row, column)->text().contains(label, Qt::CaseInsensitive);
            QCOMPARE(table->isRowHidden(row), !labelled);
        }
        panel->searchField()->clear();

        // A double-clicked channel opens its page, which shows its concept labels.
        Q_EMIT table->cellDoubleClicked(0, 0);
        const auto pages = window.findChildren<ChannelPage*>();
        QCOMPARE(pages.size(), 1);
        QVERIFY(pages.front()->conceptsText().contains(QString::fromStdString(unit.iou.front().label)));
        QVERIFY(pages.front()->conceptsText().contains("INVERT"));
        pages.front()->close();
    }
};

QTEST_MAIN(ConceptsPanelTest)
#include "concepts_panel_test.moc"
