#pragma once

// The left column of every analysis tab (Attribution, Attention, Compare, Recorders, Probes): the
// tab's form and what else it shows there (below the form) scroll; the buttons that start its jobs
// with Cancel (and Export where the tab has one), a progress bar and a summary stay in view under
// them, and a bar above says when the result shown is out of date. One widget, so the tabs look and
// behave alike at any window size.

#include "document/result_inputs.h"

#include <QElapsedTimer>
#include <QList>
#include <QPointer>
#include <QWidget>

#include <functional>

class QFormLayout;
class QHBoxLayout;
class QLabel;
class QLayout;
class QLineEdit;
class QProgressBar;
class QPushButton;
class QScrollArea;
class QVBoxLayout;

namespace torchscope {

class Document;
class JobHandle;

class JobSetupColumn : public QWidget {
    Q_OBJECT
public:
    explicit JobSetupColumn(QWidget* parent = nullptr);

    QFormLayout* form() const { return form_; }
    // A row of the form: `field` with a Browse… button that picks a folder into it.
    void addFolderRow(const QString& label, QLineEdit* field, const QString& caption);
    // Buttons that start the tab's jobs, before Cancel; they are disabled while one runs.
    void addStartButton(QPushButton* button);
    // An Export… button after Cancel, disabled until the tab has a result.
    QPushButton* addExportButton();
    // The Export… button with a menu of the tab's exports (every tab's the same way): each asks for
    // a path with the project's save dialog, then calls `write(path, plot)`, which returns an error
    // or ""; an error is emitted as exportFailed().
    struct ExportChoice {
        QString text; // the menu entry: "Maps as .npz, .pt or .safetensors…"
        QString caption; // the dialog's title
        QString suggested; // the file name offered
        QString filters; // "NumPy (*.npz);;PyTorch (*.pt)"
        QString plot; // what `write` is asked for: "" the numbers, else a plot's name
    };
    QPushButton* addExportMenu(
        const QList<ExportChoice>& choices, std::function<QString(const QString& path, const QString& plot)> write);
    // Below the summary, in order; a stretch > 0 lets the widget take the column's free height.
    void addBelow(QWidget* widget, int stretch = 0);
    void addBelow(QLayout* layout);

    // The width the column wants: its form and buttons whole, with the scroll bar beside the form.
    int preferredWidth() const;

    QPushButton* cancelButton() const { return cancel_; }
    QPushButton* exportButton() const { return export_; }
    QProgressBar* progressBar() const { return progress_; }
    QLabel* summary() const { return summary_; }

    // Start buttons off and Cancel on while running; the progress bar shows from the first run on.
    void setRunning(bool running);
    // The bar at done of total, with an estimate of the time left once a job has run a few seconds
    // ("40% · about 3 min left", from the pace so far).
    void showProgress(qint64 done, qint64 total);
    // A job ended: not running; the bar full unless it was cancelled (then it shows how far it came).
    void finish(bool cancelled);
    // A fresh tab: not running, no progress, nothing to export, `text` as the summary.
    void reset(const QString& text);

    // Follows the tab's job (the one way every tab does it): running with `runningText` as the
    // summary, its progress on the bar, Cancel cancels it, a failure's message as the summary.
    // The tab connects the handle's succeeded() to show the result and then calls finish(); a job
    // cancelled before it started finishes as cancelled. A newer job replaces the one followed.
    void follow(JobHandle* job, const QString& runningText);
    JobHandle* job() const { return job_; } // the job followed while it runs, else nullptr

    // The tab's result reads these parts of the Document (ResultInput flags): each job followed
    // takes them as they are when it starts, and once the Document changes one of them a bar at
    // the top of the column says the result shown is out of date, what changed, with Run Again
    // (the start button used last). A new job or reset() takes the bar away.
    void watchInputs(Document* document, int reads);
    bool isOutdated() const;
    QLabel* outdatedText() const { return outdatedText_; }
    QPushButton* runAgainButton() const { return runAgain_; }
    // Abandons the job followed, if any (a new model, newer settings): it stops, and what it has
    // done is dropped, not shown. The Cancel button cancels instead: what finished is shown.
    void cancelJob();

Q_SIGNALS:
    void exportFailed(const QString& title, const QString& message);
    // Cancel was clicked: the column already says so; a tab that shows parts of its result as they
    // come offers what it has at once (the job stops at its next step and then hands over its own).
    void cancelRequested();

private:
    QVBoxLayout* layout_; // what scrolls: the form and what goes below it
    QWidget* content_;
    QScrollArea* scroll_;
    QFormLayout* form_;
    QHBoxLayout* buttons_;
    QList<QPushButton*> starts_;
    QPushButton* cancel_;
    bool running_ = false;
    QPushButton* export_ = nullptr;
    QProgressBar* progress_;
    QLabel* summary_;
    bool stretched_ = false;
    QPointer<JobHandle> job_;
    QWidget* outdated_;
    QLabel* outdatedText_;
    QPushButton* runAgain_;
    QPushButton* lastStart_ = nullptr;
    Document* document_ = nullptr;
    int reads_ = 0;
    ResultInputs inputs_; // what the job followed last read
    QElapsedTimer started_; // when the job followed started

    void showWhetherOutdated();
};

} // namespace torchscope
