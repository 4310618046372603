// SPDX-License-Identifier: Apache-2.0
package org.linfer;

/**
 * A failure of the library or of a call into it: the C API's status and its one-line message
 * (linfer_last_error()), or the binding's own message for what it refuses before the library is
 * called (a closed object, a null argument).
 */
public class LinferException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /** The C API's linfer_status values. */
  public enum Status {
    OK(0, "ok"),
    INVALID_ARGUMENT(1, "invalid argument"),
    IO(2, "i/o error"),
    INVALID_MODEL(3, "invalid model"),
    UNSUPPORTED(4, "unsupported"),
    OUT_OF_MEMORY(5, "out of memory"),
    BUFFER_TOO_SMALL(6, "buffer too small"),
    INTERNAL(7, "internal error");

    /** The value of the C enum. */
    public final int code;
    private final String label;

    Status(int code, String label) {
      this.code = code;
      this.label = label;
    }

    static Status of(int code) {
      for (Status s : values()) {
        if (s.code == code) return s;
      }
      return INTERNAL;
    }

    @Override
    public String toString() {
      return label;
    }
  }

  private final Status status;

  /** Called by the JNI code with the C status and linfer_last_error(). */
  LinferException(int status, String message) {
    this(Status.of(status), message);
  }

  LinferException(Status status, String message) {
    super(message);
    this.status = status;
  }

  public Status getStatus() {
    return status;
  }

  static LinferException invalid(String message) {
    return new LinferException(Status.INVALID_ARGUMENT, message);
  }
}
