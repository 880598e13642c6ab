// The share-group admin service of pytest-lagscale: Apache Kafka's Admin client (the pinned
// kafka-clients jar, pytest_lagscale/data/kafka/pom.xml) behind a loopback HTTP endpoint, because
// confluent-kafka 2.16.1 has no share-group admin calls. Started by
// pytest_lagscale/kafka/share_admin.py as
//   java -cp <kafka libs>/* ShareGroupAdmin.java BOOTSTRAP PORT_FILE
// It binds 127.0.0.1 on an ephemeral port, writes the port to PORT_FILE and serves:
//   GET /healthz                       -> 200 "ok"
//   GET /share-group-offsets?group=G   -> Admin.listShareGroupOffsets (KIP-932, lag: KIP-1226)
//        {"group": G, "partitions": [{"topic", "partition", "startOffset", "lag"}]}
//        (startOffset / lag null when the broker gave none)
//   GET /share-group?group=G           -> Admin.describeShareGroups
//        {"group", "state", "groupEpoch", "members": [{"memberId", "clientId", "host",
//         "partitions": [{"topic", "partition"}]}]}
// Errors: 400 {"error"} for a missing group parameter, 404 {"error", "kind": "GroupIdNotFound"}
// for an unknown group, 502 {"error", "kind"} for anything the broker refused or did not answer
// within the request timeout. It runs until SIGTERM (its parent's death sends one).
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ListShareGroupOffsetsSpec;
import org.apache.kafka.clients.admin.ShareGroupDescription;
import org.apache.kafka.clients.admin.ShareMemberDescription;
import org.apache.kafka.clients.admin.SharePartitionOffsetInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.GroupIdNotFoundException;

public class ShareGroupAdmin {
    static final int TIMEOUT_MS = 5000;
    static final ObjectMapper JSON = new ObjectMapper();

    public static void main(String[] args) throws Exception {
        if (args.length != 2) {
            System.err.println("usage: ShareGroupAdmin BOOTSTRAP PORT_FILE");
            System.exit(2);
        }
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        props.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, String.valueOf(TIMEOUT_MS));
        props.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, String.valueOf(TIMEOUT_MS));
        props.put(AdminClientConfig.CLIENT_ID_CONFIG, "lagscale-share-admin");
        Admin admin = Admin.create(props);
        HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 16);
        server.setExecutor(Executors.newFixedThreadPool(4));
        server.createContext("/healthz", ex -> send(ex, 200, "ok"));
        server.createContext("/share-group-offsets", ex -> answer(ex, g -> offsets(admin, g)));
        server.createContext("/share-group", ex -> answer(ex, g -> describe(admin, g)));
        server.start();
        Path portFile = Path.of(args[1]);
        Path partial = Path.of(args[1] + ".partial");
        Files.writeString(partial, String.valueOf(server.getAddress().getPort()));
        Files.move(partial, portFile, java.nio.file.StandardCopyOption.ATOMIC_MOVE);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            server.stop(0);
            admin.close(java.time.Duration.ofSeconds(1));
        }));
    }

    interface Query { ObjectNode run(String group) throws Exception; }

    static void answer(HttpExchange ex, Query query) throws IOException {
        String group = param(ex.getRequestURI().getRawQuery(), "group");
        if (group == null || group.isEmpty()) {
            send(ex, 400, error("'group': missing; give ?group=<share group id>", "BadRequest"));
            return;
        }
        try {
            send(ex, 200, JSON.writeValueAsString(query.run(group)));
        } catch (ExecutionException e) {
            Throwable cause = e.getCause() == null ? e : e.getCause();
            int code = cause instanceof GroupIdNotFoundException ? 404 : 502;
            send(ex, code, error(String.valueOf(cause.getMessage()), cause.getClass().getSimpleName()));
        } catch (java.util.concurrent.TimeoutException e) {
            send(ex, 502, error("no answer from the broker within " + TIMEOUT_MS + " ms", "Timeout"));
        } catch (Exception e) {
            send(ex, 502, error(String.valueOf(e.getMessage()), e.getClass().getSimpleName()));
        }
    }

    static ObjectNode offsets(Admin admin, String group) throws Exception {
        Map<String, ListShareGroupOffsetsSpec> spec = Map.of(group, new ListShareGroupOffsetsSpec());
        Map<TopicPartition, SharePartitionOffsetInfo> got = admin.listShareGroupOffsets(spec)
            .partitionsToOffsetInfo(group).get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
        ObjectNode out = JSON.createObjectNode().put("group", group);
        ArrayNode parts = out.putArray("partitions");
        for (Map.Entry<TopicPartition, SharePartitionOffsetInfo> e : got.entrySet()) {
            ObjectNode p = parts.addObject().put("topic", e.getKey().topic()).put("partition", e.getKey().partition());
            SharePartitionOffsetInfo info = e.getValue();
            if (info == null) {
                p.putNull("startOffset");
                p.putNull("lag");
                continue;
            }
            p.put("startOffset", info.startOffset());
            if (info.lag().isPresent()) p.put("lag", info.lag().get()); else p.putNull("lag");
        }
        return out;
    }

    static ObjectNode describe(Admin admin, String group) throws Exception {
        ShareGroupDescription d = admin.describeShareGroups(List.of(group)).describedGroups().get(group)
            .get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
        ObjectNode out = JSON.createObjectNode().put("group", group)
            .put("state", String.valueOf(d.groupState())).put("groupEpoch", d.groupEpoch());
        ArrayNode members = out.putArray("members");
        for (ShareMemberDescription m : d.members()) {
            ObjectNode o = members.addObject().put("memberId", m.consumerId()).put("clientId", m.clientId())
                .put("host", m.host());
            ArrayNode parts = o.putArray("partitions");
            for (TopicPartition tp : m.assignment().topicPartitions()) {
                parts.addObject().put("topic", tp.topic()).put("partition", tp.partition());
            }
        }
        return out;
    }

    static String param(String rawQuery, String name) {
        if (rawQuery == null) return null;
        Map<String, String> out = new HashMap<>();
        for (String kv : rawQuery.split("&")) {
            int eq = kv.indexOf('=');
            if (eq > 0) out.put(kv.substring(0, eq), URLDecoder.decode(kv.substring(eq + 1), StandardCharsets.UTF_8));
        }
        return out.get(name);
    }

    static String error(String message, String kind) {
        try {
            return JSON.writeValueAsString(JSON.createObjectNode().put("error", message).put("kind", kind));
        } catch (IOException e) {
            return "{\"error\": \"unprintable error\"}";
        }
    }

    static void send(HttpExchange ex, int code, String body) throws IOException {
        byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
        ex.getResponseHeaders().set("Content-Type", code == 200 && body.equals("ok") ? "text/plain" : "application/json");
        ex.sendResponseHeaders(code, bytes.length);
        try (OutputStream os = ex.getResponseBody()) {
            os.write(bytes);
        }
    }
}
