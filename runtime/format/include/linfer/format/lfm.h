// SPDX-License-Identifier: Apache-2.0
// Reading and writing .lfm files (schema/linfer.fbs) to and from the canonical description.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "linfer/format/encoder.h"

namespace linfer {

// The newest version read and written. The writer writes the oldest version that holds the
// description, of those at or below the one asked for: 5 when an int8 dense weight keeps input
// channels in f32, else 4 (each attention kind's fields and tensors in its own tables); asked
// for 2 or 3, 3 when a dense weight carries input scales, else 2 (an older runtime must refuse
// such a file rather than ignore the field); version 1 (all weights row-major) on request.
// Versions 1 to 3 are read by one legacy path (lfm.cc); versions 4 and 5 differ only by the
// f32 input channels.
constexpr uint32_t kFormatVersion = 5;
constexpr size_t kDataAlignment = 64;

// What the file says besides the description. (Its producer and metadata strings are written, and
// checked by the verifier, but nothing reads them: they are not copied out.)
struct LfmInfo {
  uint32_t format_version = 0;
  uint64_t data_offset = 0, data_size = 0;
};

// Serialises a description into .lfm bytes, as it is: the caller packs dense weights first for
// version 2 (pack_dense_weights, panel.h). Weights that share one data pointer are stored once.
// The description must pass validate_description unless `validate` is false (tests use that to
// make invalid files). format_version is the newest version the caller accepts: 1 refuses
// panel-layout tensors, 1 and 2 refuse input scales, 1 to 4 refuse f32 input channels, 4 and 5 refuse a tensor of
// another attention kind than the model's (unless not validating, a description holds none).
// Fails with LINFER_ERROR_INVALID_MODEL (the description), LINFER_ERROR_INVALID_ARGUMENT (a version
// that cannot hold it) or LINFER_ERROR_INTERNAL.
err::Status write_lfm(const EncoderDescription& desc, const std::string& producer,
                      const std::vector<std::pair<std::string, std::string>>& metadata, std::vector<uint8_t>* out,
                      bool validate = true, uint32_t format_version = kFormatVersion);

// Verifies (FlatBuffers Verifier), then checks every offset, size and scale, then validates the
// meaning (validate_description). *desc must be empty (default-constructed): it is filled in place,
// and after a failure holds part of the file's description, to be discarded. On success the views
// in *desc point into `data`, which must be 64-byte aligned and outlive the description. Never
// aborts; a failure is LINFER_ERROR_INVALID_MODEL with a one-line message (or, without
// exceptions, LINFER_ERROR_OUT_OF_MEMORY when the layers' description does not fit the heap).
err::Status parse_lfm(const uint8_t* data, size_t size, EncoderDescription* desc, LfmInfo* info);

}  // namespace linfer
