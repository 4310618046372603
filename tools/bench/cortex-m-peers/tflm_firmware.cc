// SPDX-License-Identifier: Apache-2.0
// TensorFlow Lite Micro (with CMSIS-NN's kernels) running the microcontroller language-ID model as
// a full-int8 .tflite (convert_tflite.py), on the same QEMU boards, startup code and C library
// glue as linfer's test firmware (tests/cortex_m). Built by run.sh; two programs from this file:
//
// - TFLM_PROBE: the smallest application, like linfer's size_probe: the model in flash, a static
//   arena, one input, the class printed with puts (no printf), for the flash figure;
// - otherwise the check and the bench: with no command line it runs the 100 shipped inputs
//   (make_cases.py's cases.bin, linfer's outputs) and prints how many classes agree with linfer's,
//   and the arena TFLM used; with "bench K I" it runs input I (0-based) K times and nothing else,
//   for the QEMU instruction-count plugin (the difference of two K is the cost of K inferences).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "tensorflow/lite/micro/cortex_m_generic/debug_log_callback.h"
#include "tensorflow/lite/micro/micro_interpreter.h"
#include "tensorflow/lite/micro/micro_mutable_op_resolver.h"
#include "tensorflow/lite/schema/schema_generated.h"
#include "tflm_model_io.h"  // convert_tflite.py: the inputs' indices and quantization, the operators

extern "C" {
extern const uint8_t linfer_cm_model[], linfer_cm_model_end[];
extern const uint8_t linfer_cm_cases[], linfer_cm_cases_end[];
void linfer_cm_puts(const char* s);
const char* linfer_cm_cmdline(void);
}

namespace {
constexpr int kN = TFLM_SEQ_LEN;
alignas(16) uint8_t g_arena[TFLM_ARENA_BYTES];

void log_line(const char* s) { linfer_cm_puts(s); }

int8_t quantize(float v, float scale, int zero) {
  long q = lroundf(v / scale) + zero;
  return int8_t(q < -128 ? -128 : q > 127 ? 127 : q);
}

// The two inputs for bytes[0..length): ids padded with 0, and the projection's mask (1 for the
// real positions, 0 after), quantized as the model says.
void set_inputs(tflite::MicroInterpreter& it, const uint8_t* bytes, uint32_t length) {
  int32_t* ids = it.input(TFLM_INPUT_IDS)->data.i32;
  int8_t* mask = it.input(TFLM_INPUT_MASK)->data.int8;
  const int8_t mask_on = quantize(1.0f, TFLM_MASK_SCALE, TFLM_MASK_ZERO), mask_off = int8_t(TFLM_MASK_ZERO);
  for (int i = 0; i < kN; ++i) {
    const bool real = uint32_t(i) < length;
    ids[i] = real ? bytes[i] : 0;
    mask[i] = real ? mask_on : mask_off;
  }
}

// The output is every position's logits [n, classes] (int8, one scale): the class is the largest
// sum over the first `length` rows (the classifier is linear: the mean of the rows' logits is the
// logits of the model's mean-pooled row).
int best_class(tflite::MicroInterpreter& it, uint32_t length) {
  const int8_t* rows = it.output(0)->data.int8;
  int32_t sums[TFLM_CLASSES] = {};
  for (uint32_t r = 0; r < length; ++r)
    for (int c = 0; c < TFLM_CLASSES; ++c) sums[c] += rows[r * TFLM_CLASSES + c];
  int best = 0;
  for (int c = 1; c < TFLM_CLASSES; ++c)
    if (sums[c] > sums[best]) best = c;
  return best;
}

#ifndef TFLM_PROBE
// make_cases.py's file: "LFCM", count, classes, then per input its length, its bytes padded to 4
// and linfer's logits (float32 x classes).
struct Cases {
  const uint8_t* at = linfer_cm_cases;
  uint32_t count = 0, classes = 0;
  uint32_t u32() {
    uint32_t v;
    std::memcpy(&v, at, 4);
    at += 4;
    return v;
  }
  bool header() {
    if (std::memcmp(at, "LFCM", 4) != 0) return false;
    at += 4;
    count = u32();
    classes = u32();
    return true;
  }
  // The next input and linfer's class for it.
  void next(const uint8_t** bytes, uint32_t* length, int* linfer_class) {
    *length = u32();
    *bytes = at;
    at += (*length + 3) & ~3u;
    float best = 0;
    for (uint32_t c = 0; c < classes; ++c) {
      float v;
      std::memcpy(&v, at + 4 * c, 4);
      if (c == 0 || v > best) best = v, *linfer_class = int(c);
    }
    at += 4 * classes;
  }
};
#endif
}  // namespace

int main() {
  RegisterDebugLogCallback(log_line);
  const tflite::Model* model = tflite::GetModel(linfer_cm_model);
  static tflite::MicroMutableOpResolver<TFLM_OP_COUNT> resolver;
#define TFLM_ADD(op) resolver.op();
  TFLM_OPS(TFLM_ADD)
  static tflite::MicroInterpreter it(model, resolver, g_arena, sizeof g_arena);
  if (it.AllocateTensors() != kTfLiteOk) return linfer_cm_puts("tflm: AllocateTensors failed\n"), 1;
#ifdef TFLM_PROBE
  static const char kInput[] = "Der schnelle braune Fuchs springt über den faulen Hund.";
  set_inputs(it, reinterpret_cast<const uint8_t*>(kInput), sizeof kInput - 1);
  if (it.Invoke() != kTfLiteOk) return linfer_cm_puts("tflm: Invoke failed\n"), 1;
  char line[] = "class ?\n";
  line[6] = char('0' + best_class(it, sizeof kInput - 1) % 10);
  linfer_cm_puts(line);
  return 0;
#else
  std::setvbuf(stdout, nullptr, _IONBF, 0);
  Cases cases;
  if (!cases.header()) return std::printf("tflm: no cases\n"), 1;
  const char* cmdline = linfer_cm_cmdline();
  const uint8_t* bytes;
  uint32_t length;
  int want;
  if (std::strncmp(cmdline, "bench ", 6) == 0) {
    char* rest;
    const long runs = std::strtol(cmdline + 6, &rest, 10);
    const long index = std::strtol(rest, nullptr, 10);
    if (index < 0 || uint32_t(index) >= cases.count) return std::printf("tflm: no input %ld\n", index), 1;
    for (long i = 0; i <= index; ++i) cases.next(&bytes, &length, &want);
    // The inputs are written before every run: TFLM's planner may reuse an input's memory for
    // later tensors of the graph, so an input does not survive Invoke (an application sets them
    // anyway; linfer's bench likewise turns the bytes into ids on every run).
    for (long r = 0; r < runs; ++r) {
      set_inputs(it, bytes, length);
      if (it.Invoke() != kTfLiteOk) return std::printf("tflm: Invoke failed\n"), 1;
    }
    std::printf("bench: %ld runs of input %ld (%u bytes)\n", runs, index, unsigned(length));
    return 0;
  }
  uint32_t agree = 0;
  for (uint32_t i = 0; i < cases.count; ++i) {
    cases.next(&bytes, &length, &want);
    set_inputs(it, bytes, length);
    if (it.Invoke() != kTfLiteOk) return std::printf("tflm: Invoke failed on input %u\n", unsigned(i)), 1;
    const int got = best_class(it, length);
    agree += got == want;
    if (got != want)
      std::printf("input %u (%u bytes): TFLM class %d, linfer %d\n", unsigned(i), unsigned(length), got, want);
  }
  std::printf("tflm: arena used %u bytes (of %u)\n", unsigned(it.arena_used_bytes()), unsigned(sizeof g_arena));
  std::printf("tflm: %u of %u inputs give linfer's class\n", unsigned(agree), unsigned(cases.count));
  return agree == cases.count ? 0 : 2;
#endif
}
