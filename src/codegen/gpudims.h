#pragma once
// tinygrad's codegen/gpudims.py: ranges become launch dimensions (on the CPU: the first global range becomes the
// core_id variable the thread pool sets).
#include "uop/upat.h"

namespace tg {

const PatternMatcher& pm_add_gpudims();  // ctx: the renderer (const CStyleLanguage)

}  // namespace tg
