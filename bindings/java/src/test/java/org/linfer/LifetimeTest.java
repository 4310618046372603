// SPDX-License-Identifier: Apache-2.0
package org.linfer;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

/** Use after close, threads, and memory over many create/run/close cycles. */
class LifetimeTest {
  @Test
  void closedSession() throws Exception {
    Model m = Model.load(Support.model("byte-lm.lfm"));
    Session s = m.createSession();
    s.run(new int[] {1, 2, 3});
    s.close();
    assertTrue(s.isClosed());
    Executable[] calls = {
      () -> s.run(new int[] {1, 2, 3}), () -> s.run(new int[] {1}, new float[256], null), s::output,
      s::hiddenStates, s::describe,
    };
    for (Executable call : calls) {
      ErrorTest.fails(LinferException.Status.INVALID_ARGUMENT, "the session is closed", call);
    }
    s.close(); // twice is fine
    try (Session s2 = m.createSession()) {
      s2.run(new int[] {1});
    }
    m.close();
  }

  @Test
  void closedModel() throws Exception {
    Model m = Model.load(Support.model("byte-lm.lfm"));
    Session s = m.createSession();
    float[] want = s.run(new int[] {5, 6, 7}).data();
    m.close();
    assertTrue(m.isClosed());
    Executable[] calls = {
      m::info, m::createSession, () -> m.createSession(8, 1), () -> m.flops(3), () -> m.tokenize("a"),
      () -> m.detokenize(new int[] {1}), m::hasTokenizer,
    };
    for (Executable call : calls) {
      ErrorTest.fails(LinferException.Status.INVALID_ARGUMENT, "the model is closed", call);
    }
    m.close(); // twice is fine
    // A session made before keeps the model's memory alive and still runs.
    System.gc();
    assertArrayEquals(want, s.run(new int[] {5, 6, 7}).data());
    s.close();
  }

  @Test
  void forgottenObjectsAreFreedByTheCollector() throws Exception {
    long before = Model.modelsFreed();
    for (int i = 0; i < 200; i++) {
      Model m = Model.load(Support.model("langid.int8.lfm"));
      m.createSession(16, 1).run(new int[] {1, 2, 3}); // neither closed
    }
    // A model is freed once both its finalizer and its session's have run.
    for (int round = 0; round < 10 && Model.modelsFreed() - before < 200; round++) {
      System.gc();
      System.runFinalization();
    }
    assertTrue(Model.modelsFreed() - before >= 200, (Model.modelsFreed() - before) + " of 200 freed");
  }

  /** Two threads, one model, a session each, 200 runs each: the same outputs as one thread alone. */
  @Test
  void twoThreadsShareAModel() throws Exception {
    try (Model m = Model.load(Support.model("langid.int8.lfm"))) {
      final int[][] inputs = {
        Support.textIds(Support.data("langid-de.txt")), Support.textIds(Support.data("langid-ru.txt")),
      };
      final float[][] want = new float[2][];
      try (Session s = m.createSession()) {
        for (int i = 0; i < 2; i++) want[i] = s.run(inputs[i]).data();
      }
      assertFalse(Arrays.equals(want[0], want[1]));
      // -Dlinfer.threadRuns=N: fewer under an emulator, which runs far slower
      final int runs = Integer.parseInt(System.getProperty("linfer.threadRuns", "200"));
      final List<Throwable> failures = new ArrayList<>();
      final CountDownLatch start = new CountDownLatch(1);
      Thread[] threads = new Thread[2];
      for (int t = 0; t < 2; t++) {
        final int which = t;
        threads[t] = new Thread(() -> {
          try (Session s = m.createSession()) {
            start.await();
            for (int r = 0; r < runs; r++) {
              int k = (r + which) % 2;
              float[] got = s.run(inputs[k]).data();
              if (!Arrays.equals(want[k], got)) throw new AssertionError("thread " + which + " run " + r + " differs");
            }
          } catch (Throwable e) {
            synchronized (failures) {
              failures.add(e);
            }
          }
        });
        threads[t].start();
      }
      start.countDown();
      for (Thread t : threads) t.join();
      assertEquals(new ArrayList<Throwable>(), failures);
    }
  }

  /** 10,000 session create/run/close cycles (and a model load/close every 10th) leave the
   * process's resident memory flat: a leaked session or model per cycle would add many MB.
   * -Dlinfer.cycles=N changes the count (fewer under an emulator, which runs far slower). */
  @Test
  void tenThousandCyclesLeaveMemoryFlat() throws Exception {
    byte[] bytes = java.nio.file.Files.readAllBytes(Support.model("langid.int8.lfm"));
    int[] ids = Arrays.copyOf(Support.textIds(Support.data("langid-fr.txt")), 32);
    Model model = Model.load(Support.model("langid.int8.lfm"));
    long arena;
    try (Session probe = model.createSession()) {
      arena = probe.run(ids).cols(); // warm
    }
    long before = 0;
    long cycles = Long.parseLong(System.getProperty("linfer.cycles", "10000"));
    long warmup = Math.min(1000, cycles / 4);
    for (int cycle = 0; cycle < cycles + warmup; cycle++) {
      if (cycle == warmup) {
        System.gc();
        before = Support.rssBytes();
      }
      if (cycle % 10 == 0) {
        model.close();
        model = Model.fromBytes(bytes);
      }
      try (Session s = model.createSession(0, 1)) {
        if (s.run(ids).cols() != arena) throw new AssertionError("wrong output");
      }
    }
    model.close();
    System.gc();
    long after = Support.rssBytes();
    long growth = after - before;
    System.out.println("RSS over " + cycles + " cycles: " + before / 1024 + " KiB -> " + after / 1024 + " KiB");
    // A leaked session (its arena) or model per cycle would grow RSS by hundreds of MB.
    assertTrue(growth < 16L << 20, "RSS grew by " + growth / 1024 + " KiB over " + cycles + " cycles");
  }
}
