#pragma once
// tinygrad.cpp: the umbrella header. Include this and link the `tg` library.
#include "tg/dtype.h"
#include "tg/error.h"
#include "tg/device.h"
#include "tg/context.h"
#include "tg/tensor.h"
#include "tg/jit.h"
#include "tg/nn.h"
#include "tg/optim.h"
#include "tg/state.h"
#include "tg/datasets.h"
#include "tg/gguf.h"
#include "tg/function.h"
