// SPDX-License-Identifier: Apache-2.0
/* JNI layer of the Java binding: thin calls into the C API (linfer.h), nothing else. Depends on
 * libc and liblinfer only, so the same file builds with the Android NDK.
 *
 * Handles: a Model's handle is its linfer_model*; a Session's is a SessionHandle* (the session
 * and a buffer of max_seq_len ids, so that run() copies the caller's ids without allocating).
 * The Java classes keep the handles, count references and refuse calls after close(); this file
 * trusts the handles it is given. Every failure becomes a LinferException(status, message). */
#include <jni.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "linfer/linfer.h"

typedef struct SessionHandle {
  linfer_session* session;
  int32_t* ids; /* max_seq_len ids */
  size_t capacity;
} SessionHandle;

static void throw_exception(JNIEnv* env, int status, const char* message) {
  if ((*env)->ExceptionCheck(env)) return;
  jclass cls = (*env)->FindClass(env, "org/linfer/LinferException");
  if (cls == NULL) return; /* NoClassDefFoundError is pending */
  jmethodID ctor = (*env)->GetMethodID(env, cls, "<init>", "(ILjava/lang/String;)V");
  if (ctor == NULL) return;
  jstring text = (*env)->NewStringUTF(env, message);
  if (text == NULL) return; /* OutOfMemoryError is pending */
  jobject e = (*env)->NewObject(env, cls, ctor, (jint)status, text);
  if (e != NULL) (*env)->Throw(env, (jthrowable)e);
}

/* Throws for a failed status with linfer_last_error(); returns 1 when it threw. */
static int check(JNIEnv* env, linfer_status status) {
  if (status == LINFER_OK) return 0;
  throw_exception(env, (int)status, linfer_last_error());
  return 1;
}

static int check_oom(JNIEnv* env, const void* p) {
  if (p != NULL) return 0;
  if (!(*env)->ExceptionCheck(env)) throw_exception(env, LINFER_ERROR_OUT_OF_MEMORY, "out of memory");
  return 1;
}

#define JNI_FN(name) Java_org_linfer_Native_##name

JNIEXPORT jstring JNICALL JNI_FN(version)(JNIEnv* env, jclass cls) {
  (void)cls;
  return (*env)->NewStringUTF(env, linfer_version());
}

JNIEXPORT jlong JNICALL JNI_FN(loadFile)(JNIEnv* env, jclass cls, jbyteArray path) {
  (void)cls;
  /* The path arrives as NUL-terminated bytes (Java encodes it): NewStringUTF's modified UTF-8
   * would differ from the file system's bytes for characters outside the BMP. */
  jbyte* bytes = (*env)->GetByteArrayElements(env, path, NULL);
  if (check_oom(env, bytes)) return 0;
  linfer_model* model = NULL;
  linfer_status status = linfer_model_load((const char*)bytes, &model);
  (*env)->ReleaseByteArrayElements(env, path, bytes, JNI_ABORT);
  if (check(env, status)) return 0;
  return (jlong)(intptr_t)model;
}

JNIEXPORT jlong JNICALL JNI_FN(loadArray)(JNIEnv* env, jclass cls, jbyteArray data, jint offset, jint length) {
  (void)cls;
  jbyte* bytes = (*env)->GetByteArrayElements(env, data, NULL);
  if (check_oom(env, bytes)) return 0;
  linfer_model* model = NULL;
  linfer_status status = linfer_model_load_from_memory(bytes + offset, (size_t)length, &model);
  (*env)->ReleaseByteArrayElements(env, data, bytes, JNI_ABORT);
  if (check(env, status)) return 0;
  return (jlong)(intptr_t)model;
}

/* A direct buffer's bytes [position, position + length): read in place when 64-byte aligned
 * (the Java side keeps the buffer reachable until the model is freed), copied otherwise. */
JNIEXPORT jlong JNICALL JNI_FN(loadDirect)(JNIEnv* env, jclass cls, jobject buffer, jint position, jint length,
                                           jboolean in_place) {
  (void)cls;
  char* base = (char*)(*env)->GetDirectBufferAddress(env, buffer);
  if (base == NULL) {
    throw_exception(env, LINFER_ERROR_INVALID_ARGUMENT, "the buffer is not a direct buffer");
    return 0;
  }
  linfer_model* model = NULL;
  const void* data = base + position;
  linfer_status status = in_place ? linfer_model_load_in_place(data, (size_t)length, &model)
                                  : linfer_model_load_from_memory(data, (size_t)length, &model);
  if (check(env, status)) return 0;
  return (jlong)(intptr_t)model;
}

JNIEXPORT jlong JNICALL JNI_FN(address)(JNIEnv* env, jclass cls, jobject buffer) {
  (void)cls;
  return (jlong)(intptr_t)(*env)->GetDirectBufferAddress(env, buffer);
}

JNIEXPORT void JNICALL JNI_FN(freeModel)(JNIEnv* env, jclass cls, jlong handle) {
  (void)env;
  (void)cls;
  linfer_model_free((linfer_model*)(intptr_t)handle);
}

/* The numbers of linfer_model_info in ModelInfo's order, and its two strings into names[0..1]. */
JNIEXPORT jlongArray JNICALL JNI_FN(info)(JNIEnv* env, jclass cls, jlong handle, jobjectArray names) {
  (void)cls;
  linfer_model_info info;
  memset(&info, 0, sizeof info);
  info.struct_size = sizeof info;
  if (check(env, linfer_model_get_info((const linfer_model*)(intptr_t)handle, &info))) return NULL;
  const jlong values[] = {info.vocab_size,
                          info.dim,
                          info.num_layers,
                          info.num_heads,
                          info.head_dim,
                          info.ff_dim,
                          info.max_seq_len,
                          info.proj_len,
                          (jlong)info.head,
                          info.output_channels,
                          (jlong)info.parameter_count,
                          (jlong)info.file_bytes,
                          (jlong)info.resident_weight_bytes,
                          info.format_version};
  const jsize count = (jsize)(sizeof values / sizeof values[0]);
  jlongArray out = (*env)->NewLongArray(env, count);
  if (check_oom(env, out)) return NULL;
  (*env)->SetLongArrayRegion(env, out, 0, count, values);
  jstring kind = (*env)->NewStringUTF(env, info.attention_kind ? info.attention_kind : "");
  if (check_oom(env, kind)) return NULL;
  (*env)->SetObjectArrayElement(env, names, 0, kind);
  jstring dtype = (*env)->NewStringUTF(env, info.weight_dtype ? info.weight_dtype : "");
  if (check_oom(env, dtype)) return NULL;
  (*env)->SetObjectArrayElement(env, names, 1, dtype);
  return out;
}

JNIEXPORT jlong JNICALL JNI_FN(flops)(JNIEnv* env, jclass cls, jlong handle, jlong length) {
  (void)env;
  (void)cls;
  return (jlong)linfer_model_flops((const linfer_model*)(intptr_t)handle, (size_t)length);
}

JNIEXPORT jboolean JNICALL JNI_FN(hasTokenizer)(JNIEnv* env, jclass cls, jlong handle) {
  (void)env;
  (void)cls;
  return linfer_model_has_tokenizer((const linfer_model*)(intptr_t)handle) ? JNI_TRUE : JNI_FALSE;
}

JNIEXPORT jintArray JNICALL JNI_FN(tokenize)(JNIEnv* env, jclass cls, jlong handle, jbyteArray utf8) {
  (void)cls;
  const linfer_model* model = (const linfer_model*)(intptr_t)handle;
  const jsize length = (*env)->GetArrayLength(env, utf8);
  jbyte* text = (*env)->GetByteArrayElements(env, utf8, NULL);
  if (check_oom(env, text)) return NULL;
  size_t count = 0;
  linfer_status status = linfer_tokenize(model, (const char*)text, (size_t)length, NULL, 0, &count);
  jintArray out = NULL;
  if (!check(env, status)) {
    out = (*env)->NewIntArray(env, (jsize)count);
    if (!check_oom(env, out) && count > 0) {
      jint* ids = (*env)->GetIntArrayElements(env, out, NULL);
      if (!check_oom(env, ids)) {
        status = linfer_tokenize(model, (const char*)text, (size_t)length, (int32_t*)ids, count, &count);
        (*env)->ReleaseIntArrayElements(env, out, ids, 0);
        if (check(env, status)) out = NULL;
      } else {
        out = NULL;
      }
    }
  }
  (*env)->ReleaseByteArrayElements(env, utf8, text, JNI_ABORT);
  return out;
}

JNIEXPORT jbyteArray JNICALL JNI_FN(detokenize)(JNIEnv* env, jclass cls, jlong handle, jintArray ids) {
  (void)cls;
  const linfer_model* model = (const linfer_model*)(intptr_t)handle;
  const jsize count = (*env)->GetArrayLength(env, ids);
  jint* values = (*env)->GetIntArrayElements(env, ids, NULL);
  if (check_oom(env, values)) return NULL;
  size_t length = 0;
  jbyteArray out = NULL;
  linfer_status status = linfer_detokenize(model, (const int32_t*)values, (size_t)count, NULL, 0, &length);
  if (!check(env, status)) {
    char* text = (char*)malloc(length > 0 ? length : 1);
    if (check_oom(env, text)) {
      (*env)->ReleaseIntArrayElements(env, ids, values, JNI_ABORT);
      return NULL;
    }
    status = linfer_detokenize(model, (const int32_t*)values, (size_t)count, text, length, &length);
    if (!check(env, status)) {
      out = (*env)->NewByteArray(env, (jsize)length);
      if (!check_oom(env, out)) (*env)->SetByteArrayRegion(env, out, 0, (jsize)length, (const jbyte*)text);
    }
    free(text);
  }
  (*env)->ReleaseIntArrayElements(env, ids, values, JNI_ABORT);
  return out;
}

JNIEXPORT jlong JNICALL JNI_FN(createSession)(JNIEnv* env, jclass cls, jlong model_handle, jint max_seq_len,
                                              jint threads) {
  (void)cls;
  const linfer_model* model = (const linfer_model*)(intptr_t)model_handle;
  linfer_session_options options = linfer_session_options_default();
  options.max_seq_len = (uint32_t)max_seq_len;
  options.num_threads = (uint32_t)threads;
  linfer_session* session = NULL;
  if (check(env, linfer_session_create(model, &options, &session))) return 0;
  size_t capacity = max_seq_len;
  if (capacity == 0) {
    linfer_model_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    linfer_model_get_info(model, &info);
    capacity = info.max_seq_len;
  }
  SessionHandle* h = (SessionHandle*)malloc(sizeof(SessionHandle));
  int32_t* ids = (int32_t*)malloc((capacity > 0 ? capacity : 1) * sizeof(int32_t));
  if (h == NULL || ids == NULL) {
    free(h);
    free(ids);
    linfer_session_free(session);
    throw_exception(env, LINFER_ERROR_OUT_OF_MEMORY, "out of memory");
    return 0;
  }
  h->session = session;
  h->ids = ids;
  h->capacity = capacity;
  return (jlong)(intptr_t)h;
}

JNIEXPORT void JNICALL JNI_FN(freeSession)(JNIEnv* env, jclass cls, jlong handle) {
  (void)env;
  (void)cls;
  SessionHandle* h = (SessionHandle*)(intptr_t)handle;
  if (h == NULL) return;
  linfer_session_free(h->session);
  free(h->ids);
  free(h);
}

/* Runs on ids[0, length): copied into the session's buffer. An input longer than the buffer is
 * passed through a temporary copy so that the library refuses it with its own message. */
JNIEXPORT void JNICALL JNI_FN(run)(JNIEnv* env, jclass cls, jlong handle, jintArray ids) {
  (void)cls;
  SessionHandle* h = (SessionHandle*)(intptr_t)handle;
  const jsize length = (*env)->GetArrayLength(env, ids);
  if ((size_t)length <= h->capacity) {
    (*env)->GetIntArrayRegion(env, ids, 0, length, (jint*)h->ids);
    check(env, linfer_session_run(h->session, h->ids, (size_t)length));
    return;
  }
  jint* values = (*env)->GetIntArrayElements(env, ids, NULL);
  if (check_oom(env, values)) return;
  linfer_status status = linfer_session_run(h->session, (const int32_t*)values, (size_t)length);
  (*env)->ReleaseIntArrayElements(env, ids, values, JNI_ABORT);
  check(env, status);
}

/* The last run's output (which 0) or hidden states (which 1) as a new float[]; shape gets
 * {rows, cols}. Or into the caller's float[] when `into` is not null (it must hold rows * cols). */
JNIEXPORT jfloatArray JNICALL JNI_FN(result)(JNIEnv* env, jclass cls, jlong handle, jint which, jintArray shape,
                                             jfloatArray into) {
  (void)cls;
  SessionHandle* h = (SessionHandle*)(intptr_t)handle;
  const float* data = NULL;
  size_t rows = 0, cols = 0;
  linfer_status status = which == 0 ? linfer_session_output(h->session, &data, &rows, &cols)
                                    : linfer_session_hidden_states(h->session, &data, &rows, &cols);
  if (check(env, status)) return NULL;
  const jint dims[2] = {(jint)rows, (jint)cols};
  (*env)->SetIntArrayRegion(env, shape, 0, 2, dims);
  const jsize count = (jsize)(rows * cols);
  jfloatArray out = into;
  if (out == NULL) {
    out = (*env)->NewFloatArray(env, count);
    if (check_oom(env, out)) return NULL;
  } else if ((*env)->GetArrayLength(env, out) < count) {
    throw_exception(env, LINFER_ERROR_BUFFER_TOO_SMALL, "the output array is smaller than rows * cols");
    return NULL;
  }
  (*env)->SetFloatArrayRegion(env, out, 0, count, data);
  return out;
}

JNIEXPORT jstring JNICALL JNI_FN(describe)(JNIEnv* env, jclass cls, jlong handle) {
  (void)cls;
  SessionHandle* h = (SessionHandle*)(intptr_t)handle;
  return (*env)->NewStringUTF(env, linfer_session_describe(h->session));
}
