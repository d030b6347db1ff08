// A channel's page, offscreen: its optimised image against core's own run with the same settings,
// the session cache, cancel, the top images of a recording with the channel's map over them, and
// the page exported as PNG.
#include "dialogs/channel_page.h"
#include "document/document.h"
#include "graph/engine.h"
#include "gui_test_support.h"
#include "model/model.h"
#include "model/model_setup.h"
#include "visualize/activation_maximization.h"
#include "window/main_window.h"

#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QSpinBox>
#include <QTemporaryDir>
#include <QtTest>

using namespace torchscope;

namespace {

constexpr int Timeout = 120000;

QSpinBox* spinBox(ChannelPage* page, int index)
{
    return page->findChildren<QSpinBox*>().at(index); // steps, seed, size
}

} // namespace

class ChannelPageTest : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void optimisesAsCoreDoesCachesAndExports()
    {
        MainWindow window;
        test::openDemo(window);
        ChannelPage* page = window.openChannelPage("features.2.bn", 5);
        QVERIFY(page);
        QSignalSpy optimised(page, &ChannelPage::optimised);
        QVERIFY(optimised.wait(Timeout));

        // The same settings through core directly: the page shows that value.
        LoadOptions options;
        options.device = "cpu";
        const auto model = Model::load(test::demoModel().toStdString(), options);
        Engine engine(model);
        VisualizeConfig config;
        config.layer = "features.2.bn";
        config.steps = 256;
        config.objectives.resize(1);
        config.objectives[0].channel = 5;
        const VisualizeResult direct = visualize(engine, defaultSetup(*model).preprocessing, config);
        QVERIFY2(page->valueText().contains(QString::number(direct.objectives[0], 'f', 3)),
            qPrintable(page->valueText() + " / " + QString::number(direct.objectives[0])));
        bool imageShown = false;
        for (const auto* label : page->findChildren<QLabel*>())
            imageShown = imageShown || (label->minimumSize() == QSize(224, 224) && !label->pixmap().isNull());
        QVERIFY(imageShown);

        // Reopened with the same settings: from the cache, at once.
        ChannelPage* again = window.openChannelPage("features.2.bn", 5);
        QVERIFY(!again->isRunning());
        QCOMPARE(again->valueText(), page->valueText());

        QTemporaryDir dir;
        const QString path = dir.filePath("page.png");
        QSignalSpy failed(page, &ChannelPage::failed);
        page->exportTo(path);
        QCOMPARE(failed.count(), 0);
        const QImage exported(path);
        QCOMPARE(exported.size(), page->size() * page->devicePixelRatio());
    }

    void cancelKeepsTheImageSoFar()
    {
        MainWindow window;
        test::openDemo(window);
        ChannelPage* page = window.openChannelPage("features.1.conv", 2);
        QSignalSpy optimised(page, &ChannelPage::optimised);
        QVERIFY(optimised.wait(Timeout));
        spinBox(page, 0)->setValue(4096);
        spinBox(page, 1)->setValue(9);
        page->optimise();
        QVERIFY(page->isRunning());
        // Cancelled once its first step has arrived (the worker has started): 4,096 steps are far
        // from done, and a cancel cannot reach a worker that has not begun yet.
        auto* progress = page->findChild<QProgressBar*>();
        QVERIFY(progress);
        QTRY_VERIFY_WITH_TIMEOUT(progress->value() > 0, Timeout);
        for (auto* button : page->findChildren<QPushButton*>())
            if (button->text() == "Cancel")
                button->click();
        QVERIFY(optimised.wait(Timeout));
        QVERIFY2(page->valueText().startsWith("cancelled after"), qPrintable(page->valueText()));
        const int steps = page->valueText().section(' ', 2, 2).toInt();
        QVERIFY2(steps >= 1 && steps < 4096, qPrintable(page->valueText()));
    }

    void topImagesOfARecordingWithTheChannelsMapOverThem()
    {
        MainWindow window;
        test::openDemo(window);
        auto recording = std::make_shared<RecordResult>();
        const QStringList images = test::demoImages();
        for (const auto& path : images)
            recording->imagePaths.push_back(path.toStdString());
        recording->topSamples["features.2.bn"] = {{{3, 2.5}, {1, 1.5}}}; // channel 0: two images
        LayerStatistics statistics;
        statistics.samples = images.size();
        statistics.channelMean = {0.25};
        statistics.channelStd = {0.5};
        statistics.channelMin = {-1.0};
        statistics.channelMax = {2.5};
        statistics.channelZeroFraction = {0.0};
        recording->statistics["features.2.bn"] = statistics;
        ChannelPage page(window.document(), window.controller(), recording, "features.2.bn", 0);
        QList<QLabel*> pictures;
        for (auto* label : page.findChildren<QLabel*>())
            if (label->toolTip() == images[3] || label->toolTip() == images[1])
                pictures << label;
        QCOMPARE(pictures.size(), 2);
        const QImage plain = pictures[0]->pixmap().toImage();
        QSignalSpy optimised(&page, &ChannelPage::optimised);
        spinBox(&page, 0)->setValue(16);
        page.optimise();
        QVERIFY(optimised.wait(Timeout));
        QVERIFY(pictures[0]->pixmap().toImage() != plain); // the map is drawn over the picture
        bool statisticsShown = false;
        for (auto* label : page.findChildren<QLabel*>())
            statisticsShown = statisticsShown || label->text().startsWith(QString("Over %1 images").arg(images.size()));
        QVERIFY(statisticsShown);

        // Another page on the same settings: the image from the cache at once, the maps over its own
        // top images computed by a job (the cache holds no maps: they belong to a recording).
        ChannelPage again(window.document(), window.controller(), recording, "features.2.bn", 0);
        QLabel* againPicture = nullptr;
        for (auto* label : again.findChildren<QLabel*>())
            if (label->toolTip() == images[3])
                againPicture = label;
        QVERIFY(againPicture);
        const QImage againPlain = againPicture->pixmap().toImage();
        QSignalSpy fromCache(&again, &ChannelPage::optimised);
        spinBox(&again, 0)->setValue(16);
        again.optimise();
        QCOMPARE(fromCache.count(), 1);
        QCOMPARE(again.valueText(), page.valueText());
        QVERIFY(again.isRunning()); // the maps
        QTRY_VERIFY_WITH_TIMEOUT(!again.isRunning(), Timeout);
        const QLabel* first = pictures[0]->toolTip() == images[3] ? pictures[0] : pictures[1];
        QCOMPARE(againPicture->pixmap().toImage(), first->pixmap().toImage());
        QVERIFY(againPicture->pixmap().toImage() != againPlain);
    }
};

QTEST_MAIN(ChannelPageTest)
#include "channel_page_test.moc"
