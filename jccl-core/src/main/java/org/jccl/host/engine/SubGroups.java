package org.jccl.host.engine;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;

/**
 * Who belongs to a communicator made from another: the members of a split's color in their new
 * order, and the survivors of a shrink. Pure functions of what every rank agreed on, so every
 * member computes the same answer.
 */
final class SubGroups {
    private SubGroups() {
    }

    /**
     * The old ranks whose color is {@code color}, ordered by key, ties by old rank (MPI_Comm_split's
     * order); {@code colorKeys} holds every rank's (color, key) pair, rank by rank.
     */
    static int[] splitMembers(int[] colorKeys, int color) {
        List<int[]> members = new ArrayList<>();
        for (int r = 0; r < colorKeys.length / 2; r++) {
            if (colorKeys[2 * r] == color) {
                members.add(new int[] {colorKeys[2 * r + 1], r});
            }
        }
        members.sort((a, b) -> a[0] != b[0] ? Integer.compare(a[0], b[0]) : Integer.compare(a[1], b[1]));
        int[] order = new int[members.size()];
        for (int i = 0; i < order.length; i++) {
            order[i] = members.get(i)[1];
        }
        return order;
    }

    /** The position of {@code rank} in {@code order}, or -1. */
    static int indexOf(int[] order, int rank) {
        for (int i = 0; i < order.length; i++) {
            if (order[i] == rank) {
                return i;
            }
        }
        return -1;
    }

    /** The ranks of {@code [0, size)} not in {@code excluded}, in order. */
    static List<Integer> survivors(int size, Collection<Integer> excluded) {
        List<Integer> out = new ArrayList<>();
        for (int r = 0; r < size; r++) {
            if (!excluded.contains(r)) {
                out.add(r);
            }
        }
        return out;
    }
}
