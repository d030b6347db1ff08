#include "panels/job_setup_column.h"

#include "dialogs/save_dialog.h"
#include "jobs/job_handle.h"

#include <QFileDialog>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QProgressBar>
#include <QPushButton>
#include <QVBoxLayout>

namespace torchscope {

JobSetupColumn::JobSetupColumn(QWidget* parent)
    : QWidget(parent)
    , layout_(new QVBoxLayout(this))
    , form_(new QFormLayout)
    , buttons_(new QHBoxLayout)
    , cancel_(new QPushButton(tr("Cancel")))
    , progress_(new QProgressBar)
    , summary_(new QLabel)
{
    cancel_->setEnabled(false);
    connect(cancel_, &QPushButton::clicked, this, [this] {
        if (job_)
            job_->cancel(); // still followed: its result says how far it came
    });
    progress_->hide();
    summary_->setWordWrap(true);
    summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    buttons_->addWidget(cancel_);
    layout_->addLayout(form_);
    layout_->addLayout(buttons_);
    layout_->addWidget(progress_);
    layout_->addWidget(summary_);
    layout_->addStretch(1);
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
}

void JobSetupColumn::finish(bool cancelled)
{
    setRunning(false);
    if (!cancelled) {
        progress_->setValue(progress_->maximum());
        progress_->setFormat(tr("done"));
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
    });
    connect(job, &JobHandle::finished, this, [this, job] {
        if (job != job_)
            return;
        job_ = nullptr;
        if (cancel_->isEnabled()) // no result came: cancelled before it started
            finish(true);
    });
}

void JobSetupColumn::cancelJob()
{
    if (job_)
        job_->abandon(); // its partial result belongs to what the tab showed before
    job_ = nullptr;
}

void JobSetupColumn::reset(const QString& text)
{
    setRunning(false);
    progress_->reset();
    progress_->setFormat(QStringLiteral("%p%"));
    progress_->hide();
    if (export_)
        export_->setEnabled(false);
    summary_->setText(text);
}

} // namespace torchscope
