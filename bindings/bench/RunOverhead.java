// SPDX-License-Identifier: Apache-2.0
import org.linfer.Model;
import org.linfer.Output;
import org.linfer.Session;

/** The Java binding's time of one run (run_overhead.sh), as run_overhead.c does for the C API:
 * Session.run(int[]) returning a new float[] copy, and run(int[], float[], int[]) into the
 * caller's array. And Session.output() alone (the JNI call and the copy, no computation). Prints "NAME min median"
 * in microseconds. */
public final class RunOverhead {
  public static void main(String[] args) {
    int t = Integer.parseInt(args[1]);
    int runs = Integer.parseInt(args[2]);
    int[] ids = new int[t];
    for (int i = 0; i < t; i++) ids[i] = (i * 37 + 11) % 256;
    try (Model m = Model.load(args[0]); Session s = m.createSession(t, 1)) {
      float[] into = new float[t * m.info().outputChannels];
      int[] shape = new int[2];
      double[] copy = new double[runs];
      double[] direct = new double[runs];
      double[] outputOnly = new double[runs];
      double sink = 0;
      for (int r = -runs / 4; r < runs; r++) { // alternate the two forms
        long t0 = System.nanoTime();
        Output y = s.run(ids);
        long t1 = System.nanoTime();
        s.run(ids, into, shape);
        long t2 = System.nanoTime();
        Output again = s.output(); // the binding's part alone: a JNI call and the output's copy
        long t3 = System.nanoTime();
        sink += y.data()[0] + into[0] + again.data()[0];
        if (r >= 0) {
          copy[r] = (t1 - t0) / 1e3;
          direct[r] = (t2 - t1) / 1e3;
          outputOnly[r] = (t3 - t2) / 1e3;
        }
      }
      java.util.Arrays.sort(copy);
      java.util.Arrays.sort(direct);
      java.util.Arrays.sort(outputOnly);
      System.out.printf("java-copy %.1f %.1f%n", copy[0], copy[runs / 2]);
      System.out.printf("java-output-copy %.1f %.1f%n", outputOnly[0], outputOnly[runs / 2]);
      System.out.printf("java-into %.1f %.1f (%d x %d, %s)%n", direct[0], direct[runs / 2], shape[0], shape[1], sink != 0);
    }
  }
}
