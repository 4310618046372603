// SPDX-License-Identifier: Apache-2.0
package org.linfer;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

/** Bad files, bad bytes, bad ids, bad lengths, bad options: an exception with the C API's status
 * and message (the one linfer-run prints after the path), and the session still works after. */
class ErrorTest {
  static LinferException fails(LinferException.Status status, String message, Executable call) {
    LinferException e = assertThrows(LinferException.class, call);
    assertEquals(status, e.getStatus(), e.getMessage());
    if (message != null) assertEquals(message, e.getMessage());
    return e;
  }

  /** The model file is refused with the message linfer-run gives for it. */
  static LinferException badFile(Path path, LinferException.Status status) throws Exception {
    LinferException e = fails(status, null, () -> Model.load(path));
    List<String> argv = Support.linferRun();
    argv.addAll(Arrays.asList(path.toString(), "--text", Support.data("sample.txt").toString()));
    String[] r = Support.run(argv);
    assertEquals("1", r[0]);
    assertEquals("linfer-run: " + path + ": " + e.getMessage() + "\n", r[2]);
    return e;
  }

  @Test
  void badFiles() throws Exception {
    LinferException e = badFile(Support.tmp("no-such-model.lfm"), LinferException.Status.IO);
    assertTrue(e.getMessage().contains("No such file"), e.getMessage());
    badFile(Support.tmp(""), LinferException.Status.IO); // a folder
    Path empty = Support.tmp("empty.lfm");
    Files.write(empty, new byte[0]);
    e = badFile(empty, LinferException.Status.INVALID_MODEL);
    assertEquals("file is too small to be a linfer model (0 bytes)", e.getMessage());
    byte[] model = Files.readAllBytes(Support.model("langid.int8.lfm"));
    Path truncated = Support.tmp("truncated.lfm");
    Files.write(truncated, Arrays.copyOf(model, model.length / 2));
    badFile(truncated, LinferException.Status.INVALID_MODEL);
    byte[] garbage = new byte[256 * 8];
    for (int i = 0; i < garbage.length; i++) garbage[i] = (byte) i;
    Path bad = Support.tmp("garbage.lfm");
    Files.write(bad, garbage);
    badFile(bad, LinferException.Status.INVALID_MODEL);
    fails(LinferException.Status.INVALID_MODEL, null, () -> Model.fromBytes(garbage));
    // Every cut of the file is refused, none crashes.
    for (int cut = 0; cut < model.length; cut += Math.max(1, model.length / 97)) {
      byte[] part = Arrays.copyOf(model, cut);
      fails(LinferException.Status.INVALID_MODEL, null, () -> Model.fromBytes(part));
    }
    fails(LinferException.Status.INVALID_ARGUMENT, "the model path contains a NUL character", () -> Model.load("a\0b"));
    fails(LinferException.Status.INVALID_ARGUMENT, "the model path is null", () -> Model.load((String) null));
    fails(LinferException.Status.INVALID_ARGUMENT, "the model path is null", () -> Model.load((Path) null));
  }

  @Test
  void badInputs() throws Exception {
    try (Model m = Model.load(Support.model("byte-lm.lfm")); Session s = m.createSession(64, 1)) {
      int[] ids = Arrays.copyOf(Support.textIds(Support.data("sample.txt")), 40);
      float[] want = s.run(ids).data();
      LinferException.Status invalid = LinferException.Status.INVALID_ARGUMENT;
      fails(invalid, "token id 256 at position 1 is outside the vocabulary [0, 256)", () -> s.run(new int[] {1, 256}));
      fails(invalid, "token id -1 at position 1 is outside the vocabulary [0, 256)", () -> s.run(new int[] {5, -1}));
      fails(invalid, "token id 2147483647 at position 0 is outside the vocabulary [0, 256)",
          () -> s.run(new int[] {Integer.MAX_VALUE}));
      fails(invalid, "input length 65 is outside [1, 64]", () -> s.run(new int[65]));
      fails(invalid, "input length 100000 is outside [1, 64]", () -> s.run(new int[100000]));
      fails(invalid, "input length 0 is outside [1, 64]", () -> s.run(new int[0]));
      fails(invalid, "the token ids are null", () -> s.run(null));
      // Refused before any computation: the last output is still there, and the session runs.
      assertArrayEquals(want, s.output().data());
      assertArrayEquals(want, s.run(ids).data());
      assertEquals("invalid argument", invalid.toString());
      assertEquals(1, invalid.code);
    }
  }

  @Test
  void badOptions() throws Exception {
    try (Model m = Model.load(Support.model("langid.f32.lfm"))) {
      int n = m.info().maxSeqLen;
      LinferException.Status invalid = LinferException.Status.INVALID_ARGUMENT;
      fails(invalid, "max_seq_len " + (n + 1) + " exceeds the model's n = " + n, () -> m.createSession(n + 1, 1));
      fails(invalid, "num_threads 1000 exceeds 256", () -> m.createSession(0, 1000));
      fails(invalid, "maxSeqLen must be >= 0, got -3", () -> m.createSession(-3, 1));
      fails(invalid, "threads must be >= 0, got -1", () -> m.createSession(0, -1));
      try (Session s = m.createSession()) {
        fails(invalid, "the session has not run yet", s::output);
        fails(invalid, "the session has not run yet", s::hiddenStates);
        assertEquals(n, s.maxSeqLen());
      }
    }
  }
}
