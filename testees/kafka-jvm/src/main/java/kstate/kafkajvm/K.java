package kstate.kafkajvm;

import java.lang.reflect.Constructor;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;

/** Calls into Kafka's package-private classes and methods (the testee lives on the class path, in the unnamed
 *  module, so reflection reaches them). This is how the testee uses Kafka's own code where Kafka does not
 *  publish it, instead of re-implementing it. An exception Kafka throws is re-thrown unwrapped, so that it
 *  becomes a refusal (OPS-3) like one from a public method. */
final class K {
    static final String INTERNALS = "org.apache.kafka.streams.state.internals.";

    private K() { }

    /** A class by name; Kafka 4.4 moved some public-looking classes of kafka-clients into `internals`
     *  (`internal`) sub-packages (ByteUtils, DefaultRecord, AppInfoParser), so those places are tried too. */
    static Class<?> cls(final String name) {
        final String full = name.contains(".") ? name : INTERNALS + name;
        final int dot = full.lastIndexOf('.');
        final String pkg = full.substring(0, dot);
        final String simple = full.substring(dot + 1);
        for (final String candidate : new String[] {full, pkg + ".internals." + simple, pkg + ".internal." + simple}) {
            try {
                return Class.forName(candidate);
            } catch (ClassNotFoundException e) {
                // try the next place
            }
        }
        throw new Unavailable("this Kafka release has no class " + name);
    }

    /** What the release under test lacks: answered `unsupported`, never guessed (TP-5). */
    static final class Unavailable extends RuntimeException {
        Unavailable(final String message) {
            super(message);
        }
    }

    static Method method(final Class<?> cls, final String name, final Class<?>... types) {
        try {
            final Method m = cls.getDeclaredMethod(name, types);
            m.setAccessible(true);
            return m;
        } catch (NoSuchMethodException e) {
            throw new Unavailable("this Kafka release has no " + cls.getSimpleName() + "." + name);
        }
    }

    static Object call(final String cls, final String name, final Class<?>[] types, final Object... args) {
        return invoke(method(cls(cls), name, types), null, args);
    }

    static Object callOn(final Object target, final String name, final Class<?>[] types, final Object... args) {
        Class<?> c = target.getClass();
        while (c != null) {
            try {
                final Method m = c.getDeclaredMethod(name, types);
                m.setAccessible(true);
                return invoke(m, target, args);
            } catch (NoSuchMethodException e) {
                c = c.getSuperclass();
            }
        }
        throw new Unavailable("no method " + name + " on " + target.getClass().getName());
    }

    static Object invoke(final Method m, final Object target, final Object... args) {
        try {
            return m.invoke(target, args);
        } catch (InvocationTargetException e) {
            throw sneaky(e.getCause());
        } catch (IllegalAccessException e) {
            throw new IllegalStateException(e);
        }
    }

    static Object construct(final String cls, final Class<?>[] types, final Object... args) {
        try {
            final Constructor<?> c = cls(cls).getDeclaredConstructor(types);
            c.setAccessible(true);
            return c.newInstance(args);
        } catch (InvocationTargetException e) {
            throw sneaky(e.getCause());
        } catch (NoSuchMethodException e) {
            throw new Unavailable("this Kafka release has no such constructor of " + cls);
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException(e);
        }
    }

    @SuppressWarnings("unchecked")
    static <T extends Throwable> RuntimeException sneaky(final Throwable t) throws T {
        throw (T) t;
    }

    static Class<?>[] t(final Class<?>... types) {
        return types;
    }
}
