package rayon.yarn;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.net.NetUtils;
import org.apache.hadoop.yarn.api.protocolrecords.ReservationListRequest;
import org.apache.hadoop.yarn.api.protocolrecords.ReservationSubmissionRequest;
import org.apache.hadoop.yarn.api.records.NodeId;
import org.apache.hadoop.yarn.api.records.ReservationAllocationState;
import org.apache.hadoop.yarn.api.records.ReservationId;
import org.apache.hadoop.yarn.api.records.Resource;
import org.apache.hadoop.yarn.api.records.ResourceAllocationRequest;
import org.apache.hadoop.yarn.client.api.YarnClient;
import org.apache.hadoop.yarn.conf.YarnConfiguration;
import org.apache.hadoop.yarn.server.MiniYARNCluster;
import org.apache.hadoop.yarn.server.api.protocolrecords.RegisterNodeManagerRequest;
import org.apache.hadoop.yarn.server.resourcemanager.ResourceManager;
import org.apache.hadoop.yarn.server.resourcemanager.reservation.Plan;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.ResourceScheduler;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.capacity.CapacityScheduler;
import org.apache.hadoop.yarn.util.YarnVersionInfo;
import org.apache.hadoop.yarn.webapp.util.WebAppUtils;

/**
 * A real ResourceManager (MiniYARNCluster, CapacityScheduler) whose reservable queue {@code dedicated} uses the
 * reservation agent named by {@code --agent-class} (ours by default), driven by JSON lines on standard input.
 *
 * <p>With {@code --node-manager external} it first prints {@code RM tracker=HOST:PORT} (where a NodeManager, see
 * NmDriver, registers) and waits for one; otherwise it registers a node of the capacity with no NodeManager (enough
 * to place reservations, never a container). Prints {@code RM web=URL queue=dedicated memory=MB vcores=N step=MS}
 * once the plan has capacity, then answers one JSON line
 * per command line: {@code {"op": "submit", "body": YARN REST body}} (YARN's Java client: createReservation, then
 * submitReservation, timed), {@code {"op": "race", "bodies": [...]}} (several at once, one thread each), {@code
 * {"op": "list"}} (YarnClient.listReservations), {@code {"op": "run", "id":
 * RESERVATION}} (an application of ours inside the reservation on the NodeManager, see InReservation). Ends when
 * standard input does.
 */
public final class RmDriver {
  static final String QUEUE = "dedicated";
  static final String EXTERNAL = "external";
  static final String POLICY = "policy.";
  static final ObjectMapper JSON = new ObjectMapper();

  private RmDriver() {
  }

  public static void main(String[] args) throws Exception {
    Map<String, String> options = options(args);
    MiniYARNCluster cluster = new MiniYARNCluster("rayon-yarn-agent", 1, 0, 1, 1);
    cluster.init(configuration(options));
    cluster.start();
    YarnClient yarn = YarnClient.createYarnClient();
    try {
      ResourceManager rm = cluster.getResourceManager();
      Configuration conf = cluster.getConfig();
      if (EXTERNAL.equals(options.get("node-manager"))) {
        // a real NodeManager (NmDriver, started by the caller in a JVM of its own) registers here
        System.out.println("RM tracker=" + conf.get(YarnConfiguration.RM_RESOURCE_TRACKER_ADDRESS));
        System.out.flush();
      } else {
        // a node without a NodeManager: capacity for the plan, never a container
        NodeId node = NodeId.newInstance("127.0.0.1", 1);
        rm.getResourceTrackerService().registerNodeManager(RegisterNodeManagerRequest.newInstance(node, 0,
            Resource.newInstance(Long.parseLong(options.get("memory-mb")), Integer.parseInt(options.get("vcores"))),
            YarnVersionInfo.getVersion(), Collections.emptyList(), Collections.emptyList()));
      }
      Plan plan = readyPlan(rm);
      yarn.init(conf);
      yarn.start();
      InetSocketAddress web = NetUtils.createSocketAddr(WebAppUtils.getRMWebAppURLWithoutScheme(rm.getConfig()));
      System.out.printf("RM web=http://127.0.0.1:%d queue=%s memory=%d vcores=%d step=%d%n", web.getPort(), QUEUE,
          plan.getTotalCapacity().getMemorySize(), plan.getTotalCapacity().getVirtualCores(), plan.getStep());
      System.out.flush();
      BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
      for (String line = in.readLine(); line != null; line = in.readLine()) {
        if (line.isBlank()) {
          continue;
        }
        ObjectNode answer;
        try {
          answer = command(JSON.readTree(line), rm, conf, yarn);
        } catch (Exception e) {
          answer = JsonNodeFactory.instance.objectNode();
          answer.put("error", e.getClass().getName() + ": " + e.getMessage());
        }
        System.out.println(answer.toString());
        System.out.flush();
      }
    } finally {
      yarn.stop();
      cluster.stop();
    }
  }

  static ObjectNode command(JsonNode command, ResourceManager rm, Configuration conf, YarnClient yarn)
      throws Exception {
    String op = command.path("op").asText();
    switch (op) {
      case "submit":
        return submit(yarn, command.get("body"));
      case "list":
        return list(yarn);
      case "race":
        return race(yarn, command.get("bodies"));
      case "run":
        return InReservation.run(rm, conf, yarn, QUEUE, ReservationId.parseReservationId(
            command.get("id").asText()), Resource.newInstance(command.path("memory").asLong(1024),
            command.path("vcores").asInt(1)));
      default:
        throw new IllegalArgumentException("unknown op `" + op + "`; expected submit, race, list or run");
    }
  }

  /** One reservation through YARN's Java client: a new id, then the submission, timed end to end. */
  static ObjectNode submit(YarnClient yarn, JsonNode body) throws Exception {
    ObjectNode answer = JsonNodeFactory.instance.objectNode();
    ReservationId id = yarn.createReservation().getReservationId();
    answer.put("id", id.toString());
    long started = System.nanoTime();
    try {
      yarn.submitReservation(ReservationSubmissionRequest.newInstance(Bodies.definition(body), QUEUE, id));
      answer.put("accepted", true);
    } catch (Exception e) {
      answer.put("accepted", false);
      answer.put("error", String.valueOf(e.getMessage()));
    }
    answer.put("nanos", System.nanoTime() - started);
    return answer;
  }

  /**
   * Several reservations submitted at once, each from a thread of its own through the RM's RPC (which calls the
   * queue's agent for each on a handler thread of its own, with no lock between an agent's read and its write).
   */
  static ObjectNode race(YarnClient yarn, JsonNode bodies) throws Exception {
    ExecutorService threads = Executors.newFixedThreadPool(bodies.size());
    try {
      List<Future<ObjectNode>> answers = new ArrayList<>();
      CountDownLatch ready = new CountDownLatch(bodies.size());
      for (JsonNode body : bodies) {
        answers.add(threads.submit(() -> {
          ready.countDown();
          ready.await();
          return submit(yarn, body);
        }));
      }
      ObjectNode answer = JsonNodeFactory.instance.objectNode();
      ArrayNode items = answer.putArray("answers");
      for (Future<ObjectNode> each : answers) {
        items.add(each.get());
      }
      return answer;
    } finally {
      threads.shutdownNow();
    }
  }

  /** YARN's list of the queue's reservations with their allocations. */
  static ObjectNode list(YarnClient yarn) throws Exception {
    ObjectNode answer = JsonNodeFactory.instance.objectNode();
    ArrayNode items = answer.putArray("reservations");
    for (ReservationAllocationState state : yarn.listReservations(ReservationListRequest.newInstance(QUEUE, "",
        true)).getReservationAllocationState()) {
      ObjectNode item = items.addObject();
      item.put("id", state.getReservationId().toString());
      ArrayNode allocations = item.putArray("allocations");
      for (ResourceAllocationRequest request : state.getResourceAllocationRequests()) {
        ObjectNode allocation = allocations.addObject();
        allocation.put("start", request.getStartTime());
        allocation.put("end", request.getEndTime());
        allocation.put("memory", request.getCapability().getMemorySize());
        allocation.put("vcores", request.getCapability().getVirtualCores());
      }
    }
    return answer;
  }

  static Configuration configuration(Map<String, String> options) {
    YarnConfiguration conf = new YarnConfiguration();
    conf.setClass(YarnConfiguration.RM_SCHEDULER, CapacityScheduler.class, ResourceScheduler.class);
    conf.setBoolean(YarnConfiguration.RM_RESERVATION_SYSTEM_ENABLE, true);
    String root = "yarn.scheduler.capacity.root";
    conf.set(root + ".queues", "default," + QUEUE);
    conf.set(root + ".default.capacity", "0");
    conf.set(root + ".default.maximum-capacity", "100");
    conf.set(root + "." + QUEUE + ".capacity", "100");
    conf.setBoolean(root + "." + QUEUE + ".reservable", true);
    conf.set(root + "." + QUEUE + ".reservation-agent", options.get("agent-class"));
    for (Map.Entry<String, String> option : options.entrySet()) {
      if (option.getKey().startsWith("rayon.")) {
        conf.set(option.getKey(), option.getValue());
      } else if (option.getKey().startsWith(POLICY)) {  // the queue's CapacityOverTimePolicy numbers
        conf.set(root + "." + QUEUE + "." + option.getKey().substring(POLICY.length()), option.getValue());
      }
    }
    long day = 24 * 3600;
    conf.setLong(YarnConfiguration.RM_NM_EXPIRY_INTERVAL_MS, day * 1000);
    conf.setLong(YarnConfiguration.RM_NMTOKEN_MASTER_KEY_ROLLING_INTERVAL_SECS, 4 * day);
    conf.setLong(YarnConfiguration.RM_CONTAINER_TOKEN_MASTER_KEY_ROLLING_INTERVAL_SECS, 4 * day);
    conf.set(YarnConfiguration.RM_BIND_HOST, "127.0.0.1");
    conf.set("hadoop.http.staticuser.user", options.get("user"));
    conf.set("hadoop.tmp.dir", options.get("work-dir"));
    return conf;
  }

  static Plan readyPlan(ResourceManager rm) throws Exception {
    Plan[] found = new Plan[1];
    InReservation.waitFor(() -> {
      Plan plan = rm.getRMContext().getReservationSystem().getPlan(QUEUE);
      found[0] = plan;
      return plan != null && plan.getTotalCapacity().getMemorySize() > 0;
    }, "the reservable queue's capacity");
    return found[0];
  }

  /**
   * {@code --agent-class C --memory-mb MB --vcores N --user U --work-dir D --node-manager none|external}, and any
   * {@code --rayon.KEY VALUE} (the agent's settings, put into the RM's configuration as they are), and any
   * {@code --policy.KEY VALUE} (the reservable queue's {@code average-capacity}, {@code reservation-window}, ...).
   */
  static Map<String, String> options(String[] args) {
    Map<String, String> options = new HashMap<>();
    options.put("agent-class", RayonReservationAgent.class.getName());
    options.put("memory-mb", "8192");
    options.put("vcores", "8");
    options.put("user", "alice");
    options.put("node-manager", "none");
    options.put("work-dir", System.getProperty("java.io.tmpdir") + "/rayon-yarn-agent");
    for (int i = 0; i + 1 < args.length; i += 2) {
      if (!args[i].startsWith("--")) {
        throw new IllegalArgumentException("expected an option, got " + args[i]);
      }
      options.put(args[i].substring(2), args[i + 1]);
    }
    return options;
  }
}
