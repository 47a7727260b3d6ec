import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;

import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * A consumer group member written the way Java applications are: subscribe, poll, commitSync().
 *
 * <p>Usage: {@code GroupReader BOOTSTRAP GROUP TOPIC COUNT READ_PARTITIONS RESET [PROTOCOL]}. It reads
 * {@code COUNT} records ({@code -1}: until every assigned partition is at its end) from the partitions in
 * {@code READ_PARTITIONS} (comma-separated, or {@code all}); the other partitions are paused as soon as they are
 * assigned, so nothing is read from them. Then {@code commitSync()} commits the position of every assigned
 * partition, which for a paused partition is where {@code auto.offset.reset} ({@code RESET}) put it: offset 0 on a
 * partition the group never read, with {@code earliest}. Prints {@code partition offset key} per record read and
 * {@code committed partition offset} per committed partition.
 */
public final class GroupReader {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String group = args[1];
        String topic = args[2];
        long count = Long.parseLong(args[3]);
        Set<Integer> read = new HashSet<>();
        boolean all = args[4].equals("all");
        if (!all) {
            for (String p : args[4].split(",")) {
                read.add(Integer.parseInt(p.trim()));
            }
        }
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        props.put("group.id", group);
        props.put("enable.auto.commit", "false");
        props.put("auto.offset.reset", args[5]);
        props.put("max.poll.records", "50");
        if (args.length > 6) {
            props.put("group.protocol", args[6]);
        }
        props.put("key.deserializer", ByteArrayDeserializer.class.getName());
        props.put("value.deserializer", ByteArrayDeserializer.class.getName());
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props)) {
            consumer.subscribe(List.of(topic), new ConsumerRebalanceListener() {
                @Override
                public void onPartitionsRevoked(Collection<TopicPartition> partitions) {}

                @Override
                public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
                    List<TopicPartition> paused = new ArrayList<>();
                    for (TopicPartition tp : partitions) {
                        if (!all && !read.contains(tp.partition())) {
                            paused.add(tp);
                        }
                    }
                    consumer.pause(paused);
                }
            });
            long got = 0;
            long idleSince = System.nanoTime();
            long deadline = System.nanoTime() + Duration.ofSeconds(120).toNanos();
            Map<TopicPartition, Long> ends = new HashMap<>();
            StringBuilder out = new StringBuilder();
            while (count < 0 || got < count) {
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException("read " + got + " of " + count + " records");
                }
                ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofMillis(200));
                Set<TopicPartition> rewound = new HashSet<>();
                for (ConsumerRecord<byte[], byte[]> record : records) {
                    if (count >= 0 && got >= count) {  // returned but not read: the position goes back to it
                        TopicPartition tp = new TopicPartition(record.topic(), record.partition());
                        if (rewound.add(tp)) {
                            consumer.seek(tp, record.offset());
                        }
                        continue;
                    }
                    got++;
                    out.append(record.partition()).append(' ').append(record.offset()).append(' ')
                        .append(new String(record.key(), java.nio.charset.StandardCharsets.UTF_8)).append('\n');
                }
                if (count < 0) {
                    if (!records.isEmpty()) {
                        idleSince = System.nanoTime();
                        continue;
                    }
                    Set<TopicPartition> assigned = consumer.assignment();
                    if (assigned.isEmpty()) {
                        continue;
                    }
                    ends = consumer.endOffsets(assigned);
                    boolean atEnd = true;
                    for (TopicPartition tp : assigned) {
                        if (consumer.position(tp) < ends.get(tp)) {
                            atEnd = false;
                        }
                    }
                    if (atEnd && System.nanoTime() - idleSince > Duration.ofMillis(500).toNanos()) {
                        break;
                    }
                }
            }
            consumer.commitSync();
            for (TopicPartition tp : consumer.assignment()) {
                out.append("committed ").append(tp.partition()).append(' ').append(consumer.position(tp)).append('\n');
            }
            System.out.print(out);
            System.out.flush();
        }
    }
}
