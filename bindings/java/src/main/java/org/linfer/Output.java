// SPDX-License-Identifier: Apache-2.0
package org.linfer;

import java.nio.FloatBuffer;

/** A run's output (or hidden states): rows x cols floats, row-major, the caller's copy. */
public final class Output {
  private final int rows;
  private final int cols;
  private final float[] data;

  Output(int rows, int cols, float[] data) {
    this.rows = rows;
    this.cols = cols;
    this.data = data;
  }

  public int rows() {
    return rows;
  }

  public int cols() {
    return cols;
  }

  /** The rows * cols values, row-major (this object's own array, not a copy). */
  public float[] data() {
    return data;
  }

  /** The values as a FloatBuffer over the same array. */
  public FloatBuffer asFloatBuffer() {
    return FloatBuffer.wrap(data, 0, rows * cols).slice();
  }

  /** The value at (row, col). */
  public float get(int row, int col) {
    if (row < 0 || row >= rows || col < 0 || col >= cols) {
      throw new IndexOutOfBoundsException("(" + row + ", " + col + ") is outside " + rows + " x " + cols);
    }
    return data[row * cols + col];
  }
}
