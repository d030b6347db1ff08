#pragma once

// qcustomplot.h uses the `signals` and `foreach` keywords that QT_NO_KEYWORDS (needed next to
// Torch headers, which use `slots`) switches off.
#ifndef signals
#define signals Q_SIGNALS
#define TORCHSCOPE_DEFINED_SIGNALS
#endif
#ifndef foreach
#define foreach Q_FOREACH
#define TORCHSCOPE_DEFINED_FOREACH
#endif
#include <qcustomplot.h>
#ifdef TORCHSCOPE_DEFINED_SIGNALS
#undef signals
#undef TORCHSCOPE_DEFINED_SIGNALS
#endif
#ifdef TORCHSCOPE_DEFINED_FOREACH
#undef foreach
#undef TORCHSCOPE_DEFINED_FOREACH
#endif
