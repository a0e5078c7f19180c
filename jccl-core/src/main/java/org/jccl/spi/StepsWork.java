package org.jccl.spi;

import java.time.Duration;
import java.util.List;
import org.jccl.JcclException;
import org.jccl.Work;

/**
 * The work of a variable-size call ({@link VarSize}): done when every step's work is; its failure
 * is the first failed step's (in posting order).
 */
final class StepsWork implements Work {
    private final String name;
    private final List<Work> steps;

    StepsWork(String name, List<Work> steps) {
        this.name = name;
        this.steps = List.copyOf(steps);
    }

    @Override
    public boolean isDone() {
        for (Work w : steps) {
            if (!w.isDone()) {
                return false;
            }
        }
        return true;
    }

    @Override
    public void await() {
        JcclException first = null;
        for (Work w : steps) {
            try {
                w.await();
            } catch (JcclException e) {
                if (first == null) {
                    first = e;
                }
            }
        }
        if (first != null) {
            throw first;
        }
    }

    @Override
    public boolean await(Duration timeout) {
        long end = System.nanoTime() + timeout.toNanos();
        for (Work w : steps) {
            long left = end - System.nanoTime();
            if (!w.isDone() && (left <= 0 || !w.await(Duration.ofNanos(left)))) {
                return false;
            }
        }
        JcclException e = exception();
        if (e != null) {
            throw e;
        }
        return true;
    }

    @Override
    public JcclException exception() {
        for (Work w : steps) {
            JcclException e = w.exception();
            if (e != null) {
                return e;
            }
        }
        return null;
    }

    @Override
    public String toString() {
        return name + " (" + steps.size() + " steps)";
    }
}
