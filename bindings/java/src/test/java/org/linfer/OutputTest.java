// SPDX-License-Identifier: Apache-2.0
package org.linfer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;

/** The Java-only classes (no native library: scripts/test-bindings.sh resolves Maven with it). */
class OutputTest {
  @Test
  void outputIndexing() {
    Output o = new Output(2, 3, new float[] {0, 1, 2, 3, 4, 5});
    assertEquals(5f, o.get(1, 2));
    assertEquals(3f, o.asFloatBuffer().get(3));
    assertEquals(6, o.asFloatBuffer().remaining());
    assertThrows(IndexOutOfBoundsException.class, () -> o.get(2, 0));
    assertThrows(IndexOutOfBoundsException.class, () -> o.get(0, -1));
  }

  @Test
  void statusValuesAreTheCApis() {
    assertEquals(LinferException.Status.INVALID_MODEL, new LinferException(3, "m").getStatus());
    assertEquals(LinferException.Status.BUFFER_TOO_SMALL, new LinferException(6, "m").getStatus());
    assertEquals(LinferException.Status.INTERNAL, new LinferException(99, "m").getStatus());
    assertEquals("m", new LinferException(1, "m").getMessage());
  }
}
