// SPDX-License-Identifier: Apache-2.0
package org.linfer;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Model.embed and Session.embed against linfer-embed on tests/embed/make_embedder.sh's models
 * (linfer.embed): the same library, so the same floats, bit for bit.
 */
class EmbedTest {
  static Path dir() {
    return Paths.get(Support.property("linfer.embed"));
  }

  static String[] texts() throws IOException {
    List<String> lines = Files.readAllLines(dir().resolve("texts.txt"), StandardCharsets.UTF_8);
    return lines.toArray(new String[0]);
  }

  /** linfer-embed's output: one line of %.9g values per text (exact float round trips). */
  static float[][] nativeEmbeddings(String name) throws IOException {
    List<String> lines = Files.readAllLines(dir().resolve(name + ".embed.txt"), StandardCharsets.US_ASCII);
    float[][] rows = new float[lines.size()][];
    for (int i = 0; i < rows.length; i++) {
      String[] parts = lines.get(i).split(" ");
      rows[i] = new float[parts.length];
      for (int j = 0; j < parts.length; j++) rows[i][j] = Float.parseFloat(parts[j]);
    }
    return rows;
  }

  @Test
  void embeddingsAreLinferEmbeds() throws Exception {
    String[] texts = texts();
    assertEquals(5, texts.length);
    for (String name : new String[] {"mean.f32", "mean.int8", "cls.f32"}) {
      float[][] expected = nativeEmbeddings(name);
      try (Model model = Model.load(dir().resolve(name + ".lfm"))) {
        ModelInfo info = model.info();
        assertEquals(ModelInfo.Head.POOLED, info.head);
        assertTrue(model.tokenize(texts[4]).length > info.maxSeqLen, "the long text is cut");
        float[][] rows = model.embed(texts);
        assertEquals(texts.length, rows.length);
        for (int i = 0; i < rows.length; i++) {
          assertEquals(info.dim, rows[i].length);
          assertArrayEquals(expected[i], rows[i], 0.0f, name + " text " + i);
        }
        assertArrayEquals(expected[1], model.embed(texts[1]), 0.0f);
        assertEquals(0, model.embed(new String[0]).length);
        // One session for many texts, in any order; a session shorter than n cuts to its length.
        try (Session session = model.createSession()) {
          for (int i = texts.length - 1; i >= 0; i--) assertArrayEquals(expected[i], session.embed(texts[i]), 0.0f);
        }
        try (Session session = model.createSession(8, 1)) {
          int[] ids = model.tokenize(texts[4]);
          int[] cut = java.util.Arrays.copyOf(ids, 8);
          cut[7] = ids[ids.length - 1];
          assertArrayEquals(session.run(cut).data(), session.embed(texts[4]), 0.0f);
        }
      }
    }
  }

  @Test
  void refusesWhatCannotEmbed() throws Exception {
    try (Model model = Model.load(dir().resolve("unpooled.f32.lfm"))) {
      LinferException e = assertThrows(LinferException.class, () -> model.embed("a text"));
      assertEquals(LinferException.Status.UNSUPPORTED, e.getStatus());
      assertTrue(e.getMessage().contains("output is not a pooled vector"), e.getMessage());
      try (Session session = model.createSession()) {
        assertThrows(LinferException.class, () -> session.embed("a text"));
      }
    }
    try (Model model = Model.load(dir().resolve("notokenizer.f32.lfm"))) {
      assertEquals(ModelInfo.Head.POOLED, model.info().head);
      LinferException e = assertThrows(LinferException.class, () -> model.embed("a", "b"));
      assertEquals(LinferException.Status.UNSUPPORTED, e.getStatus());
      assertTrue(e.getMessage().contains("carries no tokenizer"), e.getMessage());
    }
    try (Model model = Model.load(dir().resolve("mean.f32.lfm"))) {
      LinferException e = assertThrows(LinferException.class, () -> model.embed("a", null));
      assertEquals(LinferException.Status.INVALID_ARGUMENT, e.getStatus());
      assertTrue(e.getMessage().contains("text 1 is null"), e.getMessage());
      assertThrows(LinferException.class, () -> model.embed((String[]) null));
      Session session = model.createSession();
      session.close();
      assertThrows(LinferException.class, () -> session.embed("a"));
      assertEquals(model.info().dim, model.embed("still works").length);
    }
  }
}
