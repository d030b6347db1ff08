#include "document/result_inputs.h"

#include "document/document.h"

namespace torchscope {
namespace {

QString setupText(const Document& document)
{
    return QString::fromStdString(document.setup().toJson());
}

QStringList editTexts(const Document& document)
{
    QStringList edits;
    for (const auto& edit : document.edits())
        edits << QString::fromStdString(edit.toString());
    return edits;
}

} // namespace

ResultInputs::ResultInputs(const Document& document, int reads)
    : reads_(reads)
    , images_(document.images())
    , setup_(setupText(document))
    , edits_(editTexts(document))
    , target_(document.targetClass())
{ }

QStringList ResultInputs::changedIn(const Document& now) const
{
    QStringList changed;
    if ((reads_ & ImagesInput) && now.images() != images_)
        changed << QObject::tr("the images");
    if ((reads_ & SetupInput) && setupText(now) != setup_)
        changed << QObject::tr("the input setup");
    if ((reads_ & EditsInput) && editTexts(now) != edits_)
        changed << QObject::tr("the edits");
    if ((reads_ & TargetInput) && now.targetClass() != target_)
        changed << QObject::tr("the target class");
    return changed;
}

} // namespace torchscope
