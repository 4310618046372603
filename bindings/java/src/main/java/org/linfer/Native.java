// SPDX-License-Identifier: Apache-2.0
package org.linfer;

import java.nio.ByteBuffer;

/** The JNI functions (src/main/c/linfer_jni.c). Handles are checked by the callers. */
final class Native {
  private Native() {}

  static {
    // -Dlinfer.jni=/path/to/liblinfer_jni.so (tests, desktop use), else the library path
    // (System.loadLibrary: an Android app's jniLibs, or java.library.path).
    String path = System.getProperty("linfer.jni");
    if (path != null && !path.isEmpty()) {
      System.load(path);
    } else {
      System.loadLibrary("linfer_jni");
    }
  }

  static native String version();

  static native long loadFile(byte[] pathNulTerminated);

  static native long loadArray(byte[] data, int offset, int length);

  static native long loadDirect(ByteBuffer buffer, int position, int length, boolean inPlace);

  static native long address(ByteBuffer buffer);

  static native void freeModel(long model);

  static native long[] info(long model, String[] names);

  static native long flops(long model, long length);

  static native boolean hasTokenizer(long model);

  static native int[] tokenize(long model, byte[] utf8);

  static native byte[] detokenize(long model, int[] ids);

  static native long createSession(long model, int maxSeqLen, int threads);

  static native void freeSession(long session);

  static native void run(long session, int[] ids);

  static native float[] result(long session, int which, int[] shape, float[] into);

  static native String describe(long session);
}
