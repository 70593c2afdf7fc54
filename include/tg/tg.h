#pragma once
// tinygrad.cpp: the umbrella header. Include this and link the `tg` library.
#include "tg/dtype.h"
#include "tg/error.h"
#include "tg/device.h"
#include "tg/tensor.h"
