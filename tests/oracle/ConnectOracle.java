// Kafka Connect's own transforms, predicates and converters applied to recorded records: the oracle of
// mongocdc/events/connect (tests/oracle/connect_oracle.py runs it; Java's single-file launch compiles it).
//
// Reads from standard input one JSON document {"cases": [{"config": {...}, "records": [...]}, ...]}, where a
// config is a connector configuration (transforms, predicates, key/value/header converters and their settings)
// and a record is {"topic", "partition", "key", "value", "timestamp", "headers": [[name, text], ...]} with key and value as
// the JSON text (with schemas) of the record Debezium's connector produces. Each record is read with
// JsonConverter (schemas.enable=true) into Connect's data, becomes a SourceRecord with string headers, runs
// through the chain as Kafka Connect's TransformationChain does (a predicate, negated or not, decides whether a
// transform applies; a null record is dropped) and is written by the converters. Writes one JSON document
// {"cases": [{"error": "..."} | {"records": [{"dropped": true} | {"error": "..."} | {"topic", "partition",
// "key", "value", "timestamp", "headers"}]}]} with key, value and header values in Base64.
//
// The chain is built the way ConnectorConfig builds it: for each alias of "transforms", the class of
// "transforms.<alias>.type" configured with every "transforms.<alias>." key (the prefix stripped), and its
// predicate from "predicates.<name>.type" with the "predicates.<name>." keys.

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.connect.connector.ConnectRecord;
import org.apache.kafka.connect.data.SchemaAndValue;
import org.apache.kafka.connect.header.ConnectHeaders;
import org.apache.kafka.connect.header.Header;
import org.apache.kafka.connect.json.JsonConverter;
import org.apache.kafka.connect.source.SourceRecord;
import org.apache.kafka.connect.storage.Converter;
import org.apache.kafka.connect.storage.HeaderConverter;
import org.apache.kafka.connect.storage.SimpleHeaderConverter;
import org.apache.kafka.connect.transforms.Transformation;
import org.apache.kafka.connect.transforms.predicates.Predicate;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;

public class ConnectOracle {
    static final ObjectMapper MAPPER = new ObjectMapper();

    record Stage(Transformation<SourceRecord> transform, Predicate<SourceRecord> predicate, boolean negate) {}

    public static void main(String[] args) throws Exception {
        // Standard output carries the answer only: whatever the classes log or print goes to standard error.
        java.io.PrintStream answer = System.out;
        System.setOut(System.err);
        JsonNode input = MAPPER.readTree(System.in);
        ObjectNode output = MAPPER.createObjectNode();
        ArrayNode cases = output.putArray("cases");
        for (JsonNode c : input.get("cases")) {
            cases.add(runCase(c));
        }
        answer.write(MAPPER.writeValueAsBytes(output));
        answer.flush();
    }

    static Map<String, String> withPrefix(Map<String, String> config, String prefix) {
        Map<String, String> result = new HashMap<>();
        for (Map.Entry<String, String> e : config.entrySet()) {
            if (e.getKey().startsWith(prefix)) result.put(e.getKey().substring(prefix.length()), e.getValue());
        }
        return result;
    }

    static String describe(Throwable t) {
        String name = t.getClass().getName();
        return name + ": " + t.getMessage();
    }

    @SuppressWarnings("unchecked")
    static ObjectNode runCase(JsonNode c) {
        ObjectNode result = MAPPER.createObjectNode();
        Map<String, String> config = new HashMap<>();
        Iterator<Map.Entry<String, JsonNode>> it = c.get("config").fields();
        while (it.hasNext()) {
            Map.Entry<String, JsonNode> e = it.next();
            config.put(e.getKey(), e.getValue().asText());
        }
        List<Stage> stages = new ArrayList<>();
        Converter keyConverter, valueConverter;
        HeaderConverter headerConverter;
        try {
            String aliases = config.getOrDefault("transforms", "");
            for (String raw : aliases.split(",")) {
                String alias = raw.trim();
                if (alias.isEmpty()) continue;
                String prefix = "transforms." + alias + ".";
                Map<String, String> props = withPrefix(config, prefix);
                Transformation<SourceRecord> t = (Transformation<SourceRecord>) Class.forName(props.get("type"))
                        .getDeclaredConstructor().newInstance();
                t.configure(props);
                Predicate<SourceRecord> p = null;
                String predicateName = props.get("predicate");
                if (predicateName != null && !predicateName.isEmpty()) {
                    Map<String, String> pprops = withPrefix(config, "predicates." + predicateName + ".");
                    p = (Predicate<SourceRecord>) Class.forName(pprops.get("type")).getDeclaredConstructor().newInstance();
                    p.configure(pprops);
                }
                stages.add(new Stage(t, p, Boolean.parseBoolean(props.getOrDefault("negate", "false"))));
            }
            keyConverter = converter(config, "key", true);
            valueConverter = converter(config, "value", false);
            headerConverter = (HeaderConverter) Class.forName(
                    config.getOrDefault("header.converter", SimpleHeaderConverter.class.getName()))
                    .getDeclaredConstructor().newInstance();
            headerConverter.configure(withPrefix(config, "header.converter."));
        } catch (Throwable t) {
            Throwable cause = t;
            while (cause.getCause() != null && !(cause instanceof ConfigException)) cause = cause.getCause();
            result.put("error", describe(cause));
            return result;
        }
        JsonConverter reader = new JsonConverter();
        reader.configure(Map.of("schemas.enable", "true"), false);
        ArrayNode records = result.putArray("records");
        // Debezium's tombstone shares the ConnectHeaders object of the delete before it (EventDispatcher makes it
        // with record.headers()), so headers a transform adds in place to the delete are on the tombstone too.
        String previousTopic = null;
        String previousKey = null;
        ConnectHeaders previousHeaders = null;
        for (JsonNode r : c.get("records")) {
            ObjectNode out = records.addObject();
            try {
                String topic = r.get("topic").asText();
                SchemaAndValue key = reader.toConnectData(topic, bytes(r.get("key")));
                SchemaAndValue value = reader.toConnectData(topic, bytes(r.get("value")));
                String keyText = r.hasNonNull("key") ? r.get("key").asText() : null;
                boolean tombstoneOfPrevious = !r.hasNonNull("value") && topic.equals(previousTopic)
                        && java.util.Objects.equals(keyText, previousKey) && previousHeaders != null;
                ConnectHeaders headers = tombstoneOfPrevious ? previousHeaders : new ConnectHeaders();
                if (!tombstoneOfPrevious && r.has("headers")) {
                    for (JsonNode h : r.get("headers")) headers.addString(h.get(0).asText(), h.get(1).isNull() ? null : h.get(1).asText());
                }
                previousTopic = topic;
                previousKey = keyText;
                previousHeaders = headers;
                Long timestamp = r.hasNonNull("timestamp") ? r.get("timestamp").asLong() : null;
                Integer partition = r.hasNonNull("partition") ? r.get("partition").asInt() : null;
                SourceRecord record = new SourceRecord(Map.of(), Map.of(), topic, partition,
                        key.schema(), key.value(), value.schema(), value.value(), timestamp, headers);
                for (Stage stage : stages) {
                    if (stage.predicate == null || stage.predicate.test(record) != stage.negate) {
                        record = stage.transform.apply(record);
                        if (record == null) break;
                    }
                }
                if (record == null) {
                    out.put("dropped", true);
                    continue;
                }
                // As WorkerSourceTask: the headers are converted first, then the key and the value with them.
                RecordHeaders kafkaHeaders = new RecordHeaders();
                for (Header h : record.headers()) {
                    kafkaHeaders.add(h.key(), headerConverter.fromConnectHeader(record.topic(), h.key(), h.schema(), h.value()));
                }
                byte[] k = keyConverter.fromConnectData(record.topic(), kafkaHeaders, record.keySchema(), record.key());
                byte[] v = valueConverter.fromConnectData(record.topic(), kafkaHeaders, record.valueSchema(), record.value());
                out.put("topic", record.topic());
                if (record.kafkaPartition() == null) out.putNull("partition"); else out.put("partition", record.kafkaPartition());
                put(out, "key", k);
                put(out, "value", v);
                if (record.timestamp() == null) out.putNull("timestamp"); else out.put("timestamp", record.timestamp());
                ArrayNode hs = out.putArray("headers");
                for (org.apache.kafka.common.header.Header h : kafkaHeaders) {
                    ArrayNode pair = hs.addArray();
                    pair.add(h.key());
                    if (h.value() == null) pair.addNull(); else pair.add(Base64.getEncoder().encodeToString(h.value()));
                }
            } catch (Throwable t) {
                out.removeAll();
                out.put("error", describe(t));
            }
        }
        return result;
    }

    static Converter converter(Map<String, String> config, String side, boolean isKey) throws Exception {
        String cls = config.getOrDefault(side + ".converter", JsonConverter.class.getName());
        Converter converter = (Converter) Class.forName(cls).getDeclaredConstructor().newInstance();
        converter.configure(withPrefix(config, side + ".converter."), isKey);
        return converter;
    }

    static byte[] bytes(JsonNode node) {
        return node == null || node.isNull() ? null : node.asText().getBytes(StandardCharsets.UTF_8);
    }

    static void put(ObjectNode out, String name, byte[] data) {
        if (data == null) out.putNull(name); else out.put(name, Base64.getEncoder().encodeToString(data));
    }
}
