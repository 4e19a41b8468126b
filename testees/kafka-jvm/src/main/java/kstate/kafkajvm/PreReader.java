package kstate.kafkajvm;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;

/** The reader before 4.3 (UPG-1, UPG-2, UPG-4): {@code store.open} with {@code pre_4_3_reader} is Kafka
 *  {@value #RELEASE}'s own store over the directory, a release without the offsets column family (KIP-1035).
 *  The testee starts a child JVM on that release's kafka-streams and kafka-clients jars (copied by the pom into
 *  {@code target/<version>/pre-4.3/}) running this same testee, and hands it the open and every later operation
 *  on the handle it answers; the child's answer is returned as it is. One child per opened handle: its close ends
 *  the child, and a refused open ends it at once. */
final class PreReader {
    /** The release the child runs (the pom's kafka.pre43.version). */
    static final String RELEASE = "4.2.1";
    /** Set in the child JVM: it is the pre-4.3 release, whose stores know no offsets (Stores.open). */
    static final boolean CHILD = Boolean.getBoolean("kstate.kafkajvm.pre43");

    private static final AtomicInteger IDS = new AtomicInteger();
    /** The parent's handle ("pre43-N") to the child holding the store and the child's own handle for it. */
    private static final Map<String, Child> HANDLES = new LinkedHashMap<>();

    private PreReader() { }

    /** A child testee on Kafka {@value #RELEASE}, spoken to in the testee protocol (spec/testee-protocol.md). */
    private static final class Child {
        final Process process;
        final BufferedReader out;
        final OutputStream in;
        String handle;
        String name;
        boolean closed;
        long nextId = 1;

        Child(final Process process) {
            this.process = process;
            this.out = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
            this.in = process.getOutputStream();
        }

        /** The child's whole response to one request (id, and output, error, unsupported or internal_error). */
        ObjectNode call(final String op, final JsonNode input) throws IOException {
            final ObjectNode request = Json.obj().put("id", nextId++).put("op", op);
            request.set("input", input);
            in.write((Json.MAPPER.writeValueAsString(request) + "\n").getBytes(StandardCharsets.UTF_8));
            in.flush();
            final String line = out.readLine();
            if (line == null) {
                throw new IllegalStateException("the Kafka " + RELEASE + " reader exited (exit "
                    + exitOf(process) + ") without answering " + op);
            }
            return (ObjectNode) Json.MAPPER.readTree(line);
        }

        void stop() {
            try {
                call("shutdown", Json.obj());
                if (!process.waitFor(30, TimeUnit.SECONDS)) {
                    process.destroyForcibly();
                }
            } catch (IOException | RuntimeException e) {
                process.destroyForcibly();
            } catch (InterruptedException e) {
                process.destroyForcibly();
                Thread.currentThread().interrupt();
            }
        }
    }

    private static String exitOf(final Process p) {
        try {
            return p.waitFor(5, TimeUnit.SECONDS) ? String.valueOf(p.exitValue()) : "none, still running";
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return "unknown";
        }
    }

    /** Whether the parent hands this request to a pre-4.3 child: an open asking for the older reader, or any
     *  operation on a handle such an open answered. Never in the child itself, which is that reader. */
    static boolean routes(final String op, final JsonNode input) {
        if (CHILD || !input.isObject()) {
            return false;
        }
        if (op.equals("store.open")) {
            return input.path("pre_4_3_reader").isBoolean() && input.get("pre_4_3_reader").booleanValue();
        }
        return input.path("handle").isTextual() && HANDLES.containsKey(input.get("handle").textValue())
            || input.path("iterator").isTextual() && HANDLES.containsKey(ownerOf(input.get("iterator").textValue()));
    }

    /** The parent's handle an iterator of a child belongs to: the child's iterator id is handed on as
     *  {@code <parent handle>~<child iterator id>}. */
    private static String ownerOf(final String iterator) {
        final int cut = iterator.indexOf('~');
        return cut < 0 ? "" : iterator.substring(0, cut);
    }

    /** The child's answer to a routed request, without its id (the caller sets its own). */
    static ObjectNode answer(final String op, final JsonNode input) throws IOException {
        final ObjectNode forwarded = input.deepCopy();
        if (op.equals("store.open")) {
            forwarded.remove("pre_4_3_reader");
            final Child child = start();
            final ObjectNode response;
            try {
                response = child.call(op, forwarded);
            } catch (IOException | RuntimeException e) {
                child.process.destroyForcibly();
                throw e;
            }
            response.remove("id");
            final JsonNode output = response.get("output");
            if (output == null || !output.path("handle").isTextual()) {
                // Refused (or unsupported) by Kafka RELEASE: nothing stays open in the child.
                child.stop();
                if (response.path("reason").isTextual()) {
                    response.put("reason", "the pre-4.3 reader, Kafka " + RELEASE + ": " + response.get("reason").textValue());
                }
                return response;
            }
            child.handle = output.get("handle").textValue();
            child.name = input.path("name").asText("store");
            final String id = "pre43-" + IDS.incrementAndGet();
            HANDLES.put(id, child);
            ((ObjectNode) output).put("handle", id);
            ((ObjectNode) output).put("kafka_version", RELEASE);
            return response;
        }
        final boolean onIterator = !input.path("handle").isTextual();
        final String id = onIterator ? ownerOf(input.get("iterator").textValue()) : input.get("handle").textValue();
        final Child child = HANDLES.get(id);
        if (child.closed) {
            // The child ended with the store's close. Closing a closed Kafka store does nothing; any other call on
            // it is refused as the metered store refuses a closed one.
            if (op.equals("store.close")) {
                return Json.obj().set("output", Json.obj());
            }
            throw new org.apache.kafka.streams.errors.InvalidStateStoreException("Store " + child.name + " is currently closed.");
        }
        if (onIterator) {
            forwarded.put("iterator", input.get("iterator").textValue().substring(id.length() + 1));
        } else {
            forwarded.put("handle", child.handle);
        }
        final ObjectNode response = child.call(op, forwarded);
        response.remove("id");
        if (response.path("output").path("iterator").isTextual()) {
            ((ObjectNode) response.get("output")).put("iterator", id + "~" + response.get("output").get("iterator").textValue());
        }
        if (op.equals("store.close") && !onIterator) {
            child.closed = true;
            child.stop();
        }
        return response;
    }

    /** Ends every child (the parent's shutdown): each closes its stores as the testee does at shutdown. */
    static void closeAll() {
        for (final Child child : HANDLES.values()) {
            if (!child.closed) {
                child.closed = true;
                child.stop();
            }
        }
        HANDLES.clear();
    }

    /** A child JVM running this testee over Kafka RELEASE: the parent's class path with its Kafka jars (and the test
     *  utilities, which the stores do not use) replaced by the release's jars. */
    private static Child start() throws IOException {
        final Path classes;
        try {
            classes = Path.of(PreReader.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        } catch (URISyntaxException e) {
            throw new IllegalStateException("the testee's class directory is not a path", e);
        }
        final Path jars = classes.getParent().resolve("pre-4.3");
        final List<String> release = new ArrayList<>();
        if (Files.isDirectory(jars)) {
            try (Stream<Path> listed = Files.list(jars)) {
                listed.map(Path::toString).filter(p -> p.endsWith("-" + RELEASE + ".jar")).sorted().forEach(release::add);
            }
        }
        if (release.size() != 2) {
            throw new K.Unavailable("the Kafka " + RELEASE + " jars (kafka-streams, kafka-clients) are not in " + jars
                + "; build the testee again (mvn compile copies them there)");
        }
        final List<String> path = new ArrayList<>();
        path.add(classes.toString());
        path.addAll(release);
        for (final String entry : System.getProperty("java.class.path").split(File.pathSeparator)) {
            final String file = Path.of(entry).getFileName().toString();
            if (!Path.of(entry).equals(classes) && !file.startsWith("kafka-streams-") && !file.startsWith("kafka-clients-")) {
                path.add(entry);
            }
        }
        final String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        final ProcessBuilder builder = new ProcessBuilder(java, "-Xss4m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
            "-Dkstate.kafkajvm.pre43=true", "-cp", String.join(File.pathSeparator, path), Main.class.getName());
        // The child's diagnostics go where the parent's go; its standard output is the protocol.
        builder.redirectError(ProcessBuilder.Redirect.INHERIT);
        final Child child = new Child(builder.start());
        final ObjectNode hello = child.call("hello", Json.obj().put("protocol", 1));
        final String version = hello.path("output").path("version").asText("");
        if (!version.equals(RELEASE)) {
            child.process.destroyForcibly();
            throw new IllegalStateException("the pre-4.3 reader runs Kafka " + version + ", not " + RELEASE + ": " + hello);
        }
        return child;
    }
}
