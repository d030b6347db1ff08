// How long the GUI thread can stall while the worker runs a 200-image batch: a 5 ms timer on the
// GUI thread records the longest gap between its ticks, from the drop of the images until the
// results are drawn. Prints JSON. (Offscreen; goal: never more than 100 ms.)
//
//   torchscope-bench-gui MODEL.pt IMAGE_FOLDER [--images 200] [--grab SPEC ...]
#include "document/document.h"
#include "jobs/run_controller.h"
#include "window/main_window.h"

#include <QApplication>
#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QTemporaryDir>
#include <QTimer>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

int main(int argc, char** argv)
{
    qputenv("QT_QPA_PLATFORM", "offscreen");
    QApplication app(argc, argv);
    QStringList args = QApplication::arguments();
    if (args.size() < 3) {
        std::fprintf(stderr, "usage: torchscope-bench-gui MODEL.pt IMAGE_FOLDER [--images 200] [--grab SPEC ...]\n");
        return 2;
    }
    const QString model = args[1], source = args[2];
    int count = 200;
    QStringList grabs;
    for (int i = 3; i + 1 < args.size(); i += 2) {
        if (args[i] == "--images")
            count = args[i + 1].toInt();
        else if (args[i] == "--grab")
            grabs << args[i + 1];
    }

    // COUNT distinct files, copied round-robin from the source folder.
    QTemporaryDir dir;
    const QStringList originals = QDir(source).entryList({"*.png", "*.jpg"}, QDir::Files, QDir::Name);
    if (originals.isEmpty()) {
        std::fprintf(stderr, "no images in %s\n", qPrintable(source));
        return 1;
    }
    QStringList images;
    for (int i = 0; i < count; ++i) {
        const QString copy = dir.filePath(QString("image_%1.png").arg(i, 4, 10, QChar('0')));
        QFile::copy(QDir(source).filePath(originals[i % originals.size()]), copy);
        images << copy;
    }

    torchscope::MainWindow window;
    window.setInteractive(false);
    window.show();
    // A failed task ends the benchmark with its message (else it would wait for results forever).
    QEventLoop opened;
    QObject::connect(
        window.controller(), &torchscope::RunController::failed, [&](const QString& title, const QString& message) {
            std::fprintf(stderr, "torchscope-bench-gui: %s: %s\n", qPrintable(title), qPrintable(message));
            std::exit(1);
        });
    QObject::connect(window.controller(), &torchscope::RunController::modelOpened, &opened, &QEventLoop::quit);
    window.openModel(model);
    opened.exec();
    for (const auto& g : grabs)
        window.document()->setGrabbed(g, true);

    QElapsedTimer clock, sinceTick;
    std::vector<double> gaps;
    double worstAt = 0, resultsAt = 0;
    QTimer ticker;
    ticker.setInterval(5);
    QObject::connect(&ticker, &QTimer::timeout, [&] {
        const double gap = sinceTick.nsecsElapsed() / 1e6;
        if (gaps.empty() || gap > *std::max_element(gaps.begin(), gaps.end()))
            worstAt = clock.elapsed() / 1000.0;
        gaps.push_back(gap);
        sinceTick.restart();
    });
    double runSeconds = 0;
    int imagesRun = 0, failures = 0;
    bool cancelled = false;
    QObject::connect(window.controller(), &torchscope::RunController::runCompleted,
        [&](double seconds, int ran, int failed, bool wasCancelled) {
            runSeconds = seconds;
            imagesRun = ran;
            failures = failed;
            cancelled = wasCancelled;
            resultsAt = clock.elapsed() / 1000.0;
            QTimer::singleShot(300, &app, &QApplication::quit); // and whatever the views do afterwards
        });
    clock.start();
    sinceTick.start();
    ticker.start();
    window.document()->addImages(images);
    QApplication::exec();

    std::sort(gaps.begin(), gaps.end());
    const double maxGap = gaps.empty() ? 0 : gaps.back();
    const double p99 = gaps.empty() ? 0 : gaps[gaps.size() * 99 / 100];
    std::printf("{\n  \"images\": %d,\n  \"images_run\": %d,\n  \"failures\": %d,\n  \"cancelled\": %s,\n"
                "  \"grabs\": \"%s\",\n  \"run_seconds\": %.3f,\n  \"wall_seconds\": %.3f,\n"
                "  \"gui_ticks\": %zu,\n  \"max_gui_stall_ms\": %.1f,\n  \"worst_stall_ended_at_s\": %.3f,\n"
                "  \"results_drawn_at_s\": %.3f,\n  \"p99_tick_gap_ms\": %.1f,\n"
                "  \"goal_max_stall_ms\": 100\n}\n",
        count, imagesRun, failures, cancelled ? "true" : "false", qPrintable(grabs.join(' ')), runSeconds,
        clock.elapsed() / 1000.0, gaps.size(), maxGap, worstAt, resultsAt, p99);
    return 0;
}
