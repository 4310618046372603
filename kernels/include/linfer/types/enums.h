// SPDX-License-Identifier: Apache-2.0
// The enums the kernels share with the format (format/encoder.h has the rest). Their values are
// the schema's (schema/linfer.fbs; the static_asserts in lfm.cc tie them).
#pragma once

#include <cstddef>
#include <cstdint>

namespace linfer {

enum class DType : uint8_t { F32 = 0, F16 = 1, I8 = 2 };
// The feature map of a random-feature attention: positive exp features (which estimate softmax's
// weights) or relu features. Also the format's (a model's field).
enum class FeatureMap : uint8_t { Softmax = 0, Relu = 1 };

constexpr size_t dtype_size(DType t) { return t == DType::F32 ? 4 : t == DType::F16 ? 2 : 1; }

}  // namespace linfer
