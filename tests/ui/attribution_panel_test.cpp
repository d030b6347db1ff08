// The Attribution tab, offscreen: what it shows equals core's operations on the same images (their
// own tests hold them equal to Captum, pytorch-grad-cam, RISE and Quantus), its summary sorts by
// number, its exports read back in Python, a cancel keeps what finished, and a new model resets it.
#include "attribution/faithfulness.h"
#include "attribution/input_attributions.h"
#include "attribution/parameter_randomisation.h"
#include "document/document.h"
#include "graph/engine.h"
#include "gui_test_support.h"
#include "imaging/image_tensor.h"
#include "jobs/job_runner.h"
#include "jobs/run_controller.h"
#include "model/model.h"
#include "panels/attribution_panel.h"
#include "panels/job_setup_column.h"
#include "relevance/relevance_rules.h"
#include "views/attribution_grid.h"
#include "window/main_window.h"

#include <ATen/ATen.h>

#include <QComboBox>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QProgressBar>
#include <QPushButton>
#include <QTabWidget>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QtTest>

#include <atomic>
#include <future>

using namespace torchscope;

namespace {

constexpr int Timeout = 300000;

QStringList probeImages()
{
    return {test::fixture("probe/footwear/00.png"), test::fixture("probe/rest/00.png"),
        test::fixture("probe/footwear/01.png")};
}

// The probe images as the window's input setup makes them, for core's own run on them.
at::Tensor probeBatch(MainWindow& window)
{
    std::vector<std::string> paths;
    for (const auto& image : probeImages())
        paths.push_back(image.toStdString());
    return loadImageBatch(paths, window.document()->preprocessing());
}

void tick(QListWidget* list, const QStringList& names)
{
    for (int i = 0; i < list->count(); ++i)
        list->item(i)->setCheckState(names.contains(list->item(i)->text()) ? Qt::Checked : Qt::Unchecked);
}

AttributionWorkbenchResultPtr explain(AttributionPanel* panel)
{
    QSignalSpy finished(panel, &AttributionPanel::finished);
    panel->start();
    // Until the job ends the summary table says what comes there and when (it used to be blank).
    const QTableWidget* table = panel->summaryTable();
    if (table->rowCount() != 1 || table->item(0, 0) == nullptr
        || !table->item(0, 0)->text().startsWith(QString("Explaining… the metrics' means"))) {
        qWarning("the summary table does not say it is explaining");
        return nullptr;
    }
    if (!finished.wait(Timeout))
        return nullptr;
    return finished.takeFirst().at(0).value<AttributionWorkbenchResultPtr>();
}

// The demo with the three probe images, its Attribution tab set to Integrated Gradients alone (no
// metric): the job the cancel and model-change tests hold at its first image.
AttributionPanel* integratedGradientsOfTheProbeImages(MainWindow& window)
{
    test::openDemo(window);
    window.document()->addImages(probeImages());
    AttributionPanel* panel = window.attributionPanel();
    tick(panel->methodList(), {"integrated_gradients"});
    tick(panel->metricList(), {});
    return panel;
}

// Holds a job in its progress report until release() (or the end of the test, whatever fails first:
// the window's end waits for its jobs).
class HeldJob {
public:
    ~HeldJob() { release(); }
    std::shared_future<void> released() const { return released_; }
    void release()
    {
        if (!done_.exchange(true))
            promise_.set_value();
    }

private:
    std::promise<void> promise_;
    std::shared_future<void> released_ = promise_.get_future().share();
    std::atomic_bool done_{false};
};

at::Tensor shown(const FloatTensor& map)
{
    return at::from_blob(const_cast<float*>(map.values.data()), map.shape, at::kFloat);
}

} // namespace

class AttributionPanelTest : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void mapsMetricsAndSanityEqualTheCoreOperations()
    {
        MainWindow window;
        test::openDemo(window);
        window.document()->addImages(probeImages());
        window.showCentralTab(MainWindow::CentralTab::Workbench);
        AttributionPanel* panel = window.attributionPanel();
        tick(panel->methodList(), {"saliency", "integrated_gradients", "grad_cam"});
        tick(panel->metricList(), {"deletion", "average_drop"});
        panel->layerBox()->setCurrentText("features.2");
        panel->sanityBox()->setCurrentIndex(panel->sanityBox()->findData(QString("cascading")));
        const AttributionWorkbenchResultPtr result = explain(panel);
        QVERIFY(result);
        QCOMPARE(result->images.size(), size_t{3});
        QCOMPARE(panel->grid()->cellCount(), 9); // 3 images × 3 methods
        // Drawn results leave the side docks their room at 1280 × 800: the centre needs no more than
        // 760 px once a result is drawn (the curves' legend once set the tab's least width to 882, and
        // the Modules dock shrank to 138 px as the result appeared).
        {
            auto* centre = window.findChild<QTabWidget*>("centralTabs");
            QVERIFY(centre);
            QVERIFY2(centre->minimumSizeHint().width() <= 760,
                qPrintable(QString("the centre needs %1 px").arg(centre->minimumSizeHint().width())));
        }

        // The core on the same images, model and settings.
        auto model = Model::load(test::demoModel().toStdString());
        Engine engine(model);
        const at::Tensor images = probeBatch(window);
        InputAttributionRequest request;
        request.methods = {"saliency", "integrated_gradients", "grad_cam"};
        request.layer = "features.2";
        request.steps = 32;
        const InputAttributionResult expected = attributeInputs(engine, images, request);
        FaithfulnessRequest metrics;
        metrics.metrics = {"deletion", "average_drop"};
        for (const std::string method : {"saliency", "integrated_gradients", "grad_cam"}) {
            const std::string key = method == "grad_cam" ? "grad_cam:input" : method;
            const at::Tensor importance = pixelImportance(expected.maps.at(key), 28, 28);
            const FaithfulnessResult scores
                = evaluateFaithfulness(engine, images, expected.maps.at(key), expected.targets, metrics);
            for (int64_t i = 0; i < 3; ++i) {
                const WorkbenchMap& map = result->maps.at(method)[static_cast<size_t>(i)];
                QVERIFY2(at::allclose(shown(map.importance), importance[i], 1e-5, 1e-7), method.c_str());
                QCOMPARE(map.metrics.at("deletion"), scores.metrics.at("deletion").perImage[static_cast<size_t>(i)]);
                QCOMPARE(
                    map.metrics.at("average_drop"), scores.metrics.at("average_drop").perImage[static_cast<size_t>(i)]);
            }
        }
        // The sanity check went through every layer, from the output down.
        std::vector<std::string> layers = randomisableLayers(*model);
        std::reverse(layers.begin(), layers.end());
        QCOMPARE(result->sanity.at("grad_cam").size(), layers.size());
        for (size_t k = 0; k < layers.size(); ++k) {
            const WorkbenchSanityLayer& layer = result->sanity.at("grad_cam")[k];
            QCOMPARE(layer.layer, layers[k]);
            QVERIFY(layer.spearmanAbs >= -1.0 && layer.spearmanAbs <= 1.0);
            QCOMPARE(layer.firstImage.shape, (std::vector<int64_t>{28, 28}));
        }

        // The summary: a row per method, sorted by a metric's mean, not its text.
        QTableWidget* table = panel->summaryTable();
        QCOMPARE(table->rowCount(), 3);
        int deletion = -1;
        for (int c = 0; c < table->columnCount(); ++c)
            if (table->horizontalHeaderItem(c)->text() == "deletion")
                deletion = c;
        QVERIFY(deletion > 0);
        table->sortItems(deletion, Qt::AscendingOrder);
        double previous = -1e300;
        for (int row = 0; row < 3; ++row) {
            const double mean = result->summary.at(table->item(row, 0)->text().toStdString()).at("deletion").mean;
            QVERIFY(mean >= previous);
            previous = mean;
        }

        // Exports Python reads: the maps in .npz, the metrics as JSON.
        QTemporaryDir dir;
        QCOMPARE(panel->exportTo(dir.filePath("maps.npz")), QString());
        QCOMPARE(panel->exportTo(dir.filePath("metrics.json")), QString());
        QCOMPARE(panel->exportTo(dir.filePath("curves.png"), "curves"), QString());
        QVERIFY(!QImage(dir.filePath("curves.png")).isNull());
        const QString checked = test::runPython(QString(R"(
import json, numpy as np
m = np.load('%1'); j = json.load(open('%2'))
print(m['grad_cam'].shape, m['targets'].tolist() == [e['target'] for e in j['images']],
      abs(float(m['grad_cam:deletion'].mean()) - j['methods']['grad_cam']['deletion']['mean']) < 1e-9,
      len(j['sanity']['methods']['grad_cam']['layers']))
)")
                                                    .arg(dir.filePath("maps.npz"), dir.filePath("metrics.json")));
        QCOMPARE(checked, QString("(3, 28, 28) True True %1").arg(layers.size()));
    }

    // LRP's composite, attention rule and per-layer rules come from the form, as the CLI's --composite,
    // --attention-rule and --rule: the map equals core's with the same settings, and differs from the
    // default composite's; a rule that does not parse is said, and nothing runs.
    void lrpTakesItsCompositeAndRulesFromTheForm()
    {
        MainWindow window;
        test::openDemo(window);
        window.document()->addImages(probeImages());
        AttributionPanel* panel = window.attributionPanel();
        // LRP's rows show while lrp is ticked, as IG's and the CAMs' while theirs are.
        tick(panel->methodList(), {"saliency", "grad_cam"});
        QVERIFY(!panel->compositeBox()->isVisibleTo(panel));
        QVERIFY(!panel->relevanceRulesEdit()->isVisibleTo(panel));
        QVERIFY(panel->layerBox()->isVisibleTo(panel));
        tick(panel->methodList(), {"lrp"});
        QVERIFY(panel->compositeBox()->isVisibleTo(panel));
        QVERIFY(panel->attentionRuleBox()->isVisibleTo(panel));
        QVERIFY(!panel->layerBox()->isVisibleTo(panel));
        tick(panel->metricList(), {});
        panel->compositeBox()->setCurrentText("epsilon");
        QCOMPARE(panel->compositeBox()->currentText(), QString("epsilon"));
        panel->relevanceRulesEdit()->setText("type:Linear=epsilon:0.25;  type:Conv2d=gamma:0.1");
        const AttributionWorkbenchResultPtr result = explain(panel);
        QVERIFY(result);

        auto model = Model::load(test::demoModel().toStdString());
        Engine engine(model);
        const at::Tensor images = probeBatch(window);
        InputAttributionRequest request;
        request.methods = {"lrp"};
        request.relevance.composite = "epsilon";
        request.relevance.overrides
            = {RuleOverride::parse("type:Linear=epsilon:0.25"), RuleOverride::parse("type:Conv2d=gamma:0.1")};
        const at::Tensor expected = pixelImportance(attributeInputs(engine, images, request).maps.at("lrp"), 28, 28);
        request.relevance = RelevanceSettings{};
        const at::Tensor byDefault = pixelImportance(attributeInputs(engine, images, request).maps.at("lrp"), 28, 28);
        QVERIFY(!at::allclose(expected, byDefault, 1e-3, 1e-5)); // the settings change the map
        for (int64_t i = 0; i < 3; ++i)
            QVERIFY(at::allclose(
                shown(result->maps.at("lrp")[static_cast<size_t>(i)].importance), expected[i], 1e-5, 1e-7));

        panel->relevanceRulesEdit()->setText("features.0=gama");
        QSignalSpy finished(panel, &AttributionPanel::finished);
        panel->start();
        QVERIFY(panel->column()->summary()->text().contains("unknown relevance rule 'gama'"));
        QVERIFY(!finished.wait(500));
    }

    void aCancelKeepsWhatFinishedAndANewModelResets()
    {
        MainWindow window;
        AttributionPanel* panel = integratedGradientsOfTheProbeImages(window);
        // Cancel once the first image is explained: the slot runs on the job's thread, in its progress
        // report, so the job stops at that very point.
        RunController* controller = window.controller();
        QObject receiver;
        connect(
            controller->jobs(), &JobRunner::progress, &receiver,
            [controller](JobId id, qint64 done) {
                if (done > 0)
                    controller->jobs()->cancel(id);
            },
            Qt::DirectConnection);
        const AttributionWorkbenchResultPtr result = explain(panel);
        QVERIFY(result);
        QVERIFY(result->cancelled);
        QVERIFY(!result->images.empty() && result->images.size() < 3);
        QCOMPARE(result->maps.at("integrated_gradients").size(), result->images.size());
        QVERIFY(panel->column()->exportButton()->isEnabled());

        QSignalSpy opened(window.controller(), &RunController::modelOpened);
        window.controller()->openModel(test::fixture("fashion_plain.pt"));
        QVERIFY(opened.wait(Timeout));
        QVERIFY(!panel->result());
        QCOMPARE(panel->grid()->cellCount(), 0);
        // The old result's summary is gone: one line says what comes there.
        QCOMPARE(panel->summaryTable()->rowCount(), 1);
        QCOMPARE(panel->summaryTable()->columnCount(), 1);
        QVERIFY(panel->summaryTable()->item(0, 0)->text().startsWith(QString("Each method's metrics")));
        QVERIFY(!panel->column()->exportButton()->isEnabled());
    }

    // The maps stay after the images or the setup change, marked out of date with what changed; Run
    // Again explains the images as they are now.
    void aResultSaysWhenItIsOutOfDateAndRunsAgain()
    {
        MainWindow window;
        test::openDemo(window);
        window.document()->addImages(probeImages().mid(0, 2));
        AttributionPanel* panel = window.attributionPanel();
        tick(panel->methodList(), {"saliency"});
        tick(panel->metricList(), {});
        QVERIFY(explain(panel));
        JobSetupColumn* column = panel->column();
        QVERIFY(!column->isOutdated());
        window.document()->setSelectedImage(1); // what is shown is no input
        QVERIFY(!column->isOutdated());

        window.document()->addImages({probeImages().at(2)});
        QVERIFY(column->isOutdated());
        QVERIFY2(
            column->outdatedText()->text().contains("the images changed"), qPrintable(column->outdatedText()->text()));
        QCOMPARE(panel->result()->images.size(), size_t{2}); // still shown, marked
        ModelSetup setup = window.document()->setup();
        setup.preprocessing.scale = 2.0; // pixel values over 0..2
        window.document()->setSetup(setup, "set by the test");
        QVERIFY2(column->outdatedText()->text().contains("the images and the input setup changed"),
            qPrintable(column->outdatedText()->text()));

        QSignalSpy finished(panel, &AttributionPanel::finished);
        column->runAgainButton()->click();
        QVERIFY(!column->isOutdated()); // a new job: nothing to be out of date yet
        QVERIFY(finished.wait(Timeout));
        QCOMPARE(panel->result()->images.size(), size_t{3});
        QVERIFY(!column->isOutdated());
        // Back to what was run: up to date again, without running.
        window.document()->removeImages({probeImages().at(2)});
        QVERIFY(column->isOutdated());
        window.document()->addImages({probeImages().at(2)});
        QVERIFY(!column->isOutdated());
    }

    // Each image's maps are drawn as soon as they are made, before the job ends; Cancel answers at
    // once, while the job is still inside a step: the images done are the result, exportable.
    void mapsComeImageByImageAndCancelAnswersAtOnce()
    {
        MainWindow window;
        AttributionPanel* panel = integratedGradientsOfTheProbeImages(window);
        tick(panel->methodList(), {"saliency", "integrated_gradients"});
        // The job waits in its report at the start of the second image (the second report at a third
        // of the way: the first is the first image's end), on its own thread.
        RunController* controller = window.controller();
        std::atomic<JobId> held{0};
        std::atomic<int> third{0};
        HeldJob hold;
        QObject receiver;
        connect(
            controller->jobs(), &JobRunner::progress, &receiver,
            [&held, &third, released = hold.released()](JobId id, qint64 done, qint64 total, const QString& stage) {
                JobId none = 0;
                if (stage.startsWith("attributions") && done * 3 == total && ++third == 2
                    && held.compare_exchange_strong(none, id))
                    released.wait();
            },
            Qt::DirectConnection);
        QSignalSpy finished(panel, &AttributionPanel::finished);
        panel->start();
        QTRY_VERIFY_WITH_TIMEOUT(held != 0, Timeout);
        QTRY_COMPARE_WITH_TIMEOUT(panel->grid()->cellCount(), 2, Timeout); // image 1's two maps
        QVERIFY(controller->jobs()->isActive(held));
        QVERIFY(!panel->result());
        QVERIFY(!panel->column()->exportButton()->isEnabled());

        panel->column()->cancelButton()->click(); // the job still waits in its step
        QVERIFY(controller->jobs()->isActive(held));
        QVERIFY(!panel->column()->cancelButton()->isEnabled());
        QVERIFY2(panel->column()->summary()->text().startsWith("Cancelling"),
            qPrintable(panel->column()->summary()->text()));
        QVERIFY(panel->result());
        QCOMPARE(panel->result()->images.size(), size_t{1});
        QVERIFY(panel->column()->exportButton()->isEnabled());
        QTemporaryDir dir;
        QCOMPARE(panel->exportTo(dir.filePath("maps.npz")), QString());

        hold.release();
        QVERIFY(finished.wait(Timeout));
        const auto result = finished.takeFirst().at(0).value<AttributionWorkbenchResultPtr>();
        QVERIFY(result->cancelled);
        QCOMPARE(result->images.size(), size_t{1});
        QCOMPARE(panel->grid()->cellCount(), 2);
        QVERIFY(panel->startButton()->isEnabled());
        QVERIFY2(panel->column()->progressBar()->format().endsWith("cancelled"),
            qPrintable(panel->column()->progressBar()->format()));
    }

    void aJobOfTheModelBeforeIsNotShownForTheNextOne()
    {
        MainWindow window;
        AttributionPanel* panel = integratedGradientsOfTheProbeImages(window);
        // Once the first image is explained, the job waits in its progress report, on its own thread,
        // until another model has opened: the GUI thread meanwhile runs its own loop as it would for a
        // user (a nested loop in a blocking slot missed events posted before it began, and hung).
        RunController* controller = window.controller();
        std::atomic<JobId> held{0};
        HeldJob hold;
        QObject receiver;
        connect(
            controller->jobs(), &JobRunner::progress, &receiver,
            [&held, released = hold.released()](JobId id, qint64 done, qint64, const QString& stage) {
                JobId none = 0;
                // The workbench's first stage (the window's own run of the images reports too).
                if (done > 0 && stage.startsWith("attributions") && held.compare_exchange_strong(none, id))
                    released.wait();
            },
            Qt::DirectConnection);
        QSignalSpy finished(panel, &AttributionPanel::finished);
        panel->start();
        QTRY_VERIFY_WITH_TIMEOUT(held != 0, Timeout);
        QSignalSpy opened(controller, &RunController::modelOpened);
        controller->openModel(test::fixture("fashion_plain.pt"));
        QVERIFY(opened.wait(Timeout));
        QVERIFY(controller->jobs()->isActive(held)); // still waiting: the model changed under it
        hold.release();
        QTRY_VERIFY_WITH_TIMEOUT(!controller->jobs()->isActive(held), Timeout);
        QCoreApplication::processEvents(); // whatever the job handed over is delivered by now
        // Its partial result belongs to the model before: dropped, not shown as this model's.
        QCOMPARE(finished.count(), 0);
        QVERIFY(!panel->result());
        QCOMPARE(panel->grid()->cellCount(), 0);
        QVERIFY(!panel->column()->exportButton()->isEnabled());
        QVERIFY(!panel->column()->cancelButton()->isEnabled());
    }
};

QTEST_MAIN(AttributionPanelTest)
#include "attribution_panel_test.moc"
