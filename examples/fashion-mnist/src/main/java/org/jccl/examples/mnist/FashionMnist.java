package org.jccl.examples.mnist;

import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.zip.GZIPInputStream;

/**
 * Fashion-MNIST as the IDX files of its distribution (gzip'd, as Debian's dataset-fashion-mnist
 * installs them): 28x28 grey images as bytes, labels 0..9.
 *
 * @param images {@code count * PIXELS} bytes, row after row
 * @param labels {@code count} labels
 * @param count  number of images
 */
record FashionMnist(byte[] images, byte[] labels, int count) {
    static final int PIXELS = 28 * 28;
    static final int CLASSES = 10;
    static final Path DEFAULT_DIR = Path.of("/usr/share/datasets/fashion-mnist");

    /** Reads {@code prefix-images-idx3-ubyte.gz} and {@code prefix-labels-idx1-ubyte.gz} of {@code dir}. */
    static FashionMnist load(Path dir, String prefix) throws IOException {
        Path imageFile = dir.resolve(prefix + "-images-idx3-ubyte.gz");
        Path labelFile = dir.resolve(prefix + "-labels-idx1-ubyte.gz");
        if (!Files.isRegularFile(imageFile) || !Files.isRegularFile(labelFile)) {
            throw new IOException("no Fashion-MNIST in " + dir + " (" + imageFile.getFileName() + "): install it with"
                    + " `apt-get install dataset-fashion-mnist`, or pass --data DIR holding the four IDX .gz files");
        }
        byte[] images;
        int n;
        try (DataInputStream in = open(imageFile)) {
            check(in.readInt(), 0x803, imageFile);
            n = in.readInt();
            int rows = in.readInt();
            int cols = in.readInt();
            if (rows * cols != PIXELS) {
                throw new IOException(imageFile + ": images are " + rows + "x" + cols + ", expected 28x28");
            }
            images = in.readNBytes(n * PIXELS);
        }
        byte[] labels;
        try (DataInputStream in = open(labelFile)) {
            check(in.readInt(), 0x801, labelFile);
            int m = in.readInt();
            if (m != n) {
                throw new IOException(labelFile + " has " + m + " labels for " + n + " images");
            }
            labels = in.readNBytes(n);
        }
        if (images.length != n * PIXELS || labels.length != n) {
            throw new IOException(imageFile + " or " + labelFile + " is truncated");
        }
        return new FashionMnist(images, labels, n);
    }

    private static DataInputStream open(Path file) throws IOException {
        InputStream raw = Files.newInputStream(file);
        return new DataInputStream(new GZIPInputStream(raw, 1 << 16));
    }

    private static void check(int magic, int expected, Path file) throws IOException {
        if (magic != expected) {
            throw new IOException(file + ": magic 0x" + Integer.toHexString(magic) + ", expected 0x"
                    + Integer.toHexString(expected) + " (not an IDX file of this kind)");
        }
    }
}
