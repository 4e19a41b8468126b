package kstate.streams;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.LinkedHashMap;
import java.util.Map;

/** The files the kit reads: the events file (INST-21) and the status file (INST-20). */
final class Reporter {
    private static final ObjectMapper JSON = new ObjectMapper();
    private final String instanceId;
    private final long pid = ProcessHandle.current().pid();
    private final FileOutputStream events;
    private final Path statusPath;

    Reporter(InstanceConfig config) throws IOException {
        Path dir = Path.of(config.statusDir);
        Files.createDirectories(dir);
        this.instanceId = config.instanceId;
        this.events = new FileOutputStream(dir.resolve(config.instanceId + ".events.jsonl").toFile(), true);
        this.statusPath = dir.resolve(config.instanceId + ".status.json");
    }

    long pid() {
        return pid;
    }

    /** One JSON line per event, written with one write call and flushed at once, so a SIGKILL cuts at most one. */
    synchronized void event(String kind, Map<String, ?> fields) {
        Map<String, Object> line = new LinkedHashMap<>();
        line.put("event", kind);
        line.put("instance", instanceId);
        line.put("pid", pid);
        line.put("time", System.currentTimeMillis() / 1000.0);
        line.putAll(fields);
        try {
            events.write((JSON.writeValueAsString(line) + "\n").getBytes(StandardCharsets.UTF_8));
            events.flush();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The whole status, written to a temporary file and renamed over the old one (INST-20). */
    synchronized void status(Map<String, ?> fields) {
        Map<String, Object> status = new LinkedHashMap<>();
        status.put("instance", instanceId);
        status.put("pid", pid);
        status.putAll(fields);
        Path tmp = statusPath.resolveSibling(statusPath.getFileName() + ".tmp");
        try {
            Files.write(tmp, JSON.writeValueAsBytes(status));
            Files.move(tmp, statusPath, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
