// SPDX-License-Identifier: Apache-2.0
// The model options a build may leave out (-DLINFER_MODEL_OPTIONS, CMakeLists.txt), as the
// top level defines them: LINFER_OPTION_<NAME> 1 where built. Every option where the definitions
// are absent (projects that build the kernels alone: tools/bench/arm). The runtime's side:
// runtime/src/model_options.h.
#pragma once

#ifndef LINFER_OPTION_FLOAT_PROJECTIONS
#define LINFER_OPTION_FLOAT_PROJECTIONS 1
#define LINFER_OPTION_PER_HEAD_PROJECTIONS 1
#define LINFER_OPTION_SINUSOIDAL 1
#define LINFER_OPTION_ROTARY 1
#define LINFER_OPTION_POST_NORM 1
#define LINFER_OPTION_REVERSIBLE 1
#define LINFER_OPTION_GELU_TANH 1
#define LINFER_OPTION_TANH 1
#endif
