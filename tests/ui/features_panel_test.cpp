// The Features tab (sparse autoencoders), offscreen, on the colour fixture CNN (3 × 40 × 56 images):
// a training plotted as it runs and saved where the summary says; the latent table equal to core's
// computeSaeLatents on the same SAE and folder (held to Overcomplete and eager hooks in
// tests/cli/test_sae.py), sorted and searched; a latent's page; a splice that puts the SAE's
// edit into the window's run (and Remove that takes only the SAE's edits away); and the evaluation
// equal to core's evaluateSparseAutoencoder, shown in the column.
#include "document/document.h"
#include "graph/engine.h"
#include "gui_test_support.h"
#include "jobs/job_handle.h"
#include "model/model.h"
#include "panels/features_panel.h"
#include "panels/job_setup_column.h"
#include "views/qcustomplot_include.h"
#include "window/main_window.h"

#include <QComboBox>
#include <QDir>
#include <QFile>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>
#include <cmath>

using namespace torchscope;

namespace {

constexpr int Timeout = 300000;

} // namespace

class FeaturesPanelTest : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void trainMeasureAndSplice()
    {
        QTemporaryDir dir;
        const QString images = dir.filePath("images");
        QDir().mkpath(images);
        for (const QString name : {"astronaut_a", "disc", "stripes", "astronaut_b"})
            QVERIFY(QFile::copy(test::fixture("color/" + name + ".png"), images + "/" + name + ".png"));
        MainWindow window;
        test::openModel(window, test::fixture("color_cnn.pt"));
        window.showCentralTab(MainWindow::CentralTab::Features);
        FeaturesPanel* panel = window.featuresPanel();
        panel->layerBox()->setCurrentText("features.3");
        panel->imagesField()->setText(images);
        panel->expansionBox()->setValue(4);
        panel->kBox()->setValue(3);
        panel->batchBox()->setValue(256); // 4 images of 20 × 28 positions: 2,240 vectors
        QSignalSpy trained(panel, &FeaturesPanel::trained);
        panel->train();
        QVERIFY(trained.wait(Timeout));
        const auto training = trained.takeFirst().at(0).value<std::shared_ptr<const SaeTrainingResult>>();
        QVERIFY(training && !training->layers.empty());
        const QString folder = QString::fromStdString(training->layers[0].folder);
        QCOMPARE(folder, dir.filePath("images-saes/color_cnn/features.3"));
        QVERIFY(QFile::exists(folder + "/cfg.json"));
        QCOMPARE(panel->saeField()->text(), folder);
        QCOMPARE(panel->trainingPlot()->graphCount(), 3); // FVU, dead share, L0 / k
        QVERIFY(panel->trainingPlot()->graph(0)->data()->size() >= 1);

        QSignalSpy shown(panel, &FeaturesPanel::latentsShown);
        panel->measureLatents();
        QVERIFY(shown.wait(Timeout));
        const auto latents = panel->latents();
        QVERIFY(latents);
        // The core on the same SAE and folder.
        SaeLatentsRequest request;
        request.sae = folder.toStdString();
        request.images = images.toStdString();
        request.setup = window.document()->setup();
        request.top = 8;
        request.effects = 64;
        Engine engine(Model::load(test::fixture("color_cnn.pt").toStdString()));
        const SaeLatentsResult expected = computeSaeLatents(engine, request);
        QCOMPARE(latents->latents.size(), expected.latents.size());
        int firing = 0;
        for (size_t i = 0; i < expected.latents.size(); ++i) {
            QCOMPARE(latents->latents[i].fires, expected.latents[i].fires);
            QCOMPARE(latents->latents[i].supports, expected.latents[i].supports);
            firing += expected.latents[i].fires > 0 ? 1 : 0;
        }
        QTableWidget* table = panel->latentTable();
        QCOMPARE(table->rowCount(), firing);
        // Sorted by frequency, most frequent first; the first row's latent is the page shown.
        for (int row = 1; row < table->rowCount(); ++row)
            QVERIFY(table->item(row - 1, 1)->data(Qt::UserRole).toDouble()
                >= table->item(row, 1)->data(Qt::UserRole).toDouble());
        const int64_t first = table->item(0, 0)->data(Qt::UserRole).toLongLong();
        QCOMPARE(panel->pickedLatent(), first);
        QCOMPARE(
            panel->topImageLabels().size(), static_cast<int>(expected.latents[static_cast<size_t>(first)].top.size()));
        QVERIFY(!panel->topImageLabels().front()->pixmap().isNull());
        QVERIFY(panel->pageCaption()->text().contains("supports"));
        // The search keeps the rows of latents that support the class searched for.
        panel->searchField()->setText("red");
        for (int row = 0; row < table->rowCount(); ++row)
            QCOMPARE(table->isRowHidden(row), !table->item(row, 4)->text().contains("red"));
        panel->searchField()->clear();

        // The latent's decoder direction, visualised: an image appears on its page.
        QSignalSpy drawn(panel, &FeaturesPanel::directionShown);
        panel->visualizeButton()->click();
        QVERIFY(drawn.wait(Timeout));
        QVERIFY(!panel->directionImage()->pixmap().isNull());
        const std::vector<double> direction = saeDecoderDirection(folder.toStdString(), first);
        QCOMPARE(direction.size(), size_t{12}); // features.3's channels

        // Spliced into the run: the Document holds the SAE's edit of that latent.
        panel->spliceButton()->click();
        QCOMPARE(window.document()->edits().size(), size_t{1});
        const EditSpec& edit = window.document()->edits().front();
        QCOMPARE(edit.kind, EditKind::SaeLatents);
        QCOMPARE(edit.path, std::string("features.3"));
        QCOMPARE(edit.channels, std::vector<int64_t>{first});
        QCOMPARE(edit.latentOp, std::string("ablate"));
        // Remove takes the SAE's edits at the layer away, not the layer's other edits.
        window.document()->addEdit(EditSpec::make("features.3", EditKind::ZeroChannels, {2}));
        const auto buttons = panel->findChildren<QPushButton*>();
        const auto remove
            = std::find_if(buttons.begin(), buttons.end(), [](QPushButton* b) { return b->text() == "Remove"; });
        QVERIFY(remove != buttons.end());
        (*remove)->click();
        QCOMPARE(window.document()->edits().size(), size_t{1});
        QCOMPARE(window.document()->edits().front().kind, EditKind::ZeroChannels);
        window.document()->clearEdits(QString());

        // Evaluated over the folder: the core's figures on the same SAE and folder, shown in the column.
        panel->layerBox()->setCurrentText("features.0"); // the SAE's layer comes back with its evaluation
        QSignalSpy evaluated(panel, &FeaturesPanel::evaluated);
        panel->evaluateButton()->click();
        QVERIFY(evaluated.wait(Timeout));
        const auto evaluation = evaluated.takeFirst().at(0).value<std::shared_ptr<const SaeEvaluationResult>>();
        SaeEvaluationRequest evaluationRequest;
        evaluationRequest.sae = folder.toStdString();
        evaluationRequest.images = images.toStdString();
        evaluationRequest.setup = window.document()->setup();
        const SaeEvaluationResult core = evaluateSparseAutoencoder(engine, evaluationRequest);
        QCOMPARE(evaluation->vectors, core.vectors);
        QCOMPARE(evaluation->fires, core.fires);
        // The forward passes may run on other thread counts: their float32 sums round differently.
        QVERIFY2(std::abs(evaluation->fvu - core.fvu) <= 1e-6 * core.fvu, qPrintable(QString::number(evaluation->fvu)));
        QVERIFY(core.downstream);
        QVERIFY2(std::abs(evaluation->lossRecovered - core.lossRecovered) <= 1e-5 * std::abs(core.lossRecovered) + 1e-9,
            qPrintable(QString::number(evaluation->lossRecovered)));
        const QString text = panel->evaluationLabel()->text();
        QVERIFY2(text.contains(QString("FVU %1").arg(QString::number(evaluation->fvu, 'g', 3))), qPrintable(text));
        // A flat folder has no labels: the loss is against the clean predictions.
        QVERIFY2(text.contains("loss recovered") && text.contains("clean predictions"), qPrintable(text));
        QVERIFY2(text.contains(QString("dead latents %1").arg(evaluation->deadLatents)), qPrintable(text));
        QCOMPARE(panel->layerBox()->currentText(), QString("features.3"));
        // Another SAE in the field: the evaluation shown was not of it.
        panel->saeField()->setText(dir.filePath("another"));
        QVERIFY(panel->evaluationLabel()->text().isEmpty());
    }

    void problemsAreSaidBeforeAnyJob()
    {
        MainWindow window;
        test::openModel(window, test::fixture("color_cnn.pt"));
        FeaturesPanel* panel = window.featuresPanel();
        panel->imagesField()->setText("/nonexistent/folder");
        panel->train();
        QVERIFY(panel->column()->summary()->text().contains("folder of images"));
        QVERIFY(!panel->column()->job());
        panel->saeField()->setText("/nonexistent/sae");
        panel->measureLatents();
        QVERIFY(panel->column()->summary()->text().contains("cfg.json"));
        QVERIFY(!panel->column()->job());
    }
};

QTEST_MAIN(FeaturesPanelTest)
#include "features_panel_test.moc"
