// SPDX-License-Identifier: Apache-2.0
package org.linfer;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.nio.ByteBuffer;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Model info, outputs against linfer-run, the goldens, the language-ID answers, bytes in memory. */
class ModelTest {
  static final String[][] SHIPPED = {
    {"byte-lm.lfm", "sample.txt"},
    {"langid.f32.lfm", "langid-de.txt"},
    {"langid.f16.lfm", "langid-fr.txt"},
    {"langid.int8.lfm", "langid-ru.txt"},
  };

  @Test
  void versionIsTheLibrarys() {
    assertTrue(Model.libraryVersion().matches("\\d+\\.\\d+\\.\\d+"), Model.libraryVersion());
  }

  @Test
  void infoMatchesLinferRunAndTheFile() throws Exception {
    for (String[] c : SHIPPED) {
      Path path = Support.model(c[0]);
      List<String> argv = Support.linferRun();
      argv.addAll(Arrays.asList(path.toString(), "--text", Support.data(c[1]).toString()));
      String[] r = Support.run(argv);
      assertEquals("0", r[0], r[2]);
      try (Model m = Model.load(path)) {
        ModelInfo i = m.info();
        assertEquals(r[1].split("\n")[0], i.toString());
        assertEquals(Files.size(path), i.fileBytes);
        assertTrue(i.residentWeightBytes > 0 && i.residentWeightBytes <= i.fileBytes);
        assertEquals(i.dim, i.headDim * i.numHeads);
        assertTrue(i.formatVersion == 1 || i.formatVersion == 2);
        assertTrue(i.parameterCount > 0);
        assertTrue(m.flops(100) > 0 && m.flops(200) > m.flops(100));
      }
    }
    List<String> labels = Files.readAllLines(Support.model("langid.labels.txt"));
    for (String dtype : new String[] {"f32", "f16", "int8"}) {
      try (Model m = Model.load(Support.model("langid." + dtype + ".lfm"))) {
        ModelInfo i = m.info();
        assertEquals(dtype, i.weightDtype);
        assertEquals(ModelInfo.Head.CLASSIFIER, i.head);
        assertEquals(labels.size(), i.outputChannels);
        assertEquals(256, i.vocabSize);
      }
    }
    try (Model m = Model.load(Support.model("byte-lm.lfm").toFile())) {
      assertEquals(ModelInfo.Head.LM_LOGITS, m.info().head);
      assertEquals(256, m.info().outputChannels);
    }
  }

  /** Bit for bit what linfer-run --dump writes: the same library, ids and options. */
  @Test
  void outputsBitIdenticalToLinferRun() throws Exception {
    for (String[] c : SHIPPED) {
      int[] ids = Support.textIds(Support.data(c[1]));
      try (Model m = Model.load(Support.model(c[0]))) {
        for (int threads : new int[] {1, 2}) {
          Path dump = Support.tmp("dump-" + c[0] + "-" + threads + ".npy");
          List<String> argv = Support.linferRun();
          argv.addAll(Arrays.asList(Support.model(c[0]).toString(), "--text", Support.data(c[1]).toString(),
              "--dump", dump.toString(), "--threads", String.valueOf(threads)));
          String[] r = Support.run(argv);
          assertEquals("0", r[0], r[2]);
          Support.Npy want = Support.readNpy(dump);
          try (Session s = m.createSession(ids.length, threads)) {
            Output y = s.run(ids);
            assertEquals(want.shape[0], y.rows());
            assertEquals(want.shape[1], y.cols());
            assertArrayEquals(want.data, y.data(), c[0] + " threads " + threads);
          }
        }
      }
    }
  }

  /** tests/golden: the PyTorch reference outputs of the converted checkpoints, 1 and 2 threads. */
  @Test
  void goldens() throws Exception {
    Path golden = Support.source().resolve("tests/golden");
    Path converted = java.nio.file.Paths.get(Support.property("linfer.golden"));
    int cases = 0;
    for (String line : Files.readAllLines(golden.resolve("cases.txt"))) {
      if (line.trim().isEmpty() || line.startsWith("#")) continue;
      String name = line.split("\\s+")[0];
      Path dir = golden.resolve(name);
      try (Model m = Model.load(converted.resolve(name + ".lfm"))) {
        List<Integer> lengths = new ArrayList<>();
        for (File f : dir.toFile().listFiles()) {
          String n = f.getName();
          if (n.startsWith("out_") && n.endsWith(".npy")) lengths.add(Integer.parseInt(n.substring(4, n.length() - 4)));
        }
        assertEquals(4, lengths.size(), name);
        for (int threads : new int[] {1, 2}) {
          try (Session s = m.createSession(0, threads)) {
            for (int t : lengths) {
              int[] ids = Support.readIds(dir.resolve("ids_" + t + ".txt"));
              assertEquals(t, ids.length);
              Support.Npy want = Support.readNpy(dir.resolve("out_" + t + ".npy"));
              Output y = s.run(ids);
              assertEquals(want.shape[0], y.rows(), name);
              assertEquals(want.shape[1], y.cols(), name);
              double err = Support.scaledError(y.data(), want.data);
              assertTrue(err <= 1e-4, name + " T=" + t + " threads " + threads + ": scaled error " + err);
            }
          }
        }
      }
      cases++;
    }
    assertEquals(10, cases);
  }

  @Test
  void languageIdAnswers() throws Exception {
    List<String> labels = Files.readAllLines(Support.model("langid.labels.txt"));
    for (String dtype : new String[] {"f32", "f16", "int8"}) {
      try (Model m = Model.load(Support.model("langid." + dtype + ".lfm"));
          Session s = m.createSession()) {
        for (String lang : new String[] {"de", "fr", "ru"}) {
          Output y = s.run(Support.textIds(Support.data("langid-" + lang + ".txt")));
          assertEquals(1, y.rows());
          int best = 0;
          for (int c = 1; c < y.cols(); c++) if (y.get(0, c) > y.get(0, best)) best = c;
          assertEquals(lang, labels.get(best), dtype);
        }
      }
    }
  }

  @Test
  void outputForms() throws Exception {
    int[] ids = Arrays.copyOf(Support.textIds(Support.data("sample.txt")), 50);
    try (Model lm = Model.load(Support.model("byte-lm.lfm")); Session s = lm.createSession(64, 1)) {
      assertEquals(64, s.maxSeqLen());
      Output y = s.run(ids);
      assertEquals(50, y.rows());
      assertEquals(256, y.cols());
      assertEquals(50 * 256, y.asFloatBuffer().remaining());
      assertEquals(y.get(3, 7), y.asFloatBuffer().get(3 * 256 + 7));
      assertArrayEquals(y.data(), s.output().data());
      Output h = s.hiddenStates();
      assertEquals(50, h.rows());
      assertEquals(lm.info().dim, h.cols());
      float[] into = new float[64 * 256];
      int[] shape = new int[2];
      s.run(ids, into, shape);
      assertArrayEquals(new int[] {50, 256}, shape);
      assertArrayEquals(y.data(), Arrays.copyOf(into, 50 * 256));
      LinferException e = assertThrows(LinferException.class, () -> s.run(ids, new float[10], null));
      assertEquals(LinferException.Status.BUFFER_TOO_SMALL, e.getStatus());
      assertThrows(IndexOutOfBoundsException.class, () -> y.get(50, 0));
      y.data()[0] = 1e9f; // the caller's copy
      assertNotEquals(1e9f, s.output().data()[0]);
      assertTrue(s.describe().contains("threads"), s.describe());
    }
  }

  @Test
  void modelsFromBytes() throws Exception {
    Path path = Support.model("langid.int8.lfm");
    int[] ids = Support.textIds(Support.data("langid-de.txt"));
    float[] want;
    try (Model m = Model.load(path); Session s = m.createSession()) {
      want = s.run(ids).data();
    }
    byte[] bytes = Files.readAllBytes(path);
    List<Model> models = new ArrayList<>();
    ByteBuffer aligned = Model.allocateAligned(bytes.length);
    aligned.put(bytes).flip();
    models.add(Model.fromBytes(aligned));
    assertTrue(models.get(0).readsInPlace());
    assertEquals(0, aligned.position()); // unchanged
    ByteBuffer unaligned = ByteBuffer.allocateDirect(bytes.length + 65);
    int address = (int) (Native.address(unaligned) & 63);
    unaligned.position(((64 - address) & 63) + 1).mark();
    unaligned.put(bytes).reset();
    unaligned.limit(unaligned.position() + bytes.length);
    Model copied = Model.fromBytes(unaligned);
    assertFalse(copied.readsInPlace());
    models.add(copied);
    models.add(Model.fromBytes(ByteBuffer.wrap(bytes)));
    models.add(Model.fromBytes(bytes));
    try (FileChannel ch = FileChannel.open(path, StandardOpenOption.READ)) {
      MappedByteBuffer mapped = ch.map(FileChannel.MapMode.READ_ONLY, 0, ch.size());
      Model m = Model.fromBytes(mapped);
      assertTrue(m.readsInPlace());
      models.add(m);
    }
    aligned = null; // the model keeps its buffer reachable
    System.gc();
    for (Model m : models) {
      try (Model owned = m; Session s = owned.createSession()) {
        assertEquals(Files.size(path), owned.info().fileBytes);
        assertArrayEquals(want, s.run(ids).data());
      }
    }
    LinferException e = assertThrows(LinferException.class, () -> Model.fromBytes(Arrays.copyOf(bytes, 100)));
    assertEquals(LinferException.Status.INVALID_MODEL, e.getStatus());
    assertEquals("model file is corrupt: the FlatBuffers verifier rejected it (truncated or damaged)", e.getMessage());
    e = assertThrows(LinferException.class, () -> Model.fromBytes((ByteBuffer) null));
    assertEquals(LinferException.Status.INVALID_ARGUMENT, e.getStatus());
  }

  @Test
  void tokenizers() throws Exception {
    Path seeds = Support.source().resolve("tests/fuzz/corpus/fuzz_lfm");
    try (Model m = Model.load(seeds.resolve("tokenizer_wordpiece_f32.lfm"))) {
      assertTrue(m.hasTokenizer());
      assertArrayEquals(new int[] {2, 5, 6, 7, 9, 11, 4, 3}, m.tokenize("Unaffable, Caf\u00e9 [MASK]"));
      assertEquals("unaffable , cafe", m.detokenize(new int[] {2, 5, 6, 7, 9, 11, 3}));
      try (Session s = m.createSession()) {
        assertEquals(m.info().outputChannels, s.run(m.tokenize("hello, cafe!")).cols());
      }
    }
    try (Model m = Model.load(seeds.resolve("tokenizer_byte_bpe_f32.lfm"))) {
      // U+FFFD is what the library reads ill-formed UTF-8 as: the same ids as the bytes "\xff"
      assertArrayEquals(new int[] {259, 260, 111, 114, 108, 100, 239, 191, 189}, m.tokenize("hello world\ufffd"));
    }
    try (Model plain = Model.load(Support.model("byte-lm.lfm"))) {
      assertFalse(plain.hasTokenizer());
      LinferException e = assertThrows(LinferException.class, () -> plain.tokenize("a"));
      assertEquals(LinferException.Status.UNSUPPORTED, e.getStatus());
      assertThrows(LinferException.class, () -> plain.tokenize(null));
    }
  }
}
