#pragma once

#include <QString>
#include <QStringList>

namespace torchscope {

class Document;

// The parts of the Document a tab's result is computed from: a tab reads some of them when it
// starts a job (attribution and attention the images and the input setup; a recording the setup,
// the edits and the target class), and its result is out of date once one of them changes.
enum ResultInput {
    ImagesInput = 1, // the window's images, in order
    SetupInput = 2, // how the input is made and the output read (model/model_setup.h)
    EditsInput = 4, // the module tree's edits
    TargetInput = 8, // the window's target class
};

// What those parts were when a job started, to say later what has changed since.
class ResultInputs {
public:
    ResultInputs() = default; // nothing taken: nothing is ever out of date
    ResultInputs(const Document& document, int reads);

    bool taken() const { return reads_ != 0; }
    // What differs in `now`, in words for a sentence ("the images", "the input setup"), in the
    // order of ResultInput; empty when nothing the result read has changed.
    QStringList changedIn(const Document& now) const;

private:
    int reads_ = 0;
    QStringList images_;
    QString setup_;
    QStringList edits_;
    int target_ = -1;
};

} // namespace torchscope
