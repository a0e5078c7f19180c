package org.jccl.internal;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/** The VarHandles of fields, for {@code static final} initialisers. */
public final class VarHandles {
    private VarHandles() {
    }

    /**
     * The handle of field {@code name} (of {@code type}) of the class that made {@code lookup}
     * (pass {@code MethodHandles.lookup()}: private fields need its access).
     *
     * @throws ExceptionInInitializerError when there is no such field
     */
    public static VarHandle field(MethodHandles.Lookup lookup, String name, Class<?> type) {
        try {
            return lookup.findVarHandle(lookup.lookupClass(), name, type);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }
}
