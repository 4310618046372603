// SPDX-License-Identifier: Apache-2.0
package org.linfer;

import java.util.Arrays;

/**
 * A session of a model: its memory planned at creation, runs that allocate nothing in the
 * library. One thread at a time: the methods are synchronized, so concurrent calls wait rather
 * than corrupt. The session keeps its model's native memory alive until close(). Calls after
 * close() throw a LinferException ("the session is closed").
 */
public final class Session implements AutoCloseable {
  private static final int OUTPUT = 0;
  private static final int HIDDEN_STATES = 1;

  private final Model model;
  private long handle;
  private final int maxSeqLen;
  private final int[] shape = new int[2];
  private boolean embedChecked; // the model can embed text (checked once: it does not change)

  Session(Model model, long handle, int maxSeqLen) {
    this.model = model;
    this.handle = handle;
    this.maxSeqLen = maxSeqLen;
  }

  /** The longest input this session accepts. */
  public int maxSeqLen() {
    return maxSeqLen;
  }

  /** Runs the model on 1..maxSeqLen token ids and returns a copy of the output. */
  public synchronized Output run(int[] ids) {
    runOnly(ids);
    return result(OUTPUT);
  }

  /**
   * Runs the model and writes the output into `out` (at least rows * cols floats), without
   * allocating; returns {rows, cols} in `shapeOut` (2 ints) when it is not null.
   */
  public synchronized void run(int[] ids, float[] out, int[] shapeOut) {
    if (out == null) throw LinferException.invalid("the output array is null");
    runOnly(ids);
    Native.result(handle, OUTPUT, shape, out);
    if (shapeOut != null) {
      shapeOut[0] = shape[0];
      shapeOut[1] = shape[1];
    }
  }

  /**
   * The sentence embedding of `text` (dim floats) with this session, as Model.embed: the model
   * must carry its tokenizer and pool its output, else a LinferException (UNSUPPORTED). A text
   * longer than this session's maxSeqLen ids is cut to it, keeping its closing id.
   */
  public synchronized float[] embed(String text) {
    check();
    if (text == null) throw LinferException.invalid("the text is null");
    if (!embedChecked) {
      model.checkEmbeds(model.info());
      embedChecked = true;
    }
    int[] ids = model.tokenize(text);
    if (ids.length > maxSeqLen) {
      int last = ids[ids.length - 1];
      ids = Arrays.copyOf(ids, maxSeqLen);
      ids[maxSeqLen - 1] = last;
    }
    runOnly(ids);
    return result(OUTPUT).data();
  }

  /** The last run's output, again. */
  public synchronized Output output() {
    check();
    return result(OUTPUT);
  }

  /** The last run's final hidden states [T, dim] (before any head). */
  public synchronized Output hiddenStates() {
    check();
    return result(HIDDEN_STATES);
  }

  /** One line on the kernels, threads and pipeline this session runs. */
  public synchronized String describe() {
    check();
    return Native.describe(handle);
  }

  public synchronized boolean isClosed() {
    return handle == 0;
  }

  /** Frees the session and releases its model; twice is fine. */
  @Override
  public synchronized void close() {
    if (handle == 0) return;
    Native.freeSession(handle);
    handle = 0;
    model.release();
  }

  private void runOnly(int[] ids) {
    check();
    if (ids == null) throw LinferException.invalid("the token ids are null");
    Native.run(handle, ids);
  }

  private Output result(int which) {
    float[] data = Native.result(handle, which, shape, null);
    return new Output(shape[0], shape[1], data);
  }

  private void check() {
    if (handle == 0) throw LinferException.invalid("the session is closed");
  }

  @Override
  @SuppressWarnings("deprecation")
  protected void finalize() throws Throwable {
    try {
      close();
    } finally {
      super.finalize();
    }
  }
}
