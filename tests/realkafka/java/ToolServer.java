import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.PrintStream;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.common.utils.Time;

/**
 * Runs Kafka's command-line tools (TransactionsCommand, ConsumerGroupCommand, DumpLogSegments,
 * ...) one after another in one JVM, so the tests pay the JVM start once.
 *
 * <p>Each request is one line on stdin: the tool's main class, then its arguments, separated by
 * tabs. Each answer on stdout is a header line {@code <exit status> <stdout bytes> <stderr bytes>}
 * followed by the tool's stdout and stderr. Kafka's {@code Exit} procedures are replaced so a tool
 * that calls {@code Exit.exit} ends its request, not the JVM. {@code System.out} is swapped before
 * anything else runs, so Scala's {@code Console} (captured once) writes through it too.
 *
 * <p>TransactionsCommand never closes its admin client (the JVM's exit would): it runs through its
 * own {@code execute} seam with an admin supplier that remembers the client, closed after the
 * request, or every request would leave a client reconnecting to brokers long stopped.
 */
public final class ToolServer {
    private static final class ExitCalled extends RuntimeException {
        final int status;

        ExitCalled(int status) {
            super(null, null, false, false);
            this.status = status;
        }
    }

    private static final class Switch extends OutputStream {
        volatile OutputStream target;

        Switch(OutputStream target) {
            this.target = target;
        }

        @Override
        public void write(int b) throws java.io.IOException {
            target.write(b);
        }

        @Override
        public void write(byte[] b, int off, int len) throws java.io.IOException {
            target.write(b, off, len);
        }
    }

    private static void replaceExit() throws Exception {
        Class<?> exit;
        try {
            exit = Class.forName("org.apache.kafka.common.utils.internals.Exit");
        } catch (ClassNotFoundException e) {
            exit = Class.forName("org.apache.kafka.common.utils.Exit");
        }
        Class<?> procedure = Class.forName(exit.getName() + "$Procedure");
        Object thrower = Proxy.newProxyInstance(procedure.getClassLoader(), new Class<?>[] {procedure},
            (proxy, method, args) -> {
                if (method.getName().equals("execute")) {
                    throw new ExitCalled((Integer) args[0]);
                }
                return method.invoke(proxy, args);
            });
        exit.getMethod("setExitProcedure", procedure).invoke(null, thrower);
        exit.getMethod("setHaltProcedure", procedure).invoke(null, thrower);
    }

    private static final String TRANSACTIONS_COMMAND = "org.apache.kafka.tools.TransactionsCommand";

    private static void runTool(String className, String[] args) throws Throwable {
        Class<?> tool = Class.forName(className);
        if (!className.equals(TRANSACTIONS_COMMAND)) {
            tool.getMethod("main", String[].class).invoke(null, (Object) args);
            return;
        }
        Method build = tool.getDeclaredMethod("buildAdminClient",
            Class.forName("net.sourceforge.argparse4j.inf.Namespace"));
        build.setAccessible(true);
        Method execute = tool.getDeclaredMethod("execute", String[].class, Function.class,
            PrintStream.class, Time.class);
        execute.setAccessible(true);
        List<Admin> created = new ArrayList<>();
        Function<Object, Admin> supplier = ns -> {
            try {
                Admin admin = (Admin) build.invoke(null, ns);
                created.add(admin);
                return admin;
            } catch (ReflectiveOperationException e) {
                throw new IllegalStateException(e);
            }
        };
        try {
            execute.invoke(null, args, supplier, System.out, Time.SYSTEM);
        } finally {
            for (Admin admin : created) {
                admin.close(Duration.ZERO);
            }
        }
    }

    public static void main(String[] argv) throws Exception {
        PrintStream realOut = new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), true);
        Switch out = new Switch(OutputStream.nullOutputStream());
        Switch err = new Switch(System.err);
        System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
        System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
        replaceExit();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isEmpty()) {
                continue;
            }
            String[] parts = line.split("\t", -1);
            String[] args = java.util.Arrays.copyOfRange(parts, 1, parts.length);
            ByteArrayOutputStream captured = new ByteArrayOutputStream();
            ByteArrayOutputStream capturedErr = new ByteArrayOutputStream();
            out.target = captured;
            err.target = capturedErr;
            int status = 0;
            try {
                runTool(parts[0], args);
            } catch (InvocationTargetException e) {
                Throwable cause = e.getCause();
                if (cause instanceof ExitCalled) {
                    status = ((ExitCalled) cause).status;
                } else {
                    status = 255;
                    cause.printStackTrace(System.err);
                }
            } catch (ExitCalled e) {
                status = e.status;
            } catch (Throwable e) {
                status = 255;
                e.printStackTrace(System.err);
            }
            System.out.flush();
            System.err.flush();
            out.target = OutputStream.nullOutputStream();
            err.target = OutputStream.nullOutputStream();
            byte[] o = captured.toByteArray();
            byte[] r = capturedErr.toByteArray();
            synchronized (realOut) {
                realOut.write((status + " " + o.length + " " + r.length + "\n").getBytes(StandardCharsets.US_ASCII));
                realOut.write(o);
                realOut.write(r);
                realOut.flush();
            }
        }
    }
}
