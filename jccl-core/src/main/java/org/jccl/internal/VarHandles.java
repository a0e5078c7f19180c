package org.jccl.internal;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/** The one way the runtimes make the VarHandle of a field they read and write with explicit memory ordering. */
public final class VarHandles {
    private VarHandles() {
    }

    /**
     * The VarHandle of field {@code name}, of type {@code type}, of the class {@code lookup} was
     * made in: {@code static final VarHandle X = VarHandles.field(MethodHandles.lookup(), "x", long.class);}
     * (the caller's lookup, so private fields are found). A missing field fails class initialization.
     */
    public static VarHandle field(MethodHandles.Lookup lookup, String name, Class<?> type) {
        try {
            return lookup.findVarHandle(lookup.lookupClass(), name, type);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }
}
