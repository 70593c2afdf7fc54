#pragma once
// tinygrad's codegen/gpudims.py: ranges become launch dimensions. On a CPU renderer with threads the first global range
// becomes the core_id variable the thread pool sets; on a GPU renderer global and local ranges become SPECIAL ids
// (gidx/lidx: group and local ids; idx: global ids under NOLOCALS), merged or split to fit global_max / local_max.
#include "uop/upat.h"

namespace tg {

const PatternMatcher& pm_add_gpudims();  // ctx: the renderer (const CStyleLanguage)

}  // namespace tg
