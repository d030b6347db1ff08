#pragma once

#include "graph/setup_advice.h"
#include "model/model_setup.h"

#include <QDialog>

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QPushButton;
class QSpinBox;

namespace torchscope {

// Model > Input Setup…: the input size, resize and crop, value scaling (presets or mean and std),
// channel order, grey or colour, labels (a text or JSON file) and the output element with the
// scores, with what the model itself says (first convolution's channels, last layer's outputs,
// sizes that run) and a button to take that advice.
class ModelSetupDialog : public QDialog {
    Q_OBJECT
public:
    explicit ModelSetupDialog(QWidget* parent = nullptr);

    void setSetup(const ModelSetup& setup, const QString& modelName);
    ModelSetup setup() const; // as the fields say; throws std::runtime_error for a bad mean/std
    void setAdvice(const SetupAdvice& advice);
    void setAdvicePending();
    // Loads labels from a file (one per line, or JSON); returns an error or "".
    QString loadLabels(const QString& path);
    void useAdvice(); // the suggested size and channels
    void accept() override; // refuses (with a message in the dialog) a mean or std that does not fit

    QSpinBox* heightBox() const { return height_; }
    QSpinBox* widthBox() const { return width_; }
    QComboBox* resizeBox() const { return resizeMode_; }
    QSpinBox* shorterSideBox() const { return shorterSide_; }
    QLineEdit* meanField() const { return mean_; }
    QLineEdit* stdField() const { return std_; }
    QComboBox* valuesBox() const { return values_; }
    QComboBox* channelsBox() const { return channels_; }
    QLabel* adviceLabel() const { return advice_; }
    QPushButton* useAdviceButton() const { return useAdvice_; }

Q_SIGNALS:
    void resetRequested(); // back to the model's own setup

private:
    void updateEnabled();
    void showLabels();

    QSpinBox* height_;
    QSpinBox* width_;
    QComboBox* resizeMode_;
    QSpinBox* shorterSide_;
    QComboBox* values_;
    QDoubleSpinBox* scale_;
    QLineEdit* mean_;
    QLineEdit* std_;
    QComboBox* channels_;
    QLineEdit* scores_;
    QLabel* labels_;
    QLabel* advice_;
    QLabel* error_;
    QPushButton* useAdvice_;
    std::vector<std::string> labelList_;
    SetupAdvice lastAdvice_;
};

} // namespace torchscope
