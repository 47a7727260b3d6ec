// Launcher for de.bwaldvogel:mongo-java-server used by mongocdc's tests (tests/services/mongo.py).
//
// mongo-java-server is a library without a main class.  This file starts it on a loopback
// port with the oplog enabled (that is what makes $changeStream work) and, because mongocdc and
// its tests connect with a replicaSet= URI (as to a real deployment), it decorates the
// hello/isMaster reply with single-member replica-set fields (setName, hosts, primary, me, ...),
// answers "hello" (which 1.47.0 lacks) like "isMaster", adds "operationTime" to command replies
// (pymongo needs it to open a change stream), and reports wire version 13 for the
// emulated MongoDB 5.0 (1.47.0 says 8, which pymongo 4.20 refuses: it needs >= 9).  Nothing else about the
// server's behaviour is changed.
//
// Usage: java -cp 'lib/*:classes' MongoJavaServerLauncher
//            [--host 127.0.0.1] [--port 0] [--data-file PATH] [--repl-set rs0]
// With --data-file the H2 MVStore backend persists data (and the oplog) in PATH; otherwise the
// in-memory backend is used.  Once listening it prints "LISTENING host:port" on stdout.
// SIGTERM/SIGINT shut it down cleanly (the H2 store is committed and closed).

import de.bwaldvogel.mongo.MongoBackend;
import de.bwaldvogel.mongo.MongoServer;
import de.bwaldvogel.mongo.MongoVersion;
import de.bwaldvogel.mongo.backend.h2.H2Backend;
import de.bwaldvogel.mongo.backend.memory.MemoryBackend;
import de.bwaldvogel.mongo.bson.BsonTimestamp;
import de.bwaldvogel.mongo.bson.Document;
import de.bwaldvogel.mongo.oplog.Oplog;
import io.netty.channel.Channel;

import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.net.InetSocketAddress;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CountDownLatch;

public final class MongoJavaServerLauncher {

    /** Adds single-member replica-set fields to a hello/isMaster reply (in place). */
    static final class ReplicaSetHello {
        private final String replSetName;
        private volatile String me = "";

        ReplicaSetHello(String replSetName) {
            this.replSetName = replSetName;
        }

        void setMe(String me) {
            this.me = me;
        }

        /** mongo-java-server 1.47.0 knows "isMaster" but not "hello" (MongoDB >= 4.4.2). */
        String delegateName(String command) {
            return command.equalsIgnoreCase("hello") ? "isMaster" : command;
        }

        Document decorate(String command, Document reply, Oplog oplog) {
            if (reply == null) {
                return null;
            }
            addOperationTime(reply, oplog);
            String lower = command.toLowerCase(Locale.ROOT);
            if (!(lower.equals("hello") || lower.equals("ismaster"))) {
                return reply;
            }
            if (lower.equals("hello")) {
                reply.remove("ismaster");
                reply.put("isWritablePrimary", true);
            }
            if (replSetName.isEmpty()) {
                return reply;
            }
            reply.put("setName", replSetName);
            reply.put("setVersion", 1);
            reply.put("hosts", List.of(me));
            reply.put("primary", me);
            reply.put("me", me);
            reply.put("secondary", false);
            if (!reply.containsKey("logicalSessionTimeoutMinutes")) {
                reply.put("logicalSessionTimeoutMinutes", 30);
            }
            return reply;
        }
    }

    /**
     * Replica-set members put "operationTime" (the time of the latest oplog entry) in every command
     * reply, and pymongo requires it in the reply that opens a change stream (it is the stream's
     * start time when no resume token is known yet).  mongo-java-server 1.47.0 does not send it,
     * so take it from the oplog's own clock, i.e. the timestamp its next entry will exceed.
     */
    static void addOperationTime(Document reply, Oplog oplog) {
        if (reply.containsKey("operationTime") || oplog == null) {
            return;
        }
        try {
            Field clockField = oplog.getClass().getDeclaredField("oplogClock");
            clockField.setAccessible(true);
            Object clock = clockField.get(oplog);
            Method now = clock.getClass().getDeclaredMethod("now");
            now.setAccessible(true);
            BsonTimestamp timestamp = (BsonTimestamp) now.invoke(clock);
            reply.put("operationTime", timestamp);
        } catch (NoSuchFieldException e) {
            // NoopOplog (oplog disabled): nothing to report.
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("cannot read the oplog clock of " + oplog.getClass(), e);
        }
    }

    /**
     * mongo-java-server 1.47.0 pairs its "5.0" version with wire version 8, which pymongo 4.20
     * refuses (it needs >= 9).  Report MongoDB 5.0's real wire version, 13.
     */
    static final class Mongo50 implements MongoVersion {
        @Override public List<Integer> getVersionArray() { return List.of(5, 0, 0); }
        @Override public int getWireVersion() { return 13; }
    }

    public static void main(String[] args) throws Exception {
        String host = "127.0.0.1";
        int port = 0;
        String dataFile = null;
        String replSet = "rs0";
        for (int i = 0; i < args.length; i++) {
            String value = i + 1 < args.length ? args[i + 1] : null;
            switch (args[i]) {
                case "--host": host = value; i++; break;
                case "--port": port = Integer.parseInt(value); i++; break;
                case "--data-file": dataFile = value; i++; break;
                case "--repl-set": replSet = value; i++; break;
                default:
                    System.err.println("unknown argument: " + args[i]);
                    System.exit(2);
            }
        }
        ReplicaSetHello hello = new ReplicaSetHello(replSet);
        MongoBackend backend;
        if (dataFile == null) {
            backend = new MemoryBackend() {
                @Override
                public Document handleCommand(Channel channel, String db, String command, Document query) {
                    return hello.decorate(command, super.handleCommand(channel, db, hello.delegateName(command), query), oplog);
                }
            };
        } else {
            backend = new H2Backend(dataFile) {
                @Override
                public Document handleCommand(Channel channel, String db, String command, Document query) {
                    return hello.decorate(command, super.handleCommand(channel, db, hello.delegateName(command), query), oplog);
                }
            };
        }
        backend.version(new Mongo50());
        MongoServer server = new MongoServer(backend);
        server.enableOplog();
        server.bind(host, port);
        InetSocketAddress address = server.getLocalAddress();
        hello.setMe(host + ":" + address.getPort());

        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            server.shutdown();
            stopped.countDown();
        }, "mongo-java-server-shutdown"));
        System.out.println("LISTENING " + host + ":" + address.getPort());
        System.out.flush();
        stopped.await();
    }
}
