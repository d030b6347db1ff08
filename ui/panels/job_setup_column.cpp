#include "panels/job_setup_column.h"

#include "dialogs/save_dialog.h"
#include "document/document.h"
#include "jobs/job_handle.h"

#include <QFileDialog>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QProgressBar>
#include <QPushButton>
#include <QScrollArea>
#include <QScrollBar>
#include <QVBoxLayout>

#include <algorithm>

namespace torchscope {

JobSetupColumn::JobSetupColumn(QWidget* parent)
    : QWidget(parent)
    , content_(new QWidget)
    , scroll_(new QScrollArea)
    , form_(new QFormLayout)
    , buttons_(new QHBoxLayout)
    , cancel_(new QPushButton(tr("Cancel")))
    , progress_(new QProgressBar)
    , summary_(new QLabel)
    , outdated_(new QWidget)
    , outdatedText_(new QLabel)
    , runAgain_(new QPushButton(tr("Run Again")))
{
    // The out-of-date bar: first in the column, where it is seen before the settings.
    outdated_->setObjectName("outdatedBar");
    outdated_->setAttribute(Qt::WA_StyledBackground);
    outdated_->setStyleSheet("#outdatedBar { background: #fff3cd; border: 1px solid #d8b44a; border-radius: 3px; }");
    outdatedText_->setWordWrap(true);
    auto* bar = new QHBoxLayout(outdated_);
    bar->setContentsMargins(6, 4, 6, 4);
    bar->addWidget(outdatedText_, 1);
    bar->addWidget(runAgain_);
    outdated_->hide();
    connect(runAgain_, &QPushButton::clicked, this, [this] {
        QPushButton* start = lastStart_ ? lastStart_ : (starts_.isEmpty() ? nullptr : starts_.first());
        if (start && start->isEnabled())
            start->click();
    });
    cancel_->setEnabled(false);
    connect(cancel_, &QPushButton::clicked, this, [this] {
        if (!job_)
            return;
        job_->cancel(); // still followed: its result says how far it came
        // Answered now, not when the job reaches its next step (one batch of a long method).
        cancel_->setEnabled(false);
        progress_->setFormat(tr("%p% · cancelling"));
        summary_->setText(tr("Cancelling: the step in progress stops at its next batch; what finished is kept."));
        Q_EMIT cancelRequested();
    });
    progress_->hide();
    summary_->setWordWrap(true);
    summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    buttons_->addWidget(cancel_);
    // The form scrolls when the window is short; the bar, the buttons, the progress and the summary
    // do not, so Run, Cancel and Export are always in view.
    layout_ = new QVBoxLayout(content_);
    layout_->setContentsMargins(0, 0, 0, 0);
    layout_->addLayout(form_);
    layout_->addStretch(1);
    scroll_->setWidget(content_);
    scroll_->setWidgetResizable(true);
    scroll_->setFrameShape(QFrame::NoFrame);
    auto* column = new QVBoxLayout(this);
    column->addWidget(outdated_);
    column->addWidget(scroll_, 1);
    column->addLayout(buttons_);
    column->addWidget(progress_);
    column->addWidget(summary_);
}

int JobSetupColumn::preferredWidth() const
{
    const int margins = layout()->contentsMargins().left() + layout()->contentsMargins().right();
    return std::max(content_->sizeHint().width() + scroll_->verticalScrollBar()->sizeHint().width(),
               buttons_->sizeHint().width())
        + margins;
}

void JobSetupColumn::addFolderRow(const QString& label, QLineEdit* field, const QString& caption)
{
    auto* browse = new QPushButton(tr("Browse…"));
    connect(browse, &QPushButton::clicked, this, [this, field, caption] {
        const QString folder = QFileDialog::getExistingDirectory(this, caption, field->text());
        if (!folder.isEmpty())
            field->setText(folder);
    });
    auto* row = new QHBoxLayout;
    row->addWidget(field, 1);
    row->addWidget(browse);
    form_->addRow(label, row);
}

void JobSetupColumn::addStartButton(QPushButton* button)
{
    buttons_->insertWidget(buttons_->indexOf(cancel_), button);
    starts_ << button;
    connect(button, &QPushButton::clicked, this, [this, button] { lastStart_ = button; });
}

QPushButton* JobSetupColumn::addExportButton()
{
    if (!export_) {
        export_ = new QPushButton(tr("Export…"));
        export_->setEnabled(false);
        buttons_->addWidget(export_);
    }
    return export_;
}

void JobSetupColumn::addBelow(QWidget* widget, int stretch)
{
    if (stretch > 0 && !stretched_) {
        delete layout_->takeAt(layout_->count() - 1); // the trailing stretch: this widget takes it
        stretched_ = true;
    }
    layout_->insertWidget(stretched_ ? layout_->count() : layout_->count() - 1, widget, stretch);
}

void JobSetupColumn::addBelow(QLayout* layout)
{
    layout_->insertLayout(stretched_ ? layout_->count() : layout_->count() - 1, layout);
}

void JobSetupColumn::setRunning(bool running)
{
    running_ = running;
    for (auto* button : starts_)
        button->setEnabled(!running);
    cancel_->setEnabled(running);
    if (!running && progress_->maximum() == 0) { // a job that never counted: done, not busy
        progress_->setRange(0, 1);
        progress_->setValue(1);
    }
    if (running) {
        progress_->setFormat(QStringLiteral("%p%"));
        progress_->setRange(0, 0); // busy until the first count
        progress_->show();
    }
}

void JobSetupColumn::showProgress(qint64 done, qint64 total)
{
    progress_->setRange(0, static_cast<int>(total));
    progress_->setValue(static_cast<int>(done));
    const qint64 elapsed = started_.isValid() ? started_.elapsed() : 0;
    if (done <= 0 || done >= total || elapsed < 3000) {
        progress_->setFormat(QStringLiteral("%p%"));
        return;
    }
    const double left = std::min(1e6, // seconds, converted to int below
        static_cast<double>(elapsed) / 1000.0 * static_cast<double>(total - done) / static_cast<double>(done));
    const QString estimate = left < 60.0 ? tr("about %1 s left").arg(std::max(1, static_cast<int>(left + 0.5)))
                                         : tr("about %1 min left").arg(static_cast<int>(left / 60.0 + 0.5));
    progress_->setFormat(tr("%p% · %1").arg(estimate));
}

void JobSetupColumn::finish(bool cancelled)
{
    setRunning(false);
    if (!cancelled) {
        progress_->setValue(progress_->maximum());
        progress_->setFormat(tr("done"));
    } else {
        progress_->setFormat(tr("%p% · cancelled")); // how far it came
    }
}

QPushButton* JobSetupColumn::addExportMenu(
    const QList<ExportChoice>& choices, std::function<QString(const QString& path, const QString& plot)> write)
{
    QPushButton* button = addExportButton();
    auto* menu = new QMenu(button);
    for (const ExportChoice& choice : choices)
        menu->addAction(choice.text, this, [this, choice, write] {
            const QString path = askSavePath(this, choice.caption, choice.suggested, choice.filters);
            if (!path.isEmpty())
                if (const QString error = write(path, choice.plot); !error.isEmpty())
                    Q_EMIT exportFailed(tr("Export Failed"), error);
        });
    button->setMenu(menu);
    return button;
}

void JobSetupColumn::follow(JobHandle* job, const QString& runningText)
{
    cancelJob();
    job_ = job;
    started_.start();
    inputs_ = document_ ? ResultInputs(*document_, reads_) : ResultInputs();
    showWhetherOutdated();
    setRunning(true);
    showProgress(0, 1);
    summary_->setText(runningText);
    connect(job, &JobHandle::progress, this, [this, job](qint64 done, qint64 total) {
        if (job == job_)
            showProgress(done, total);
    });
    connect(job, &JobHandle::failed, this, [this, job](const QString&, const QString& message) {
        if (job != job_)
            return;
        setRunning(false);
        summary_->setText(message);
        inputs_ = ResultInputs(); // no result to be out of date
        outdated_->hide();
    });
    connect(job, &JobHandle::finished, this, [this, job] {
        if (job != job_)
            return;
        job_ = nullptr;
        if (running_) // no result came: cancelled before it started
            finish(true);
    });
}

void JobSetupColumn::cancelJob()
{
    if (job_)
        job_->abandon(); // its partial result belongs to what the tab showed before
    job_ = nullptr;
}

void JobSetupColumn::watchInputs(Document* document, int reads)
{
    document_ = document;
    reads_ = reads;
    // Every change to the images, the setup, the edits or the target emits requestChanged()
    // (setupChanged() alone means only the setup's source was renamed).
    connect(document, &Document::requestChanged, this, &JobSetupColumn::showWhetherOutdated);
}

bool JobSetupColumn::isOutdated() const
{
    return !outdated_->isHidden();
}

void JobSetupColumn::showWhetherOutdated()
{
    const QStringList changed = document_ && inputs_.taken() ? inputs_.changedIn(*document_) : QStringList();
    if (changed.isEmpty()) {
        outdated_->hide();
        return;
    }
    QString what = changed.first();
    if (changed.size() > 1)
        what = tr("%1 and %2").arg(changed.mid(0, changed.size() - 1).join(tr(", ")), changed.last());
    outdatedText_->setText(job_ ? tr("<b>Out of date</b>: %1 changed after this job started.").arg(what)
                                : tr("<b>Out of date</b>: %1 changed since this result was computed.").arg(what));
    outdated_->show();
}

void JobSetupColumn::reset(const QString& text)
{
    inputs_ = ResultInputs();
    outdated_->hide();
    setRunning(false);
    progress_->reset();
    progress_->setFormat(QStringLiteral("%p%"));
    progress_->hide();
    if (export_)
        export_->setEnabled(false);
    summary_->setText(text);
}

} // namespace torchscope
