// The oracle of tests/unit/offsets/test_connect_format.py: asks the real Debezium MongoDB connector
// (3.6.1.Final) and Kafka Connect (the worker's JsonConverter, the producer's partitioner) which bytes
// they write for the offsets the test describes. Run by the test with Java's single-file launcher on
// the classpath of the Connect distribution tests/services/connect.py caches:
//
//   java -cp '<dist>/lib/*:<dist>/plugins/debezium-connector-mongodb/*' DebeziumOffsetsOracle.java < cases.json
//
// Input: a JSON list of cases; output: a JSON list with one result per case (bytes as Base64).
//   {"kind": "key", "connector": C, "server_id": S, "rs": R|null, "partitions": N}
//       -> {"key": <JsonConverter bytes of [C, MongoDbPartition(S[, R]).getSourcePartition()]>,
//           "murmur2": Utils.murmur2(key), "partition": the default partitioner's partition of N}
//   {"kind": "offset", "stored": {...}, "transaction": {"id": T, "events": ["db.coll", ...]}|absent}
//       -> {"value": <JsonConverter bytes of the offset MongoDbOffsetContext.getOffset() writes after its
//           Loader read "stored" (and, if given, after the transaction's events were counted)>}
//   {"kind": "file", "entries": [[keyBase64, valueBase64|null], ...]}
//       -> {"file": <ObjectOutputStream bytes of the HashMap<byte[], byte[]> a standalone worker saves>}
//   {"kind": "hash", "strings": [...]} -> {"hashes": [String.hashCode(), ...]}
//   {"kind": "hashmap", "keys": [...]} -> {"order": [the keys in a new HashMap's iteration order]}

import java.io.ByteArrayOutputStream;
import java.io.ObjectOutputStream;
import java.lang.reflect.Constructor;
import java.util.Arrays;
import java.util.Base64;
import java.util.HashMap;
import java.util.Map;

import org.apache.kafka.clients.producer.internals.BuiltInPartitioner;
import org.apache.kafka.common.utils.Utils;
import org.apache.kafka.connect.json.JsonConverter;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import io.debezium.config.Configuration;
import io.debezium.connector.mongodb.CollectionId;
import io.debezium.connector.mongodb.MongoDbConnectorConfig;
import io.debezium.connector.mongodb.MongoDbOffsetContext;
import io.debezium.connector.mongodb.MongoDbPartition;
import io.debezium.pipeline.source.snapshot.incremental.IncrementalSnapshotContext;
import io.debezium.pipeline.txmetadata.TransactionContext;

public class DebeziumOffsetsOracle {

    public static void main(String[] args) throws Exception {
        ObjectMapper mapper = new ObjectMapper();
        JsonNode cases = mapper.readTree(System.in);
        JsonConverter converter = new JsonConverter();
        converter.configure(Map.of("schemas.enable", "false"), false);
        Base64.Encoder b64 = Base64.getEncoder();
        MongoDbConnectorConfig config = new MongoDbConnectorConfig(Configuration.create()
                .with("topic.prefix", "oracle")
                .with("mongodb.connection.string", "mongodb://localhost:27017/?replicaSet=rs0")
                .build());
        ArrayNode results = mapper.createArrayNode();
        for (JsonNode c : cases) {
            ObjectNode result = results.addObject();
            switch (c.get("kind").asText()) {
                case "key": {
                    Map<String, String> partition;
                    if (c.get("rs").isNull()) {
                        partition = new MongoDbPartition(c.get("server_id").asText()).getSourcePartition();
                    }
                    else {
                        Constructor<MongoDbPartition> legacy = MongoDbPartition.class.getDeclaredConstructor(String.class, String.class);
                        legacy.setAccessible(true);
                        partition = legacy.newInstance(c.get("server_id").asText(), c.get("rs").asText()).getSourcePartition();
                    }
                    String connector = c.get("connector").asText();
                    byte[] key = converter.fromConnectData(connector, null, Arrays.asList(connector, partition));
                    result.put("key", b64.encodeToString(key));
                    result.put("murmur2", Utils.murmur2(key));
                    result.put("partition", BuiltInPartitioner.partitionForKey(key, c.get("partitions").asInt()));
                    break;
                }
                case "offset": {
                    @SuppressWarnings("unchecked")
                    Map<String, Object> stored = mapper.convertValue(c.get("stored"), Map.class);
                    MongoDbOffsetContext loaded = new MongoDbOffsetContext.Loader(config).load(stored);
                    TransactionContext transaction = new TransactionContext();
                    if (c.has("transaction")) {
                        transaction.beginTransaction(c.get("transaction").get("id").asText());
                        for (JsonNode event : c.get("transaction").get("events")) {
                            transaction.event(CollectionId.parse(event.asText()));
                        }
                    }
                    @SuppressWarnings("unchecked")
                    IncrementalSnapshotContext<CollectionId> incremental = (IncrementalSnapshotContext<CollectionId>) loaded
                            .getIncrementalSnapshotContext();
                    MongoDbOffsetContext context = new MongoDbOffsetContext(loaded.sourceInfo(), transaction, incremental);
                    if (stored.get("initsync") == Boolean.TRUE) {
                        // the Loader of an initsync offset keeps no position; a running snapshot has the one it began at
                        MongoDbOffsetContext position = new MongoDbOffsetContext.Loader(config).load(withoutInitsync(stored));
                        context = new MongoDbOffsetContext(position.sourceInfo(), transaction, incremental);
                        context.sourceInfo().startInitialSnapshot();
                    }
                    result.put("value", b64.encodeToString(converter.fromConnectData("oracle", null, context.getOffset())));
                    break;
                }
                case "file": {
                    Map<byte[], byte[]> raw = new HashMap<>();
                    for (JsonNode entry : c.get("entries")) {
                        raw.put(Base64.getDecoder().decode(entry.get(0).asText()),
                                entry.get(1).isNull() ? null : Base64.getDecoder().decode(entry.get(1).asText()));
                    }
                    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
                    try (ObjectOutputStream out = new ObjectOutputStream(bytes)) {
                        out.writeObject(raw);
                    }
                    result.put("file", b64.encodeToString(bytes.toByteArray()));
                    break;
                }
                case "hash": {
                    ArrayNode hashes = result.putArray("hashes");
                    for (JsonNode s : c.get("strings")) {
                        hashes.add(s.asText().hashCode());
                    }
                    break;
                }
                case "hashmap": {
                    Map<String, Boolean> map = new HashMap<>();
                    for (JsonNode s : c.get("keys")) {
                        map.put(s.asText(), true);
                    }
                    ArrayNode order = result.putArray("order");
                    for (String k : map.keySet()) {
                        order.add(k);
                    }
                    break;
                }
                default:
                    throw new IllegalArgumentException("unknown case " + c);
            }
        }
        System.out.println(mapper.writeValueAsString(results));
    }

    private static Map<String, Object> withoutInitsync(Map<String, Object> stored) {
        Map<String, Object> copy = new HashMap<>(stored);
        copy.remove("initsync");
        return copy;
    }

    private DebeziumOffsetsOracle() {
    }
}
