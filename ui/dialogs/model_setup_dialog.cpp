#include "dialogs/model_setup_dialog.h"

#include <QComboBox>
#include <QDialogButtonBox>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QVBoxLayout>

#include <algorithm>
#include <stdexcept>

namespace torchscope {
namespace {

enum ResizeMode { ShorterSideThenCrop, Stretch, CropOnly };
enum Channels { Rgb, Bgr, Grey };

QString numbersText(const std::vector<double>& values)
{
    QStringList parts;
    for (double v : values)
        parts << QString::number(v, 'g', 6);
    return parts.join(", ");
}

std::vector<double> parseNumbers(const QString& text, const char* what)
{
    std::vector<double> values;
    for (const auto& part : text.split(',', Qt::SkipEmptyParts)) {
        bool ok = false;
        const double v = part.trimmed().toDouble(&ok);
        if (!ok)
            throw std::runtime_error(std::string(what) + ": '" + part.trimmed().toStdString() + "' is not a number");
        values.push_back(v);
    }
    return values;
}

} // namespace

ModelSetupDialog::ModelSetupDialog(QWidget* parent)
    : QDialog(parent)
    , height_(new QSpinBox)
    , width_(new QSpinBox)
    , resizeMode_(new QComboBox)
    , shorterSide_(new QSpinBox)
    , values_(new QComboBox)
    , scale_(new QDoubleSpinBox)
    , mean_(new QLineEdit)
    , std_(new QLineEdit)
    , channels_(new QComboBox)
    , scores_(new QLineEdit)
    , labels_(new QLabel)
    , advice_(new QLabel)
    , error_(new QLabel)
    , useAdvice_(new QPushButton(tr("Use Suggested Input")))
{
    setWindowTitle(tr("Input Setup"));
    setMinimumWidth(640);
    for (QSpinBox* box : {height_, width_}) {
        box->setRange(0, 8192);
        box->setSpecialValueText(tr("image's own"));
        box->setSuffix(tr(" px"));
    }
    resizeMode_->addItem(tr("Resize the shorter side, then crop the centre"), ShorterSideThenCrop);
    resizeMode_->addItem(tr("Stretch to the input size"), Stretch);
    resizeMode_->addItem(tr("Crop the centre only (no resize)"), CropOnly);
    shorterSide_->setRange(1, 8192);
    shorterSide_->setSuffix(tr(" px"));
    values_->addItem(tr("0..1, then ImageNet mean and std"), int(ValuePreset::ImageNet));
    values_->addItem(tr("0..1"), int(ValuePreset::ZeroToOne));
    values_->addItem(tr("0..255"), int(ValuePreset::ZeroTo255));
    values_->addItem(tr("-1..1 (mean 0.5, std 0.5)"), int(ValuePreset::MinusOneToOne));
    values_->addItem(tr("Custom mean and std"), int(ValuePreset::Custom));
    scale_->setRange(0.001, 100000);
    scale_->setDecimals(3);
    scale_->setPrefix(tr("0 .. "));
    mean_->setPlaceholderText(tr("per channel, after scaling: 0.485, 0.456, 0.406"));
    std_->setPlaceholderText(tr("per channel: 0.229, 0.224, 0.225"));
    channels_->addItem(tr("Colour, RGB"), Rgb);
    channels_->addItem(tr("Colour, BGR (OpenCV, Caffe)"), Bgr);
    channels_->addItem(tr("Grey (one channel)"), Grey);
    scores_->setPlaceholderText(tr("found by itself: the first [N, classes] tensor, a dict's \"out\""));
    scores_->setToolTip(tr("For models that return a tuple, namedtuple or dict: the element (index or name) "
                           "that holds the class scores"));
    labels_->setWordWrap(true);
    advice_->setWordWrap(true);
    advice_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    error_->setWordWrap(true);
    error_->setStyleSheet("color: #b00020");

    auto* size = new QHBoxLayout;
    size->addWidget(height_);
    size->addWidget(new QLabel(tr("high ×")));
    size->addWidget(width_);
    size->addWidget(new QLabel(tr("wide")));
    size->addStretch();
    auto* values = new QHBoxLayout;
    values->addWidget(values_, 1);
    values->addWidget(scale_);
    auto* loadLabels = new QPushButton(tr("Load Labels…"));
    auto* clearLabels = new QPushButton(tr("Clear"));
    auto* labelButtons = new QHBoxLayout;
    labelButtons->addWidget(loadLabels);
    labelButtons->addWidget(clearLabels);
    labelButtons->addStretch();
    auto* labelRows = new QVBoxLayout;
    labelRows->addWidget(labels_);
    labelRows->addLayout(labelButtons);

    auto* form = new QFormLayout;
    form->addRow(tr("Input size:"), size);
    form->addRow(tr("Resize:"), resizeMode_);
    form->addRow(tr("Shorter side:"), shorterSide_);
    form->addRow(tr("Values:"), values);
    form->addRow(tr("Mean:"), mean_);
    form->addRow(tr("Std:"), std_);
    form->addRow(tr("Channels:"), channels_);
    form->addRow(tr("Labels:"), labelRows);
    form->addRow(tr("Scores element:"), scores_);

    auto* adviceBox = new QGroupBox(tr("What the model says"));
    auto* adviceLayout = new QVBoxLayout(adviceBox);
    adviceLayout->addWidget(advice_);
    adviceLayout->addWidget(useAdvice_, 0, Qt::AlignLeft);

    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel);
    QPushButton* reset = buttons->addButton(tr("Model's Own"), QDialogButtonBox::ResetRole);
    reset->setToolTip(tr("The setup stored in the model (torchscope.json), else ImageNet's"));
    auto* layout = new QVBoxLayout(this);
    layout->addLayout(form);
    layout->addWidget(adviceBox);
    layout->addWidget(error_);
    layout->addWidget(buttons);

    connect(buttons, &QDialogButtonBox::accepted, this, &ModelSetupDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    connect(reset, &QPushButton::clicked, this, &ModelSetupDialog::resetRequested);
    connect(resizeMode_, &QComboBox::currentIndexChanged, this, &ModelSetupDialog::updateEnabled);
    connect(values_, &QComboBox::currentIndexChanged, this, [this] {
        const auto preset = ValuePreset(values_->currentData().toInt());
        if (preset != ValuePreset::Custom) {
            Preprocessing p;
            p.grayscale = channels_->currentData().toInt() == Grey;
            applyValuePreset(p, preset);
            scale_->setValue(p.scale);
            mean_->setText(numbersText(p.mean));
            std_->setText(numbersText(p.std));
        }
        updateEnabled();
    });
    connect(channels_, &QComboBox::currentIndexChanged, this, [this] {
        // Presets have one mean per channel: redo them for grey or colour.
        Q_EMIT values_->currentIndexChanged(values_->currentIndex());
    });
    connect(loadLabels, &QPushButton::clicked, this, [this] {
        const QString path = QFileDialog::getOpenFileName(
            this, tr("Load Labels"), QString(), tr("Labels (*.txt *.json);;All files (*)"));
        if (path.isEmpty())
            return;
        const QString problem = this->loadLabels(path);
        error_->setText(problem);
    });
    connect(clearLabels, &QPushButton::clicked, this, [this] {
        labelList_.clear();
        showLabels();
    });
    connect(useAdvice_, &QPushButton::clicked, this, &ModelSetupDialog::useAdvice);
    useAdvice_->setEnabled(false);
    updateEnabled();
}

void ModelSetupDialog::setSetup(const ModelSetup& setup, const QString& modelName)
{
    setWindowTitle(tr("Input Setup — %1").arg(modelName));
    const Preprocessing& p = setup.preprocessing;
    const bool stretch = p.resizeHeight > 0 && p.resizeWidth > 0;
    height_->setValue(p.cropHeight > 0 ? p.cropHeight : p.resizeHeight);
    width_->setValue(p.cropWidth > 0 ? p.cropWidth : p.resizeWidth);
    resizeMode_->setCurrentIndex(stretch ? Stretch : p.resize > 0 ? ShorterSideThenCrop : CropOnly);
    shorterSide_->setValue(p.resize > 0 ? p.resize : std::max(1, int(p.cropHeight * 8 / 7)));
    channels_->setCurrentIndex(p.grayscale ? Grey : p.bgr ? Bgr : Rgb);
    values_->setCurrentIndex(values_->findData(int(valuePresetOf(p))));
    scale_->setValue(p.scale);
    mean_->setText(numbersText(p.mean));
    std_->setText(numbersText(p.std));
    scores_->setText(QString::fromStdString(setup.scores));
    labelList_ = setup.labels;
    showLabels();
    error_->clear();
    updateEnabled();
}

ModelSetup ModelSetupDialog::setup() const
{
    ModelSetup setup;
    Preprocessing& p = setup.preprocessing;
    p = Preprocessing::none();
    const int mode = resizeMode_->currentData().toInt();
    if (mode == Stretch && height_->value() > 0 && width_->value() > 0) {
        p.resizeHeight = height_->value();
        p.resizeWidth = width_->value();
    } else if (mode == ShorterSideThenCrop) {
        p.resize = shorterSide_->value();
    }
    if (height_->value() > 0 && width_->value() > 0) {
        p.cropHeight = height_->value();
        p.cropWidth = width_->value();
    }
    p.grayscale = channels_->currentData().toInt() == Grey;
    p.bgr = channels_->currentData().toInt() == Bgr;
    p.scale = scale_->value();
    p.mean = parseNumbers(mean_->text(), "mean");
    p.std = parseNumbers(std_->text(), "std");
    const size_t channels = p.grayscale ? 1 : 3;
    if (p.mean.size() != p.std.size() || (!p.mean.empty() && p.mean.size() != channels))
        throw std::runtime_error("give " + std::to_string(channels) + " mean and " + std::to_string(channels)
            + " std value(s), one per channel, or none");
    for (double s : p.std)
        if (s == 0)
            throw std::runtime_error("std must not be 0");
    setup.labels = labelList_;
    setup.scores = scores_->text().trimmed().toStdString();
    return setup;
}

void ModelSetupDialog::accept()
{
    try {
        (void)setup();
    } catch (const std::exception& e) {
        error_->setText(QString::fromStdString(e.what()));
        return;
    }
    QDialog::accept();
}

void ModelSetupDialog::setAdvicePending()
{
    advice_->setText(tr("Checking which inputs the model accepts…"));
    useAdvice_->setEnabled(false);
}

void ModelSetupDialog::setAdvice(const SetupAdvice& advice)
{
    lastAdvice_ = advice;
    QStringList lines;
    for (const auto& note : advice.notes) {
        QString line = QString::fromStdString(note);
        line[0] = line[0].toUpper();
        lines << "• " + line.toHtmlEscaped();
    }
    advice_->setText(lines.join("<br>"));
    showLabels();
    adjustSize(); // the advice grows the dialog
    useAdvice_->setEnabled(!advice.sizes.empty() || advice.inputChannels == 1 || advice.inputChannels == 3);
}

void ModelSetupDialog::useAdvice()
{
    const SetupAdvice& a = lastAdvice_;
    if (a.inputChannels == 1)
        channels_->setCurrentIndex(Grey);
    else if (a.inputChannels == 3 && channels_->currentData().toInt() == Grey)
        channels_->setCurrentIndex(Rgb);
    const bool currentRuns = std::find(a.sizes.begin(), a.sizes.end(), height_->value()) != a.sizes.end()
        && height_->value() == width_->value();
    if (!a.sizes.empty() && !currentRuns && !a.anySize()) {
        height_->setValue(a.sizes.front());
        width_->setValue(a.sizes.front());
        shorterSide_->setValue(a.sizes.front());
    }
}

QString ModelSetupDialog::loadLabels(const QString& path)
{
    try {
        labelList_ = readLabelsFile(path.toStdString());
    } catch (const std::exception& e) {
        return QString::fromStdString(e.what());
    }
    showLabels();
    return {};
}

void ModelSetupDialog::showLabels()
{
    if (labelList_.empty()) {
        labels_->setText(tr("none: classes are shown by number"));
        return;
    }
    QStringList first;
    for (size_t i = 0; i < labelList_.size() && i < 5; ++i)
        first << QString::fromStdString(labelList_[i]);
    QString text = tr("%n label(s): ", nullptr, int(labelList_.size())) + first.join(", ");
    if (labelList_.size() > 5)
        text += ", …";
    if (lastAdvice_.outputs > 0 && lastAdvice_.outputs != int64_t(labelList_.size()))
        text += tr(" (the model gives %1 outputs)").arg(lastAdvice_.outputs);
    labels_->setText(text);
}

void ModelSetupDialog::updateEnabled()
{
    shorterSide_->setEnabled(resizeMode_->currentData().toInt() == ShorterSideThenCrop);
    const bool custom = ValuePreset(values_->currentData().toInt()) == ValuePreset::Custom;
    scale_->setEnabled(custom);
    mean_->setEnabled(custom);
    std_->setEnabled(custom);
}

} // namespace torchscope
