// SPDX-License-Identifier: Apache-2.0
package org.linfer;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** Paths from the system properties scripts/test-bindings.sh sets, and small readers. */
final class Support {
  private Support() {}

  static String property(String name) {
    String v = System.getProperty(name);
    if (v == null || v.isEmpty()) {
      throw new IllegalStateException(name + " is not set: run the tests through scripts/test-bindings.sh");
    }
    return v;
  }

  static Path source() {
    return Paths.get(property("linfer.source"));
  }

  static Path model(String name) {
    return source().resolve("examples/models").resolve(name);
  }

  static Path data(String name) {
    return source().resolve("examples/data").resolve(name);
  }

  static Path tmp(String name) throws IOException {
    Path dir = Paths.get(property("linfer.tmp"));
    Files.createDirectories(dir);
    return dir.resolve(name);
  }

  /** The bytes of a file as token ids (what linfer-run --text reads). */
  static int[] textIds(Path path) throws IOException {
    byte[] bytes = Files.readAllBytes(path);
    int[] ids = new int[bytes.length];
    for (int i = 0; i < bytes.length; i++) ids[i] = bytes[i] & 0xff;
    return ids;
  }

  static int[] readIds(Path path) throws IOException {
    String[] parts = new String(Files.readAllBytes(path), StandardCharsets.UTF_8).trim().split("\\s+");
    int[] ids = new int[parts.length];
    for (int i = 0; i < parts.length; i++) ids[i] = Integer.parseInt(parts[i]);
    return ids;
  }

  /** A little-endian float32 C-order .npy file: its shape and values. */
  static final class Npy {
    final int[] shape;
    final float[] data;

    Npy(int[] shape, float[] data) {
      this.shape = shape;
      this.data = data;
    }
  }

  static Npy readNpy(Path path) throws IOException {
    byte[] bytes = Files.readAllBytes(path);
    ByteBuffer b = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
    if (bytes.length < 10 || bytes[0] != (byte) 0x93 || bytes[1] != 'N') throw new IOException(path + ": not .npy");
    int major = bytes[6];
    int headerLength = major == 1 ? (b.getShort(8) & 0xffff) : b.getInt(8);
    int start = major == 1 ? 10 : 12;
    String header = new String(bytes, start, headerLength, StandardCharsets.ISO_8859_1);
    if (!header.contains("'<f4'") || header.contains("'fortran_order': True")) {
      throw new IOException(path + ": not a C-order float32 array: " + header);
    }
    String dims = header.substring(header.indexOf("'shape': (") + 10);
    dims = dims.substring(0, dims.indexOf(')'));
    List<Integer> shape = new ArrayList<>();
    for (String d : dims.split(",")) {
      if (!d.trim().isEmpty()) shape.add(Integer.parseInt(d.trim()));
    }
    int count = 1;
    int[] s = new int[shape.size()];
    for (int i = 0; i < s.length; i++) {
      s[i] = shape.get(i);
      count *= s[i];
    }
    float[] data = new float[count];
    b.position(start + headerLength);
    b.asFloatBuffer().get(data);
    return new Npy(s, data);
  }

  /** Runs a program; returns {exit code, stdout, stderr}. */
  static String[] run(List<String> argv) throws IOException, InterruptedException {
    Path out = tmp("stdout-" + Thread.currentThread().getId());
    Path err = tmp("stderr-" + Thread.currentThread().getId());
    Process p = new ProcessBuilder(argv).redirectOutput(out.toFile()).redirectError(err.toFile()).start();
    if (!p.waitFor(600, TimeUnit.SECONDS)) {
      p.destroyForcibly();
      throw new IOException("timed out: " + argv);
    }
    return new String[] {String.valueOf(p.exitValue()), new String(Files.readAllBytes(out), StandardCharsets.UTF_8),
        new String(Files.readAllBytes(err), StandardCharsets.UTF_8)};
  }

  /** linfer-run as an argv prefix (with the emulator in front in a cross build). */
  static List<String> linferRun() {
    List<String> argv = new ArrayList<>();
    for (String part : property("linfer.run").trim().split("\\s+")) argv.add(part);
    return argv;
  }

  /** Relative error of got against want, scaled by want's largest magnitude (as tests/golden). */
  static double scaledError(float[] got, float[] want) {
    double diff = 0;
    double scale = 1e-30;
    for (int i = 0; i < want.length; i++) {
      diff = Math.max(diff, Math.abs((double) got[i] - want[i]));
      scale = Math.max(scale, Math.abs((double) want[i]));
    }
    return diff / scale;
  }

  static byte[] readAll(InputStream in) throws IOException {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    byte[] buf = new byte[8192];
    for (int n; (n = in.read(buf)) > 0; ) out.write(buf, 0, n);
    return out.toByteArray();
  }

  /** The process's resident set size in bytes (Linux: /proc/self/status). */
  static long rssBytes() throws IOException {
    for (String line : Files.readAllLines(Paths.get("/proc/self/status"), StandardCharsets.UTF_8)) {
      if (line.startsWith("VmRSS:")) {
        return Long.parseLong(line.replaceAll("[^0-9]", "")) * 1024;
      }
    }
    throw new IOException("no VmRSS in /proc/self/status");
  }
}
