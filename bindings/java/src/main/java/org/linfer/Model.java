// SPDX-License-Identifier: Apache-2.0
package org.linfer;

import java.io.File;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.Charset;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A loaded model: immutable, shared by any number of threads and sessions. close() releases the
 * caller's reference; the native model is freed when its last session is closed too. Calls after
 * close() throw a LinferException ("the model is closed").
 */
public final class Model implements AutoCloseable {
  private static final Charset UTF_8 = Charset.forName("UTF-8");
  private static final AtomicLong FREED = new AtomicLong(); // native models freed, for the tests

  private long handle;
  private int references = 1; // the owner's, and one per open session
  private boolean closed;
  private final ByteBuffer bytes; // the buffer a model reads in place; kept reachable
  private final boolean inPlace;

  private Model(long handle, ByteBuffer bytes, boolean inPlace) {
    this.handle = handle;
    this.bytes = bytes;
    this.inPlace = inPlace;
  }

  /** The version of the native library, e.g. "0.9.0". */
  public static String libraryVersion() {
    return Native.version();
  }

  /** Loads a .lfm file. */
  public static Model load(String path) {
    if (path == null) throw LinferException.invalid("the model path is null");
    if (path.indexOf('\0') >= 0) throw LinferException.invalid("the model path contains a NUL character");
    byte[] encoded = path.getBytes(UTF_8);
    byte[] terminated = new byte[encoded.length + 1];
    System.arraycopy(encoded, 0, terminated, 0, encoded.length);
    return new Model(Native.loadFile(terminated), null, false);
  }

  /** Loads a .lfm file. */
  public static Model load(File file) {
    if (file == null) throw LinferException.invalid("the model path is null");
    return load(file.getPath());
  }

  /** Loads a .lfm file (java.nio.file needs Android API level 26; load(File) works from 24). */
  public static Model load(Path path) {
    if (path == null) throw LinferException.invalid("the model path is null");
    return load(path.toString());
  }

  /**
   * A model from the buffer's remaining bytes. A direct buffer whose first byte is 64-byte
   * aligned (a mapped file, or allocateAligned) is read in place, without a copy: the model keeps
   * the buffer reachable until it is freed, and the bytes must not change meanwhile. Any other
   * buffer is copied. The buffer's position is not changed.
   */
  public static Model fromBytes(ByteBuffer buffer) {
    if (buffer == null) throw LinferException.invalid("the model bytes are null");
    int position = buffer.position();
    int length = buffer.remaining();
    if (buffer.isDirect()) {
      boolean aligned = ((Native.address(buffer) + position) & 63) == 0;
      long h = Native.loadDirect(buffer, position, length, aligned);
      return new Model(h, aligned ? buffer : null, aligned);
    }
    if (buffer.hasArray()) {
      return new Model(Native.loadArray(buffer.array(), buffer.arrayOffset() + position, length), null, false);
    }
    byte[] copy = new byte[length];
    buffer.duplicate().get(copy);
    return fromBytes(copy);
  }

  /** A model from a copy of the bytes. */
  public static Model fromBytes(byte[] data) {
    if (data == null) throw LinferException.invalid("the model bytes are null");
    return new Model(Native.loadArray(data, 0, data.length), null, false);
  }

  /** A direct buffer of `size` bytes whose first byte is 64-byte aligned, for fromBytes. */
  public static ByteBuffer allocateAligned(int size) {
    if (size < 0) throw LinferException.invalid("the size must be >= 0, got " + size);
    ByteBuffer raw = ByteBuffer.allocateDirect(size + 63);
    int skip = (int) ((64 - (Native.address(raw) & 63)) & 63);
    raw.position(skip);
    raw.limit(skip + size);
    return raw.slice().order(ByteOrder.LITTLE_ENDIAN);
  }

  /** True when the model reads its bytes where they lie (fromBytes with an aligned direct buffer). */
  public boolean readsInPlace() {
    return inPlace;
  }

  public ModelInfo info() {
    long h = acquire();
    try {
      String[] names = new String[2];
      long[] values = Native.info(h, names);
      return new ModelInfo(values, names);
    } finally {
      release();
    }
  }

  /** Floating-point operations of one run over `length` tokens. */
  public long flops(int length) {
    if (length < 0) throw LinferException.invalid("the length must be >= 0, got " + length);
    long h = acquire();
    try {
      return Native.flops(h, length);
    } finally {
      release();
    }
  }

  /** A session with the default options: the model's n, one thread. */
  public Session createSession() {
    return createSession(0, 1);
  }

  /**
   * A session: all its memory planned now. maxSeqLen 0 is the model's n; threads 0 or 1 run on
   * the calling thread.
   */
  public Session createSession(int maxSeqLen, int threads) {
    if (maxSeqLen < 0) throw LinferException.invalid("maxSeqLen must be >= 0, got " + maxSeqLen);
    if (threads < 0) throw LinferException.invalid("threads must be >= 0, got " + threads);
    long h = acquire();
    try {
      long session = Native.createSession(h, maxSeqLen, threads);
      int capacity = maxSeqLen != 0 ? maxSeqLen : (int) Native.info(h, new String[2])[6];
      return new Session(this, session, capacity); // keeps the reference
    } catch (RuntimeException | Error e) {
      release();
      throw e;
    }
  }

  public boolean hasTokenizer() {
    long h = acquire();
    try {
      return Native.hasTokenizer(h);
    } finally {
      release();
    }
  }

  /** Text to token ids with the tokenizer the model file carries, its template around them. */
  public int[] tokenize(String text) {
    if (text == null) throw LinferException.invalid("the text is null");
    long h = acquire();
    try {
      return Native.tokenize(h, text.getBytes(UTF_8));
    } finally {
      release();
    }
  }

  /**
   * The sentence embedding of `text` (dim floats), as Python's Model.embed: the model must carry
   * its tokenizer and pool its output (info().head == POOLED); else a LinferException
   * (UNSUPPORTED). A text longer than the model's n ids is cut to n, keeping its closing id, as
   * Hugging Face's truncation does. Creates a session for the call: Session.embed reuses one.
   */
  public float[] embed(String text) {
    return embed(new String[] {text})[0];
  }

  /** The sentence embeddings of `texts`, one row of dim floats per text (see embed(String)). */
  public float[][] embed(String... texts) {
    if (texts == null) throw LinferException.invalid("the texts are null");
    for (int i = 0; i < texts.length; i++) {
      if (texts[i] == null) throw LinferException.invalid("text " + i + " is null");
    }
    checkEmbeds(info());
    float[][] rows = new float[texts.length][];
    try (Session session = createSession()) {
      for (int i = 0; i < texts.length; i++) rows[i] = session.embed(texts[i]);
    }
    return rows;
  }

  /** Refuses, with the message Python's Model.embed gives, a model that cannot embed text. */
  void checkEmbeds(ModelInfo info) {
    if (info.head != ModelInfo.Head.POOLED) {
      throw new LinferException(LinferException.Status.UNSUPPORTED, "the model's output is not a pooled vector "
          + "(convert it with its modules.json, or with linfer-convert --pooling cls|mean)");
    }
    if (!hasTokenizer()) throw new LinferException(LinferException.Status.UNSUPPORTED, "the model file carries no tokenizer");
  }

  /** Token ids back to text (special pieces left out). */
  public String detokenize(int[] ids) {
    if (ids == null) throw LinferException.invalid("the token ids are null");
    long h = acquire();
    try {
      return new String(Native.detokenize(h, ids), UTF_8);
    } finally {
      release();
    }
  }

  public synchronized boolean isClosed() {
    return closed;
  }

  /** Releases the caller's reference; twice is fine. */
  @Override
  public void close() {
    synchronized (this) {
      if (closed) return;
      closed = true;
    }
    release();
  }

  synchronized long acquire() {
    if (closed) throw LinferException.invalid("the model is closed");
    references++;
    return handle;
  }

  synchronized void release() {
    if (--references == 0) {
      Native.freeModel(handle);
      handle = 0;
      FREED.incrementAndGet();
    }
  }

  // A model the caller forgot to close still frees its memory (java.lang.ref.Cleaner is not on
  // Android before API level 33).
  @Override
  @SuppressWarnings("deprecation")
  protected void finalize() throws Throwable {
    try {
      close();
    } finally {
      super.finalize();
    }
  }

  static long modelsFreed() {
    return FREED.get();
  }

  ByteBuffer bytes() {
    return bytes;
  }
}
