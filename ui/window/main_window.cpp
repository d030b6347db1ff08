#include "window/main_window.h"

#include "dialogs/channel_page.h"
#include "dialogs/save_dialog.h"
#include "document/document.h"
#include "document/session_io.h"
#include "jobs/run_controller.h"
#include "panels/attention_panel.h"
#include "panels/attribution_panel.h"
#include "panels/compare_panel.h"
#include "panels/concepts_panel.h"
#include "panels/features_panel.h"
#include "panels/log_dock.h"
#include "panels/predictions_panel.h"
#include "panels/probes_panel.h"
#include "panels/recorders_panel.h"
#include "panels/relevance_panel.h"
#include "panels/statistics_panel.h"
#include "tree/module_tree_panel.h"
#include "views/activation_view.h"
#include "views/grad_cam_view.h"
#include "views/image_strip.h"
#include "views/patching_view.h"
#include "window/export_actions.h"
#include "window/file_drop.h"
#include "window/setup_actions.h"

#include <QApplication>
#include <QCloseEvent>
#include <QComboBox>
#include <QDockWidget>
#include <QDragEnterEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QProgressBar>
#include <QResizeEvent>
#include <QScreen>
#include <QScrollArea>
#include <QSettings>
#include <QSpinBox>
#include <QStatusBar>
#include <QTabWidget>
#include <QToolBar>
#include <QToolButton>

#include <functional>

namespace torchscope {
namespace {

// Versioned: the dock layout of 0.x (Recorders and Probes as docks) is not restored.
const char* const stateKey = "window/state-v2";
// Settings keys of the most recent first lists under File.
const char* const RecentModels = "recentModels";
const char* const RecentSessions = "recentSessions";

} // namespace

MainWindow::MainWindow(QWidget* parent)
    : QMainWindow(parent)
    , document_(new Document(this))
    , controller_(new RunController(document_, this))
    , tree_(new ModuleTreePanel(document_))
    , activations_(new ActivationView(document_))
    , predictions_(new PredictionsPanel(document_))
    , statistics_(new StatisticsPanel(document_))
    , recorders_(new RecordersPanel(document_, controller_))
    , images_(new ImageStrip(document_))
    , log_(new LogDock(this))
    , exports_(new ExportActions(controller_, activations_, statistics_, this))
    , probes_(new ProbesPanel(document_, controller_))
    , gradCam_(new GradCamView(document_, controller_))
    , patching_(new PatchingView(document_, controller_))
    , compare_(new ComparePanel(document_, controller_))
    , attribution_(new AttributionPanel(document_, controller_))
    , attention_(new AttentionPanel(document_, controller_))
    , relevance_(new RelevancePanel(document_, controller_))
    , features_(new FeaturesPanel(document_, controller_))
    , concepts_(new ConceptsPanel(document_, controller_))
    , setup_(new SetupActions(document_, controller_, this))
    , sessions_(new SessionIo(document_, controller_, activations_, this))
    , central_(new QTabWidget)
{
    setAcceptDrops(true);
    // The order is CentralTab's.
    central_->setObjectName("centralTabs");
    central_->addTab(activations_, tr("Activations"));
    central_->addTab(gradCam_, tr("Grad-CAM / Saliency"));
    central_->addTab(attribution_, tr("Attribution"));
    central_->addTab(attention_, tr("Attention"));
    central_->addTab(relevance_, tr("Relevance"));
    central_->addTab(patching_, tr("Patching / Ablation"));
    central_->addTab(recorders_, tr("Recorders"));
    central_->addTab(probes_, tr("Probes"));
    central_->addTab(compare_, tr("Compare"));
    central_->addTab(features_, tr("Features"));
    central_->addTab(concepts_, tr("Concepts"));
    central_->setDocumentMode(true);
    setCentralWidget(central_);
    createDocks();
    createMenus();
    createToolBar();
    createStatusBar();

    connect(controller_, &RunController::failed, this, &MainWindow::reportError);
    connect(probes_, &ProbesPanel::failed, this, &MainWindow::reportError);
    connect(activations_, &ActivationView::channelPageRequested, this, &MainWindow::openChannelPage);
    connect(recorders_, &RecordersPanel::channelPageRequested, this, &MainWindow::openChannelPage);
    connect(statistics_, &StatisticsPanel::channelPageRequested, this, &MainWindow::openChannelPage);
    connect(gradCam_, &GradCamView::failed, this, &MainWindow::reportError);
    connect(patching_, &PatchingView::failed, this, &MainWindow::reportError);
    connect(compare_, &ComparePanel::failed, this, &MainWindow::reportError);
    connect(attribution_, &AttributionPanel::failed, this, &MainWindow::reportError);
    connect(attention_, &AttentionPanel::failed, this, &MainWindow::reportError);
    connect(relevance_, &RelevancePanel::failed, this, &MainWindow::reportError);
    connect(features_, &FeaturesPanel::failed, this, &MainWindow::reportError);
    connect(concepts_, &ConceptsPanel::failed, this, &MainWindow::reportError);
    connect(concepts_, &ConceptsPanel::channelPageRequested, this, &MainWindow::openChannelPage);
    // A latent's page on the Features tab shows what the Concepts tab's dissection of its SAE found.
    features_->setConceptLabels([this](const QString& layer, int64_t latent, const QString& sae) {
        return concepts_->labelsOf(layer, latent, "sae:" + sae);
    });
    connect(concepts_, &ConceptsPanel::dissected, features_, &FeaturesPanel::refreshPage);
    connect(concepts_, &ConceptsPanel::latentPageRequested, this, [this](const QString& sae, int latent) {
        showCentralTab(CentralTab::Features);
        features_->showLatentOf(sae, latent);
    });
    connect(relevance_, &RelevancePanel::channelPageRequested, this, &MainWindow::openChannelPage);
    connect(compare_, &ComparePanel::finished, this, [this](const CompareResultPtr& result) {
        log_->append(tr("Compared %1 images: %2 × %3 layers")
                         .arg(result->samples)
                         .arg(result->layersA.size())
                         .arg(result->layersB.size()));
    });
    connect(probes_, &ProbesPanel::message, this, [this](const QString& message) {
        log_->append(message);
        statusBar()->showMessage(message, 5000);
    });
    connect(probes_, &ProbesPanel::finished, this, [this](const ProbeResultPtr& snapshot) {
        for (const auto& l : snapshot->layers)
            log_->append(tr("Probe on %1: train %2%, validation %3%")
                             .arg(QString::fromStdString(l.layer))
                             .arg(100.0 * l.trainAccuracy, 0, 'f', 1)
                             .arg(100.0 * l.validationAccuracy, 0, 'f', 1));
    });
    connect(exports_, &ExportActions::failed, this, &MainWindow::reportError);
    connect(sessions_, &SessionIo::modelWanted, this, [this](const QString& model, const QString& device) {
        if (device_->findText(device) >= 0) {
            const QSignalBlocker block(device_);
            device_->setCurrentText(device);
            document_->setDevice(device);
        }
        openModel(model);
    });
    connect(sessions_, &SessionIo::opened, this,
        [this](const QString& path) { log_->append(tr("Opened session %1").arg(path)); });
    connect(setup_, &SetupActions::failed, this, &MainWindow::reportError);
    connect(setup_, &SetupActions::message, this, [this](const QString& message) {
        log_->append(message);
        statusBar()->showMessage(message, 8000);
    });
    connect(exports_, &ExportActions::done, this, [this](const QString& message) {
        log_->append(message);
        statusBar()->showMessage(message, 5000);
    });
    const auto reportExport = [this](const QString& path, const QStringList& leftOut) {
        QString message = tr("Exported recorded tensors to %1").arg(path);
        if (!leftOut.isEmpty())
            message += tr(" (left out, not tensors: %1)").arg(leftOut.join(", "));
        log_->append(message);
        statusBar()->showMessage(message, 5000);
    };
    connect(controller_, &RunController::exported, this, reportExport);
    connect(recorders_, &RecordersPanel::exported, this, reportExport);
    connect(controller_, &RunController::modelOpened, this, [this](const QString& path) {
        log_->append(tr("Opened %1: %2").arg(path, QString::fromStdString(document_->model().signature)));
        status_->setText(tr("Opened %1").arg(QFileInfo(path).fileName()));
        if (const auto& note = document_->model().frozenNote; !note.empty())
            log_->append(tr("Note: %1").arg(QString::fromStdString(note)));
        if (const auto& exported = document_->model().exportedNote; !exported.empty())
            log_->append(tr("Format: %1").arg(QString::fromStdString(exported)));
        const QSignalBlocker block(target_);
        target_->setValue(document_->targetClass());
        rememberRecent(RecentModels, path);
        updateTitle();
    });
    connect(controller_, &RunController::runCompleted, this,
        [this](double seconds, int images, int failures, bool cancelled) {
            QString message = tr("%1 image(s) in %2 s").arg(images).arg(seconds, 0, 'f', 2);
            if (failures)
                message += tr(", %1 could not be read (see the log)").arg(failures);
            if (cancelled)
                message += tr(", cancelled: what was recorded so far is kept");
            status_->setText(message);
            if (const auto snapshot = document_->snapshot()) {
                for (const auto& [path, why] : snapshot->failures)
                    log_->append(
                        tr("Could not read %1: %2").arg(QString::fromStdString(path), QString::fromStdString(why)));
                for (const auto& warning : snapshot->warnings)
                    log_->append(tr("Warning: %1").arg(QString::fromStdString(warning)));
            }
        });
    connect(document_, &Document::resultsChanged, this, [this] {
        // The gradient target is a class, or for detectors one detection.
        const auto snapshot = document_->snapshot();
        const bool detection = snapshot && !snapshot->images.empty()
            && snapshot->images.front().prediction.kind == OutputKind::Detection;
        target_->setSpecialValueText(detection ? tr("top detection") : tr("predicted class"));
        target_->setToolTip(detection ? tr("The detection (0: the highest score) whose score gradients are taken of")
                                      : tr("Class whose score gradients (Grab Gradient) are taken of"));
    });
    connect(document_, &Document::requestChanged, this, [this] {
        truncation_->setText(document_->truncation().isEmpty() ? tr("no truncation")
                                                               : tr("truncated at %1").arg(document_->truncation()));
    });

    setMinimumSize(880, 560);
    // 1400 x 900, or the screen's free area where that is smaller (a 1280 x 800 laptop: the window
    // opened wider and taller than the screen, its right dock and status bar off it), unless the
    // last geometry is restored below; a restored one is held to the screen too.
    const QSize screenRoom = screen() ? screen()->availableGeometry().size() : QSize(1400, 900);
    resize(QSize(1400, 900).boundedTo(screenRoom));
    sizeDocks();
    defaultState_ = saveState();
    QSettings settings;
    restoreGeometry(settings.value("window/geometry").toByteArray());
    if (width() > screenRoom.width() || height() > screenRoom.height())
        resize(size().boundedTo(screenRoom));
    restoreState(settings.value(stateKey).toByteArray());
    updateTitle();
}

MainWindow::~MainWindow() = default;

void MainWindow::createDocks()
{
    auto dock = [this](const QString& title, const QString& name, QWidget* widget, Qt::DockWidgetArea area) {
        auto* d = new QDockWidget(title, this);
        d->setObjectName(name);
        d->setWidget(widget);
        addDockWidget(area, d);
        return d;
    };
    dock(tr("Modules"), "ModulesDock", tree_, Qt::LeftDockWidgetArea);
    dock(tr("Predictions"), "PredictionsDock", predictions_, Qt::RightDockWidgetArea);
    dock(tr("Statistics"), "StatisticsDock", statistics_, Qt::RightDockWidgetArea);
    auto* strip = dock(tr("Images"), "ImagesDock", images_, Qt::BottomDockWidgetArea);
    addDockWidget(Qt::BottomDockWidgetArea, log_);
    tabifyDockWidget(strip, log_);
    strip->raise();
    // The corners go to the side docks, so the image strip spans the centre only.
    setCorner(Qt::BottomLeftCorner, Qt::LeftDockWidgetArea);
    setCorner(Qt::BottomRightCorner, Qt::RightDockWidgetArea);
}

void MainWindow::sizeDocks()
{
    auto* modules = findChild<QDockWidget*>("ModulesDock");
    auto* predictions = findChild<QDockWidget*>("PredictionsDock");
    auto* statistics = findChild<QDockWidget*>("StatisticsDock");
    auto* strip = findChild<QDockWidget*>("ImagesDock");
    const int side = std::max(240, width() / 5);
    resizeDocks({modules, predictions}, {side, side + 40}, Qt::Horizontal);
    resizeDocks({predictions, statistics, strip}, {height() / 3, height() / 2, height() / 5}, Qt::Vertical);
}

void MainWindow::resetLayout()
{
    restoreState(defaultState_);
    for (QDockWidget* dock : findChildren<QDockWidget*>())
        dock->show();
    sizeDocks();
}

void MainWindow::createMenus()
{
    QMenu* file = menuBar()->addMenu(tr("&File"));
    QAction* openModel = file->addAction(tr("&Open Model…"), this, [this] {
        const QString path = QFileDialog::getOpenFileName(this, tr("Open Model"), QString(),
            tr("Models (*.pt *.pth *.pt2);;TorchScript (*.pt *.pth);;torch.export programs (*.pt2);;All files (*)"));
        if (!path.isEmpty())
            this->openModel(path);
    });
    openModel->setShortcut(QKeySequence::Open);
    recentMenu_ = file->addMenu(tr("Recent Models"));
    QAction* openImages = file->addAction(tr("Open &Images…"), this, [this] {
        openFiles(QFileDialog::getOpenFileNames(
            this, tr("Open Images"), QString(), tr("Images (*.png *.jpg *.jpeg *.bmp *.tif *.tiff *.webp)")));
    });
    openImages->setShortcut(Qt::CTRL | Qt::Key_I);
    file->addAction(tr("Open Image &Folder…"), this, [this] {
        const QString folder = QFileDialog::getExistingDirectory(this, tr("Open Image Folder"));
        if (!folder.isEmpty())
            openFiles({folder});
    });
    file->addAction(tr("Clear Images"), document_, &Document::clearImages);
    file->addSeparator();
    file->addAction(tr("Open &Session…"), this, [this] {
        const QString path = QFileDialog::getOpenFileName(
            this, tr("Open Session"), QString(), tr("TorchScope sessions (*.torchscope.json)"));
        if (!path.isEmpty())
            if (const QString error = openSession(path); !error.isEmpty())
                reportError(tr("Error Opening Session"), error);
    });
    QAction* save = file->addAction(tr("&Save Session…"), this, [this] {
        const QString path
            = askSavePath(this, tr("Save Session"), QString(), tr("TorchScope sessions (*.torchscope.json)"));
        if (path.isEmpty())
            return;
        if (const QString error = saveSession(path); !error.isEmpty())
            reportError(tr("Error Saving Session"), error);
    });
    save->setShortcut(QKeySequence::Save);
    file->addSeparator();
    recentSessionsMenu_ = file->addMenu(tr("Recent Sessions"));
    fillRecentMenus();
    file->addSeparator();
    exports_->populate(file->addMenu(tr("&Export")));
    file->addSeparator();
    file->addAction(tr("&Quit"), QKeySequence::Quit, this, &QWidget::close);

    setup_->populate(menuBar()->addMenu(tr("&Model")));

    QMenu* view = menuBar()->addMenu(tr("&View"));
    for (QDockWidget* dock : findChildren<QDockWidget*>())
        view->addAction(dock->toggleViewAction());
    view->addSeparator();
    // CentralTab's order (Alt+1 … Alt+9).
    const QStringList tabs{tr("&Activations"), tr("&Grad-CAM / Saliency"), tr("Attri&bution"), tr("Atte&ntion"),
        tr("R&elevance"), tr("&Patching / Ablation"), tr("&Recorders"), tr("Pr&obes"), tr("&Compare"), tr("&Features"),
        tr("Concep&ts")};
    for (int i = 0; i < tabs.size(); ++i) {
        QAction* show = view->addAction(tabs[i], this, [this, i] { central_->setCurrentIndex(i); });
        if (i < 10)
            show->setShortcut(QKeySequence(Qt::ALT | Qt::Key(i < 9 ? Qt::Key_1 + i : Qt::Key_0)));
    }
    view->addSeparator();
    view->addAction(tr("Reset &Layout"), this, &MainWindow::resetLayout);

    QMenu* help = menuBar()->addMenu(tr("&Help"));
    QAction* shortcuts = help->addAction(tr("&Keyboard Shortcuts"), this,
        [this] { QMessageBox::information(this, tr("Keyboard Shortcuts"), shortcutsText()); });
    shortcuts->setShortcut(QKeySequence::HelpContents);
    help->addAction(tr("&Core Ideas"), this, [this] {
        QMessageBox box(QMessageBox::NoIcon, tr("Core Ideas"), coreIdeasText(), QMessageBox::Close, this);
        box.setTextFormat(Qt::RichText);
        box.exec();
    });
    help->addSeparator();
    help->addAction(tr("&About TorchScope"), this, [this] {
        QMessageBox::about(this, tr("About TorchScope"),
            tr("<h3>TorchScope %1</h3><p>A workbench for looking inside TorchScript models: grab any layer's "
               "outputs, inputs and gradients, edit activations, record statistics over image folders, train "
               "linear probes, explain predictions with Grad-CAM.</p><p>Built with Qt %2 and LibTorch.</p>")
                .arg(QCoreApplication::applicationVersion(), qVersion()));
    });
    help->addAction(tr("About &Qt"), qApp, &QApplication::aboutQt);
}

void MainWindow::createToolBar()
{
    QToolBar* bar = addToolBar(tr("Run"));
    bar->setObjectName("RunToolBar");
    bar->addWidget(new QLabel(tr(" Device: ")));
    device_ = new QComboBox;
    device_->addItems(RunController::availableDevices());
    device_->setToolTip(tr("CUDA when this LibTorch sees a GPU, else the CPU"));
    document_->setDevice(device_->currentText());
    connect(device_, &QComboBox::currentTextChanged, this, [this](const QString& device) {
        document_->setDevice(device);
        if (document_->hasModel())
            openModel(document_->modelPath()); // reload onto the new device
    });
    bar->addWidget(device_);
    bar->addSeparator();
    bar->addWidget(new QLabel(tr(" Gradient target: ")));
    target_ = new QSpinBox;
    target_->setRange(-1, 1000000);
    target_->setValue(-1);
    target_->setSpecialValueText(tr("predicted class"));
    target_->setToolTip(tr("Class whose score gradients (Grab Gradient) are taken of"));
    connect(target_, &QSpinBox::valueChanged, document_, &Document::setTargetClass);
    bar->addWidget(target_);
    bar->addSeparator();
    truncation_ = new QLabel(tr("no truncation"));
    bar->addWidget(truncation_);
    bar->addAction(tr("Clear Truncation"), this, [this] { document_->setTruncation({}); });
}

void MainWindow::createStatusBar()
{
    status_ = new QLabel(tr("Open a model (Ctrl+O) and drop images on the window."));
    progress_ = new QProgressBar;
    progress_->setMaximumWidth(220);
    progress_->hide();
    cancel_ = new QToolButton;
    cancel_->setText(tr("Cancel"));
    cancel_->setToolTip(tr("Stop after the current image; what was recorded is kept"));
    cancel_->hide();
    statusBar()->addWidget(status_, 1);
    statusBar()->addPermanentWidget(setup_->statusButton());
    statusBar()->addPermanentWidget(progress_);
    statusBar()->addPermanentWidget(cancel_);
    connect(cancel_, &QToolButton::clicked, controller_, &RunController::cancel);
    connect(controller_, &RunController::busyChanged, this, [this](bool busy) {
        progress_->setVisible(busy);
        cancel_->setVisible(busy);
        if (busy) {
            statusBar()->clearMessage();
            status_->setText(controller_->isOpeningModel() ? tr("Opening model…") : tr("Running…"));
        }
    });
    connect(controller_, &RunController::progress, this, [this](int done, int total) {
        progress_->setRange(0, total);
        progress_->setValue(done);
        progress_->setFormat(tr("%v / %m images"));
    });
}

QString MainWindow::shortcutsText()
{
    return tr("Ctrl+O\topen a model\n"
              "Ctrl+I\tadd images\n"
              "Ctrl+S\tsave the session\n"
              "Ctrl+Shift+I\tinput setup\n"
              "Alt+1 … Alt+9, Alt+0\tActivations, Grad-CAM, Attribution, Attention, Relevance, Patching, Recorders, "
              "Probes, Compare, Features\n"
              "Arrow keys\tnext or previous image (in the image grid)\n"
              "Delete\tremove the selected images from the grid\n"
              "F1\tthis list\n"
              "Ctrl+Q\tquit");
}

QString MainWindow::coreIdeasText()
{
    return tr("<p><b>Grabs.</b> Tick a module to record its output for every image; right-click for its input "
              "or its gradient (of the class in the toolbar's <i>Gradient target</i>). TorchScope instruments the "
              "TorchScript graph itself, so what it records equals PyTorch's forward hooks on the same weights.</p>"
              "<p><b>Truncation and edits.</b> Set a truncation point to stop the forward there; zero or scale "
              "channels to see what the rest of the network does without them. Recorders apply the edits too.</p>"
              "<p><b>Recorders</b> stream a folder through the model and keep per-channel statistics, histograms "
              "and each channel's most activating images, never whole activations.</p>"
              "<p><b>Probes</b> are linear classifiers trained on a layer's output: where in the network a "
              "concept becomes linearly readable.</p>"
              "<p><b>Grad-CAM and patching</b> ask which pixels and which activations a prediction depends on.</p>"
              "<p>Everything recorded exports to files Python reads (<code>torch.load</code>, NumPy, "
              "safetensors), each with <code>NAME.manifest.json</code> beside it: the model and the image files "
              "in sample order with their SHA-256, the setup, edits and truncation, and every key's layer and "
              "kind. Picture exports carry a title and their colour scale.</p>");
}

void MainWindow::setInteractive(bool interactive)
{
    interactive_ = interactive;
    setup_->setInteractive(interactive);
}

void MainWindow::showCentralTab(CentralTab tab)
{
    central_->setCurrentIndex(static_cast<int>(tab));
}

void MainWindow::openModel(const QString& path)
{
    log_->append(tr("Opening %1 on %2").arg(path, document_->device()));
    controller_->openModel(path);
}

void MainWindow::openFiles(const QStringList& paths)
{
    if (paths.isEmpty())
        return;
    const DroppedFiles files = classifyFiles(paths);
    for (const auto& refused : files.refused) {
        const QString message = tr("Ignored %1: %2").arg(QFileInfo(refused).fileName(), whyRefused(refused));
        log_->append(message);
        statusBar()->showMessage(message, 8000);
    }
    if (!files.sessions.isEmpty())
        if (const QString error = openSession(files.sessions.first()); !error.isEmpty())
            reportError(tr("Error Opening Session"), error);
    if (!files.models.isEmpty())
        openModel(files.models.first());
    if (!files.images.isEmpty()) {
        document_->addImages(files.images);
        log_->append(tr("Added %n image(s)", nullptr, static_cast<int>(files.images.size())));
    }
}

QString MainWindow::saveSession(const QString& path)
{
    if (const QString error = sessions_->save(path); !error.isEmpty())
        return error;
    log_->append(tr("Saved session %1").arg(path));
    rememberRecent(RecentSessions, path);
    return {};
}

QString MainWindow::openSession(const QString& path)
{
    if (const QString error = sessions_->open(path); !error.isEmpty())
        return error;
    rememberRecent(RecentSessions, path);
    return {};
}

void MainWindow::reportError(const QString& title, const QString& message)
{
    log_->append(title + ": " + message);
    // A message that expires: the next run's summary must not sit under an old error.
    statusBar()->showMessage(tr("%1: %2 (details in the log)").arg(title, message.section('\n', 0, 0)), 15000);
    Q_EMIT errorReported(title, message);
    if (interactive_)
        QMessageBox::critical(this, title, message.section('\n', 0, 3));
}

void MainWindow::dragEnterEvent(QDragEnterEvent* event)
{
    if (acceptsDrop(event->mimeData()))
        event->acceptProposedAction();
    else
        event->ignore();
}

void MainWindow::dropEvent(QDropEvent* event)
{
    openFiles(localFiles(event->mimeData()));
    event->acceptProposedAction();
}

void MainWindow::resizeEvent(QResizeEvent* event)
{
    // Docks keep their share of the window as it shrinks or grows (QMainWindow would give every
    // change to the centre, crushing the docks at a small size and never giving them room back).
    const QSize before = event->oldSize();
    QMainWindow::resizeEvent(event);
    if (!before.isValid() || before.width() <= 0 || before.height() <= 0)
        return;
    const double sx = double(width()) / before.width(), sy = double(height()) / before.height();
    QList<QDockWidget*> across, down;
    QList<int> widths, heights;
    for (QDockWidget* dock : findChildren<QDockWidget*>()) {
        if (!dock->isVisible() || dock->isFloating())
            continue;
        const Qt::DockWidgetArea area = dockWidgetArea(dock);
        if (area == Qt::LeftDockWidgetArea || area == Qt::RightDockWidgetArea) {
            across << dock;
            widths << std::max(1, int(dock->width() * sx));
        } else if (area == Qt::BottomDockWidgetArea || area == Qt::TopDockWidgetArea) {
            down << dock;
            heights << std::max(1, int(dock->height() * sy));
        }
    }
    if (sx != 1.0 && !across.isEmpty())
        resizeDocks(across, widths, Qt::Horizontal);
    if (sy != 1.0 && !down.isEmpty())
        resizeDocks(down, heights, Qt::Vertical);
}

void MainWindow::closeEvent(QCloseEvent* event)
{
    QSettings settings;
    settings.setValue("window/geometry", saveGeometry());
    settings.setValue(stateKey, saveState());
    QMainWindow::closeEvent(event);
}

void MainWindow::rememberRecent(const char* key, const QString& path)
{
    QSettings settings;
    QStringList recent = settings.value(key).toStringList();
    const QString absolute = QFileInfo(path).absoluteFilePath();
    recent.removeAll(absolute);
    recent.prepend(absolute);
    settings.setValue(key, recent.mid(0, 8));
    fillRecentMenus();
}

void MainWindow::fillRecentMenus()
{
    const auto fill = [this](QMenu* menu, const char* key, const std::function<void(const QString&)>& open) {
        menu->clear();
        const QStringList recent = QSettings().value(key).toStringList();
        for (const auto& path : recent)
            menu->addAction(path, this, [open, path] { open(path); });
        menu->setEnabled(!recent.isEmpty());
    };
    fill(recentMenu_, RecentModels, [this](const QString& path) { openModel(path); });
    fill(recentSessionsMenu_, RecentSessions, [this](const QString& path) {
        if (const QString error = openSession(path); !error.isEmpty())
            reportError(tr("Error Opening Session"), error);
    });
}

void MainWindow::updateTitle()
{
    setWindowTitle(document_->hasModel() ? tr("%1 — TorchScope").arg(QFileInfo(document_->modelPath()).fileName())
                                         : tr("TorchScope"));
}

ChannelPage* MainWindow::openChannelPage(const QString& layer, int channel)
{
    if (!document_->hasModel())
        return nullptr;
    auto* page = new ChannelPage(document_, controller_, recorders_->snapshot(), layer, channel, this);
    page->setConcepts(concepts_->labelsOf(layer, channel)); // the Concepts tab's last dissection of it
    page->setAttribute(Qt::WA_DeleteOnClose);
    connect(page, &ChannelPage::failed, this, &MainWindow::reportError);
    page->show();
    page->optimise();
    return page;
}

} // namespace torchscope
