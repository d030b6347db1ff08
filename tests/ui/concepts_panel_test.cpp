// The Concepts tab (network dissection), offscreen, on the colour fixture CNN (3 × 40 × 56 images): a
// concept set drawn at the model's input size; a dissection equal to core's dissect on the same
// request (held to NetDissect-Lite transcribed in NumPy, scikit-learn and SciPy in
// tests/cli/test_dissect.py); the category plot, the unit table sorted and searched, a unit's top
// images, and the channel page that shows the unit's concept labels; an SAE's latents dissected, their
// labels on their page of the Features tab (and never on a channel's page).
#include "concepts/dissection.h"
#include "concepts/synthetic_concepts.h"
#include "dialogs/channel_page.h"
#include "document/document.h"
#include "graph/engine.h"
#include "gui_test_support.h"
#include "model/model.h"
#include "panels/concepts_panel.h"
#include "panels/features_panel.h"
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
#include <QTabWidget>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QtTest>

using namespace torchscope;

namespace {

constexpr int Timeout = 300000;

} // namespace

// The note an empty plot shows (views/empty_plot.h), or "" when it shows data.
QString plotNote(QCustomPlot* plot)
{
    for (int i = 0; i < plot->itemCount(); ++i)
        if (auto* text = qobject_cast<QCPItemText*>(plot->item(i)))
            return text->text();
    return {};
}

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
        // While it runs the plot says so (it used to ask for a layer and a set).
        QCOMPARE(plotNote(panel->categoryPlot()),
            QString("Dissecting…\nthe units interpretable by category appear\nwhen it is done")); // wrapped
        QVERIFY(dissected.wait(Timeout));
        QCOMPARE(plotNote(panel->categoryPlot()), QString()); // the plot drawn
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

    void latentsOfAnSaeShowTheirConceptsOnTheirPage()
    {
        QTemporaryDir dir;
        const QString set = dir.filePath("shapes");
        SyntheticConceptsRequest drawing;
        drawing.out = set.toStdString();
        drawing.images = 48;
        drawing.seed = 7;
        drawing.height = 40;
        drawing.width = 56;
        makeSyntheticConcepts(drawing);
        MainWindow window;
        window.setInteractive(false);
        test::openModel(window, test::fixture("color_cnn.pt"));

        // An SAE of features.3 trained and its latents measured on the Features tab, over the set's images.
        window.showCentralTab(MainWindow::CentralTab::Features);
        FeaturesPanel* features = window.featuresPanel();
        features->layerBox()->setCurrentText("features.3");
        features->imagesField()->setText(set + "/images");
        features->expansionBox()->setValue(2);
        features->kBox()->setValue(3);
        features->batchBox()->setValue(512);
        QSignalSpy trained(features, &FeaturesPanel::trained);
        features->train();
        QVERIFY(trained.wait(Timeout));
        const QString sae = features->saeField()->text();
        QSignalSpy measured(features, &FeaturesPanel::latentsShown);
        features->measureLatents();
        QVERIFY(measured.wait(Timeout));
        const int64_t page = features->pickedLatent();
        QVERIFY(page >= 0);
        QVERIFY(!features->pageCaption()->text().contains("Concepts")); // nothing dissected yet

        // Its latents dissected on the Concepts tab, equal to core's dissect of the same request.
        window.showCentralTab(MainWindow::CentralTab::Concepts);
        ConceptsPanel* panel = window.conceptsPanel();
        panel->conceptsField()->setText(set);
        panel->unitsBox()->setCurrentIndex(panel->unitsBox()->findData(QString("sae")));
        panel->unitsFileField()->setText(sae);
        QSignalSpy dissected(panel, &ConceptsPanel::dissected);
        panel->dissectButton()->click();
        QVERIFY(dissected.wait(Timeout));
        const auto result = panel->result();
        QVERIFY(result && result->layers.size() == 1);
        QCOMPARE(result->layers.front().units, std::string("SAE latents"));
        DissectionRequest request;
        request.setup = window.document()->setup();
        request.concepts = set.toStdString();
        request.units = ("sae:" + sae).toStdString();
        request.formulaLength = panel->formulaBox()->value();
        request.top = 5;
        request.topImages = 8;
        Engine engine(Model::load(test::fixture("color_cnn.pt").toStdString()));
        const DissectionResult expected = dissect(engine, request);
        const auto& units = expected.layers.front().unitResults;
        QCOMPARE(result->layers.front().unitResults.size(), units.size());
        QVERIFY(page < static_cast<int64_t>(units.size()));

        // The latent's page, still open on the Features tab, now shows its concepts.
        const QString caption = features->pageCaption()->text();
        QVERIFY2(caption.contains("Concepts"), qPrintable(caption));
        QVERIFY(caption.contains(QString::fromStdString(units[static_cast<size_t>(page)].iou.front().label)));
        QVERIFY(caption.contains(QString::fromStdString(units[static_cast<size_t>(page)].invert.front().label)));
        // They are the labels of this SAE's latents only: not of features.3's channel of the same
        // number, nor of another SAE's latent.
        QVERIFY(!panel->labelsOf("features.3", page, "sae:" + sae).isEmpty());
        QVERIFY(panel->labelsOf("features.3", page).isEmpty());
        QVERIFY(panel->labelsOf("features.3", page, "sae:" + dir.path()).isEmpty());
        ChannelPage* channel = window.openChannelPage("features.3", static_cast<int>(page));
        QVERIFY(channel);
        QVERIFY(channel->conceptsText().isEmpty());
        channel->close();

        // A double-clicked latent in the table opens its page on the Features tab.
        QTableWidget* table = panel->unitTable();
        const int row = table->rowCount() - 1;
        const int64_t latent = table->item(row, 0)->data(Qt::UserRole + 1).toLongLong();
        Q_EMIT table->cellDoubleClicked(row, 0);
        QTabWidget* tabs = nullptr;
        for (QTabWidget* candidate : window.findChildren<QTabWidget*>())
            if (candidate->indexOf(features) >= 0)
                tabs = candidate;
        QVERIFY(tabs);
        QCOMPARE(tabs->currentWidget(), static_cast<QWidget*>(features));
        QCOMPARE(features->pickedLatent(), latent);
        QVERIFY(features->pageCaption()->text().contains(
            QString::fromStdString(units[static_cast<size_t>(latent)].invert.front().label)));
    }
};

QTEST_MAIN(ConceptsPanelTest)
#include "concepts_panel_test.moc"
