package kstate.streams;

import java.math.BigInteger;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.kafka.streams.processor.TaskId;
import org.apache.kafka.streams.processor.assignment.ApplicationState;
import org.apache.kafka.streams.processor.assignment.KafkaStreamsAssignment;
import org.apache.kafka.streams.processor.assignment.KafkaStreamsState;
import org.apache.kafka.streams.processor.assignment.ProcessId;
import org.apache.kafka.streams.processor.assignment.TaskAssignor;

/**
 * The kit assigns partitions in the config (INST-10); Kafka Streams assigns them through its group. This KIP-924
 * task assignor (`task.assignor.class`) makes the group's assignment the config's: each instance announces its
 * configured partitions as a client tag, and the group leader gives active task 0_p to the member whose tag lists p.
 * A task no member lists stays unassigned (another implementation, outside the group, owns it in a mixed fleet).
 */
public final class ConfiguredPartitionsAssignor implements TaskAssignor {
    /** Client tag keys are at most 20 characters and values at most 30 (StreamsConfig's client tag limits). */
    static final String TAG = "kstate.partitions";
    static final int MAX_PARTITIONS = 30 * 4;

    /** The partitions as a hexadecimal bit set: 30 characters hold partitions 0..119. */
    static String encode(List<Integer> partitions) {
        BigInteger bits = BigInteger.ZERO;
        for (int p : partitions) {
            bits = bits.setBit(p);
        }
        return bits.toString(16);
    }

    static Set<Integer> decode(String tag) {
        Set<Integer> out = new HashSet<>();
        if (tag == null || tag.isEmpty()) {
            return out;
        }
        BigInteger bits = new BigInteger(tag, 16);
        for (int p = 0; p < bits.bitLength(); p++) {
            if (bits.testBit(p)) {
                out.add(p);
            }
        }
        return out;
    }

    @Override
    public TaskAssignment assign(ApplicationState state) {
        Map<ProcessId, KafkaStreamsState> clients = state.kafkaStreamsStates(false);
        List<KafkaStreamsAssignment> out = new ArrayList<>();
        Set<TaskId> given = new HashSet<>();
        for (KafkaStreamsState client : clients.values()) {
            Set<Integer> wanted = decode(client.clientTags().get(TAG));
            Set<KafkaStreamsAssignment.AssignedTask> tasks = new HashSet<>();
            for (TaskId task : state.allTasks().keySet()) {
                // One sub-topology (INST-10): task 0_p is partition p; a task is never given twice.
                if (task.subtopology() == 0 && wanted.contains(task.partition()) && given.add(task)) {
                    tasks.add(new KafkaStreamsAssignment.AssignedTask(task, KafkaStreamsAssignment.AssignedTask.Type.ACTIVE));
                }
            }
            out.add(KafkaStreamsAssignment.of(client.processId(), tasks));
        }
        return new TaskAssignment(out);
    }
}
