// SPDX-License-Identifier: Apache-2.0
// Safe checkpoint readers for linfer-convert.
//
// Reads safetensors files, torch.save zip archives (PyTorch >= 1.6) and legacy torch.save streams
// (PyTorch < 1.6 or _use_new_zipfile_serialization=False) without executing anything: the pickles
// of a torch file are interpreted by a restricted stack machine that only knows the
// opcodes a state dict needs and a short allow-list of globals, and keeps everything as data.
// Every offset, size and count is checked against the input; on bad input the readers return a
// failure with a one-line message (linfer/types/status.h), they never crash, abort or allocate more
// than a small multiple of the input size.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "linfer/types/status.h"

namespace linfer::convert {

enum class SourceDType { F32, F64, F16, BF16, I64, I32, I16, I8, U8, Bool };

// "F32", "F64", "F16", "BF16", "I64", "I32", "I16", "I8", "U8", "BOOL".
const char* dtype_name(SourceDType dtype);
// Bytes per element (1 for Bool).
size_t dtype_size(SourceDType dtype);

// A block of raw little-endian elements. Points into the bytes owned by the Checkpoint.
struct Storage {
  std::string key;
  SourceDType dtype = SourceDType::F32;
  const uint8_t* data = nullptr;
  uint64_t bytes = 0;  // element count * dtype_size(dtype)
};

// A view into a Storage. Two tensors with the same storage_key share memory.
// safetensors tensors are contiguous and each has its own storage (key = tensor name).
struct SourceTensor {
  std::string name;  // key in the state dict (empty for tensors elsewhere in a pickle)
  SourceDType dtype = SourceDType::F32;
  std::vector<int64_t> shape;    // empty for a 0-d tensor
  std::vector<int64_t> strides;  // in elements, same length as shape, all >= 0
  uint64_t storage_offset = 0;   // in elements
  std::string storage_key;
};

// A value from a pickle, kept as data (nothing in it was ever executed).
//
// Values are owned by an arena that lives as long as Checkpoint::root; children are plain
// pointers into it. A hostile pickle can make the graph share nodes, nest deeply or even contain
// cycles (a list appended to itself), so code that walks it generically must bound its depth.
struct Value {
  enum class Kind : uint8_t {
    None,
    Bool,
    Int,
    Float,
    String,
    Bytes,
    List,
    Tuple,
    Dict,
    Tensor,   // torch._utils._rebuild_tensor_v2 / _rebuild_parameter result: `tensor`
    Opaque,   // instance of an allow-listed non-tensor class (argparse.Namespace): module, name, state
    Global,   // a bare allow-listed global (a class or function object): module, name
    Storage,  // a storage from a persistent id: text = key, dtype, integer = element count
  };

  Kind kind = Kind::None;
  bool boolean = false;                  // Bool
  int64_t integer = 0;                   // Int (pickled ints beyond int64 are refused); Storage: numel
  double number = 0.0;                   // Float
  std::string text;                      // String (UTF-8), Bytes (raw), Storage (key)
  std::string module, name;              // Opaque, Global
  SourceDType dtype = SourceDType::F32;  // Storage
  std::vector<const Value*> items;       // List, Tuple
  std::vector<std::pair<const Value*, const Value*>> entries;  // Dict, in insertion order
  // Opaque: the state given to BUILD (for argparse.Namespace its attribute dict); nullptr if none.
  // Dict: attributes set by BUILD (an OrderedDict state_dict's {'_metadata': ...}); else nullptr.
  const Value* state = nullptr;
  std::shared_ptr<const SourceTensor> tensor;  // Tensor

  bool is_none() const { return kind == Kind::None; }
  bool is_bool() const { return kind == Kind::Bool; }
  bool is_int() const { return kind == Kind::Int; }
  bool is_float() const { return kind == Kind::Float; }
  bool is_string() const { return kind == Kind::String; }
  bool is_list() const { return kind == Kind::List; }
  bool is_tuple() const { return kind == Kind::Tuple; }
  bool is_dict() const { return kind == Kind::Dict; }
  bool is_tensor() const { return kind == Kind::Tensor; }
  bool is_opaque() const { return kind == Kind::Opaque; }

  // Dict: the value stored under the string key `key` (dict keys are unique, as in Python).
  // Opaque: looks the key up in its state dict (so args->get("lr") works on a Namespace).
  // nullptr if absent or if this is neither.
  const Value* get(std::string_view key) const;
  // Dict: the value stored under the int key `key` (a bool key True/False counts as 1/0).
  const Value* get(int64_t key) const;
  // get(key) if it is a String, else nullptr.
  const std::string* get_string(std::string_view key) const;
  // List/Tuple: element count; Dict: entry count; else 0.
  size_t size() const;
  // List/Tuple element i, nullptr if out of range or not a sequence.
  const Value* at(size_t i) const;
  // Number as double (Int, Float or Bool); false if not a number.
  bool as_number(double* out) const;

  // "None", "bool", "int", "float", "str", "bytes", "list", "tuple", "dict", "tensor", "object",
  // "global", "storage".
  const char* kind_name() const;
};

struct Checkpoint {
  std::string format;                           // "safetensors" | "torch-zip" | "torch-legacy"
  std::map<std::string, SourceTensor> tensors;  // the state dict, by name
  std::map<std::string, Storage> storages;      // every storage referenced by the file, by key
  // safetensors: __metadata__. torch files: the string -> string entries of the top-level dict.
  std::map<std::string, std::string> metadata;
  // torch files: the whole unpickled object (keeps its arena alive); nullptr for safetensors.
  std::shared_ptr<Value> root;

  // The file bytes (an mmap or a heap copy) that Storage::data points into.
  std::shared_ptr<const void> bytes_owner;
  const uint8_t* file_data = nullptr;
  uint64_t file_size = 0;
};

// Opens any supported file, or fails with one line naming the problem: LINFER_ERROR_IO (the file
// cannot be opened, read or mapped), LINFER_ERROR_INVALID_MODEL (its contents),
// LINFER_ERROR_UNSUPPORTED (a format or variant the readers do not read), LINFER_ERROR_OUT_OF_MEMORY.
err::Result<std::unique_ptr<Checkpoint>> read_checkpoint(const std::string& path);
// Same, from bytes in memory (they are copied).
err::Result<std::unique_ptr<Checkpoint>> read_checkpoint_from_memory(const uint8_t* data, size_t size);

// Contiguous row-major float32 copy of `tensor` (F32, F16, BF16 or F64 data), honouring its
// storage offset and strides, with every element index checked against the storage. Fails on an
// unknown storage, a dtype mismatch or unsupported dtype, an out-of-range view, or a view that
// would expand a small storage into a huge output (stride-0 broadcast).
err::Result<std::vector<float>> tensor_to_f32(const Checkpoint& checkpoint, const SourceTensor& tensor);

}  // namespace linfer::convert
