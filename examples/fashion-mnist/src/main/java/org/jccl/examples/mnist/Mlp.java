package org.jccl.examples.mnist;

import java.util.SplittableRandom;

/**
 * A two-layer perceptron 784-H-10 with ReLU and softmax cross-entropy, in plain Java loops (the
 * JIT vectorizes the inner ones). All parameters live in one {@code float[]} and all gradients in
 * another of the same layout, so that one all-reduce moves every gradient:
 * {@code W1[784][H], b1[H], W2[H][10], b2[10]}.
 */
final class Mlp {
    static final int IN = FashionMnist.PIXELS;
    static final int OUT = FashionMnist.CLASSES;

    final int hidden;
    final int w1;
    final int b1;
    final int w2;
    final int b2;
    final int size;

    // scratch of one batch
    private float[] x = new float[0];
    private float[] h = new float[0];
    private float[] o = new float[0];

    Mlp(int hidden) {
        this.hidden = hidden;
        this.w1 = 0;
        this.b1 = w1 + IN * hidden;
        this.w2 = b1 + hidden;
        this.b2 = w2 + hidden * OUT;
        this.size = b2 + OUT;
    }

    /** He-uniform weights, zero biases, from {@code seed}: the same numbers on every rank. */
    float[] init(long seed) {
        float[] p = new float[size];
        SplittableRandom rnd = new SplittableRandom(seed);
        double a1 = Math.sqrt(6.0 / IN);
        for (int i = 0; i < IN * hidden; i++) {
            p[w1 + i] = (float) ((rnd.nextDouble() * 2 - 1) * a1);
        }
        double a2 = Math.sqrt(6.0 / hidden);
        for (int i = 0; i < hidden * OUT; i++) {
            p[w2 + i] = (float) ((rnd.nextDouble() * 2 - 1) * a2);
        }
        return p;
    }

    /**
     * Forward and backward pass over samples {@code order[from..to)} of {@code data}: writes the
     * gradient of the mean loss of those samples into {@code grad} (overwriting it) and returns
     * that mean loss.
     */
    float gradient(float[] p, FashionMnist data, int[] order, int from, int to, float[] grad) {
        int m = to - from;
        forward(p, data, order, from, to);
        java.util.Arrays.fill(grad, 0, size, 0f);
        double loss = 0;
        float[] dh = new float[hidden];
        float[] dout = new float[OUT];
        for (int i = 0; i < m; i++) {
            int label = data.labels()[order[from + i]];
            int oi = i * OUT;
            softmax(o, oi); // o now holds probabilities
            loss -= Math.log(Math.max(o[oi + label], 1e-30f));
            for (int c = 0; c < OUT; c++) {
                dout[c] = (o[oi + c] - (c == label ? 1f : 0f)) / m;
                grad[b2 + c] += dout[c];
            }
            int hi = i * hidden;
            for (int j = 0; j < hidden; j++) {
                float hj = h[hi + j];
                int row = w2 + j * OUT;
                float s = 0;
                for (int c = 0; c < OUT; c++) {
                    grad[row + c] += hj * dout[c];
                    s += p[row + c] * dout[c];
                }
                dh[j] = hj > 0 ? s : 0f;
                grad[b1 + j] += dh[j];
            }
            int xi = i * IN;
            for (int k = 0; k < IN; k++) {
                float xk = x[xi + k];
                if (xk != 0f) {
                    int row = w1 + k * hidden;
                    for (int j = 0; j < hidden; j++) {
                        grad[row + j] += xk * dh[j];
                    }
                }
            }
        }
        return (float) (loss / m);
    }

    /**
     * Evaluates samples {@code from, from + step, ...} below {@code to}: returns {number correct,
     * sum of losses}.
     */
    double[] evaluate(float[] p, FashionMnist data, int from, int to, int step) {
        int n = 0;
        for (int i = from; i < to; i += step) {
            n++;
        }
        int[] order = new int[n];
        for (int i = from, j = 0; i < to; i += step, j++) {
            order[j] = i;
        }
        forward(p, data, order, 0, n);
        double correct = 0;
        double loss = 0;
        for (int i = 0; i < n; i++) {
            int oi = i * OUT;
            softmax(o, oi);
            int best = 0;
            for (int c = 1; c < OUT; c++) {
                if (o[oi + c] > o[oi + best]) {
                    best = c;
                }
            }
            int label = data.labels()[order[i]];
            correct += best == label ? 1 : 0;
            loss -= Math.log(Math.max(o[oi + label], 1e-30f));
        }
        return new double[] {correct, loss};
    }

    /** x = pixels / 255, h = relu(x W1 + b1), o = h W2 + b2 (logits). */
    private void forward(float[] p, FashionMnist data, int[] order, int from, int to) {
        int m = to - from;
        if (x.length < m * IN) {
            x = new float[m * IN];
            h = new float[m * hidden];
            o = new float[m * OUT];
        }
        byte[] images = data.images();
        for (int i = 0; i < m; i++) {
            int src = order[from + i] * IN;
            int xi = i * IN;
            for (int k = 0; k < IN; k++) {
                x[xi + k] = (images[src + k] & 0xff) * (1f / 255f);
            }
            int hi = i * hidden;
            System.arraycopy(p, b1, h, hi, hidden);
            for (int k = 0; k < IN; k++) {
                float xk = x[xi + k];
                if (xk != 0f) { // a good part of every image is black background
                    int row = w1 + k * hidden;
                    for (int j = 0; j < hidden; j++) {
                        h[hi + j] += xk * p[row + j];
                    }
                }
            }
            for (int j = 0; j < hidden; j++) {
                h[hi + j] = Math.max(h[hi + j], 0f);
            }
            int oi = i * OUT;
            System.arraycopy(p, b2, o, oi, OUT);
            for (int j = 0; j < hidden; j++) {
                float hj = h[hi + j];
                if (hj != 0f) {
                    int row = w2 + j * OUT;
                    for (int c = 0; c < OUT; c++) {
                        o[oi + c] += hj * p[row + c];
                    }
                }
            }
        }
    }

    /** Turns the logits at {@code o[at..at+10)} into probabilities in place. */
    private static void softmax(float[] o, int at) {
        float max = o[at];
        for (int c = 1; c < OUT; c++) {
            max = Math.max(max, o[at + c]);
        }
        float sum = 0;
        for (int c = 0; c < OUT; c++) {
            o[at + c] = (float) Math.exp(o[at + c] - max);
            sum += o[at + c];
        }
        for (int c = 0; c < OUT; c++) {
            o[at + c] /= sum;
        }
    }
}
