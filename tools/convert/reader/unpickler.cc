// SPDX-License-Identifier: Apache-2.0
// Restricted unpickler: a stack machine over the pickle opcodes (protocols 2-5) that a torch.save
// state dict needs. Nothing is imported or called: GLOBAL only names one of a few allow-listed
// classes/functions, and REDUCE/NEWOBJ/BUILD of those build plain data (Value). Every count, size
// and index is bounded.
#include <cstdio>
#include <unordered_map>

#include "reader_internal.h"

namespace linfer::convert::detail {
namespace {

using Kind = Value::Kind;

// Opcodes (Lib/pickle.py).
enum Op : uint8_t {
  MARK = '(',
  STOP = '.',
  POP = '0',
  POP_MARK = '1',
  DUP = '2',
  BININT = 'J',
  BININT1 = 'K',
  BININT2 = 'M',
  NONE = 'N',
  BINPERSID = 'Q',
  REDUCE = 'R',
  BINUNICODE = 'X',
  EMPTY_LIST = ']',
  APPEND = 'a',
  BUILD = 'b',
  GLOBAL = 'c',
  DICT = 'd',
  APPENDS = 'e',
  BINGET = 'h',
  LONG_BINGET = 'j',
  LIST = 'l',
  BINPUT = 'q',
  LONG_BINPUT = 'r',
  SETITEM = 's',
  TUPLE = 't',
  SETITEMS = 'u',
  EMPTY_DICT = '}',
  EMPTY_TUPLE = ')',
  BINFLOAT = 'G',
  BINBYTES = 'B',
  SHORT_BINBYTES = 'C',
  PROTO = 0x80,
  NEWOBJ = 0x81,
  TUPLE1 = 0x85,
  TUPLE2 = 0x86,
  TUPLE3 = 0x87,
  NEWTRUE = 0x88,
  NEWFALSE = 0x89,
  LONG1 = 0x8a,
  LONG4 = 0x8b,
  SHORT_BINUNICODE = 0x8c,
  BINUNICODE8 = 0x8d,
  BINBYTES8 = 0x8e,
  MEMOIZE = 0x94,
  FRAME = 0x95,
  STACK_GLOBAL = 0x93,
};

// What an allow-listed global is.
enum class GlobalId { OrderedDict, RebuildTensorV2, RebuildParameter, Storage, Namespace };

struct GlobalInfo {
  GlobalId id;
  SourceDType dtype;  // for storages
};

bool lookup_global(const std::string& module, const std::string& name, GlobalInfo* info) {
  if (module == "collections" && name == "OrderedDict") {
    *info = {GlobalId::OrderedDict, {}};
    return true;
  }
  if (module == "torch._utils" && name == "_rebuild_tensor_v2") {
    *info = {GlobalId::RebuildTensorV2, {}};
    return true;
  }
  if (module == "torch._utils" && name == "_rebuild_parameter") {
    *info = {GlobalId::RebuildParameter, {}};
    return true;
  }
  if (module == "argparse" && name == "Namespace") {
    *info = {GlobalId::Namespace, {}};
    return true;
  }
  if (module == "torch") {
    static const std::pair<const char*, SourceDType> storages[] = {
        {"FloatStorage", SourceDType::F32},     {"DoubleStorage", SourceDType::F64}, {"HalfStorage", SourceDType::F16},
        {"BFloat16Storage", SourceDType::BF16}, {"LongStorage", SourceDType::I64},   {"IntStorage", SourceDType::I32},
        {"ShortStorage", SourceDType::I16},     {"CharStorage", SourceDType::I8},    {"ByteStorage", SourceDType::U8},
        {"BoolStorage", SourceDType::Bool},
    };
    for (const auto& [n, dt] : storages)
      if (name == n) {
        *info = {GlobalId::Storage, dt};
        return true;
      }
  }
  return false;
}

const char* op_name(uint8_t op) {
  switch (op) {
    case MARK:
      return "MARK";
    case STOP:
      return "STOP";
    case POP:
      return "POP";
    case POP_MARK:
      return "POP_MARK";
    case DUP:
      return "DUP";
    case BININT:
      return "BININT";
    case BININT1:
      return "BININT1";
    case BININT2:
      return "BININT2";
    case NONE:
      return "NONE";
    case BINPERSID:
      return "BINPERSID";
    case REDUCE:
      return "REDUCE";
    case BINUNICODE:
      return "BINUNICODE";
    case EMPTY_LIST:
      return "EMPTY_LIST";
    case APPEND:
      return "APPEND";
    case BUILD:
      return "BUILD";
    case GLOBAL:
      return "GLOBAL";
    case DICT:
      return "DICT";
    case APPENDS:
      return "APPENDS";
    case BINGET:
      return "BINGET";
    case LONG_BINGET:
      return "LONG_BINGET";
    case LIST:
      return "LIST";
    case BINPUT:
      return "BINPUT";
    case LONG_BINPUT:
      return "LONG_BINPUT";
    case SETITEM:
      return "SETITEM";
    case TUPLE:
      return "TUPLE";
    case SETITEMS:
      return "SETITEMS";
    case EMPTY_DICT:
      return "EMPTY_DICT";
    case EMPTY_TUPLE:
      return "EMPTY_TUPLE";
    case BINFLOAT:
      return "BINFLOAT";
    case BINBYTES:
      return "BINBYTES";
    case SHORT_BINBYTES:
      return "SHORT_BINBYTES";
    case PROTO:
      return "PROTO";
    case NEWOBJ:
      return "NEWOBJ";
    case TUPLE1:
      return "TUPLE1";
    case TUPLE2:
      return "TUPLE2";
    case TUPLE3:
      return "TUPLE3";
    case NEWTRUE:
      return "NEWTRUE";
    case NEWFALSE:
      return "NEWFALSE";
    case LONG1:
      return "LONG1";
    case LONG4:
      return "LONG4";
    case SHORT_BINUNICODE:
      return "SHORT_BINUNICODE";
    case BINUNICODE8:
      return "BINUNICODE8";
    case BINBYTES8:
      return "BINBYTES8";
    case MEMOIZE:
      return "MEMOIZE";
    case FRAME:
      return "FRAME";
    case STACK_GLOBAL:
      return "STACK_GLOBAL";
    default:
      return nullptr;
  }
}

std::string hex_byte(uint8_t b) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "0x%02x", b);
  return buf;
}

std::string op_label(uint8_t op) {
  const char* name = op_name(op);
  return name ? std::string(name) : err::message("opcode {}", hex_byte(op));
}

// 'module.name', quoted. (Joined as bytes before quote(): a name from the pickle may hold a NUL,
// which quote() escapes and err::message, reading a C string, would end at.)
std::string quoted_global(const std::string& module, const std::string& name) { return quote(module + "." + name); }

// Per-dict key index used while unpickling so that SETITEM replaces an existing key as Python
// does. Strings are interned, so string keys compare by pointer.
struct DictIndex {
  std::unordered_map<const Value*, size_t> strings;
  std::unordered_map<int64_t, size_t> ints;
};

class Unpickler {
 public:
  Unpickler(const uint8_t* data, size_t size, ValueArena* arena, const StorageResolver& resolve,
            const UnpickleOptions& options)
      : p_(data), n_(size), arena_(arena), resolve_(resolve), options_(options) {}

  Value* run(size_t* consumed) {
    while (true) {
      if (pos_ >= n_) fail("pickle stream ended without STOP (truncated {}?)", options_.what);
      op_pos_ = pos_;
      op_ = p_[pos_++];
      if (op_ == STOP) {
        Value* result = pop();
        if (!stack_.empty() || !marks_.empty()) fail("pickle stream ends with {} extra stack items", stack_.size());
        if (!options_.stop_at_stop && pos_ != n_) fail("pickle stream has {} trailing bytes after STOP", n_ - pos_);
        if (consumed) *consumed = pos_;
        return result;
      }
      step();
    }
  }

 private:
  // ---- input
  const uint8_t* take(uint64_t k) {
    if (k > n_ - pos_) fail("truncated pickle stream: {} needs {} more bytes", where(), k);
    const uint8_t* r = p_ + pos_;
    pos_ += size_t(k);
    return r;
  }
  uint8_t u8() { return *take(1); }
  uint16_t u16() { return load_u16(take(2)); }
  uint32_t u32() { return load_u32(take(4)); }
  uint64_t u64() { return load_u64(take(8)); }
  std::string line() {
    size_t start = pos_;
    while (pos_ < n_ && p_[pos_] != '\n') {
      if (pos_ - start >= kMaxGlobalName) fail("GLOBAL name at offset {} is too long", op_offset());
      ++pos_;
    }
    if (pos_ >= n_) fail("truncated pickle stream: GLOBAL at offset {}", op_offset());
    std::string s(reinterpret_cast<const char*>(p_ + start), pos_ - start);
    ++pos_;
    return s;
  }

  // The file offset of the opcode being run, and "<opcode> at offset <that>".
  uint64_t op_offset() const { return options_.base_offset + op_pos_; }
  std::string where() const { return err::message("{} at offset {}", op_label(op_), op_offset()); }

  // ---- values
  Value* make(Kind kind) {
    if (arena_->values.size() >= kMaxValues) fail("pickle creates more than {} objects", kMaxValues);
    arena_->values.emplace_back();
    Value* v = &arena_->values.back();
    v->kind = kind;
    return v;
  }
  Value* make_string(const uint8_t* s, uint64_t len, bool bytes) {
    std::string_view text(reinterpret_cast<const char*>(s), size_t(len));
    if (!bytes) {
      size_t bad = find_invalid_utf8(text, /*allow_surrogates=*/true);
      if (bad != std::string_view::npos) fail("invalid UTF-8 in string of {}", where());
      auto it = interned_.find(text);
      if (it != interned_.end()) return it->second;
    }
    Value* v = make(bytes ? Kind::Bytes : Kind::String);
    v->text.assign(text);
    if (!bytes) interned_.emplace(std::string_view(v->text), v);
    return v;
  }
  Value* make_int(int64_t i) {
    Value* v = make(Kind::Int);
    v->integer = i;
    return v;
  }

  // ---- stack; items below the innermost MARK are not reachable (as in pickle.py's metastack)
  size_t floor() const { return marks_.empty() ? 0 : marks_.back(); }
  void push(Value* v) {
    if (stack_.size() >= kMaxStack) fail("pickle stack deeper than {} at offset {}", kMaxStack, op_offset());
    stack_.push_back(v);
  }
  Value* pop() {
    if (stack_.size() <= floor()) fail("pickle stack underflow in {}", where());
    Value* v = stack_.back();
    stack_.pop_back();
    return v;
  }
  Value* top() {
    if (stack_.size() <= floor()) fail("pickle stack underflow in {}", where());
    return stack_.back();
  }
  std::vector<Value*> pop_mark() {
    if (marks_.empty()) fail("{} without a MARK", where());
    size_t m = marks_.back();
    marks_.pop_back();
    std::vector<Value*> items(stack_.begin() + std::ptrdiff_t(m), stack_.end());
    stack_.resize(m);
    return items;
  }

  // ---- memo
  void memo_put(uint64_t index) {
    Value* v = top();
    auto it = memo_.find(index);
    if (it != memo_.end()) {
      it->second = v;
      return;
    }
    if (memo_.size() >= kMaxMemo) fail("pickle memo has more than {} entries", kMaxMemo);
    memo_.emplace(index, v);
  }
  Value* memo_get(uint64_t index) {
    auto it = memo_.find(index);
    if (it == memo_.end()) fail("pickle memo key {} is not defined ({})", index, where());
    return it->second;
  }

  // ---- containers
  Value* make_tuple(std::vector<Value*> items) {
    Value* t = make(Kind::Tuple);
    t->items.assign(items.begin(), items.end());
    return t;
  }
  Value* expect_list(Value* v) {
    if (v->kind != Kind::List) fail("{} on a {} (only lists can be appended to)", where(), v->kind_name());
    return v;
  }
  Value* expect_dict(Value* v) {
    if (v->kind != Kind::Dict) fail("{} on a {} (only dicts can take items)", where(), v->kind_name());
    return v;
  }
  void set_item(Value* dict, const Value* key, const Value* value) {
    DictIndex& index = indexes_[dict];
    size_t position = dict->entries.size();
    bool indexed = true;
    if (key->kind == Kind::String) {
      position = index.strings.emplace(key, position).first->second;
    } else if (key->kind == Kind::Int || key->kind == Kind::Bool) {
      int64_t k = key->kind == Kind::Int ? key->integer : int64_t(key->boolean);
      position = index.ints.emplace(k, position).first->second;
    } else if (key->kind == Kind::List || key->kind == Kind::Dict) {
      fail("unhashable dict key of type {} in {}", key->kind_name(), where());
    } else {
      indexed = false;  // other keys (None, float, bytes, tuple...) are kept without deduplication
    }
    if (indexed && position < dict->entries.size()) {
      dict->entries[position].second = value;  // Python keeps the first key and position
      return;
    }
    dict->entries.emplace_back(key, value);
  }

  // ---- tensors and storages
  const GlobalInfo& global_info(const Value* g) {
    auto it = globals_.find(g);
    return it->second;  // every Global value is registered when created
  }

  Value* make_global(const std::string& module, const std::string& name) {
    GlobalInfo info;
    if (!lookup_global(module, name, &info)) {
      // A legacy whole-module save names each nn.Module class in a ('module', cls, file, source)
      // persistent id, so the first forbidden global sits right after MARK 'module'.
      if (options_.persistent_ids == UnpickleOptions::PersistentIds::Legacy && !marks_.empty() &&
          stack_.size() == marks_.back() + 1 && stack_.back()->kind == Kind::String && stack_.back()->text == "module")
        fail(
            "checkpoint refers to forbidden global {} in a ('module', ...) persistent id: the file holds a whole "
            "nn.Module, not a state dict; save model.state_dict() instead",
            quoted_global(module, name));
      fail("checkpoint refers to forbidden global {}", quoted_global(module, name));
    }
    Value* g = make(Kind::Global);
    g->module = module;
    g->name = name;
    globals_.emplace(g, info);
    return g;
  }

  Value* persistent_load(Value* pid) {
    using Ids = UnpickleOptions::PersistentIds;
    if (options_.persistent_ids == Ids::Forbidden)
      fail("persistent id at offset {} in the {} (only the object pickle may refer to storages)", op_offset(),
           options_.what);
    const bool legacy = options_.persistent_ids == Ids::Legacy;
    const size_t fields = legacy ? 6 : 5;
    const std::string bad =
        err::message("persistent id at offset {} is not ('storage', StorageClass, key, location, numel{})", op_offset(),
                     legacy ? ", view_metadata" : "");
    if (legacy && pid->kind == Kind::Tuple && !pid->items.empty() && pid->items[0]->kind == Kind::String &&
        pid->items[0]->text == "module")
      fail(
          "persistent id at offset {} is a pickled module class ('module', ...): the file holds a whole nn.Module, "
          "not a state dict; save model.state_dict() instead",
          op_offset());
    if (pid->kind != Kind::Tuple || pid->items.size() != fields) fail("{}", bad);
    const Value* tag = pid->items[0];
    const Value* cls = pid->items[1];
    const Value* key = pid->items[2];
    const Value* location = pid->items[3];
    const Value* numel = pid->items[4];
    if (tag->kind != Kind::String || tag->text != "storage") fail("{}", bad);
    if (cls->kind == Kind::Global && global_info(cls).id != GlobalId::Storage)
      fail("{}: the storage class is a global {}", bad, quoted_global(cls->module, cls->name));
    if (cls->kind != Kind::Global) fail("{}: the storage class is a {}", bad, cls->kind_name());
    if (key->kind != Kind::String || key->text.empty()) fail("{}: bad storage key", bad);
    if (location->kind != Kind::String) fail("{}: bad location", bad);
    if (numel->kind != Kind::Int || numel->integer < 0) fail("{}: bad element count", bad);
    if (legacy && pid->items[5]->kind != Kind::None)
      refuse(
          "persistent id at offset {} of storage {} has view_metadata (a {}): legacy storage views are not supported",
          op_offset(), quote(key->text), pid->items[5]->kind_name());
    StorageRequest req{key->text, location->text, global_info(cls).dtype, uint64_t(numel->integer)};
    resolve_(req);
    Value* s = make(Kind::Storage);
    s->text = key->text;
    s->dtype = req.dtype;
    s->integer = numel->integer;
    return s;
  }

  static bool get_int_tuple(const Value* v, std::vector<int64_t>* out) {
    if (v->kind != Kind::Tuple) return false;
    if (v->items.size() > size_t(kMaxRank)) return false;
    for (const Value* x : v->items) {
      if (x->kind != Kind::Int) return false;
      out->push_back(x->integer);
    }
    return true;
  }

  Value* rebuild_tensor(const Value* args) {
    const std::string what = err::message("_rebuild_tensor_v2 at offset {}", op_offset());
    if (args->items.size() != 6 && args->items.size() != 7)
      fail("{} takes 6 or 7 arguments, got {}", what, args->items.size());
    const Value* storage = args->items[0];
    const Value* offset = args->items[1];
    if (storage->kind != Kind::Storage) fail("{}: argument 1 is a {}, not a storage", what, storage->kind_name());
    if (offset->kind != Kind::Int || offset->integer < 0) fail("{}: bad storage offset", what);
    auto t = std::make_shared<SourceTensor>();
    if (args->items[2]->kind == Kind::Tuple && args->items[2]->items.size() > size_t(kMaxRank))
      fail("{}: tensor rank {} is more than {}", what, args->items[2]->items.size(), kMaxRank);
    if (!get_int_tuple(args->items[2], &t->shape)) fail("{}: size is not a tuple of ints", what);
    if (!get_int_tuple(args->items[3], &t->strides)) fail("{}: stride is not a tuple of ints", what);
    if (args->items[4]->kind != Kind::Bool) fail("{}: requires_grad is not a bool", what);
    for (size_t i = 5; i < args->items.size(); ++i) {
      Kind k = args->items[i]->kind;
      if (k != Kind::Dict && k != Kind::None) fail("{}: argument {} is not a dict", what, i + 1);
    }
    t->dtype = storage->dtype;
    t->storage_offset = uint64_t(offset->integer);
    t->storage_key = storage->text;
    check_view(err::message("tensor at offset {} (storage {})", op_offset(), quote(storage->text)), t->shape,
               t->strides, t->storage_offset, uint64_t(storage->integer));
    Value* v = make(Kind::Tensor);
    v->tensor = std::move(t);
    return v;
  }

  Value* call(Value* callable, Value* args, bool newobj) {
    const char* how = newobj ? "NEWOBJ" : "REDUCE";
    if (callable->kind != Kind::Global)
      fail("{} at offset {} calls a {}, not an allowed global", how, op_offset(), callable->kind_name());
    if (args->kind != Kind::Tuple)
      fail("{} at offset {}: arguments are a {}, not a tuple", how, op_offset(), args->kind_name());
    const GlobalInfo& info = global_info(callable);
    const std::string name = quoted_global(callable->module, callable->name);
    switch (info.id) {
      case GlobalId::OrderedDict: {
        Value* d = make(Kind::Dict);
        if (args->items.empty()) return d;
        const Value* pairs = args->items[0];
        if (args->items.size() == 1 && (pairs->kind == Kind::List || pairs->kind == Kind::Tuple)) {
          for (const Value* p : pairs->items) {
            if (p->kind != Kind::Tuple || p->items.size() != 2)
              fail("{} at offset {}: items are not pairs", name, op_offset());
            set_item(d, p->items[0], p->items[1]);
          }
          return d;
        }
        fail("{} at offset {}: unsupported arguments", name, op_offset());
      }
      case GlobalId::Namespace: {
        if (!args->items.empty()) fail("{} at offset {} takes no positional arguments", name, op_offset());
        Value* o = make(Kind::Opaque);
        o->module = callable->module;
        o->name = callable->name;
        return o;
      }
      case GlobalId::RebuildTensorV2:
        if (newobj) break;
        return rebuild_tensor(args);
      case GlobalId::RebuildParameter: {
        if (newobj) break;
        if (args->items.size() != 3 || args->items[0]->kind != Kind::Tensor || args->items[1]->kind != Kind::Bool ||
            (args->items[2]->kind != Kind::Dict && args->items[2]->kind != Kind::None))
          fail("{} at offset {} expects (tensor, requires_grad, hooks)", name, op_offset());
        return const_cast<Value*>(args->items[0]);
      }
      case GlobalId::Storage:
        break;
    }
    fail("{} at offset {} of {} is not allowed", how, op_offset(), name);
  }

  void build(Value* obj, Value* state) {
    if (obj->kind == Kind::Opaque || obj->kind == Kind::Dict) {
      if (obj->state) fail("BUILD at offset {} sets the state of an object twice", op_offset());
      if (obj->kind == Kind::Opaque) {
        // __setstate__-less objects take a dict, or (dict, slotstate) with either part None.
        bool ok = state->kind == Kind::Dict || state->kind == Kind::None;
        if (state->kind == Kind::Tuple && state->items.size() == 2)
          ok = (state->items[0]->kind == Kind::Dict || state->items[0]->kind == Kind::None) &&
               (state->items[1]->kind == Kind::Dict || state->items[1]->kind == Kind::None);
        if (!ok)
          fail("BUILD at offset {}: state of {} is a {}", op_offset(), quoted_global(obj->module, obj->name),
               state->kind_name());
        if (state->kind == Kind::Tuple) state = const_cast<Value*>(state->items[0]);  // slot state is dropped
        if (state->kind == Kind::None) return;
      } else if (state->kind != Kind::Dict) {
        fail("BUILD at offset {}: dict attributes are a {}, not a dict", op_offset(), state->kind_name());
      }
      obj->state = state;
      return;
    }
    fail("BUILD at offset {} on a {} is not allowed", op_offset(), obj->kind_name());
  }

  void step() {
    switch (op_) {
      case PROTO: {
        uint8_t v = u8();
        if (v > 5) fail("unsupported pickle protocol {}", v);
        break;
      }
      case FRAME: {
        uint64_t len = u64();
        if (len > n_ - pos_) fail("truncated pickle stream: FRAME at offset {} announces {} bytes", op_offset(), len);
        break;
      }
      case GLOBAL: {
        std::string module = line();
        std::string name = line();
        push(make_global(module, name));
        break;
      }
      case STACK_GLOBAL: {
        Value* name = pop();
        Value* module = pop();
        if (name->kind != Kind::String || module->kind != Kind::String)
          fail("STACK_GLOBAL at offset {} needs two strings", op_offset());
        if (module->text.size() > kMaxGlobalName || name->text.size() > kMaxGlobalName)
          fail("STACK_GLOBAL name at offset {} is too long", op_offset());
        push(make_global(module->text, name->text));
        break;
      }
      case BINPUT:
        memo_put(u8());
        break;
      case LONG_BINPUT:
        memo_put(u32());
        break;
      case MEMOIZE:
        memo_put(memo_.size());
        break;
      case BINGET:
        push(memo_get(u8()));
        break;
      case LONG_BINGET:
        push(memo_get(u32()));
        break;
      case MARK:
        if (marks_.size() >= kMaxMarks) fail("pickle MARKs nested deeper than {} at offset {}", kMaxMarks, op_offset());
        marks_.push_back(stack_.size());
        break;
      case POP:
        pop();
        break;
      case POP_MARK:
        pop_mark();
        break;
      case DUP:
        push(top());
        break;
      case TUPLE:
        push(make_tuple(pop_mark()));
        break;
      case EMPTY_TUPLE:
        push(make(Kind::Tuple));
        break;
      case TUPLE1:
      case TUPLE2:
      case TUPLE3: {
        size_t k = size_t(op_ - TUPLE1 + 1);
        std::vector<Value*> items(k);
        for (size_t i = k; i-- > 0;) items[i] = pop();
        push(make_tuple(std::move(items)));
        break;
      }
      case EMPTY_LIST:
        push(make(Kind::List));
        break;
      case EMPTY_DICT:
        push(make(Kind::Dict));
        break;
      case LIST: {
        std::vector<Value*> items = pop_mark();
        Value* l = make(Kind::List);
        l->items.assign(items.begin(), items.end());
        push(l);
        break;
      }
      case DICT: {
        std::vector<Value*> items = pop_mark();
        if (items.size() % 2) fail("DICT at offset {} has an odd number of items", op_offset());
        Value* d = make(Kind::Dict);
        for (size_t i = 0; i < items.size(); i += 2) set_item(d, items[i], items[i + 1]);
        push(d);
        break;
      }
      case APPEND: {
        Value* v = pop();
        expect_list(top())->items.push_back(v);
        break;
      }
      case APPENDS: {
        std::vector<Value*> items = pop_mark();
        Value* l = expect_list(top());
        l->items.insert(l->items.end(), items.begin(), items.end());
        break;
      }
      case SETITEM: {
        Value* v = pop();
        Value* k = pop();
        set_item(expect_dict(top()), k, v);
        break;
      }
      case SETITEMS: {
        std::vector<Value*> items = pop_mark();
        if (items.size() % 2) fail("SETITEMS at offset {} has an odd number of items", op_offset());
        Value* d = expect_dict(top());
        for (size_t i = 0; i < items.size(); i += 2) set_item(d, items[i], items[i + 1]);
        break;
      }
      case REDUCE: {
        Value* args = pop();
        Value* callable = pop();
        push(call(callable, args, false));
        break;
      }
      case NEWOBJ: {
        Value* args = pop();
        Value* cls = pop();
        push(call(cls, args, true));
        break;
      }
      case BUILD: {
        Value* state = pop();
        build(top(), state);
        break;
      }
      case BINPERSID:
        push(persistent_load(pop()));
        break;
      case BININT:
        push(make_int(int32_t(u32())));
        break;
      case BININT1:
        push(make_int(u8()));
        break;
      case BININT2:
        push(make_int(u16()));
        break;
      case LONG1:
      case LONG4: {
        uint64_t len = op_ == LONG1 ? u8() : u32();
        if (len > 8) fail("integer of {} bytes in {} is too large", len, where());
        const uint8_t* b = take(len);
        uint64_t x = 0;
        for (uint64_t i = 0; i < len; ++i) x |= uint64_t(b[i]) << (8 * i);
        if (len > 0 && len < 8 && (b[len - 1] & 0x80)) x |= ~uint64_t(0) << (8 * len);  // sign-extend
        push(make_int(int64_t(x)));
        break;
      }
      case BINFLOAT: {
        const uint8_t* b = take(8);
        uint64_t bits = 0;
        for (int i = 0; i < 8; ++i) bits = (bits << 8) | b[i];  // big-endian
        Value* v = make(Kind::Float);
        std::memcpy(&v->number, &bits, 8);
        push(v);
        break;
      }
      case BINUNICODE:
      case SHORT_BINUNICODE:
      case BINUNICODE8:
      case BINBYTES:
      case SHORT_BINBYTES:
      case BINBYTES8: {
        uint64_t len = (op_ == SHORT_BINUNICODE || op_ == SHORT_BINBYTES) ? u8()
                       : (op_ == BINUNICODE || op_ == BINBYTES)           ? u32()
                                                                          : u64();
        if (len > kMaxPickleString)
          fail("string of {} bytes in {} exceeds the {} MiB limit", len, where(), kMaxPickleString >> 20);
        bool bytes = op_ == BINBYTES || op_ == SHORT_BINBYTES || op_ == BINBYTES8;
        push(make_string(take(len), len, bytes));
        break;
      }
      case NONE:
        push(make(Kind::None));
        break;
      case NEWTRUE:
      case NEWFALSE: {
        Value* v = make(Kind::Bool);
        v->boolean = op_ == NEWTRUE;
        push(v);
        break;
      }
      default: {
        if (const char* name = op_name(op_))
          fail("unsupported pickle opcode {} ({}) at offset {}", hex_byte(op_), name, op_offset());
        fail("unsupported pickle opcode {} at offset {}", hex_byte(op_), op_offset());
      }
    }
  }

  const uint8_t* p_;
  size_t n_;
  size_t pos_ = 0;
  size_t op_pos_ = 0;
  uint8_t op_ = 0;
  ValueArena* arena_;
  const StorageResolver& resolve_;
  const UnpickleOptions& options_;
  std::vector<Value*> stack_;
  std::vector<size_t> marks_;
  std::unordered_map<uint64_t, Value*> memo_;
  std::unordered_map<std::string_view, Value*> interned_;
  std::unordered_map<const Value*, DictIndex> indexes_;
  std::unordered_map<const Value*, GlobalInfo> globals_;
};

}  // namespace

Value* unpickle(const uint8_t* data, size_t size, ValueArena* arena, const StorageResolver& resolve,
                const UnpickleOptions& options, size_t* consumed) {
  Unpickler u(data, size, arena, resolve, options);
  return u.run(consumed);
}

}  // namespace linfer::convert::detail
